"""Names every frame source shares: the clock type and the two errors.

Kept apart from :mod:`hand_tracking.sources` so that :mod:`hand_tracking.replay` (whose bag source
``sources.open_frame_source`` opens) can use them without importing ``sources`` (no import cycle).
``sources`` re-exports all three.
"""

from __future__ import annotations

from collections.abc import Callable

Clock = Callable[[], float]
"""A clock: returns seconds (wall clock, ROS clock or a test's fake)."""


class SourceError(RuntimeError):
    """The source cannot be opened or stopped delivering frames (actionable message)."""


class FrameError(RuntimeError):
    """One frame could not be read or decoded; the source continues with the next one."""
