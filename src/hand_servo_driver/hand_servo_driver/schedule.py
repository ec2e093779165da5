"""The servo driver node's timing without ROS: when :class:`core.DriverCore` is stepped. No rclpy, no I/O.

``driver_node`` steps its core on three occasions, and :func:`drive` replays the same on a synthetic
clock (the pacing tests, ``bench_servo``'s horn figures):

1. a fresh command followed (its frame goes at once when due);
2. the one-shot wake at :meth:`DriverCore.next_frame_at` (a held command, a ramp frame: when due,
   not on a tick phase); a wake that would not be after the step that set it is not armed
   (nothing is due that the step did not send);
3. the control tick every ``tick_s`` (heartbeats, the stale check; it sends a frame only if due).

A timer may fire late (``late()``, s >= 0, asked once per firing: an executor's latency); never
early.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping

from hand_servo_driver.core import DriverCore

#: (arrival s on the core's clock, {finger: flexion}, capture stamp s or None)
Command = tuple[float, Mapping[str, float], float | None]


def drive(core: DriverCore, commands: Iterable[Command], tick_s: float, t_end: float,
          tick_phase_s: float = 0.0, late: Callable[[], float] | None = None) -> Iterator[tuple[float, list[bytes]]]:
    """Step ``core`` for ``commands`` (in arrival order; the core's ``command`` gets the arrival
    as both ``now`` and ``arrival_s``), its wakes and ticks at ``tick_phase_s + k·tick_s`` (k >= 0)
    until ``t_end`` (s). Yields ``(t, frames)`` for every step that built frames, in time order;
    the caller writes them (and may feed the board's replies to the core) before the next step.
    At equal times a wake comes before a command, a command before a tick."""
    delay = late or (lambda: 0.0)
    pending = iter(commands)
    nxt = next(pending, None)
    k = 0  # the tick's index: ROS timers keep their phase, a late firing does not shift the next
    tick = tick_phase_s + delay()
    wake = math.inf
    while True:
        arrival = nxt[0] if nxt is not None else math.inf
        t = min(wake, arrival, tick)
        if t > t_end:
            return
        if t == wake or t == tick:
            frames = core.step(t)
            if t != wake:
                k += 1
                tick = max(tick_phase_s + k * tick_s + delay(), t)
        else:
            _, flexions, stamp = nxt
            frames = core.step(t) if core.command(flexions, t, stamp, t if stamp is not None else None) else []
            nxt = next(pending, None)
        if frames:
            yield t, frames
        due = core.next_frame_at()  # the node re-arms its one-shot after every step
        wake = due + delay() if due is not None and due > t else math.inf
