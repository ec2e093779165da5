"""When the next command should arrive: the servo driver's forecast for placing its ramp frames. No rclpy.

A camera stamps its frames at a steady period, and each command reaches the driver some delivery
time later (arrival − stamp on the driver's clock: the pipeline's latency plus the clocks' constant
offset, which cancels). From the last :data:`ARRIVALS` followed commands (at least
:data:`MIN_ARRIVALS`) and the deliveries of the last :data:`DELIVERIES`, the next command is
*expected* at the next stamp (the last + the median
stamp period) + the median delivery, and at the *latest* at the next stamp + the slowest delivery.
Unstamped commands: the next arrival at the last + the median arrival period, for both.
"""

from __future__ import annotations

from collections import deque

import numpy as np

#: Followed commands whose median stamp (unstamped: arrival) period predicts the next one.
ARRIVALS = 9
#: The fewest followed commands of a stream that give a forecast (3 periods): a stream starting (a
#: hand appearing) is placed after 4 commands, not 9 (0.6 s at 15 fps).
MIN_ARRIVALS = 4
#: Followed stamped commands whose median and slowest delivery (arrival − stamp) place the next one.
DELIVERIES = 30
#: How long after its latest expected arrival (s) the next command still finds no ramp frame holding
#: it (the deferred ramp frame goes then).
YIELD_JITTER_S = 0.002


class ArrivalForecast:
    """See the module docstring. Times in s: ``now`` on the driver's clock, stamps on the sender's."""

    def __init__(self) -> None:
        self._keys: deque[float] = deque(maxlen=ARRIVALS)  # stamps (unstamped: arrival times)
        self._deliveries: deque[float] = deque(maxlen=DELIVERIES)  # now − stamp of the stamped ones
        self._stamped: bool | None = None
        #: the next command's expected and latest expected arrival (driver's clock), None = no forecast
        self.expected: float | None = None
        self.latest: float | None = None

    def reset(self) -> None:
        """Forget every arrival (a new stream, or the stamps' time base moved)."""
        self._keys.clear()
        self._deliveries.clear()
        self._stamped = None
        self.expected = self.latest = None

    def arrived(self, now: float, stamp_s: float | None) -> None:
        """A command followed at ``now``, captured at ``stamp_s`` (None: unstamped). A stream that
        changes between stamped and unstamped starts over."""
        stamped = stamp_s is not None
        if stamped != self._stamped:
            self.reset()
            self._stamped = stamped
        key = stamp_s if stamp_s is not None else now
        self._keys.append(key)
        if stamp_s is not None:
            self._deliveries.append(now - stamp_s)
        if len(self._keys) < MIN_ARRIVALS:
            self.expected = self.latest = None
            return
        due = key + float(np.median(np.diff(self._keys)))
        deliveries = self._deliveries if stamped else (0.0,)
        self.expected = due + float(np.median(deliveries))
        self.latest = due + max(deliveries)
