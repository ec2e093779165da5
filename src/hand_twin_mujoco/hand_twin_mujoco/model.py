"""Load the hand scene and resolve the names the twin relies on (no rclpy).

The agreed interface with ``hand_description`` (issue 4):

- joints: exactly :data:`hand_tracking.contract.JOINT_NAMES`, 15 limited hinges, range
  ``0`` (open) .. ``upper`` (closed) in rad, positive = flexion;
- tendons ``{finger}_flexor`` (spatial, palmar: shortens as the digit flexes) and
  ``{finger}_extensor`` (passive dorsal spring), ``finger`` in :data:`FINGER_NAMES`;
- actuators ``{finger}_flexor``: MuJoCo *position* actuators on the flexor tendon, ``ctrl`` = tendon
  length target (m), pull-only (``forcerange [-Fmax, 0]``);
- keyframe ``open``; camera ``front`` in the scene.

:func:`load_hand` checks all of it and raises :class:`ModelContractError` naming the first
problem, so a model that drifted from the contract fails loudly at configure time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import mujoco
import numpy as np

from hand_tracking.contract import FINGER_JOINTS, FINGER_NAMES, JOINT_NAMES

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
    ``digit_dofs[f]``: the 3 dof addresses of finger ``f`` (proximal → distal).
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


def _id(model: mujoco.MjModel, obj: mujoco.mjtObj, name: str, what: str) -> int:
    i = mujoco.mj_name2id(model, obj, name)
    if i < 0:
        raise ModelContractError(f"{what} '{name}' not found in the model")
    return i


def load_hand(path: str | None = None, camera: str = "front", integrator: str = "implicitfast") -> HandModel:
    """Compile the scene at ``path`` (default: hand_description's scene) and check the contract.

    camera: the camera the renderer uses (must exist). integrator: a key of :data:`INTEGRATORS`;
    ``implicitfast`` (default) integrates joint damping and the actuators' kv implicitly, which keeps
    the stiff, gram-scale fingers stable at the model's timestep.
    Raises ModelContractError (missing file, compile error, missing/mistyped element).
    """
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

    joint_ids = np.array([_id(model, mujoco.mjtObj.mjOBJ_JOINT, n, "joint") for n in JOINT_NAMES])
    for n, j in zip(JOINT_NAMES, joint_ids):
        if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE:
            raise ModelContractError(f"joint '{n}' is not a hinge")
        if not model.jnt_limited[j]:
            raise ModelContractError(f"joint '{n}' has no range (limited=false)")
        lo, hi = model.jnt_range[j]
        if not (lo <= 0.0 < hi):
            raise ModelContractError(
                f"joint '{n}' range [{lo:.3f}, {hi:.3f}] does not run from 0 (open) to a positive closed limit")
    flexor = np.array([_id(model, mujoco.mjtObj.mjOBJ_TENDON, f"{f}_flexor", "tendon") for f in FINGER_NAMES])
    extensor = np.array([_id(model, mujoco.mjtObj.mjOBJ_TENDON, f"{f}_extensor", "tendon") for f in FINGER_NAMES])
    actuator = np.array([_id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, f"{f}_flexor", "actuator") for f in FINGER_NAMES])
    for f, a, t in zip(FINGER_NAMES, actuator, flexor):
        if model.actuator_trntype[a] != mujoco.mjtTrn.mjTRN_TENDON or model.actuator_trnid[a, 0] != t:
            raise ModelContractError(f"actuator '{f}_flexor' does not act on tendon '{f}_flexor'")
        if (model.actuator_gaintype[a] != mujoco.mjtGain.mjGAIN_FIXED
                or model.actuator_biastype[a] != mujoco.mjtBias.mjBIAS_AFFINE
                or model.actuator_dyntype[a] != mujoco.mjtDyn.mjDYN_NONE):
            raise ModelContractError(
                f"actuator '{f}_flexor' is not a plain MuJoCo position actuator (gain fixed, bias affine, no dynamics)")
        if model.actuator_gear[a, 0] != 1.0:
            raise ModelContractError(f"actuator '{f}_flexor' has gear {model.actuator_gear[a, 0]}, expected 1")
        if not model.actuator_forcelimited[a] or model.actuator_forcerange[a, 1] > 0.0 \
                or model.actuator_forcerange[a, 0] >= 0.0:
            raise ModelContractError(
                f"actuator '{f}_flexor' is not pull-only: forcerange must be [-Fmax, 0] with forcelimited")
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
    )
