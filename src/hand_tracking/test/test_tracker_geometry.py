"""Geometry core: known angles come back, bad landmarks never give NaN or out-of-range values.

Randomised property tests use numpy's seeded RNG (hypothesis is not in the pinned set)."""

import math
import warnings

import numpy as np
import pytest

from hand_common.contract import FINGER_NAMES, JOINT_NAMES
from hand_tracking.geometry import (
    BONES,
    JOINT_TRIPLETS,
    LANDMARK_NAMES,
    MIN_WINDOW_RAD,
    Windows,
    check_skeleton,
    finger_curls,
    flexion,
    image_points,
    joint_angles,
    random_rotation,
    synthetic_hand,
)
from hand_tracking.tracker_core import default_finger_windows, default_joint_windows

RNG_SEED = 20240611
N_CASES = 300


def random_angles(rng, lo=0.35, hi=math.pi):
    return rng.uniform(lo, hi, size=15)


def test_tables_follow_the_contract():
    assert len(LANDMARK_NAMES) == 21 and LANDMARK_NAMES[0] == "wrist"
    assert LANDMARK_NAMES[8] == "index_tip" and LANDMARK_NAMES[17] == "pinky_mcp"
    assert len(JOINT_TRIPLETS) == len(JOINT_NAMES) == 15
    # the joint of each triplet is the landmark that names it (thumb_cmc = 1, index_pip = 6, ...)
    for (_, j, _), name in zip(JOINT_TRIPLETS, JOINT_NAMES):
        assert LANDMARK_NAMES[j] == name
    # MCP/CMC angles use the wrist in place of the metacarpal base
    assert [tuple(t) for t in JOINT_TRIPLETS[[0, 3]]] == [(0, 1, 2), (0, 5, 6)]
    assert len(BONES) == 20


def test_straight_planar_hand_reads_pi():
    pts = synthetic_hand(np.full(15, math.pi))
    np.testing.assert_allclose(joint_angles(pts), math.pi, atol=1e-9)


def test_synthetic_hands_posed_with_known_angles_give_them_back():
    rng = np.random.default_rng(RNG_SEED)
    for _ in range(N_CASES):
        truth = random_angles(rng)
        pts = synthetic_hand(truth, rng=rng, rotation=random_rotation(rng),
                             translation=rng.normal(size=3), scale=float(rng.uniform(0.1, 1000.0)))
        got = joint_angles(pts)
        np.testing.assert_allclose(got, truth, atol=1e-9)
        np.testing.assert_allclose(finger_curls(got), truth.reshape(5, 3).mean(axis=1), atol=1e-9)


def test_batched_angles_equal_per_hand_angles():
    rng = np.random.default_rng(RNG_SEED + 1)
    batch = np.stack([synthetic_hand(random_angles(rng), rng=rng) for _ in range(7)])
    got = joint_angles(batch.reshape(7, 21, 3))
    assert got.shape == (7, 15)
    for k in range(7):
        np.testing.assert_array_equal(got[k], joint_angles(batch[k]))


def test_right_angles_are_exact():
    angles = np.full(15, math.pi / 2)
    np.testing.assert_allclose(joint_angles(synthetic_hand(angles)), math.pi / 2, atol=1e-12)


def test_image_points_scale_by_pixels_so_aspect_does_not_bend_angles():
    rng = np.random.default_rng(RNG_SEED + 2)
    truth = random_angles(rng)
    # a hand seen from the side: its fingers curl in the image (x-y) plane; flatten it onto z = 0
    side = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
    world = synthetic_hand(truth, rotation=side, translation=(0.5, 0.5, 0.0), scale=2.0)
    world[:, 2] = 0.0
    planar_truth = joint_angles(world)
    w, h = 1280, 720
    normalised = world / np.array([w, h, w])
    np.testing.assert_allclose(joint_angles(image_points(normalised, w, h)), planar_truth, atol=1e-9)
    # ignoring the aspect ratio would distort them
    assert np.abs(joint_angles(normalised) - planar_truth).max() > 0.01
    with pytest.raises(ValueError, match="positive"):
        image_points(normalised, 0, 720)


def test_flexion_window_mapping():
    s, c = 2.8, 1.6
    got = flexion([2.8, 1.6, 2.2, 3.1, 0.5, np.nan, np.inf, -np.inf], s, c)
    np.testing.assert_allclose(got, [0.0, 1.0, 0.5, 0.0, 1.0, 0.0, 0.0, 0.0])
    # degenerate windows never divide by zero
    assert flexion(2.0, 1.0, 1.0) == 0.0
    assert flexion(2.0, 1.0, 2.0) == 0.0


