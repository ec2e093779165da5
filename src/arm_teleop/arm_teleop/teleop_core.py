"""One tracker frame in, at most one arm command out: classifier → state machine → mapping → IK.
No rclpy (the node only converts messages).

Commands are produced only while ARMED (from the hand) or MANUAL (from
:meth:`TeleopCore.manual_command`). DISABLED, HOLD and ESTOP produce none: the actuators keep
their last target. Every command is clamped to the model's limits (the gripper to its actuator
ctrlrange) and rate-limited to ``max_joint_speed`` / ``max_gripper_speed`` (rad/s), so arming, a mode switch or a jump
of the hand never makes the arm jump. The gripper closes while the gesture is PINCH and opens
otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from arm_teleop.arm_model import ALL_JOINTS, ArmModel
from arm_teleop.gestures import Gesture, GestureClassifier, GestureConfig
from arm_teleop.ik import IkConfig, IkResult, IkSolver
from arm_teleop.mapping import (
    CartesianConfig,
    HandSignals,
    JointModeConfig,
    Smoother,
    cartesian_target,
    hand_signals,
    joint_targets,
    rate_limit,
)
from arm_teleop.state_machine import ArmState, ArmStateMachine, StateMachineConfig

MODES = ("cartesian", "joint")


@dataclass(frozen=True)
class HandFrame:
    """One tracker frame: time (s), the hand's landmarks or None, tracking score, image size."""

    t: float
    world: np.ndarray | None = None  # (21, 3) m
    image: np.ndarray | None = None  # (21, 3) normalised
    score: float = 1.0
    width: int = 1280
    height: int = 720


@dataclass(frozen=True)
class TeleopConfig:
    gesture: GestureConfig = field(default_factory=GestureConfig)
    state: StateMachineConfig = field(default_factory=StateMachineConfig)
    ik: IkConfig = field(default_factory=IkConfig)
    cartesian: CartesianConfig = field(default_factory=CartesianConfig)
    joint: JointModeConfig = field(default_factory=JointModeConfig)
    mode: str = "cartesian"
    image_mirrored: bool = False
    smoothing_time_s: float = 0.15
    max_joint_speed: float = 2.0  # rad/s, arm joints
    max_gripper_speed: float = 4.5  # rad/s (STS3215 at 12 V: about 0.22 s per 60°, no load)
    max_frame_gap_s: float = 0.2  # rate limit never allows more than this much motion at once

    def problem(self) -> str | None:
        if self.mode not in MODES:
            return f"control mode '{self.mode}' is not one of {MODES}"
        for part in (self.gesture, self.state, self.ik, self.cartesian):
            p = part.problem()
            if p:
                return p
        if not (self.smoothing_time_s >= 0 and math.isfinite(self.smoothing_time_s)):
            return f"smoothing_time_s = {self.smoothing_time_s} must be ≥ 0"
        if not (self.max_joint_speed > 0 and self.max_gripper_speed > 0):
            return f"max_joint_speed ({self.max_joint_speed}) and max_gripper_speed ({self.max_gripper_speed}) must be > 0"
        return None


@dataclass(frozen=True)
class TeleopOutput:
    t: float
    state: ArmState
    mode: str
    gesture: Gesture
    command: np.ndarray | None  # (6,) rad, ALL_JOINTS order; None = no command this frame
    gripper_closed: bool
    arming: float  # 0..1
    target: np.ndarray | None = None  # Cartesian target (3,) m, when computed
    ik: IkResult | None = None
    signals: HandSignals | None = None
    note: str = ""


