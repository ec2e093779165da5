"""Command watchdog and real-time pacing (no rclpy; clocks are passed in, so tests drive time).

:class:`CommandWatchdog` decides which flexions the hand follows: the newest command while it is
fresh, the safe pose (open by default, per finger configurable) when no command arrived within
``timeout`` seconds, or before the first one. Age is measured on the *receiver's* monotonic clock
at arrival, not from the message stamp (a replayed bag or another machine's clock would make
stamps meaningless for staleness); the stamp is carried along for latency measurements.

:class:`RealTimePacer` says how many physics steps are due so that simulated time keeps up with
the wall clock (at most one step ahead), and measures the real-time factor.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from hand_common.contract import FINGER_NAMES


class WatchdogState(StrEnum):
    WAITING = "waiting"  # no command received yet: safe pose
    OK = "ok"  # following a fresh command
    TIMED_OUT = "timed_out"  # newest command older than the timeout: safe pose


@dataclass(frozen=True)
class Command:
    """A validated flexion command. flexions: (5,) in FINGER_NAMES order, [0, 1].
    received: receiver monotonic time (s); stamp: the message header stamp (s since epoch of its
    clock, e.g. camera capture time); received_wall: the receiver's wall clock read just *before*
    ``received`` (s since the epoch; nan if not known), so ``received_wall + timeout`` is never later
    than the trip as the wall clock sees it (for reports and tests that compare with wall stamps)."""

    flexions: np.ndarray
    received: float
    stamp: float
    received_wall: float = math.nan


@dataclass(frozen=True)
class Decision:
    """What to apply now. ``command`` is the followed command (None when in the safe pose);
    ``changed`` is True on the first decision in a new state (for logging); ``age`` is the age of
    the newest command (s, inf if none)."""

    flexions: np.ndarray
    state: WatchdogState
    changed: bool
    age: float
    command: Command | None

    @property
    def urgent(self) -> bool | np.ndarray:
        """Whether the goal is a safe pose (moved to faster, see TwinSim.set_flexions)."""
        return self.state is not WatchdogState.OK


def validate_flexions(values, what: str = "flexions") -> np.ndarray:
    """(5,) finite floats in [0, 1] or ValueError naming the problem."""
    a = np.asarray(values, dtype=float)
    if a.shape != (len(FINGER_NAMES),):
        raise ValueError(f"{what}: expected {len(FINGER_NAMES)} values ({', '.join(FINGER_NAMES)}), got {a.size}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: non-finite value in {a.tolist()}")
    if np.any((a < 0.0) | (a > 1.0)):
        raise ValueError(f"{what}: value outside [0, 1] in {a.tolist()}")
    return a


class CommandWatchdog:
    """Newest-command holder with a staleness timeout. Not thread-safe (caller locks)."""

    def __init__(self, timeout: float, safe_flexions=None):
        self.set_timeout(timeout)
        self.set_safe_flexions(np.zeros(len(FINGER_NAMES)) if safe_flexions is None else safe_flexions)
        self.last: Command | None = None
        self.state = WatchdogState.WAITING
        self._reported: WatchdogState | None = None

    def set_timeout(self, timeout: float) -> None:
        if not (math.isfinite(timeout) and timeout > 0.0):
            raise ValueError(f"command_timeout must be a positive number of seconds, got {timeout}")
        self.timeout = float(timeout)

    def set_safe_flexions(self, flexions) -> None:
        self.safe = validate_flexions(flexions, "safe_flexions")

    def feed(self, command: Command) -> None:
        """Store a validated command (newest wins; an older ``received`` time is ignored)."""
        if self.last is None or command.received >= self.last.received:
            self.last = command

    def age(self, now: float) -> float:
        return math.inf if self.last is None else max(0.0, now - self.last.received)

    def deadline(self, after: float = -math.inf) -> float | None:
        """Receiver time (s) at which the newest command goes stale, if later than ``after``
        (None: before the first command, or that time is not later)."""
        if self.last is None:
            return None
        t = self.last.received + self.timeout
        return t if t > after else None

    def decide(self, now: float) -> Decision:
        age = self.age(now)
        if self.last is None:
            state = WatchdogState.WAITING
        elif age > self.timeout:
            state = WatchdogState.TIMED_OUT
        else:
            state = WatchdogState.OK
        self.state = state
        changed = state != self._reported
        self._reported = state
        if state is WatchdogState.OK:
            return Decision(self.last.flexions, state, changed, age, self.last)
        return Decision(self.safe, state, changed, age, None)


@dataclass(frozen=True)
class HandsDecision(Decision):
    """A decision for several hands: ``flexions`` = 5 per hand, hand by hand; ``state`` = the
    worst hand's (TIMED_OUT > WAITING > OK); ``per_hand`` = each hand's own decision, so a safe
    pose is urgent for that hand's fingers only."""

    per_hand: tuple[Decision, ...] = ()

    @property
    def urgent(self) -> np.ndarray:
        return np.repeat([d.state is not WatchdogState.OK for d in self.per_hand], len(FINGER_NAMES))


