"""ArrivalForecast: the next command's expected and latest expected arrival, on synthetic streams."""

import pytest

from hand_servo_driver.arrivals import ARRIVALS, DELIVERIES, MIN_ARRIVALS, ArrivalForecast


def test_a_stamped_stream_is_expected_at_the_next_stamp_plus_the_median_and_the_slowest_delivery():
    fc = ArrivalForecast()
    offset = 1000.0  # the sender's clock is 1000 s ahead of ours: cancels
    deliveries = [0.004 + 0.001 * (k % 5) for k in range(40)]  # 4..8 ms, median 6 ms
    for k, d in enumerate(deliveries):
        stamp = offset + k / 30.0
        fc.arrived(stamp - offset + d, stamp)
        if k < MIN_ARRIVALS - 1:
            assert fc.expected is None and fc.latest is None
    last_stamp_ours = (len(deliveries) - 1) / 30.0
    assert fc.expected == pytest.approx(last_stamp_ours + 1 / 30.0 + 0.006)
    assert fc.latest == pytest.approx(last_stamp_ours + 1 / 30.0 + 0.008)
    # a slow delivery widens the latest for DELIVERIES commands, not the expected
    k = len(deliveries)
    fc.arrived(k / 30.0 + 0.030, offset + k / 30.0)
    assert fc.latest == pytest.approx(k / 30.0 + 1 / 30.0 + 0.030)
    assert fc.expected == pytest.approx(k / 30.0 + 1 / 30.0 + 0.006)
    for j in range(k + 1, k + 1 + DELIVERIES):
        fc.arrived(j / 30.0 + 0.006, offset + j / 30.0)
    assert fc.latest == pytest.approx(j / 30.0 + 1 / 30.0 + 0.006)


def test_an_unstamped_stream_by_its_arrivals_and_a_switch_starts_over():
    fc = ArrivalForecast()
    for k in range(ARRIVALS):
        fc.arrived(5.0 + k * 0.02 + (0.003 if k == 4 else 0.0), None)  # one late arrival: the median holds
    assert fc.expected == pytest.approx(5.0 + (ARRIVALS - 1) * 0.02 + 0.02)
    assert fc.latest == fc.expected
    fc.arrived(6.0, 100.0)  # stamped now: a new stream
    assert fc.expected is None
    fc.reset()
    assert fc.expected is None and fc.latest is None
