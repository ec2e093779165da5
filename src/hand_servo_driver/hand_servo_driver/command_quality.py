"""How well the commands are arriving, over a sliding window. No rclpy.

A degraded link (packet loss, delay jitter, reordering) rarely stops the commands: reliable DDS
resends a lost sample late, a jittery link delivers in bunches, and the driver keeps following
whatever arrives in time, so its stale check says nothing. :class:`CommandQuality` watches the
arrivals themselves over the last ``window_s`` seconds (our monotonic clock, no comparison of the
two hosts' clocks) and names what is wrong:

- commands **refused** as late or out of order (a resend or a sample queued behind a stall);
- the **excess transit** (``command_age.CommandAge``: delivery time beyond the fastest seen, the
  clock offset cancelled) of the commands followed: its 95th percentile above ``excess_warn_s``
  (40 ms: twice the ~20 ms a clean link shows on this loaded 2-core machine) means they arrive
  that much older than the link can deliver them (delay jitter; reordering, which reliable
  in-order delivery turns into samples held behind a late one);
- **arrival gaps** longer than ``gap_warn_s`` between two commands (lost samples, bunching),
  ``gaps_warn`` or more of them in the window. A single pause of the operator is not a degraded
  link; a pause longer than ``command_timeout_s`` is the stale check's (the safe pose).

The window forgets: once the link is clean again for ``window_s`` the warning ends.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

#: What a command that reached the driver while active became.
FOLLOWED, LATE, OUT_OF_ORDER = "followed", "late", "out_of_order"


@dataclass(frozen=True)
class QualitySummary:
    """The window's figures (times in s; ``excess_p95`` nan when no stamped command was followed)."""

    arrivals: int
    followed: int
    late: int
    out_of_order: int
    gaps_over: int
    max_gap: float
    excess_p95: float
    problem: str | None  #: why the stream is degraded (a WARN), None when it is not


class CommandQuality:
    """See the module docstring. ``record`` every command that arrived while active, in arrival
    order; ``summary(now)`` reads the window ending at ``now``."""

    def __init__(self, window_s: float = 2.0, excess_warn_s: float = 0.04, gap_warn_s: float = 0.1,
                 gaps_warn: int = 2, min_followed: int = 5):
        if not (window_s > 0 and excess_warn_s > 0 and gap_warn_s > 0 and gaps_warn >= 1):
            raise ValueError("window_s, excess_warn_s, gap_warn_s must be > 0 and gaps_warn >= 1")
        self.window_s = float(window_s)
        self.excess_warn_s = float(excess_warn_s)
        self.gap_warn_s = float(gap_warn_s)
        self.gaps_warn = int(gaps_warn)
        self.min_followed = int(min_followed)
        #: (arrival mono s, outcome, excess s or nan, gap to the previous arrival s or nan)
        self._events: deque[tuple[float, str, float, float]] = deque()
        self._last: float | None = None

    def reset(self) -> None:
        """Forget everything (activation: a new stream)."""
        self._events.clear()
        self._last = None

    def record(self, mono: float, outcome: str, excess: float | None = None) -> None:
        """One command arrived at ``mono`` (s) and was ``outcome``; ``excess``: its excess transit (s),
        None when unstamped."""
        if outcome not in (FOLLOWED, LATE, OUT_OF_ORDER):
            raise ValueError(f"unknown outcome {outcome!r}")
        gap = math.nan if self._last is None else mono - self._last
        self._last = mono
        self._events.append((mono, outcome, math.nan if excess is None else float(excess), gap))
        self._trim(mono)

    def _trim(self, now: float) -> None:
        while self._events and now - self._events[0][0] > self.window_s:
            self._events.popleft()

    def summary(self, now: float) -> QualitySummary:
        self._trim(now)
        ev = list(self._events)
        late = sum(1 for e in ev if e[1] == LATE)
        ooo = sum(1 for e in ev if e[1] == OUT_OF_ORDER)
        followed = [e for e in ev if e[1] == FOLLOWED]
        # a gap counts when both of its commands are in the window (the first one's gap reaches before it)
        gaps = [e[3] for e in ev[1:] if math.isfinite(e[3])]
        over = [g for g in gaps if g > self.gap_warn_s]
        excess = sorted(e[2] for e in followed if math.isfinite(e[2]))
        p95 = excess[min(len(excess) - 1, math.ceil(0.95 * len(excess)) - 1)] if excess else math.nan
        why = []
        if late or ooo:
            why.append(f"{late} refused late, {ooo} out of order")
        if len(excess) >= self.min_followed and p95 > self.excess_warn_s:
            why.append(f"excess transit p95 {p95 * 1e3:.0f} ms > {self.excess_warn_s * 1e3:.0f} ms")
        if len(over) >= self.gaps_warn:
            why.append(f"{len(over)} arrival gaps > {self.gap_warn_s * 1e3:.0f} ms (largest {max(over) * 1e3:.0f} ms)")
        problem = (f"command stream degraded over the last {self.window_s:g} s: " + "; ".join(why)) if why else None
        return QualitySummary(arrivals=len(ev), followed=len(followed), late=late, out_of_order=ooo,
                              gaps_over=len(over), max_gap=max(gaps, default=math.nan), excess_p95=p95,
                              problem=problem)
