"""The compiled SO-101 model as the software sees it: joint order, limits, gripper range. No rclpy.

Everything is read from the **compiled MuJoCo model** (arm_description's ``mjcf/so101.xml`` or
the scene that includes it), never hard-coded: the joint limits from ``jnt_range`` and the
gripper range from the gripper actuator's ``ctrlrange`` (ctrlrange[0] = closed, [1] = open, see
arm_description's config/so101.yaml).
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass

import mujoco
import numpy as np

#: The five arm joints, base → tip, then the gripper (= arm_description's joint names).
ARM_JOINTS: tuple[str, ...] = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
GRIPPER_JOINT = "gripper"
ALL_JOINTS: tuple[str, ...] = ARM_JOINTS + (GRIPPER_JOINT,)
TCP_BODY = "tcp"


class ModelError(ValueError):
    """The MJCF does not have what the arm software needs (the message names it)."""


@dataclass(frozen=True)
class ArmModel:
    model: mujoco.MjModel
    qpos_adr: np.ndarray  # (6,) qpos index per ALL_JOINTS
    dof_adr: np.ndarray  # (6,) dof index per ALL_JOINTS
    actuator: np.ndarray  # (6,) actuator id per ALL_JOINTS
    lower: np.ndarray  # (6,) rad
    upper: np.ndarray  # (6,) rad
    gripper_closed: float  # rad, ctrlrange[0] of the gripper actuator
    gripper_open: float  # rad, ctrlrange[1]
    tcp: int  # body id

    def clamp(self, q: np.ndarray) -> np.ndarray:
        """Clamp a (6,) or (5,) joint vector to the limits (gripper: its ctrlrange)."""
        q = np.asarray(q, dtype=float)
        return np.clip(q, self.lower[: q.size], self.upper[: q.size])

    def keyframe(self, name: str) -> np.ndarray:
        """(6,) joint vector of a keyframe in ALL_JOINTS order."""
        k = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_KEY, name)
        if k < 0:
            raise ModelError(f"no keyframe '{name}'")
        return np.array(self.model.key_qpos[k][self.qpos_adr])


def default_mjcf() -> pathlib.Path:
    from arm_description.paths import mjcf_path

    return mjcf_path()


def load_arm(path: str | pathlib.Path | None = None, model: mujoco.MjModel | None = None) -> ArmModel:
    """Compile (or wrap) the arm model and look up joints, actuators and the TCP body.
    ModelError names anything missing (joint, position actuator, tcp body)."""
    if model is None:
        path = pathlib.Path(path) if path is not None else default_mjcf()
        try:
            model = mujoco.MjModel.from_xml_path(str(path))
        except Exception as exc:  # mujoco raises ValueError with the parser's message
            raise ModelError(f"cannot compile {path}: {exc}") from exc
    qadr, dadr, act, lo, hi = [], [], [], [], []
    for name in ALL_JOINTS:
        j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if j < 0:
            raise ModelError(f"model has no joint '{name}'")
        ids = [a for a in range(model.nu) if model.actuator_trnid[a, 0] == j
               and model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT]
        if not ids:
            raise ModelError(f"no actuator drives joint '{name}'")
        a = ids[0]
        if not (model.actuator_gainprm[a, 0] > 0 and model.actuator_biasprm[a, 1] < 0):
            raise ModelError(f"actuator of '{name}' is not a position servo")
        qadr.append(model.jnt_qposadr[j])
        dadr.append(model.jnt_dofadr[j])
        act.append(a)
        rng = model.actuator_ctrlrange[a] if name == GRIPPER_JOINT else model.jnt_range[j]
        lo.append(float(rng[0]))
        hi.append(float(rng[1]))
    tcp = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, TCP_BODY)
    if tcp < 0:
        raise ModelError(f"model has no body '{TCP_BODY}'")
    g = act[-1]
    return ArmModel(model, np.array(qadr), np.array(dadr), np.array(act), np.array(lo), np.array(hi),
                    float(model.actuator_ctrlrange[g, 0]), float(model.actuator_ctrlrange[g, 1]), tcp)
