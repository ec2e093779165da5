"""Safety filter properties (limits, step/velocity/acceleration caps for any input, NaN holds) and
the finger-crossing clamp (abductions only, flexions untouched)."""

import math

import numpy as np
import pytest

from hand_description import dex
from hand_retarget.safety import CrossingClamp, SafetyFilter, SafetyLimits, finger_geometry

DT = 0.01
TOL = 1e-9


@pytest.fixture(scope="module")
def desc():
    return dex.load()


@pytest.fixture(scope="module")
def clamp(desc):
    return CrossingClamp(finger_geometry(desc))


def nasty_targets(desc, rng, n):
    """Random targets: in range, far out of range, huge, NaN/inf entries, None, wrong length, steps."""
    lo, hi = desc.lower, desc.upper
    out = []
    for _ in range(n):
        kind = rng.integers(0, 8)
        if kind == 0:
            out.append(rng.uniform(lo, hi))
        elif kind == 1:
            out.append(rng.uniform(lo - 3, hi + 3))
        elif kind == 2:
            out.append(rng.choice([-1e9, 1e9], size=lo.size))
        elif kind == 3:
            t = rng.uniform(lo, hi)
            t[rng.integers(0, lo.size)] = rng.choice([np.nan, np.inf, -np.inf])
            out.append(t)
        elif kind == 4:
            out.append(None)
        elif kind == 5:
            out.append(np.zeros(lo.size + 1))
        elif kind == 6:  # hold a random target for a while (lets the filter reach velocity limits)
            t = rng.uniform(lo, hi)
            out.extend([t] * int(rng.integers(2, 30)))
        else:
            out.append(np.full(lo.size, np.nan))
    return out


def check_caps(lim, qs, dt):
    qs = np.array(qs)
    assert np.all(np.isfinite(qs))
    assert np.all(qs >= lim.lower - TOL) and np.all(qs <= lim.upper + TOL)
    dq = np.diff(qs, axis=0)
    assert np.abs(dq).max() <= lim.max_step + 1e-9
    v = dq / dt
    assert np.abs(v).max() <= lim.max_velocity + 1e-6
    acc = np.diff(np.vstack([np.zeros(qs.shape[1]), v]), axis=0) / dt
    assert np.abs(acc).max() <= lim.max_acceleration * (1 + 1e-6) + 1e-6


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("crossing", [False, True])
def test_any_input_stays_within_limits_and_caps(desc, clamp, seed, crossing):
    rng = np.random.default_rng(seed)
    lim = SafetyLimits(desc.lower, desc.upper, max_velocity=6.0, max_acceleration=300.0, max_step=0.05)
    f = SafetyFilter(lim, np.zeros(20), clamp if crossing else None)
    qs = [f.q.copy()]
    for t in nasty_targets(desc, rng, 400):
        qs.append(f.step(t, DT))
    check_caps(lim, qs, DT)
    assert f.rejected > 0


def test_in_range_targets_are_reached_and_nan_holds_the_last_safe_command(desc):
    lim = SafetyLimits(desc.lower, desc.upper, 10.0, 500.0, 0.1)
    f = SafetyFilter(lim, np.zeros(20))
    goal = 0.5 * (desc.lower + desc.upper)
    for _ in range(200):
        q = f.step(goal, DT)
    assert np.allclose(q, goal, atol=1e-9)          # reached exactly, at rest
    held = q.copy()
    for bad in (np.full(20, np.nan), None, np.r_[goal[:19], np.inf], goal[:5]):
        assert np.array_equal(f.step(bad, DT), held)  # at rest, a bad input holds exactly
    assert f.held and f.rejected == 4
    # moving: NaN brakes within the caps and settles back on the command it had when NaN came
    f.reset(np.zeros(20))
    qs = [f.q.copy()]
    for _ in range(8):
        qs.append(f.step(desc.upper, DT))
    at_nan = f.q.copy()
    for _ in range(100):
        qs.append(f.step(np.full(20, np.nan), DT))
    check_caps(lim, qs, DT)
    assert np.allclose(qs[-1], at_nan, atol=1e-6)
    assert np.abs(np.array(qs[9:]) - at_nan).max() < 0.1   # braking overshoot bounded by v^2 / 2a


