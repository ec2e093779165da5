"""The command stream's quality over a window (pure): a degraded link while commands still arrive
is named — delay jitter by the excess transit, loss (reliable resends, head-of-line blocking) by
arrival gaps and late refusals — and a clean stream is not; the window forgets. Synthetic links
on a synthetic clock, seeded: exact."""

import math

import numpy as np
import pytest

from hand_common.contract import FINGER_NAMES
from hand_servo_driver.calibration import ServoCalibration
from hand_servo_driver.command_quality import FOLLOWED, LATE, CommandQuality
from hand_servo_driver.core import DriverConfig, DriverCore, ServoSettings

HZ = 30.0
CLOCK_OFFSET = -2.0  # the operator's clock 2 s behind: nothing may depend on it


def core() -> DriverCore:
    servos = tuple(ServoSettings(ServoCalibration(n, i)) for i, n in enumerate(FINGER_NAMES))
    c = DriverCore(DriverConfig(servos=servos, command_timeout_s=0.15), expect_acks=False)
    c.activate()
    return c


def feed(c: DriverCore, deliveries: list[tuple[float, float]]) -> None:
    """(capture time, arrival time) on the robot's clock, in arrival order."""
    for cap, arr in sorted(deliveries, key=lambda d: d[1]):
        v = 0.5 + 0.3 * math.sin(cap)
        c.command(dict.fromkeys(FINGER_NAMES, v), arr, cap + CLOCK_OFFSET, arr)


def captures(t0: float, seconds: float) -> np.ndarray:
    return t0 + np.arange(int(seconds * HZ)) / HZ


def clean(t0: float, seconds: float, rng) -> list[tuple[float, float]]:
    return [(c, c + 0.005 + rng.uniform(0.0, 0.010)) for c in captures(t0, seconds)]


def test_a_clean_stream_is_not_degraded():
    c, rng = core(), np.random.default_rng(1)
    feed(c, clean(0.0, 3.0, rng))
    q = c.quality.summary(3.0)
    assert q.problem is None, q
    assert q.followed == q.arrivals == 60 and q.late == q.out_of_order == q.gaps_over == 0
    assert q.excess_p95 < 0.011


def test_delay_jitter_is_named_by_the_excess_transit():
    c, rng = core(), np.random.default_rng(2)
    feed(c, clean(0.0, 2.0, rng))  # the fastest delivery is known
    feed(c, [(cap, cap + 0.1 + rng.uniform(-0.05, 0.05)) for cap in captures(2.0, 2.0)])  # 100 ms ± 50 ms
    q = c.quality.summary(4.1)
    assert q.problem is not None and "excess transit p95" in q.problem, q
    assert 0.08 < q.excess_p95 < 0.15  # 100 ms ± 50 over the 5-15 ms transit of the clean stream (base ~5 ms)
    assert q.out_of_order > 0  # jitter of ± 50 ms at 33 ms periods reorders; those are refused
    assert c.stats.commands_late == 0  # none beyond command_timeout_s: still followed


def test_loss_with_reliable_resends_is_named_by_arrival_gaps_and_late_refusals():
    """20 % of the samples lost once, resent 120-200 ms later; reliable in-order delivery holds every
    later sample behind the resend (head-of-line): gaps, then bunches, the oldest refused as late."""
    c, rng = core(), np.random.default_rng(3)
    feed(c, clean(0.0, 2.0, rng))
    deliveries, blocked_until = [], -math.inf
    for cap in captures(2.0, 3.0):
        arr = cap + 0.005 + rng.uniform(0.0, 0.010)
        if rng.uniform() < 0.2:
            arr += rng.uniform(0.12, 0.2)
        arr = max(arr, blocked_until)
        blocked_until = arr
        deliveries.append((cap, arr))
    feed(c, deliveries)
    q = c.quality.summary(5.1)
    assert q.problem is not None and "arrival gaps" in q.problem, q
    assert q.gaps_over >= 2 and q.max_gap > 0.1
    assert q.late > 0 and "refused late" in q.problem  # the resends whose delay exceeded 150 ms


def test_the_window_forgets_a_degraded_stretch():
    c, rng = core(), np.random.default_rng(4)
    feed(c, clean(0.0, 2.0, rng))
    feed(c, [(cap, cap + 0.1 + rng.uniform(-0.05, 0.05)) for cap in captures(2.0, 1.0)])
    assert c.quality.summary(3.1).problem is not None
    feed(c, clean(3.2, 2.5, rng))
    q = c.quality.summary(5.7)
    assert q.problem is None, q
    c.activate()  # a new activation: a new stream
    assert c.quality.summary(5.7).arrivals == 0


def test_window_figures_exact():
    q = CommandQuality(window_s=1.0, excess_warn_s=0.05, gap_warn_s=0.1, gaps_warn=2, min_followed=3)
    for t, ex in ((0.0, 0.01), (0.05, 0.02), (0.2, 0.06), (0.35, 0.07), (0.4, 0.08)):
        q.record(t, FOLLOWED, ex)
    s = q.summary(0.4)
    assert (s.arrivals, s.followed, s.gaps_over) == (5, 5, 2)
    assert s.max_gap == pytest.approx(0.15) and s.excess_p95 == pytest.approx(0.08)
    assert s.problem == ("command stream degraded over the last 1 s: excess transit p95 80 ms > 50 ms; "
                         "2 arrival gaps > 100 ms (largest 150 ms)")
    q.record(1.3, LATE, 0.3)  # 0.0-0.2 fall out of the window; the 0.9 s gap from 0.4 counts
    s = q.summary(1.3)
    assert (s.arrivals, s.late, s.gaps_over) == (3, 1, 1)
    assert s.problem == "command stream degraded over the last 1 s: 1 refused late, 0 out of order"
    assert q.summary(2.5).arrivals == 0 and q.summary(2.5).problem is None
    with pytest.raises(ValueError):
        q.record(3.0, "lost")