def test_windows_validate_and_name_the_finger():
    w = default_finger_windows()
    assert w.names == FINGER_NAMES
    with pytest.raises(ValueError, match="index"):
        w.replace("index", curled=w.straight[1] - MIN_WINDOW_RAD / 2)
    with pytest.raises(ValueError, match=r"ring: straight angle 4\.000 rad outside"):
        w.replace("ring", straight=4.0)
    with pytest.raises(ValueError, match="pinky: non-finite"):
        w.replace("pinky", curled=float("nan"))
    with pytest.raises(ValueError, match="5 straight"):
        Windows(FINGER_NAMES, (2.0,) * 4, (1.0,) * 5)
    ok = w.replace("index", straight=2.0, curled=2.0 - MIN_WINDOW_RAD)
    assert ok.curled[1] == pytest.approx(2.0 - MIN_WINDOW_RAD)
    np.testing.assert_allclose(ok.flexions([2.0, 2.0, 2.0, 2.0, 2.0])[1], 0.0)


def _bad_hands(rng):
    """Randomised broken skeletons: NaN/inf coordinates, duplicate landmarks, collapsed hands."""
    base = synthetic_hand(random_angles(rng), rng=rng, rotation=random_rotation(rng))
    kind = rng.integers(6)
    pts = base.copy()
    if kind == 0:      # NaN / inf in random coordinates
        k = rng.integers(1, 10)
        pts.flat[rng.choice(63, k, replace=False)] = rng.choice([np.nan, np.inf, -np.inf], k)
    elif kind == 1:    # duplicate landmarks (zero-length bones)
        for _ in range(rng.integers(1, 6)):
            a, b = BONES[rng.integers(20)]
            pts[b] = pts[a]
    elif kind == 2:    # random landmarks duplicated onto random others
        idx = rng.choice(21, rng.integers(2, 21), replace=False)
        pts[idx] = pts[idx[0]]
    elif kind == 3:    # everything at one point
        pts[:] = rng.normal(size=3)
    elif kind == 4:    # huge and tiny coordinates mixed
        pts *= rng.choice([1e-300, 1e300], size=(21, 1))
    else:              # a whole finger collapsed onto its base, plus a NaN elsewhere
        b = [1, 5, 9, 13, 17][rng.integers(5)]
        pts[b:b + 4] = pts[b]
        pts[rng.integers(21), rng.integers(3)] = np.nan
    return pts


def test_bad_landmarks_never_give_nan_or_out_of_range_values():
    rng = np.random.default_rng(RNG_SEED + 3)
    fw, jw = default_finger_windows(), default_joint_windows()
    for _ in range(N_CASES):
        pts = _bad_hands(rng)
        with warnings.catch_warnings():  # no floating-point warning escapes either
            warnings.simplefilter("error")
            a = joint_angles(pts)
            f = fw.flexions(finger_curls(a))
            j = jw.flexions(a)
        assert np.isfinite(a).all() and (a >= 0).all() and (a <= math.pi).all()
        for v in (f, j):
            assert np.isfinite(v).all() and (v >= 0).all() and (v <= 1).all()


def test_bad_skeletons_are_named():
    rng = np.random.default_rng(RNG_SEED + 4)
    good = synthetic_hand(random_angles(rng))
    assert check_skeleton(good) is None
    p = good.copy()
    p[8, 1] = np.nan
    assert check_skeleton(p) == "non-finite landmark(s): index_tip"
    p = good.copy()
    p[7] = p[6]
    assert check_skeleton(p) == "zero-length bone(s): index_pip-index_dip"
    p = good.copy()
    p[17] = p[5]
    assert "collapsed palm" in check_skeleton(p)
    assert "collapsed palm" in check_skeleton(np.zeros((21, 3)))
    assert "shape" in check_skeleton(np.zeros((20, 3)))
    for _ in range(N_CASES):
        bad = _bad_hands(rng)
        with np.errstate(all="ignore"):
            zero_bone = np.any(np.linalg.norm(bad[BONES[:, 1]] - bad[BONES[:, 0]], axis=1) == 0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            problem = check_skeleton(bad)
        if not np.isfinite(bad).all() or zero_bone:
            assert problem is not None


def test_random_plausible_hands_pass_the_skeleton_check():
    rng = np.random.default_rng(RNG_SEED + 5)
    for _ in range(N_CASES):
        pts = synthetic_hand(random_angles(rng), rng=rng, rotation=random_rotation(rng),
                             scale=float(rng.uniform(0.01, 100)))
        assert check_skeleton(pts) is None


def test_shape_errors_are_clear():
    with pytest.raises(ValueError, match=r"\(\.\.\., 21, 3\)"):
        joint_angles(np.zeros((20, 3)))
    with pytest.raises(ValueError, match="15"):
        finger_curls(np.zeros(14))
    with pytest.raises(ValueError, match="15 joint angles"):
        synthetic_hand(np.zeros(5))