def test_goals_beyond_the_limits_stop_at_the_limits_without_overshoot(desc):
    lim = SafetyLimits(desc.lower, desc.upper, 10.0, 200.0, 0.1)
    f = SafetyFilter(lim, np.zeros(20))
    qs = [f.q.copy()]
    for k in range(300):
        qs.append(f.step(desc.upper + 5.0 if (k // 100) % 2 == 0 else desc.lower - 5.0, DT))
    check_caps(lim, qs, DT)
    qs = np.array(qs)
    assert np.allclose(qs[100], desc.upper) and np.allclose(qs[200], desc.lower)


def test_limits_are_validated():
    with pytest.raises(ValueError, match="lower < upper"):
        SafetyLimits(np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="max_velocity"):
        SafetyLimits(np.zeros(2), np.ones(2), max_velocity=float("nan"))
    f = SafetyFilter(SafetyLimits(np.zeros(2), np.ones(2)))
    with pytest.raises(ValueError, match="dt"):
        f.step(np.zeros(2), 0.0)


# --- finger crossing ---------------------------------------------------------------------------

def idx(desc, name):
    return desc.joint_names.index(name)


def test_open_hand_and_a_straight_spread_do_not_cross(desc, clamp):
    assert clamp.violations(np.zeros(20)) == []
    q = np.zeros(20)
    for f, a in (("index", 0.3), ("middle", 0.1), ("ring", -0.1), ("pinky", -0.3)):
        q[idx(desc, f"{f}_mcp_abd")] = a                       # fingers spread apart
    assert clamp.violations(q) == []
    assert np.array_equal(clamp.clamp(q, desc.lower, desc.upper), q)


def test_converging_abductions_are_clamped_and_flexions_left_free(desc, clamp):
    rng = np.random.default_rng(7)
    for _ in range(200):
        q = rng.uniform(desc.lower, desc.upper)
        for f in ("index", "middle", "ring", "pinky"):
            q[idx(desc, f"{f}_mcp")] = rng.uniform(-0.17, 0.6)   # proximal phalanges mostly in the palm plane
        out = clamp.clamp(q, desc.lower, desc.upper)
        assert clamp.violations(out, tol=1e-5) == []
        changed = np.nonzero(out != q)[0]
        assert set(changed) <= {idx(desc, f"{f}_mcp_abd") for f in ("index", "middle", "ring", "pinky")}
        assert np.all(out >= desc.lower - TOL) and np.all(out <= desc.upper + TOL)
        if not clamp.violations(q):
            assert np.array_equal(out, q)                          # nothing to do, nothing done


def test_index_swung_onto_the_middle_finger_is_pushed_back(desc, clamp):
    q = np.zeros(20)
    q[idx(desc, "index_mcp_abd")] = math.radians(-20)            # index swings ulnar ...
    q[idx(desc, "middle_mcp_abd")] = math.radians(20)            # ... middle radial: they would cross
    q[idx(desc, "index_pip")] = 1.0
    assert clamp.violations(q) == ["index-middle"]
    out = clamp.clamp(q, desc.lower, desc.upper)
    assert clamp.violations(out) == []
    assert out[idx(desc, "index_mcp_abd")] > q[idx(desc, "index_mcp_abd")]
    assert out[idx(desc, "middle_mcp_abd")] < q[idx(desc, "middle_mcp_abd")]
    assert out[idx(desc, "index_pip")] == 1.0
    # a flexed finger is short in the palm plane: the same abductions no longer cross
    q[idx(desc, "index_mcp")] = q[idx(desc, "middle_mcp")] = math.radians(90)
    assert clamp.violations(q) == []


def test_filter_outputs_never_cross_when_targets_do(desc, clamp):
    lim = SafetyLimits(desc.lower, desc.upper, 10.0, 500.0, 0.1)
    f = SafetyFilter(lim, np.zeros(20), clamp)
    rng = np.random.default_rng(11)
    qs = [f.q.copy()]
    for _ in range(60):
        t = np.zeros(20)
        for name in ("index", "middle", "ring", "pinky"):
            t[idx(desc, f"{name}_mcp_abd")] = rng.uniform(-0.35, 0.35)
        for _ in range(5):
            qs.append(f.step(t, DT))
            assert clamp.violations(qs[-1], tol=1e-5) == []
    check_caps(lim, qs, DT)
