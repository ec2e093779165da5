"""Position IK of the TCP: damped least squares on MuJoCo's ``mj_jacBody``. No rclpy.

Each solve works on its **own scratch MjData** (never the live simulation's), seeded from the
current joint state, and repeats at most ``max_iterations`` times::

    e  = target − p_tcp(q)                       (3 rows: position only)
    J  = mj_jacBody(tcp)[:, joints]              (3 × n)
    Δq = Jᵀ (J Jᵀ + λ² I)⁻¹ e                    (damped least squares)
    q  ← clamp(q + step · Δq, joint limits)

and stops as soon as |e| ≤ ``tolerance``. Defaults: 12 iterations, 5 mm, step 0.5, λ = 0.02 m.
Joints outside ``joints`` (wrist roll, gripper) keep their seed values. An unreachable target
ends after ``max_iterations`` with the joints clamped to their limits and finite (the arm
stretches towards it); ``converged`` says which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from arm_teleop.arm_model import ALL_JOINTS, ArmModel

#: Joints the position IK moves by default: the four that move the TCP substantially.
IK_JOINTS: tuple[str, ...] = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex")


@dataclass(frozen=True)
class IkConfig:
    max_iterations: int = 12
    tolerance: float = 0.005  # m
    step: float = 0.5
    damping: float = 0.02  # m (λ)

    def problem(self) -> str | None:
        if not 1 <= self.max_iterations <= 1000:
            return f"max_iterations = {self.max_iterations} must be 1..1000"
        if not (self.tolerance > 0 and math.isfinite(self.tolerance)):
            return f"tolerance = {self.tolerance} must be > 0"
        if not 0 < self.step <= 1:
            return f"step = {self.step} must be in (0, 1]"
        if not self.damping >= 0:
            return f"damping = {self.damping} must be ≥ 0"
        return None


@dataclass(frozen=True)
class IkResult:
    q: np.ndarray  # (6,) joint vector, ALL_JOINTS order, within limits
    error: float  # m, |target - tcp| at q
    iterations: int  # updates applied (0 if the seed was already within tolerance)
    converged: bool


class IkSolver:
    """DLS position IK on a scratch MjData of ``arm.model`` (see module docstring)."""

    def __init__(self, arm: ArmModel, cfg: IkConfig | None = None, joints: tuple[str, ...] = IK_JOINTS):
        self.arm = arm
        self.cfg = cfg or IkConfig()
        problem = self.cfg.problem()
        if problem:
            raise ValueError(problem)
        self.idx = np.array([ALL_JOINTS.index(j) for j in joints])
        self.data = mujoco.MjData(arm.model)  # scratch: the live simulation is never touched
        self._jacp = np.zeros((3, arm.model.nv))

    def fk(self, q: np.ndarray) -> np.ndarray:
        """TCP position (3,) in the base/world frame for a (6,) or (5,) joint vector."""
        self._set(q)
        return self.data.xpos[self.arm.tcp].copy()

    def _set(self, q: np.ndarray) -> None:
        q = np.asarray(q, dtype=float)
        self.data.qpos[self.arm.qpos_adr[: q.size]] = q
        mujoco.mj_kinematics(self.arm.model, self.data)
        mujoco.mj_comPos(self.arm.model, self.data)

    def solve(self, target: np.ndarray, seed: np.ndarray) -> IkResult:
        """Solve for ``target`` (3,) m from ``seed`` (6,) rad. ValueError for non-finite input."""
        target = np.asarray(target, dtype=float)
        seed = np.asarray(seed, dtype=float)
        if target.shape != (3,) or not np.all(np.isfinite(target)):
            raise ValueError(f"IK target must be 3 finite numbers, got {target}")
        if seed.shape != (len(ALL_JOINTS),) or not np.all(np.isfinite(seed)):
            raise ValueError(f"IK seed must be {len(ALL_JOINTS)} finite joint angles, got {seed}")
        arm, cfg = self.arm, self.cfg
        q = arm.clamp(seed)
        dofs = arm.dof_adr[self.idx]
        lam2 = cfg.damping ** 2
        it = 0
        while True:
            self._set(q)
            e = target - self.data.xpos[arm.tcp]
            err = float(np.linalg.norm(e))
            if err <= cfg.tolerance or it >= cfg.max_iterations:
                break
            mujoco.mj_jacBody(arm.model, self.data, self._jacp, None, arm.tcp)
            j = self._jacp[:, dofs]
            dq = j.T @ np.linalg.solve(j @ j.T + lam2 * np.eye(3), e)
            q[self.idx] = np.clip(q[self.idx] + cfg.step * dq, arm.lower[self.idx], arm.upper[self.idx])
            it += 1
        return IkResult(q.copy(), err, it, err <= cfg.tolerance)