class TeleopCore:
    def __init__(self, arm: ArmModel, cfg: TeleopConfig | None = None, initial: np.ndarray | None = None):
        self.arm = arm
        self.cfg = cfg or TeleopConfig()
        problem = self.cfg.problem()
        if problem:
            raise ValueError(problem)
        self.classifier = GestureClassifier(self.cfg.gesture)
        self.sm = ArmStateMachine(self.cfg.state)
        self.ik = IkSolver(arm, self.cfg.ik)
        self.centre = arm.keyframe("ready")
        self.q = arm.clamp(initial if initial is not None else arm.keyframe("rest")).astype(float)
        self.gripper_closed = False
        self._smoother = Smoother(self.cfg.smoothing_time_s)
        self._t_cmd: float | None = None
        self._was_commanding = False

    # --- configuration -------------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        return self.cfg.mode

    def reconfigure(self, cfg: TeleopConfig) -> None:
        """Apply a new configuration live (ValueError naming the problem leaves the old one).
        A mode change restarts the smoothing from the current command: no jump."""
        problem = cfg.problem()
        if problem:
            raise ValueError(problem)
        old = self.cfg
        self.cfg = cfg
        self.classifier.set_config(cfg.gesture)
        self.sm.cfg = cfg.state
        self.ik.cfg = cfg.ik
        self._smoother.tau = cfg.smoothing_time_s
        if cfg.mode != old.mode:
            self._smoother.reset()

    def set_mode(self, mode: str) -> None:
        from dataclasses import replace

        self.reconfigure(replace(self.cfg, mode=mode))

    def sync_measured(self, q: np.ndarray) -> None:
        """Take the measured joint state as the starting point while nothing is being commanded
        (so arming starts from where the arm really is)."""
        q = np.asarray(q, dtype=float)
        if q.shape == (len(ALL_JOINTS),) and np.all(np.isfinite(q)) and not self._was_commanding:
            self.q = self.arm.clamp(q)

    # --- operator events -------------------------------------------------------------------------------
    def estop(self, t: float, reason: str = "e-stop") -> None:
        self.sm.estop(t, reason)
        self._stop_commanding()

    def clear_estop(self, t: float) -> bool:
        return self.sm.clear_estop(t)

    def request_manual(self, t: float) -> bool:
        ok = self.sm.request_manual(t)
        if ok:
            self._stop_commanding()
        return ok

    def release_manual(self, t: float) -> bool:
        ok = self.sm.release_manual(t)
        if ok:
            self._stop_commanding()
        return ok

    def manual_command(self, t: float, q: np.ndarray) -> np.ndarray | None:
        """A manual (keyboard) joint command (6,) rad: accepted only in MANUAL, clamped and rate
        limited. Returns the command to send, or None if refused. ValueError for non-finite values."""
        q = np.asarray(q, dtype=float)
        if q.shape != (len(ALL_JOINTS),) or not np.all(np.isfinite(q)):
            raise ValueError(f"manual command must be {len(ALL_JOINTS)} finite joint angles, got {q}")
        if not self.sm.accepts_manual_commands:
            return None
        return self._emit(t, self.arm.clamp(q))

    # --- frames ----------------------------------------------------------------------------------------
    def process(self, frame: HandFrame) -> TeleopOutput:
        hand = frame.world is not None and frame.image is not None
        gesture = self.classifier.update(frame.world if hand else None)
        wrist = None
        if hand and frame.height > 0:
            wrist = (float(frame.image[0, 0]) * frame.width / frame.height, float(frame.image[0, 1]))
        state = self.sm.step(frame.t, gesture, frame.score, wrist)
        out = dict(t=frame.t, state=state, mode=self.cfg.mode, gesture=gesture, command=None,
                   gripper_closed=self.gripper_closed, arming=self.sm.arming_progress(frame.t))
        if state != ArmState.ARMED or gesture == Gesture.NONE:
            if state != ArmState.MANUAL:
                self._stop_commanding()
            return TeleopOutput(**out)
        try:
            signals = hand_signals(frame.image, frame.world, frame.width, frame.height, self.cfg.image_mirrored)
        except ValueError as exc:
            return TeleopOutput(**out, note=f"signals: {exc}")
        self.gripper_closed = gesture == Gesture.PINCH
        desired = self.q.copy()
        target = ik = None
        if self.cfg.mode == "cartesian":
            if self._smoother.value is None:
                self._smoother.reset(self.ik.fk(self.q), frame.t)
            target = self._smoother.update(frame.t, cartesian_target(signals, self.cfg.cartesian))
            desired[4] = self.centre[4] + self.cfg.cartesian.roll_gain * signals.roll
            ik = self.ik.solve(target, self.arm.clamp(desired))
            desired = ik.q
        else:
            if self._smoother.value is None:
                self._smoother.reset(self.q[:5], frame.t)
            desired[:5] = self._smoother.update(frame.t, joint_targets(signals, self.centre, self.cfg.joint))
        desired[5] = self.arm.gripper_closed if self.gripper_closed else self.arm.gripper_open
        cmd = self._emit(frame.t, self.arm.clamp(desired))
        out.update(command=cmd, gripper_closed=self.gripper_closed)
        return TeleopOutput(**out, target=target, ik=ik, signals=signals)

    def _emit(self, t: float, desired: np.ndarray) -> np.ndarray:
        dt = 0.0 if self._t_cmd is None else min(max(t - self._t_cmd, 0.0), self.cfg.max_frame_gap_s)
        if not self._was_commanding:
            dt = min(dt, 1.0 / 30.0) if self._t_cmd is not None else 1.0 / 30.0
        speed = np.array([self.cfg.max_joint_speed] * 5 + [self.cfg.max_gripper_speed])
        self.q = self.arm.clamp(rate_limit(self.q, desired, speed * dt))
        self._t_cmd = t
        self._was_commanding = True
        return self.q.copy()

    def _stop_commanding(self) -> None:
        self._was_commanding = False
        self._smoother.reset()
