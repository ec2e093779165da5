"""Load the hand scene and resolve the names the twin relies on (no rclpy).

The agreed interface with ``hand_description`` (issue 4):

- joints: exactly :data:`hand_common.contract.JOINT_NAMES`, 15 limited hinges, range
  ``0`` (open) .. ``upper`` (closed) in rad, positive = flexion;
- tendons ``{finger}_flexor`` (spatial, palmar: shortens as the digit flexes) and
  ``{finger}_extensor`` (passive dorsal spring), ``finger`` in :data:`FINGER_NAMES`;
- actuators ``{finger}_flexor``: MuJoCo *position* actuators on the flexor tendon, ``ctrl`` = tendon
  length target (m), pull-only (``forcerange [-Fmax, 0]``);
- keyframe ``open``; camera ``front`` in the scene.

:func:`load_hand` checks all of it and raises :class:`ModelContractError` naming the first
problem, so a model that drifted from the contract fails loudly at configure time.

Two hands in one scene (hand_description's ``mjcf/scene_two_hands.xml``): every name of a hand
carries a prefix (``left_index_mcp``, ``right_thumb_flexor``); the keyframe ``open`` and the camera
belong to the scene and are not prefixed. :func:`load_hands` compiles the scene once and resolves
one :class:`HandModel` per prefix; :func:`combine_hands` joins them for the simulation.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import mujoco
import numpy as np

from hand_common.contract import FINGER_JOINTS, FINGER_NAMES, JOINT_NAMES

#: Integrators the twin may select (``"model"`` keeps the one in the MJCF).
INTEGRATORS = {
    "model": None,
    "euler": mujoco.mjtIntegrator.mjINT_EULER,
    "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
    "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
    "rk4": mujoco.mjtIntegrator.mjINT_RK4,
}


class ModelContractError(ValueError):
    """The MJCF does not provide what the twin needs (names, joint types, actuator kind)."""


@dataclass(frozen=True)
class HandModel:
    """A compiled hand model plus the indices of everything the twin touches.

    Arrays are in :data:`JOINT_NAMES` order (15) or :data:`FINGER_NAMES` order (5).
    ``joint_lower/upper``: joint range in rad. ``qpos_adr``/``dof_adr``: addresses in qpos/qvel.
    ``digit_dofs[f]``: the 3 dof addresses of finger ``f`` (proximal → distal). ``prefix``: of the
    hand's names in a two-hand scene (``""`` for one hand).
    """

    model: mujoco.MjModel
    path: str
    joint_ids: np.ndarray
    qpos_adr: np.ndarray
    dof_adr: np.ndarray
    joint_lower: np.ndarray
    joint_upper: np.ndarray
    flexor_tendon: np.ndarray
    extensor_tendon: np.ndarray
    actuator: np.ndarray
    digit_dofs: dict[str, np.ndarray]
    key_open: int
    camera: int
    prefix: str = ""

    @property
    def timestep(self) -> float:
        """Physics step (s)."""
        return float(self.model.opt.timestep)

    @property
    def joint_range(self) -> np.ndarray:
        """upper − lower per joint (rad), shape (15,)."""
        return self.joint_upper - self.joint_lower


def default_scene_path() -> str:
    """The hand_description scene (``scene.xml``); ModelContractError if it is not installed."""
    try:
        from hand_description.paths import scene_path
    except ImportError as exc:
        raise ModelContractError(
            f"hand_description.paths is not available ({exc}); set the twin's model_path parameter"
        ) from exc
    return str(scene_path())


def default_two_hands_scene_path() -> str:
    """hand_description's two-hand scene (``mjcf/scene_two_hands.xml``: hands prefixed ``left_`` and
    ``right_``); ModelContractError if hand_description is not installed."""
    try:
        from hand_description.paths import share_dir
    except ImportError as exc:
        raise ModelContractError(
            f"hand_description.paths is not available ({exc}); set the twin's model_path parameter"
        ) from exc
    return str(share_dir() / "mjcf" / "scene_two_hands.xml")


def _id(model: mujoco.MjModel, obj: mujoco.mjtObj, name: str, what: str) -> int:
    i = mujoco.mj_name2id(model, obj, name)
    if i < 0:
        raise ModelContractError(f"{what} '{name}' not found in the model")
    return i


def load_hand(path: str | None = None, camera: str = "front", integrator: str = "implicitfast",
              prefix: str = "") -> HandModel:
    """Compile the scene at ``path`` (default: hand_description's scene) and check the contract.

    camera: the camera the renderer uses (must exist). integrator: a key of :data:`INTEGRATORS`;
    ``implicitfast`` (default) integrates joint damping and the actuators' kv implicitly, which keeps
    the stiff, gram-scale fingers stable at the model's timestep. prefix: of the hand's joint,
    tendon and actuator names in the scene (``""`` for the single-hand scenes).
    Raises ModelContractError (missing file, compile error, missing/mistyped element).
    """
    return load_hands(path, (prefix,), camera=camera, integrator=integrator)[0]


def load_hands(path: str | None, prefixes: tuple[str, ...], camera: str = "front",
               integrator: str = "implicitfast") -> list[HandModel]:
    """Compile the scene once and resolve one :class:`HandModel` per name prefix (all sharing the
    compiled model). Raises ModelContractError as :func:`load_hand`."""
    path = path or default_scene_path()
    if not os.path.isfile(path):
        raise ModelContractError(f"model file {path} does not exist")
    try:
        model = mujoco.MjModel.from_xml_path(path)
    except Exception as exc:  # mujoco raises ValueError with the compiler's message
        raise ModelContractError(f"MuJoCo cannot compile {path}: {exc}") from exc
    if integrator not in INTEGRATORS:
        raise ModelContractError(f"integrator '{integrator}' unknown; use one of {sorted(INTEGRATORS)}")
    if INTEGRATORS[integrator] is not None:
        model.opt.integrator = INTEGRATORS[integrator]
    return [_resolve(model, str(path), camera, prefix) for prefix in prefixes]


def _resolve(model: mujoco.MjModel, path: str, camera: str, prefix: str) -> HandModel:
    """The indices of one hand (names with ``prefix``) in a compiled scene, checked."""
    joint_ids = np.array([_id(model, mujoco.mjtObj.mjOBJ_JOINT, prefix + n, "joint") for n in JOINT_NAMES])
    for n, j in zip(JOINT_NAMES, joint_ids):
        if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE:
            raise ModelContractError(f"joint '{prefix}{n}' is not a hinge")
        if not model.jnt_limited[j]:
            raise ModelContractError(f"joint '{prefix}{n}' has no range (limited=false)")
        lo, hi = model.jnt_range[j]
        if not (lo <= 0.0 < hi):
            raise ModelContractError(
                f"joint '{prefix}{n}' range [{lo:.3f}, {hi:.3f}] does not run from 0 (open) to a positive closed limit")
    flexor = np.array([_id(model, mujoco.mjtObj.mjOBJ_TENDON, f"{prefix}{f}_flexor", "tendon") for f in FINGER_NAMES])
    extensor = np.array([_id(model, mujoco.mjtObj.mjOBJ_TENDON, f"{prefix}{f}_extensor", "tendon")
                         for f in FINGER_NAMES])
    actuator = np.array([_id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, f"{prefix}{f}_flexor", "actuator")
                         for f in FINGER_NAMES])
    for f, a, t in zip(FINGER_NAMES, actuator, flexor):
        if model.actuator_trntype[a] != mujoco.mjtTrn.mjTRN_TENDON or model.actuator_trnid[a, 0] != t:
            raise ModelContractError(f"actuator '{prefix}{f}_flexor' does not act on tendon '{prefix}{f}_flexor'")
        if (model.actuator_gaintype[a] != mujoco.mjtGain.mjGAIN_FIXED
                or model.actuator_biastype[a] != mujoco.mjtBias.mjBIAS_AFFINE
                or model.actuator_dyntype[a] != mujoco.mjtDyn.mjDYN_NONE):
            raise ModelContractError(
                f"actuator '{prefix}{f}_flexor' is not a plain MuJoCo position actuator (gain fixed, bias affine, no dynamics)")
        if model.actuator_gear[a, 0] != 1.0:
            raise ModelContractError(f"actuator '{prefix}{f}_flexor' has gear {model.actuator_gear[a, 0]}, expected 1")
        if not model.actuator_forcelimited[a] or model.actuator_forcerange[a, 1] > 0.0 \
                or model.actuator_forcerange[a, 0] >= 0.0:
            raise ModelContractError(
                f"actuator '{prefix}{f}_flexor' is not pull-only: forcerange must be [-Fmax, 0] with forcelimited")
    key_open = _id(model, mujoco.mjtObj.mjOBJ_KEY, "open", "keyframe")
    cam = _id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera, "camera")
    digit_dofs = {f: np.array([model.jnt_dofadr[joint_ids[JOINT_NAMES.index(j)]] for j in FINGER_JOINTS[f]])
                  for f in FINGER_NAMES}
    return HandModel(
        model=model,
        path=str(path),
        joint_ids=joint_ids,
        qpos_adr=model.jnt_qposadr[joint_ids].copy(),
        dof_adr=model.jnt_dofadr[joint_ids].copy(),
        joint_lower=model.jnt_range[joint_ids, 0].copy(),
        joint_upper=model.jnt_range[joint_ids, 1].copy(),
        flexor_tendon=flexor,
        extensor_tendon=extensor,
        actuator=actuator,
        digit_dofs=digit_dofs,
        key_open=key_open,
        camera=cam,
        prefix=prefix,
    )


def combine_hands(hands: list[HandModel]) -> HandModel:
    """One :class:`HandModel` for several hands of the same compiled scene (from :func:`load_hands`):
    the arrays are concatenated hand by hand (15·n joints, 5·n fingers, in the order given) and
    ``digit_dofs`` is keyed ``prefix + finger``. What the simulation of all hands at once needs."""
    first = hands[0]
    if any(h.model is not first.model for h in hands):
        raise ValueError("combine_hands needs hands of one compiled model (load_hands)")

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(h, name) for h in hands])

    return replace(first, joint_ids=cat("joint_ids"), qpos_adr=cat("qpos_adr"), dof_adr=cat("dof_adr"),
                   joint_lower=cat("joint_lower"), joint_upper=cat("joint_upper"),
                   flexor_tendon=cat("flexor_tendon"), extensor_tendon=cat("extensor_tendon"),
                   actuator=cat("actuator"), prefix="",
                   digit_dofs={h.prefix + f: d for h in hands for f, d in h.digit_dofs.items()})
