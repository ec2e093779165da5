"""Names every frame source shares: the clock type, the two errors and the playback-rate check.

Kept apart from :mod:`hand_tracking.sources` so that :mod:`hand_tracking.replay` (whose bag source
``sources.open_frame_source`` opens) can use them without importing ``sources`` (no import cycle).
``sources`` re-exports them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

Clock = Callable[[], float]
"""A clock: returns seconds (wall clock, ROS clock or a test's fake)."""


class SourceError(RuntimeError):
    """The source cannot be opened or stopped delivering frames (actionable message)."""


class FrameError(RuntimeError):
    """One frame could not be read or decoded; the source continues with the next one."""


def check_playback_rate(rate: float) -> float:
    """``rate`` as a float if it is a valid playback rate (finite, > 0); ValueError otherwise."""
    r = float(rate)
    if not math.isfinite(r) or r <= 0.0:
        raise ValueError(f"playback_rate must be a positive number (1.0 = the recording's pace), got {rate}")
    return r
