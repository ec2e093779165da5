"""Physics of the dexterous twin (MuJoCo, no rclpy, no threads).

:class:`DexSim` loads hand_description's ``mjcf/dex_scene.xml`` (or another scene with the same
names), checks the interface it relies on and tracks joint commands with the model's MuJoCo
``position`` actuators (one per joint, named like the joint, ``ctrl`` = angle in rad):

- joints: the 20 names of :attr:`hand_description.dex.DexHandDescription.joint_names`, hinges;
- actuators: a position actuator per joint, on that joint;
- keyframe ``open``.

:meth:`DexSim.for_urdf` builds the model from any URDF hand instead
(:func:`hand_retarget.urdf_twin.build_twin`): there mimic joints have no actuator, they follow their
parent through an equality (their command entries are ignored).

Commands outside ``ctrlrange`` are clipped (the safety filter upstream already keeps them inside
the joint limits); a non-finite command is refused with ValueError and nothing changes. After
every batch of steps the state is checked (MuJoCo's bad qpos/qvel/qacc warnings, non-finite
values); an unstable state is reset to ``open`` and the reason returned.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import mujoco
import numpy as np

INSTABILITY_WARNINGS = (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
                        mujoco.mjtWarning.mjWARN_BADQACC)


class DexModelError(ValueError):
    """The MJCF does not provide what the dexterous twin needs; the message names the element."""


@dataclass(frozen=True)
class DexState:
    """One sample: sim_time s; position rad, velocity rad/s, effort N m (actuator torque), all (n,)
    in the description's joint order."""

    sim_time: float
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