class HandsWatchdog:
    """One :class:`CommandWatchdog` per hand (same timeout and safe pose): a hand whose commands stop
    goes to the safe pose on its own, the others keep following theirs. Same interface as
    CommandWatchdog, with ``feed(command, hand)``. Not thread-safe (caller locks)."""

    _ORDER = (WatchdogState.OK, WatchdogState.WAITING, WatchdogState.TIMED_OUT)

    def __init__(self, timeout: float, safe_flexions=None, hands: int = 2):
        if hands < 1:
            raise ValueError(f"hands must be >= 1, got {hands}")
        self.hands = [CommandWatchdog(timeout, safe_flexions) for _ in range(hands)]
        self.state = WatchdogState.WAITING
        self._reported: WatchdogState | None = None

    @property
    def timeout(self) -> float:
        return self.hands[0].timeout

    @property
    def safe(self) -> np.ndarray:
        return self.hands[0].safe

    @property
    def last(self) -> Command | None:
        cmds = [w.last for w in self.hands if w.last is not None]
        return max(cmds, key=lambda c: c.received) if cmds else None

    def set_timeout(self, timeout: float) -> None:
        for w in self.hands:
            w.set_timeout(timeout)

    def set_safe_flexions(self, flexions) -> None:
        for w in self.hands:
            w.set_safe_flexions(flexions)

    def feed(self, command: Command, hand: int = 0) -> None:
        """Store a validated command of hand ``hand`` (5 flexions)."""
        self.hands[hand].feed(command)

    def age(self, now: float) -> float:
        """Age of the stalest hand's newest command (inf if a hand never got one)."""
        return max(w.age(now) for w in self.hands)

    def deadline(self, after: float = -math.inf) -> float | None:
        """The earliest time (s) later than ``after`` at which a hand's newest command goes stale
        (None: none)."""
        times = [d for d in (w.deadline(after) for w in self.hands) if d is not None]
        return min(times) if times else None

    def decide(self, now: float) -> HandsDecision:
        per = tuple(w.decide(now) for w in self.hands)
        state = max((d.state for d in per), key=self._ORDER.index)
        self.state = state
        changed = any(d.changed for d in per) or state != self._reported
        self._reported = state
        newest = [d.command for d in per if d.command is not None]
        return HandsDecision(np.concatenate([d.flexions for d in per]), state, changed,
                             max(d.age for d in per), newest[0] if newest else None, per)


class RealTimePacer:
    """Counts physics steps against the wall clock.

    ``due(now)`` = steps needed so that ``steps · dt ≥ now − start`` (simulation at most one step
    ahead of the wall clock), limited to ``max_lag`` seconds of catch-up: if the physics fell
    further behind (machine suspended, debugger), the excess is dropped and counted in
    ``dropped_time`` instead of stepping in a burst.
    """

    def __init__(self, dt: float, max_lag: float = 0.1, window: float = 2.0):
        if dt <= 0:
            raise ValueError("timestep must be positive")
        self.dt = dt
        self.max_lag = max_lag
        self.window = window
        self.start: float | None = None
        self.steps = 0
        self.dropped_time = 0.0
        self._samples: deque[tuple[float, float]] = deque()

    def begin(self, now: float) -> None:
        self.start = now
        self.steps = 0
        self.dropped_time = 0.0
        self._samples.clear()
        self._samples.append((now, 0.0))

    def due(self, now: float) -> int:
        if self.start is None:
            self.begin(now)
        target = math.ceil((now - self.start - self.dropped_time) / self.dt - 1e-9)
        n = target - self.steps
        max_steps = max(1, int(round(self.max_lag / self.dt)))
        if n > max_steps:
            self.dropped_time += (n - max_steps) * self.dt
            n = max_steps
        return max(0, n)

    def done(self, n: int, now: float) -> None:
        """Record ``n`` steps completed at wall time ``now``."""
        self.steps += n
        self._samples.append((now, self.steps * self.dt))
        while len(self._samples) > 2 and now - self._samples[0][0] > self.window:
            self._samples.popleft()

    def next_due(self) -> float:
        """Wall time at which the next step becomes due."""
        return (self.start or 0.0) + self.dropped_time + self.steps * self.dt

    def real_time_factor(self) -> float:
        """Simulated / wall time over the last ``window`` seconds (nan before two samples)."""
        if len(self._samples) < 2:
            return float("nan")
        (w0, s0), (w1, s1) = self._samples[0], self._samples[-1]
        return (s1 - s0) / (w1 - w0) if w1 > w0 else float("nan")

    def total_real_time_factor(self) -> float:
        """Simulated / wall time from ``begin`` to the last completed steps (dropped catch-up counts
        as lost). ≥ 1 exactly when the physics never fell behind the wall clock."""
        if self.start is None or not self._samples or self._samples[-1][0] <= self.start:
            return float("nan")
        return self.steps * self.dt / (self._samples[-1][0] - self.start)
