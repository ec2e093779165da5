"""Pure modules: flexion → pulse maps, the rate limiter and the deadband."""

import math

import numpy as np
import pytest

from hand_servo_driver.calibration import CalibrationError, ServoCalibration, check_channels
from hand_servo_driver.motion import Deadband, RateLimiter


def test_linear_map_and_inversion():
    c = ServoCalibration("index", 1)  # SG90 conservative defaults
    assert (c.min_us, c.max_us) == (1000, 2000)
    assert [c.pulse_us(f) for f in (0.0, 0.25, 1.0)] == [1000.0, 1250.0, 2000.0]
    inv = ServoCalibration("thumb", 0, 600, 2400, inverted=True)
    assert [inv.pulse_us(f) for f in (0.0, 0.5, 1.0)] == [2400.0, 1500.0, 600.0]
    for f in np.linspace(0, 1, 11):
        assert inv.flexion(inv.pulse_us(f)) == pytest.approx(f)


def test_piecewise_curve():
    c = ServoCalibration("ring", 3, map_flexion=(0.0, 0.2, 1.0), map_fraction=(0.0, 0.0, 1.0))  # slack first
    assert c.pulse_us(0.1) == 1000.0
    assert c.pulse_us(0.6) == pytest.approx(1500.0)
    assert c.flexion(1500.0) == pytest.approx(0.6)
    assert c.flexion(1000.0) == 0.0  # the flat start maps back to its smallest flexion


@pytest.mark.parametrize("kw, match", [
    ({"min_us": 2000, "max_us": 1000}, "min_us"),
    ({"min_us": 400}, "min_us"),
    ({"max_us": 2600}, "max_us"),
    ({"channel": 16}, "channel"),
    ({"map_flexion": (0.0, 0.7, 0.5, 1.0), "map_fraction": (0, 0.1, 0.2, 1)}, "rise strictly"),
    ({"map_flexion": (0.1, 1.0)}, "rise strictly"),
    ({"map_fraction": (0.0, 1.2)}, "non-decreasing"),
    ({"map_fraction": (1.0, 0.0)}, "non-decreasing"),
    ({"map_fraction": (0.0, 0.5, 1.0)}, "same length"),
    ({"map_fraction": (0.0, math.nan)}, "non-finite"),
])
def test_calibration_rejects_bad_values(kw, match):
    with pytest.raises(CalibrationError, match=match):
        ServoCalibration(**{"name": "pinky", "channel": 4, **kw})


def test_flexion_outside_range_raises():
    c = ServoCalibration("index", 1)
    for bad in (-0.01, 1.01, math.nan, math.inf):
        with pytest.raises(ValueError, match="outside"):
            c.pulse_us(bad)


def test_duplicate_channels():
    with pytest.raises(CalibrationError, match="both use channel 2"):
        check_channels([ServoCalibration("a", 2), ServoCalibration("b", 2)])


def test_rate_limiter_bounds_every_step_and_converges_exactly():
    lim = RateLimiter([100.0, 1000.0], [0.0, 0.0], max_dt=0.1)
    out = [lim.step([50.0, 50.0], 0.02) for _ in range(30)]
    steps = np.diff(np.vstack([[0.0, 0.0]] + out), axis=0)
    assert np.all(steps[:, 0] <= 2.0 + 1e-12) and np.all(steps[:, 1] <= 20.0 + 1e-12)
    assert out[-1].tolist() == [50.0, 50.0]
    assert out[2].tolist() == [6.0, 50.0]
    # a late call moves at most rate · max_dt
    lim.reset([0.0, 0.0])
    assert lim.step([50.0, -50.0], 5.0).tolist() == [10.0, -50.0]
    assert lim.step([50.0, -50.0], -1.0).tolist() == [10.0, -50.0]  # time never runs backwards
    with pytest.raises(ValueError):
        RateLimiter([0.0], [0.0])
    with pytest.raises(ValueError):
        RateLimiter([1.0, 1.0], [0.0])


def test_deadband_latches_per_channel():
    db = Deadband([5.0, 0.0])
    assert db.update([100.0, 100.0]).tolist() == [100.0, 100.0]
    assert db.update([104.9, 100.5]).tolist() == [100.0, 100.5]
    assert db.update([95.0, 100.5]).tolist() == [95.0, 100.5]
    # a slow drift is followed in steps of the deadband, never lost
    vals = [db.update([95.0 - 0.5 * k, 0.0])[0] for k in range(1, 25)]
    assert vals[-1] == pytest.approx(85.0) and len(set(vals)) == 3
    db.reset()
    assert db.update([1.0, 1.0]).tolist() == [1.0, 1.0]
    with pytest.raises(ValueError):
        Deadband([-1.0])
