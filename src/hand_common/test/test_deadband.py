"""The per-finger flexion deadband in front of actuator interfaces (deadband.py)."""

import numpy as np
import pytest

from hand_common.deadband import FlexionDeadband


def test_values_within_tolerance_are_not_resent_per_finger():
    db = FlexionDeadband([0.01, 0.01, 0.0, 0.05, 0.01])
    out, moved = db.offer([0.5, 0.5, 0.5, 0.5, 0.5])
    assert moved.all() and np.array_equal(out, [0.5] * 5)  # the first offer is sent
    out, moved = db.offer([0.505, 0.52, 0.5001, 0.54, 0.5])
    assert moved.tolist() == [False, True, True, False, False]
    np.testing.assert_array_equal(out, [0.5, 0.52, 0.5001, 0.5, 0.5])
    assert db.suppressed == 2  # thumb and ring changed but were held


def test_slow_drift_is_followed_in_steps_never_stalled_and_output_stays_within_tolerance():
    db = FlexionDeadband([0.02] * 5)
    sent = []
    for v in np.linspace(0.2, 0.6, 401):  # 0.001 per call
        out, _ = db.offer([v] * 5)
        assert np.all(np.abs(out - v) <= 0.02 + 1e-12)
        sent.append(out[0])
    steps = np.diff(np.unique(sent))
    assert len(steps) >= 15 and np.all(steps <= 0.0211)
    assert sent[-1] >= 0.58


def test_range_ends_are_exact_and_held_pose_sends_nothing():
    db = FlexionDeadband([0.05] * 5)
    db.offer([0.02] * 5)
    out, moved = db.offer([0.0] * 5)  # the open end (safe pose) always goes out exactly
    assert moved.all() and np.array_equal(out, [0.0] * 5)
    db.offer([0.97] * 5)
    out, moved = db.offer([1.0] * 5)
    assert moved.all() and np.array_equal(out, [1.0] * 5)
    for _ in range(30):  # a held pose: nothing is re-sent
        _, moved = db.offer([1.0] * 5)
        assert not moved.any()
    db.reset()
    assert db.offer([0.3] * 5)[1].all()


@pytest.mark.parametrize("bad", [[0.01] * 0, [-0.1] * 5, [float("nan")] * 5, [1.0] * 5])
def test_bad_tolerances_are_refused(bad):
    with pytest.raises(ValueError, match="deadband"):
        FlexionDeadband(bad)


def test_wrong_length_is_refused():
    with pytest.raises(ValueError, match="expected 5"):
        FlexionDeadband([0.01] * 5).offer([0.2] * 4)
