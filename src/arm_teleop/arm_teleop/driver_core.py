"""The STS3215 arm driver's logic: opt-in levels, calibration, what may be written. No rclpy.

**Opt-in levels** (two parameters, both false by default):

| real_hardware | allow_motion | level | on the bus |
|---|---|---|---|
| false | any | DRY_RUN | nothing: the port is not even opened; intended writes are returned for logging |
| true | false | READ_ONLY | pings, reads positions, writes **only torque off** (the arm is limp, never driven) |
| true | true | MOTION | torque on (after setting goal = present), goal positions, gripper, shutdown sequence |

Calibration per servo: ``zero_ticks`` (the tick reading at joint angle 0, set per servo because
every horn is mounted a little differently), ``sign`` (+1/−1), 4096 ticks per turn; the gripper's
angle is **pre-clamped** to its calibrated range (the model's ctrlrange, then ticks clamped to
``gripper_min_ticks … gripper_max_ticks``) and written in its own transaction, after the arm joints'
SYNC_WRITE: a wrong gripper value can never ride along with the arm's. Shutdown (MOTION): gripper
open, then torque off on every servo.
"""

from __future__ import annotations

import enum
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from arm_teleop import sts_protocol as p
from arm_teleop.arm_model import ALL_JOINTS
from arm_teleop.bus import DryRunBus

TICKS_PER_RAD = p.TICKS_PER_TURN / (2 * math.pi)
#: Writes the driver keeps for inspection (``intended``/``performed`` rings; the totals are
#: counters): a session at the 30 Hz command rate keeps flat memory (two writes a command).
WRITE_HISTORY = 1000


class OptIn(enum.StrEnum):
    DRY_RUN = "dry_run"
    READ_ONLY = "read_only"
    MOTION = "motion"


def opt_in_level(real_hardware: bool, allow_motion: bool) -> OptIn:
    if not real_hardware:
        return OptIn.DRY_RUN
    return OptIn.MOTION if allow_motion else OptIn.READ_ONLY


@dataclass(frozen=True)
class Calibration:
    """Per-joint bus IDs, zero ticks and signs (ALL_JOINTS order), gripper tick range."""

    ids: tuple[int, ...] = (1, 2, 3, 4, 5, 6)
    zero_ticks: tuple[int, ...] = (2048,) * 6
    signs: tuple[int, ...] = (1,) * 6
    gripper_min_ticks: int = 1900
    gripper_max_ticks: int = 3300

    def problem(self) -> str | None:
        n = len(ALL_JOINTS)
        if not (len(self.ids) == len(self.zero_ticks) == len(self.signs) == n):
            return f"ids, zero_ticks and signs need {n} entries each"
        if len(set(self.ids)) != n or not all(1 <= i <= 252 for i in self.ids):
            return f"ids {self.ids} must be {n} distinct bus IDs 1..252"
        if not all(0 <= z <= p.MAX_TICK for z in self.zero_ticks):
            return f"zero_ticks {self.zero_ticks} must be 0..{p.MAX_TICK}"
        if not all(s in (1, -1) for s in self.signs):
            return f"signs {self.signs} must be +1 or -1"
        if not 0 <= self.gripper_min_ticks < self.gripper_max_ticks <= p.MAX_TICK:
            return "gripper_min_ticks must be below gripper_max_ticks, both 0..4095"
        return None

    def to_ticks(self, q: np.ndarray) -> np.ndarray:
        """(6,) rad → (6,) ticks, clamped to 0..4095 (gripper to its calibrated tick range)."""
        t = np.rint(np.asarray(self.zero_ticks) + np.asarray(self.signs) * np.asarray(q) * TICKS_PER_RAD)
        t = np.clip(t, 0, p.MAX_TICK)
        t[-1] = np.clip(t[-1], self.gripper_min_ticks, self.gripper_max_ticks)
        return t.astype(int)

    def to_rad(self, ticks: np.ndarray) -> np.ndarray:
        return (np.asarray(ticks, dtype=float) - np.asarray(self.zero_ticks)) * np.asarray(self.signs) / TICKS_PER_RAD


