"""The SG90 horn model (hand_servo_driver.horn): exact arrival times from speed and dead band."""

import pytest

from hand_servo_driver.horn import SG90_SPEED_DPS, US_PER_DEG, HornModel


def test_a_horn_arrives_after_distance_over_speed():
    m = HornModel(2, start_us=1500.0)
    speed = SG90_SPEED_DPS * US_PER_DEG  # 6667 us/s
    assert m.command(10.0, [2100, 1500], tag=7) == []  # 600 us = 54 deg: 90 ms at 600 deg/s
    assert m.advance(10.05) == []
    (a,) = m.advance(10.2)
    assert (a.channel, a.pulse_us, a.set_t, a.tag) == (0, 2100.0, 10.0, 7)
    assert a.t == pytest.approx(10.0 + 600.0 / speed) and a.t == pytest.approx(10.09)
    assert m.position == [2100.0, 1500.0]


def test_the_default_rate_limit_against_the_sg90():
    # the driver's 300 deg/s ramp is slower than the horn: a horn half as fast takes twice as long
    fast, slow = HornModel(1, start_us=1000.0), HornModel(1, start_us=1000.0, speed_dps=300.0)
    for m in (fast, slow):
        m.command(0.0, [2000])
    (f,) = fast.advance(1.0)
    (s,) = slow.advance(1.0)
    assert f.t == pytest.approx(1000.0 / (600 * US_PER_DEG)) and s.t == pytest.approx(2 * f.t)


def test_retarget_mid_move_dead_band_and_detach():
    m = HornModel(1, start_us=1000.0)
    m.command(0.0, [2000])
    m.command(0.03, [1100])  # turns back from 1000 + 200 = 1200 us
    assert m.position[0] == pytest.approx(1000.0 + 0.03 * 600 * US_PER_DEG)
    (a,) = m.advance(1.0)
    assert a.pulse_us == 1100.0 and a.set_t == 0.03
    assert a.t == pytest.approx(0.03 + 100.0 / (600 * US_PER_DEG))
    assert m.command(2.0, [1104]) == []  # within the dead band: it does not move
    assert m.position[0] == 1100.0 and m.advance(3.0) == []
    m.command(4.0, [1500])
    m.command(4.01, [None])  # detached mid-move: limp where it is, never arrives
    assert m.advance(9.0) == [] and m.position[0] == pytest.approx(1100.0 + 0.01 * 600 * US_PER_DEG)


def test_unknown_start_and_errors():
    m = HornModel(1)
    (a,) = m.command(5.0, [1234], tag=3)
    assert (a.t, a.pulse_us, a.tag) == (5.0, 1234.0, 3)
    with pytest.raises(ValueError):
        HornModel(1, speed_dps=0.0)