class DexSim:
    """The dexterous hand in MuJoCo, following joint commands. Not thread-safe (caller locks)."""

    def __init__(self, joint_names: tuple[str, ...], scene_path: str | None = None,
                 model: mujoco.MjModel | None = None, coupled: tuple[str, ...] = ()):
        """``joint_names``: the command/state order; ``scene_path``: MJCF (default hand_description's
        dex scene) unless ``model`` is given; ``coupled``: joints without an actuator (mimic)."""
        if model is None:
            if scene_path is None:
                from hand_description.paths import dex_scene_path
                scene_path = str(dex_scene_path())
            if not os.path.isfile(scene_path):
                raise DexModelError(f"model file {scene_path} does not exist")
            try:
                model = mujoco.MjModel.from_xml_path(scene_path)
            except Exception as exc:  # mujoco raises ValueError with the compiler's message
                raise DexModelError(f"MuJoCo cannot compile {scene_path}: {exc}") from exc
        self.model = m = model
        self.path = scene_path or "(compiled model)"
        self.joint_names = tuple(joint_names)
        jids, acts, self._driven = [], [], []
        for i, n in enumerate(self.joint_names):
            j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n)
            if j < 0:
                raise DexModelError(f"joint '{n}' not found in the model")
            if m.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE:
                raise DexModelError(f"joint '{n}' is not a hinge")
            jids.append(j)
            if n in coupled:
                continue
            a = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, n)
            if a < 0:
                raise DexModelError(f"actuator '{n}' not found in the model")
            if m.actuator_trntype[a] != mujoco.mjtTrn.mjTRN_JOINT or m.actuator_trnid[a, 0] != j:
                raise DexModelError(f"actuator '{n}' does not act on joint '{n}'")
            if m.actuator_biastype[a] != mujoco.mjtBias.mjBIAS_AFFINE:
                raise DexModelError(f"actuator '{n}' is not a position actuator")
            acts.append(a)
            self._driven.append(i)
        self.key_open = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, "open")
        if self.key_open < 0:
            raise DexModelError("keyframe 'open' not found in the model")
        self.joint_ids = np.array(jids)
        self.actuators = np.array(acts, dtype=int)
        self.qpos_adr = m.jnt_qposadr[self.joint_ids].copy()
        self.dof_adr = m.jnt_dofadr[self.joint_ids].copy()
        self._driven = np.array(self._driven, dtype=int)
        self.lower = m.jnt_range[self.joint_ids, 0].copy()
        self.upper = m.jnt_range[self.joint_ids, 1].copy()
        self.ctrl_lo, self.ctrl_hi = self.lower.copy(), self.upper.copy()
        self.ctrl_lo[self._driven] = m.actuator_ctrlrange[self.actuators, 0]
        self.ctrl_hi[self._driven] = m.actuator_ctrlrange[self.actuators, 1]
        self.warnings: list[str] = []
        self.data = mujoco.MjData(m)
        self.resets = 0
        self.reset()

    @property
    def timestep(self) -> float:
        return float(self.model.opt.timestep)

    @property
    def time(self) -> float:
        return float(self.data.time)

    def reset(self) -> None:
        """Back to the ``open`` keyframe at rest (commands = open)."""
        mujoco.mj_resetDataKeyframe(self.model, self.data, self.key_open)
        mujoco.mj_forward(self.model, self.data)
        self.command = self.data.qpos[self.qpos_adr].copy()
        self.command[self._driven] = self.data.ctrl[self.actuators]
        self._warn_base = self._warnings()

    def set_command(self, q: np.ndarray) -> None:
        """Joint angle targets (n,) rad, clipped to the actuators' ctrlrange. ValueError if malformed."""
        q = np.asarray(q, dtype=float)
        if q.shape != (len(self.joint_names),) or not np.all(np.isfinite(q)):
            raise ValueError(f"command must be {len(self.joint_names)} finite angles")
        self.command = np.clip(q, self.ctrl_lo, self.ctrl_hi)
        self.data.ctrl[self.actuators] = self.command[self._driven]

    def _warnings(self) -> np.ndarray:
        return np.array([self.data.warning[w].number for w in INSTABILITY_WARNINGS])

    def step(self, n: int = 1) -> str | None:
        """Advance ``n`` timesteps; on instability reset to ``open`` and return the reason."""
        if n <= 0:
            return None
        mujoco.mj_step(self.model, self.data, nstep=int(n))
        counts = self._warnings()
        reason = None
        if np.any(counts > self._warn_base):
            reason = "MuJoCo warning " + ", ".join(w.name for w, c, b in zip(INSTABILITY_WARNINGS, counts, self._warn_base)
                                                   if c > b)
        elif not (np.all(np.isfinite(self.data.qpos)) and np.all(np.isfinite(self.data.qvel))):
            reason = "non-finite state"
        if reason is not None:
            self.resets += 1
            self.reset()
        return reason

    def advance(self, seconds: float) -> str | None:
        """Step for ``seconds`` of simulated time (rounded to whole steps)."""
        return self.step(int(round(seconds / self.timestep)))

    def state(self) -> DexState:
        d = self.data
        effort = np.zeros(len(self.joint_names))
        effort[self._driven] = d.actuator_force[self.actuators]
        return DexState(float(d.time), d.qpos[self.qpos_adr].copy(), d.qvel[self.dof_adr].copy(), effort)

    @classmethod
    def for_urdf(cls, urdf_path: str, joint_names: tuple[str, ...] | None = None) -> DexSim:
        """The twin of any URDF hand (:func:`hand_retarget.urdf_twin.build_twin`); ``joint_names``
        default: the URDF's movable joints in MuJoCo order. ``warnings`` lists the repairs made."""
        from .urdf_twin import TwinBuildError, build_twin

        try:
            twin = build_twin(urdf_path)
        except TwinBuildError as exc:
            raise DexModelError(str(exc)) from exc
        sim = cls(joint_names or twin.joint_names, urdf_path, model=twin.model, coupled=tuple(twin.mimic))
        sim.warnings = list(twin.warnings)
        return sim

    def copy_state_into(self, other: mujoco.MjData) -> None:
        """Copy what rendering needs into another MjData of the same model."""
        other.qpos[:] = self.data.qpos
        other.qvel[:] = self.data.qvel
        other.ctrl[:] = self.data.ctrl
        other.time = self.data.time
