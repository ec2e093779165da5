"""Flexions → Gazebo joint commands for one hand, with a per-finger deadband and a stale → safe pose
watchdog. No rclpy.

Each digit of the Gazebo hand is driven from its proximal joint (MCP, thumb CMC); the world's
mimic constraints move the two distal joints at the same fraction of their ranges
(``hand_gazebo.world``). A flexion ``f`` (0 open … 1 closed) therefore becomes the proximal joint
angle ``f · upper`` (rad), ``upper`` = that joint's upper limit in the URDF.

:class:`HandCommander` decides what to send:

- a command passes the per-finger deadband (:class:`hand_common.deadband.FlexionDeadband`):
  only fingers whose flexion moved beyond the tolerance from the value last sent are sent again
  (exact 0 and 1 always go out); a held pose sends nothing;
- when no command arrived for ``command_timeout`` s (the operator hand was lost: the tracker stops
  publishing its flexions), the safe pose (``safe_flexions``, default open) is sent once;
- nothing is sent before the first command (Gazebo starts the hands open).

Times are seconds of a monotonic clock the caller passes in (tests drive it).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from hand_common.contract import FINGER_JOINTS, FINGER_NAMES
from hand_common.deadband import FlexionDeadband

#: The driven joint of each digit (proximal), in FINGER_NAMES order.
DRIVEN_JOINTS: tuple[str, ...] = tuple(FINGER_JOINTS[f][0] for f in FINGER_NAMES)


def proximal_limits(urdf_text: str) -> tuple[float, ...]:
    """Upper limits (rad) of :data:`DRIVEN_JOINTS` from a URDF; ValueError naming a missing joint
    or a limit that does not run from 0 to a positive upper value."""
    root = ET.fromstring(urdf_text)
    found = {j.get("name"): j for j in root.iter("joint")}
    out = []
    for name in DRIVEN_JOINTS:
        j = found.get(name)
        lim = j.find("limit") if j is not None else None
        if lim is None:
            raise ValueError(f"URDF has no revolute joint '{name}' with a <limit>")
        lo, hi = float(lim.get("lower", "nan")), float(lim.get("upper", "nan"))
        if not (lo == 0.0 and math.isfinite(hi) and hi > 0.0):
            raise ValueError(f"joint '{name}' limits [{lo}, {hi}] do not run from 0 (open) to a positive closed angle")
        out.append(hi)
    return tuple(out)


@dataclass(frozen=True)
class CommanderConfig:
    """upper: proximal joint upper limits (rad, FINGER_NAMES order). deadband: per finger, flexion
    units in [0, 1). command_timeout: s. safe_flexions: the pose sent when commands go stale."""

    upper: tuple[float, ...]
    deadband: tuple[float, ...] = (0.005,) * 5
    command_timeout: float = 0.15
    safe_flexions: tuple[float, ...] = field(default=(0.0,) * 5)

    def __post_init__(self) -> None:
        n = len(FINGER_NAMES)
        if len(self.upper) != n or not all(math.isfinite(u) and u > 0 for u in self.upper):
            raise ValueError(f"upper needs {n} positive joint limits, got {self.upper}")
        FlexionDeadband.check(self.deadband)
        if len(self.deadband) != n:
            raise ValueError(f"deadband needs {n} values, got {len(self.deadband)}")
        if not (math.isfinite(self.command_timeout) and self.command_timeout > 0):
            raise ValueError(f"command_timeout must be > 0 s, got {self.command_timeout}")
        if len(self.safe_flexions) != n or not all(math.isfinite(v) and 0 <= v <= 1 for v in self.safe_flexions):
            raise ValueError(f"safe_flexions needs {n} flexions in [0, 1], got {self.safe_flexions}")


class HandCommander:
    """What to send to one Gazebo hand (see module docstring). Not thread-safe (caller locks)."""

    def __init__(self, config: CommanderConfig):
        self.config = config
        self.deadband = FlexionDeadband(config.deadband)
        self.last_command: float | None = None
        self.stale = False
        self.sent = 0  # joint commands sent

    def _angles(self, flexions: np.ndarray, moved: np.ndarray) -> list[tuple[int, float]]:
        out = [(i, float(flexions[i] * self.config.upper[i])) for i in np.flatnonzero(moved)]
        self.sent += len(out)
        return out

    def command(self, flexions: Sequence[float], now: float) -> list[tuple[int, float]]:
        """A validated flexion command (5, in [0, 1]) at time ``now``; returns [(finger index,
        proximal joint angle rad)] to send now (empty for a held pose)."""
        self.last_command = now
        self.stale = False
        values, moved = self.deadband.offer(np.asarray(flexions, float))
        return self._angles(values, moved)

    def tick(self, now: float) -> list[tuple[int, float]]:
        """Watchdog, called periodically: the safe pose once when commands went stale."""
        if self.last_command is None or self.stale or now - self.last_command <= self.config.command_timeout:
            return []
        self.stale = True
        values, moved = self.deadband.offer(np.asarray(self.config.safe_flexions, float))
        return self._angles(values, moved)

    def safe_pose(self) -> list[tuple[int, float]]:
        """Every finger to the safe pose now (deactivation, shutdown), whatever was sent before."""
        self.deadband.reset()
        values, moved = self.deadband.offer(np.asarray(self.config.safe_flexions, float))
        return self._angles(values, moved)
