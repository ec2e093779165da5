"""Gesture classifier: rotation-robust extension, fist, pinch hysteresis, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from arm_teleop.gestures import Gesture, GestureClassifier, GestureConfig, hand_features
from hand_tracking.geometry import random_rotation, synthetic_hand

OPEN = np.full(15, math.pi - 0.15)
FIST = np.array([2.3, 2.3, 2.3] + [1.4, 1.2, 1.6] * 4)
# index curled only (4 digits extended: still an open palm), and two fingers curled (other)
ONE_CURLED = OPEN.copy()
ONE_CURLED[3:6] = [1.5, 1.4, 1.7]
TWO_CURLED = ONE_CURLED.copy()
TWO_CURLED[6:9] = [1.5, 1.4, 1.7]


@pytest.mark.parametrize("angles, expected", [(OPEN, Gesture.OPEN_PALM), (FIST, Gesture.FIST),
                                              (ONE_CURLED, Gesture.OPEN_PALM), (TWO_CURLED, Gesture.OTHER)])
def test_gestures_do_not_depend_on_hand_rotation_scale_or_position(angles, expected):
    rng = np.random.default_rng(3)
    for _ in range(50):
        pts = synthetic_hand(angles, rotation=random_rotation(rng), translation=rng.normal(0, 0.3, 3),
                             scale=rng.uniform(0.7, 1.4))
        assert GestureClassifier().update(pts) == expected


def test_upside_down_open_hand_is_open():
    """A rule on image y order (tip above PIP) calls an upside-down open hand a fist; angles do not."""
    flip = np.diag([1.0, -1.0, -1.0])
    assert GestureClassifier().update(synthetic_hand(OPEN, rotation=flip)) == Gesture.OPEN_PALM


def _with_pinch(ratio: float) -> np.ndarray:
    """Open hand whose thumb tip sits at `ratio` palm lengths from the index tip."""
    p = synthetic_hand(OPEN)
    palm = np.linalg.norm(p[9] - p[0])
    direction = np.array([1.0, 0.0, 0.0])
    p[4] = p[8] + ratio * palm * direction
    return p


def test_pinch_hysteresis_closes_low_and_opens_high():
    cfg = GestureConfig(pinch_close=0.28, pinch_open=0.45)
    c = GestureClassifier(cfg)
    seq = [0.60, 0.35, 0.30, 0.25, 0.32, 0.40, 0.44, 0.46, 0.35, 0.30, 0.27]
    got = [c.update(_with_pinch(r)) == Gesture.PINCH for r in seq]
    assert got == [False, False, False, True, True, True, True, False, False, False, True]
    assert hand_features(_with_pinch(0.25), cfg).pinch_ratio == pytest.approx(0.25, abs=1e-9)


def test_a_hand_closing_into_a_fist_is_not_a_pinch():
    p = synthetic_hand(TWO_CURLED.copy() * 0 + np.concatenate([OPEN[:6], [1.5, 1.4, 1.7] * 3]))
    palm = np.linalg.norm(p[9] - p[0])
    p[4] = p[8] + 0.1 * palm * np.array([1.0, 0, 0])
    c = GestureClassifier(GestureConfig(pinch_min_other_extended=2))
    assert c.update(p) != Gesture.PINCH
    assert GestureClassifier(GestureConfig(pinch_min_other_extended=0)).update(p) == Gesture.PINCH


def test_fist_releases_a_held_pinch():
    c = GestureClassifier()
    assert c.update(_with_pinch(0.2)) == Gesture.PINCH
    assert c.update(synthetic_hand(FIST)) == Gesture.FIST
    assert c.update(_with_pinch(0.35)) != Gesture.PINCH  # must close again below 0.28


@pytest.mark.parametrize("bad, reason", [
    (np.full((21, 3), np.nan), "non-finite"),
    (np.zeros((21, 3)), "collapsed palm"),
])
def test_implausible_hands_are_none_with_the_reason(bad, reason):
    c = GestureClassifier()
    c.update(_with_pinch(0.2))
    assert c.update(bad) == Gesture.NONE
    assert reason in c.last_error
    assert not c.pinched and c.update(None) == Gesture.NONE


@pytest.mark.parametrize("cfg, message", [
    (GestureConfig(pinch_close=0.5, pinch_open=0.4), "below pinch_open"),
    (GestureConfig(finger_extended_angle=4.0), "finger_extended_angle"),
    (GestureConfig(open_min_extended=0), "open_min_extended"),
])
def test_bad_configuration_is_refused(cfg, message):
    with pytest.raises(ValueError, match=message):
        GestureClassifier(cfg)
