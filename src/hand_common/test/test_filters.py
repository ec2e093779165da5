"""1€ filter: time-based behaviour, the reference equations, robustness to bad samples."""

import math

import numpy as np
import pytest

from hand_common.filters import OneEuroFilter, OneEuroParams, smoothing_factor


def step_response(rate_hz: float, duration: float, params: OneEuroParams) -> float:
    """Output at ``duration`` s of a 0 → 1 step sampled at ``rate_hz``."""
    f = OneEuroFilter(params)
    f([0.0], 0.0)
    n = int(round(duration * rate_hz))
    y = None
    for k in range(1, n + 1):
        y = f([1.0], k / rate_hz)
    return float(y[0])


def test_first_sample_passes_and_constant_stays_constant():
    f = OneEuroFilter(OneEuroParams(1.0, 0.5, 1.0))
    x = np.array([0.3, 2.0, -1.0])
    np.testing.assert_array_equal(f(x, 10.0), x)
    for k in range(1, 50):
        np.testing.assert_allclose(f(x, 10.0 + k / 30), x, atol=1e-15)


def test_matches_the_reference_low_pass_when_beta_is_zero():
    # beta = 0: a first-order low-pass with alpha = 1 / (1 + tau / dt), tau = 1 / (2 pi fc)
    fc, rate = 1.5, 30.0
    alpha = 1.0 / (1.0 + 1.0 / (2 * math.pi * fc) * rate)
    assert smoothing_factor(1 / rate, fc) == pytest.approx(alpha)
    f = OneEuroFilter(OneEuroParams(fc, 0.0, 1.0))
    f([0.0], 0.0)
    for k in range(1, 20):
        assert f([1.0], k / rate)[0] == pytest.approx(1 - (1 - alpha) ** k, rel=1e-12)


def test_time_based_same_motion_same_output_at_any_frame_rate():
    p = OneEuroParams(1.5, 0.0, 1.0)
    at = {rate: step_response(rate, 0.5, p) for rate in (15.0, 30.0, 60.0, 240.0)}
    continuous = 1 - math.exp(-0.5 * 2 * math.pi * 1.5)
    for rate, y in at.items():
        assert y == pytest.approx(continuous, abs=0.02), (rate, y)
    # a frame-count-based filter (fixed alpha) would differ a lot: 15 Hz vs 240 Hz after 0.5 s
    a = smoothing_factor(1 / 30.0, 1.5)
    assert abs((1 - (1 - a) ** 7.5) - (1 - (1 - a) ** 120)) > 0.1


def test_beta_reduces_lag_on_fast_motion():
    slow = OneEuroFilter(OneEuroParams(1.0, 0.0, 1.0))
    fast = OneEuroFilter(OneEuroParams(1.0, 2.0, 1.0))
    for k in range(31):  # ramp at 3 rad/s for 1 s
        t = k / 30
        a, b = slow([3 * t], t)[0], fast([3 * t], t)[0]
    assert 3.0 - b < 0.5 * (3.0 - a)


def test_output_stays_within_the_inputs_seen():
    """Property: every output is a convex mix of the previous output and the new input, so it
    never leaves the range of the inputs so far (random signals, random time steps)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        p = OneEuroParams(float(rng.uniform(0.05, 20)), float(rng.uniform(0, 50)), float(rng.uniform(0.05, 20)))
        f = OneEuroFilter(p)
        t = 0.0
        lo = np.full(4, np.inf)
        hi = np.full(4, -np.inf)
        for _ in range(60):
            x = rng.uniform(-5, 5, size=4)
            lo, hi = np.minimum(lo, x), np.maximum(hi, x)
            t += float(rng.choice([1e-4, 1 / 30, 0.5, 3.0]))
            y = f(x, t)
            assert np.isfinite(y).all()
            assert (y >= lo - 1e-12).all() and (y <= hi + 1e-12).all()


def test_non_finite_samples_do_not_poison_the_state():
    f = OneEuroFilter(OneEuroParams(2.0, 1.0, 1.0))
    f([1.0, 2.0], 0.0)
    y = f([np.nan, 3.0], 0.1)
    assert y[0] == 1.0 and 2.0 < y[1] < 3.0
    y = f([np.inf, -np.inf], 0.2)
    assert np.isfinite(y).all() and y[0] == 1.0
    y = f([1.5, 3.0], 0.3)
    assert np.isfinite(y).all() and 1.0 < y[0] < 1.5


def test_repeated_time_holds_and_time_going_back_resets():
    f = OneEuroFilter(OneEuroParams(1.0, 0.0, 1.0))
    f([0.0], 5.0)
    y1 = f([1.0], 5.1)
    np.testing.assert_array_equal(f([7.0], 5.1), y1)      # same t: no update
    np.testing.assert_array_equal(f([7.0], 1.0), [7.0])  # back in time (loop): restart
    with pytest.raises(ValueError, match="finite"):
        f([1.0], float("nan"))


def test_params_can_change_live_without_reset():
    f = OneEuroFilter(OneEuroParams(0.1, 0.0, 1.0))
    f([0.0], 0.0)
    y = f([1.0], 1 / 30)[0]
    f.params = OneEuroParams(100.0, 0.0, 1.0)
    y2 = f([1.0], 2 / 30)[0]
    assert y < 0.05 and y2 > 0.9


def test_params_validation_names_the_field():
    with pytest.raises(ValueError, match="min_cutoff"):
        OneEuroParams(0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="d_cutoff"):
        OneEuroParams(1.0, 0.0, float("inf"))
    with pytest.raises(ValueError, match="beta"):
        OneEuroParams(1.0, -1.0, 1.0)
