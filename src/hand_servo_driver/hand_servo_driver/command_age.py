"""How late a flexion command arrived, from its capture stamp, without synchronised clocks. No rclpy."""

from __future__ import annotations

import math

#: The longest a command can plausibly have waited in our own process (s) between its reception
#: and its callback (an executor stall; the issue-27 campaign's were 0.2-0.5 s). A reception stamp
#: that says longer is not on our system clock (an rmw reporting the sender's time or another clock,
#: our clock stepped forward in between): ignored, the callback time is the arrival. Dropping it is
#: safe: a stamped command that really waited longer is still refused late by its capture stamp
#: (once the stream set its transit base, see CommandAge).
RECEPTION_WAIT_MAX_S = 1.0


def reception_usable(clock_now_s: float, received_ns: int | None) -> bool:
    """The middleware gave a reception stamp (ns) at most :data:`RECEPTION_WAIT_MAX_S` before
    ``clock_now_s`` (s, the system clock read in the callback); one "in the future" is usable
    (counted as now, see :func:`reception_times`)."""
    return bool(received_ns) and received_ns > 0 and clock_now_s - received_ns * 1e-9 <= RECEPTION_WAIT_MAX_S


def reception_times(mono_now: float, clock_now_s: float, received_ns: int | None) -> tuple[float, float]:
    """When a command arrived: ``(arrival_s, received_mono)``, on the stamps' clock (ROS time = the
    system clock, s) and on our monotonic clock (s), from the middleware's reception timestamp.

    ``received_ns``: rmw's ``received_timestamp`` (ns, the system clock: Fast DDS's reception
    time; rclpy passes it in the MessageInfo of a two-argument subscription callback), 0/None when
    the middleware does not provide it. ``mono_now`` and ``clock_now_s``: both clocks read now, in
    the callback. The time the command waited in our process (``clock_now_s - received``, an
    executor backlog) is taken off both; a reception stamp "in the future" (our system clock
    stepped back in between) counts as now. Without a usable reception stamp (none, or one
    further back than :data:`RECEPTION_WAIT_MAX_S`: :func:`reception_usable`) the callback time is
    the arrival."""
    if not reception_usable(clock_now_s, received_ns):
        return float(clock_now_s), float(mono_now)
    waited = max(0.0, float(clock_now_s) - received_ns * 1e-9)
    return float(clock_now_s) - waited, float(mono_now) - waited


class CommandAge:
    """How late a command arrived, judged from its capture stamp without synchronised clocks.

    ``transit = arrival − stamp`` (arrival on our clock in the stamps' time base — ROS time —,
    the stamp on the sender's clock) is the true delivery time plus the offset between the two
    clocks. The offset is unknown but constant, so the *excess* transit over the fastest delivery
    seen (``base``) is the command's extra age, whatever the offset: a ±2 s offset changes
    nothing; a command queued behind a stall or a dead link arrives with its delay as excess.
    ``base`` rises by ``drift`` s per s (clock rates differ by ppm; a base stuck low would
    slowly age every command) and drops to any smaller transit. A sender clock *stepped back*
    raises every transit at once: when every command for ``rebase_s`` was late by about the same
    excess (within ``spread_s``) while arriving steadily (gaps under ``spread_s``) *and at the pace
    it was stamped* (at least ``paced_fraction`` of consecutive late commands arrived within
    ``pace_tol_s`` of their stamps' spacing), that is a clock step, not a delay, and the base takes
    the new transit (counted in :attr:`rebases`). A burst replayed after a stall arrives in a
    moment, not steadily for seconds, and stays refused; so does a lossy reliable link, whose
    retransmissions hold the commands behind a lost one and then deliver them together (a 20 %
    loss phase of the two-host test was taken for a clock step before the pace condition).
    Times in seconds; ``mono`` is our monotonic clock. Arrival means the middleware's reception
    (:func:`reception_times`), not the callback: a steady backlog of our own executor would
    otherwise raise every transit alike and look like a sender clock stepped back.
    """

    def __init__(self, drift: float = 1e-3, rebase_s: float = 2.0, spread_s: float = 0.15,
                 pace_tol_s: float = 0.02, paced_fraction: float = 0.75):
        self.drift = float(drift)
        self.rebase_s = float(rebase_s)
        self.spread_s = float(spread_s)
        self.pace_tol_s = float(pace_tol_s)
        self.paced_fraction = float(paced_fraction)
        self._late_prev: tuple[float, float] | None = None  # (stamp, mono) of the run's last late command
        self._late_pairs = self._late_paced = 0
        self.base: float | None = None
        self._base_t = 0.0
        self._late_since: float | None = None
        self._late_last = 0.0
        self._late_lo = self._late_hi = 0.0
        self.rebases = 0

    def reset(self) -> None:
        self.base = None
        self._late_since = None

    def excess(self, stamp_s: float, arrival_s: float, mono: float, limit_s: float = math.inf) -> float:
        """The command's age beyond the fastest delivery seen (s, >= 0). ``limit_s``: the age
        above which the caller refuses it (feeds the clock-step detection)."""
        transit = float(arrival_s) - float(stamp_s)
        if self.base is None:
            self.base = transit
        else:
            self.base += self.drift * max(0.0, mono - self._base_t)
            self.base = min(self.base, transit)
        self._base_t = mono
        ex = transit - self.base
        if ex <= limit_s:
            self._late_since = None
            return ex
        if (self._late_since is None or mono - self._late_last > self.spread_s
                or max(self._late_hi, ex) - min(self._late_lo, ex) > self.spread_s):
            self._late_since, self._late_lo, self._late_hi = mono, ex, ex
            self._late_prev, self._late_pairs, self._late_paced = None, 0, 0
        if self._late_prev is not None:
            self._late_pairs += 1
            prev_stamp, prev_mono = self._late_prev
            self._late_paced += abs((mono - prev_mono) - (float(stamp_s) - prev_stamp)) <= self.pace_tol_s
        self._late_prev = (float(stamp_s), mono)
        self._late_last = mono
        self._late_lo, self._late_hi = min(self._late_lo, ex), max(self._late_hi, ex)
        if (mono - self._late_since >= self.rebase_s and self._late_pairs > 0
                and self._late_paced >= self.paced_fraction * self._late_pairs):
            self.base = transit
            self.rebases += 1
            self._late_since = None
            return 0.0
        return ex