class WriteCap:
    """At most ``rate_hz`` command writes a second on average, however fast commands come (a token
    bucket of ``burst`` writes refilled by the elapsed time). No clock of its own: ``now`` is any
    monotonic time in s. ``rate_hz`` is read at every call (a live parameter acts at once);
    ``rate_hz <= 0`` lifts the cap. ``held`` counts writes refused (the caller writes the newest
    command at :meth:`ready_at`: a held command is delayed, never lost).
    """

    def __init__(self, burst: float = 2.0):
        if not burst >= 1.0:
            raise ValueError(f"burst must be >= 1 write, got {burst}")
        self.burst = float(burst)
        self._tokens = self.burst
        self._t: float | None = None
        self.held = 0

    def tokens(self, now: float, rate_hz: float) -> float:
        """Writes available at ``now`` (0..burst)."""
        if rate_hz <= 0:
            return self.burst
        if self._t is None:
            return self._tokens
        return min(self.burst, self._tokens + max(0.0, now - self._t) * rate_hz)

    def ready_at(self, now: float, rate_hz: float) -> float:
        """The earliest time >= ``now`` at which :meth:`take` succeeds (the caller writes a held
        command then, not at its next tick)."""
        available = self.tokens(now, rate_hz)
        if rate_hz <= 0 or available >= 1.0 - 1e-9:
            return now
        return now + (1.0 - available) / rate_hz

    def take(self, now: float, rate_hz: float) -> bool:
        """Spend one write at ``now`` if the cap allows it (True), else count it held (False)."""
        available = self.tokens(now, rate_hz)
        if available < 1.0 - 1e-9:
            self.held += 1
            return False
        self._tokens, self._t = available - 1.0, now
        return True


@dataclass
class Write:
    """One intended or performed bus write (what dry-run logs)."""

    kind: str  # torque | arm_goals | gripper_goal
    ticks: dict[int, int] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.kind} {self.ticks}"


