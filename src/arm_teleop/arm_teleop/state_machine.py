"""The arm's safety state machine (pure, no rclpy, no clock: every call carries its time).

States and what may command the arm:

| state | meaning | commands accepted |
|---|---|---|
| DISABLED | arm holds still; an open palm held steadily for ``arm_hold_s`` arms it | none |
| ARMED | gesture control | hand (gesture) commands |
| HOLD | the hand was lost while ARMED: keep the last target | none |
| MANUAL | keyboard/manual control took over | manual commands |
| ESTOP | latched software emergency stop | none |

Transitions (``reason`` strings are logged in :attr:`ArmStateMachine.transitions`):

- DISABLED → ARMED: an open palm on every frame for ``arm_hold_s`` with *stable tracking*: hand
  plausible, tracking score ≥ ``min_score``, wrist moving slower than ``arm_max_wrist_speed``
  (image heights per second). Any other frame restarts the count.
- any state but ESTOP → DISABLED on a fist (also from MANUAL: a fist in view always disarms).
- ARMED → HOLD on the first frame without a hand; HOLD → ARMED when it returns (not as a fist);
  HOLD → DISABLED after ``lost_frames_disable`` consecutive frames without a hand.
- DISABLED or ARMED → MANUAL on :meth:`request_manual`; MANUAL → **DISABLED** only
  (:meth:`release_manual`): there is no path from manual control back to gesture control that
  does not pass DISABLED and a fresh arming.
- any state → ESTOP on :meth:`estop` (latched: frames, fists, manual requests and releases are
  ignored). Two-step reset: :meth:`clear_estop` → DISABLED, and then a **fresh** open palm: the
  palm must *begin* after the clear (a palm already held while the stop was cleared must first
  be taken away), then be held for ``arm_hold_s``.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

from arm_teleop.gestures import Gesture


class ArmState(enum.StrEnum):
    DISABLED = "DISABLED"
    ARMED = "ARMED"
    HOLD = "HOLD"
    MANUAL = "MANUAL"
    ESTOP = "ESTOP"


@dataclass(frozen=True)
class StateMachineConfig:
    arm_hold_s: float = 0.5
    min_score: float = 0.5
    arm_max_wrist_speed: float = 0.6  # image heights per second
    lost_frames_disable: int = 15

    def problem(self) -> str | None:
        if not (math.isfinite(self.arm_hold_s) and self.arm_hold_s >= 0):
            return f"arm_hold_s = {self.arm_hold_s} must be ≥ 0"
        if not 0.0 <= self.min_score <= 1.0:
            return f"min_score = {self.min_score} must be in [0, 1]"
        if not self.arm_max_wrist_speed > 0:
            return f"arm_max_wrist_speed = {self.arm_max_wrist_speed} must be > 0"
        if self.lost_frames_disable < 1:
            return f"lost_frames_disable = {self.lost_frames_disable} must be ≥ 1"
        return None


@dataclass(frozen=True)
class Transition:
    t: float
    source: ArmState
    target: ArmState
    reason: str


@dataclass
class ArmStateMachine:
    cfg: StateMachineConfig = field(default_factory=StateMachineConfig)
    state: ArmState = ArmState.DISABLED
    transitions: list[Transition] = field(default_factory=list)

    def __post_init__(self) -> None:
        problem = self.cfg.problem()
        if problem:
            raise ValueError(problem)
        self._palm_since: float | None = None
        self._last_wrist: tuple[float, float, float] | None = None  # (t, x, y)
        self._lost = 0
        self._need_fresh_palm = False
        self.estop_reason = ""

    # --- queries ------------------------------------------------------------------------------------
    @property
    def accepts_gesture_commands(self) -> bool:
        return self.state == ArmState.ARMED

    @property
    def accepts_manual_commands(self) -> bool:
        return self.state == ArmState.MANUAL

    def arming_progress(self, t: float) -> float:
        """0..1: how far the current open palm is towards arming (0 when not arming)."""
        if self.state != ArmState.DISABLED or self._palm_since is None:
            return 0.0
        if self.cfg.arm_hold_s <= 0:
            return 1.0
        return min(1.0, max(0.0, (t - self._palm_since) / self.cfg.arm_hold_s))

    @property
    def waiting_for_fresh_palm(self) -> bool:
        return self._need_fresh_palm

    # --- events -------------------------------------------------------------------------------------
    def _go(self, t: float, target: ArmState, reason: str) -> None:
        if target != self.state:
            self.transitions.append(Transition(t, self.state, target, reason))
            self.state = target
        self._palm_since = None
        self._lost = 0

    def step(self, t: float, gesture: Gesture, score: float = 1.0, wrist: tuple[float, float] | None = None) -> ArmState:
        """One tracker frame at time ``t`` (s, monotonic per stream): its gesture, the tracking
        score (handedness confidence) and the wrist's image position (normalised, y down)."""
        if not math.isfinite(t):
            raise ValueError(f"frame time {t} is not finite")
        stable = self._stable(t, gesture, score, wrist)
        if self.state == ArmState.ESTOP:
            return self.state
        if gesture == Gesture.FIST and self.state != ArmState.DISABLED:
            self._go(t, ArmState.DISABLED, "fist")
            return self.state
        if self.state == ArmState.DISABLED:
            self._step_disabled(t, gesture, stable)
        elif self.state == ArmState.ARMED:
            if gesture == Gesture.NONE:
                self._go(t, ArmState.HOLD, "hand lost")
                self._lost = 1
                if self._lost >= self.cfg.lost_frames_disable:
                    self._go(t, ArmState.DISABLED, f"hand lost for {self._lost} frames")
        elif self.state == ArmState.HOLD:
            if gesture == Gesture.NONE:
                self._lost += 1
                if self._lost >= self.cfg.lost_frames_disable:
                    self._go(t, ArmState.DISABLED, f"hand lost for {self._lost} frames")
            else:
                self._go(t, ArmState.ARMED, "hand back")
        return self.state

    def _stable(self, t: float, gesture: Gesture, score: float, wrist: tuple[float, float] | None) -> bool:
        ok = gesture != Gesture.NONE and math.isfinite(score) and score >= self.cfg.min_score
        if wrist is not None and all(math.isfinite(v) for v in wrist):
            if self._last_wrist is not None and t > self._last_wrist[0]:
                lt, lx, ly = self._last_wrist
                speed = math.hypot(wrist[0] - lx, wrist[1] - ly) / (t - lt)
                ok = ok and speed <= self.cfg.arm_max_wrist_speed
            self._last_wrist = (t, float(wrist[0]), float(wrist[1]))
        else:
            self._last_wrist = None
        return ok

    def _step_disabled(self, t: float, gesture: Gesture, stable: bool) -> None:
        if gesture != Gesture.OPEN_PALM or not stable:
            self._palm_since = None
            if gesture != Gesture.OPEN_PALM:
                self._need_fresh_palm = False  # the palm was taken away: the next one is fresh
            return
        if self._need_fresh_palm:
            return
        if self._palm_since is None:
            self._palm_since = t
        if t - self._palm_since >= self.cfg.arm_hold_s - 1e-9:
            held = t - self._palm_since
            self._go(t, ArmState.ARMED, f"open palm held {held:.2f} s")

    def estop(self, t: float, reason: str = "e-stop") -> None:
        """Latch the e-stop from any state."""
        self.estop_reason = reason
        self._go(t, ArmState.ESTOP, reason)

    def clear_estop(self, t: float) -> bool:
        """First step of the reset: ESTOP → DISABLED (arming then needs a fresh open palm).
        Returns False (nothing changes) when not in ESTOP."""
        if self.state != ArmState.ESTOP:
            return False
        self._go(t, ArmState.DISABLED, "e-stop cleared")
        self._need_fresh_palm = True
        return True

    def request_manual(self, t: float) -> bool:
        """DISABLED/ARMED → MANUAL. False (refused) from HOLD, ESTOP or MANUAL."""
        if self.state not in (ArmState.DISABLED, ArmState.ARMED):
            return False
        self._go(t, ArmState.MANUAL, "manual control requested")
        return True

    def release_manual(self, t: float) -> bool:
        """MANUAL → DISABLED (never straight back to gesture control). False when not MANUAL."""
        if self.state != ArmState.MANUAL:
            return False
        self._go(t, ArmState.DISABLED, "manual control released")
        return True

    def disable(self, t: float, reason: str = "disable requested") -> bool:
        """Operator's disable: any state but ESTOP → DISABLED."""
        if self.state == ArmState.ESTOP:
            return False
        self._go(t, ArmState.DISABLED, reason)
        return True