class ArmDriverCore:
    """Drives one bus at one opt-in level. ``bus``: from :func:`arm_teleop.bus.open_bus` (the
    :mod:`arm_teleop.bus` interface; None or any bus in DRY_RUN = a :class:`~arm_teleop.bus.DryRunBus`).
    ``lower``/``upper``: joint limits (gripper = model ctrlrange)."""

    def __init__(self, level: OptIn, calibration: Calibration, lower: np.ndarray, upper: np.ndarray, bus=None,
                 gripper_open: float | None = None):
        problem = calibration.problem()
        if problem:
            raise ValueError(problem)
        if level != OptIn.DRY_RUN and (bus is None or not bus.real):
            raise ValueError(f"{level.value} needs a bus")
        self.level = level
        self.cal = calibration
        self.lower = np.asarray(lower, dtype=float)
        self.upper = np.asarray(upper, dtype=float)
        self.gripper_open = float(self.upper[-1] if gripper_open is None else gripper_open)
        self.bus = bus if level != OptIn.DRY_RUN else DryRunBus(getattr(bus, "port", ""))
        self.torque_on = False
        # the latest writes (rings of WRITE_HISTORY) and their running totals
        self.intended: deque[Write] = deque(maxlen=WRITE_HISTORY)  # DRY_RUN / READ_ONLY: what MOTION would write
        self.performed: deque[Write] = deque(maxlen=WRITE_HISTORY)
        self.intended_total = 0
        self.performed_total = 0
        self.last_error = ""

    # --- lifecycle ---------------------------------------------------------------------------------
    def connect(self) -> dict[int, int]:
        """Open, ping every servo (model numbers), torque off. Returns {id: model}."""
        if not self.bus.real:
            return {}
        self.bus.open()
        models = {sid: self.bus.ping(sid) for sid in self.cal.ids}
        self.torque_off()
        return models

    def enable(self) -> np.ndarray | None:
        """MOTION only: goal = present position (no jump), then torque on. Returns the measured joints."""
        if self.level != OptIn.MOTION:
            return None
        q = self.read()
        ticks = self.cal.to_ticks(q)
        self.bus.sync_write_positions({sid: int(t) for sid, t in zip(self.cal.ids, ticks)})
        for sid in self.cal.ids:
            self.bus.write_byte(sid, p.ADDR_TORQUE_ENABLE, 1)
        self.torque_on = True
        self._performed(Write("torque", {sid: 1 for sid in self.cal.ids}))
        return q

    def torque_off(self) -> None:
        if not self.bus.real:
            return
        for sid in self.cal.ids:
            self.bus.write_byte(sid, p.ADDR_TORQUE_ENABLE, 0)
        self.torque_on = False
        self._performed(Write("torque", {sid: 0 for sid in self.cal.ids}))

    def shutdown(self) -> None:
        """MOTION: open the gripper, then torque off everything. READ_ONLY: torque off. Errors are
        collected in ``last_error`` (every step is still tried)."""
        if not self.bus.real:
            return
        errors = []
        if self.level == OptIn.MOTION and self.torque_on:
            try:
                self._write_gripper(self.gripper_open)
            except Exception as exc:  # noqa: BLE001 - keep going: torque off must still happen
                errors.append(f"gripper open: {exc}")
        try:
            self.torque_off()
        except Exception as exc:  # noqa: BLE001
            errors.append(f"torque off: {exc}")
        self.last_error = "; ".join(errors)
        try:
            self.bus.close()
        except Exception as exc:  # noqa: BLE001
            errors.append(f"close: {exc}")

    # --- commands and state ------------------------------------------------------------------------
    def clamp(self, q: np.ndarray) -> np.ndarray:
        return np.clip(np.asarray(q, dtype=float), self.lower, self.upper)

    def command(self, q: np.ndarray) -> list[Write]:
        """Send (MOTION) or record (DRY_RUN/READ_ONLY) a (6,) joint command in rad: arm joints in
        one SYNC_WRITE, the pre-clamped gripper in a separate write. ValueError for non-finite input."""
        q = np.asarray(q, dtype=float)
        if q.shape != (len(ALL_JOINTS),) or not np.all(np.isfinite(q)):
            raise ValueError(f"command must be {len(ALL_JOINTS)} finite joint angles, got {q}")
        ticks = self.cal.to_ticks(self.clamp(q))
        arm = Write("arm_goals", {sid: int(t) for sid, t in zip(self.cal.ids[:5], ticks[:5])})
        grip = Write("gripper_goal", {self.cal.ids[5]: int(ticks[5])})
        if self.level != OptIn.MOTION or not self.torque_on:
            self.intended.extend((arm, grip))
            self.intended_total += 2
            return [arm, grip]
        self.bus.sync_write_positions(arm.ticks)
        self._write_gripper(q[5])
        self._performed(arm, grip)
        return [arm, grip]

    def _performed(self, *writes: Write) -> None:
        self.performed.extend(writes)
        self.performed_total += len(writes)

    def _write_gripper(self, angle: float) -> None:
        g = float(np.clip(angle, self.lower[-1], self.upper[-1]))
        full = np.zeros(len(ALL_JOINTS))
        full[-1] = g
        tick = int(self.cal.to_ticks(full)[-1])
        self.bus.write_word(self.cal.ids[5], p.ADDR_GOAL_POSITION, p.sign_magnitude_encode(tick))

    def read(self) -> np.ndarray:
        """Measured joints (6,) rad (READ_ONLY/MOTION). BusError from the bus after its retries."""
        ticks = [self.bus.read_position(sid) for sid in self.cal.ids]
        return self.cal.to_rad(np.array(ticks))
