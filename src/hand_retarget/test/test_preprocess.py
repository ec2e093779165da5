"""Preprocessing: canonical palm frame, chirality/mirror, bone-length calibration, rejection."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from hand_description import dex
from hand_retarget.preprocess import (
    BoneCalibrator,
    PreprocessConfig,
    Preprocessor,
    bone_lengths,
    check_skeleton,
    palm_frame,
    rebuild,
    should_mirror,
)


@pytest.fixture(scope="module")
def desc():
    return dex.load()


def camera_view(points, seed):
    """The same hand seen from an arbitrary pose (rotation + translation), as MediaPipe world landmarks."""
    rot = Rotation.random(random_state=seed).as_matrix()
    return points @ rot.T + np.random.default_rng(seed).normal(0.0, 0.2, 3)


def raw_config(**kw):
    return PreprocessConfig(filter_min_cutoff=0.0, calibration_time=0.0, scale=1.0, **kw)


def test_palm_frame_axes(desc):
    lm = desc.landmarks()
    r = palm_frame(lm)
    assert np.allclose(r.T @ r, np.eye(3), atol=1e-12) and np.linalg.det(r) == pytest.approx(1.0)
    x, y, z = r.T
    assert np.dot(x, lm[17] - lm[5]) > 0.95 * np.linalg.norm(lm[17] - lm[5])   # index MCP -> little MCP
    assert np.dot(y, 0.5 * (lm[5] + lm[17])) > 0                                  # wrist -> MCPs
    assert z[0] < -0.99   # right hand: the normal x × y points dorsal (-x of the robot palm)
    with pytest.raises(ValueError, match="degenerate"):
        palm_frame(np.zeros((21, 3)))


@pytest.mark.parametrize("seed", range(5))
def test_a_right_hand_comes_back_in_the_robot_palm_frame(desc, seed):
    q = desc.couple(np.random.default_rng(seed).uniform(desc.lower, desc.upper))
    lm = desc.landmarks(q)
    pre = Preprocessor(desc.landmarks(), raw_config())
    res = pre.process(camera_view(lm, seed), "right", 0.0)
    assert res.ok and not res.mirrored
    assert np.allclose(res.landmarks, lm, atol=1e-9) and np.allclose(res.raw, lm, atol=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_either_operator_hand_drives_the_same_robot_hand(desc, seed):
    q = desc.couple(np.random.default_rng(seed).uniform(desc.lower, desc.upper))
    lm = desc.landmarks(q)
    left = lm * np.array([1.0, -1.0, 1.0])           # the mirror image: the operator's left hand
    res_l = Preprocessor(desc.landmarks(), raw_config()).process(camera_view(left, seed), "left", 0.0)
    assert res_l.ok and res_l.mirrored
    assert np.allclose(res_l.landmarks, lm, atol=1e-9)
    # mirror=off keeps the left hand's chirality: its flexed fingers then point dorsal (-x)
    res_off = Preprocessor(desc.landmarks(), raw_config(mirror="off")).process(camera_view(left, seed), "left", 0.0)
    assert not res_off.mirrored and np.allclose(res_off.landmarks * [-1, 1, 1], lm, atol=1e-9)
    assert should_mirror("right", "right", "on") and not should_mirror("left", "right", "off")
    with pytest.raises(ValueError, match="mirror"):
        should_mirror("left", "right", "sometimes")


def test_bone_calibration_keeps_directions_and_takes_median_lengths(desc):
    rng = np.random.default_rng(1)
    lm = desc.landmarks(desc.couple(np.full(20, 0.3)))
    true = bone_lengths(lm)
    cal = BoneCalibrator(duration=1.0, min_samples=5)
    for k in range(40):   # noisy lengths (+-5 %), every tenth frame a wild outlier (3x)
        noisy = rebuild(lm, true * rng.uniform(0.95, 1.05, 20) * (3.0 if k % 10 == 3 else 1.0))
        cal.add(noisy, k * 0.033)
    assert cal.done
    assert np.abs(cal.lengths / true - 1.0).max() < 0.03
    stretched = rebuild(lm, true * 1.5)
    back = rebuild(stretched, true)
    assert np.allclose(back, lm, atol=1e-12)             # directions kept, lengths replaced
    assert np.allclose(bone_lengths(back), true)


def test_the_thumb_keeps_its_own_bone_lengths(desc):
    """Calibrated on one hand, then shown the same hand with a 15 % longer thumb (MediaPipe's world
    head lengthens the thumb folded across the palm): the fingers get their calibrated lengths back,
    the thumb tip stays where the frame put it (relative to the wrist: it is what opposition is about)."""
    lm = desc.landmarks(desc.couple(np.full(20, 0.3)))
    pre = Preprocessor(desc.landmarks(), PreprocessConfig(filter_min_cutoff=0.0, calibration_time=0.3,
                                                          scale=1.0, mirror="off"))
    for k in range(15):
        assert pre.process(lm, "right", k / 30.0).ok
    assert pre.calibrator.done
    long_thumb = bone_lengths(lm) * np.r_[np.full(4, 1.15), np.ones(16)]
    frame = rebuild(lm, bone_lengths(lm) * np.r_[np.ones(4), np.full(16, 1.1)])   # fingers 10 % off
    frame = rebuild(frame, np.r_[long_thumb[:4], bone_lengths(frame)[4:]])
    res = pre.process(frame, "right", 1.0)
    assert res.ok
    got = bone_lengths(res.landmarks)
    assert np.allclose(got[:4], long_thumb[:4]) and np.allclose(got[4:], bone_lengths(lm)[4:])
    assert np.allclose(res.landmarks[4], res.raw[4], atol=1e-9)


def test_collapsed_or_occluded_skeletons_are_misses(desc):
    lm = desc.landmarks() * 1.1
    assert check_skeleton(lm) is None
    bad = lm.copy()
    bad[17] = bad[5] + 0.01 * (bad[17] - bad[5])          # palm collapsed to 1 mm
    assert "palm width" in check_skeleton(bad)
    bad = lm.copy()
    bad[3] = np.nan
    assert "non-finite" in check_skeleton(bad)
    bad = lm.copy()
    bad[6:9] = bad[5]                                     # index folded onto its MCP (occluded)
    assert "index length" in check_skeleton(bad)
    assert "expected 21x3" in check_skeleton(lm[:20])
    pre = Preprocessor(desc.landmarks(), PreprocessConfig(calibration_time=0.5))
    for k in range(20):
        assert pre.process(lm, "right", k * 0.033).ok
    assert pre.calibrator.done
    short = lm.copy()
    short[18:21] = short[17] + 0.4 * (short[18:21] - short[17])   # little finger 40 % of its length
    res = pre.process(short, "right", 1.0)
    assert not res.ok and "pinky" in res.reason and "calibrated" in res.reason
    assert pre.misses == 1 and pre.process(lm, "right", 1.1).ok


def test_automatic_scale_maps_the_human_size_onto_the_robot(desc):
    lm = desc.landmarks(desc.couple(np.full(20, 0.2)))
    pre = Preprocessor(desc.landmarks(), PreprocessConfig(filter_min_cutoff=0.0))
    res = pre.process(lm * 1.25, "right", 0.0)            # a hand 25 % larger than the robot's
    assert res.scale == pytest.approx(0.8) and np.allclose(res.landmarks, lm, atol=1e-9)
    with pytest.raises(ValueError, match="robot_side"):
        PreprocessConfig(robot_side="up")


def test_open_pose_calibration_turns_the_relaxed_hand_onto_the_robots_rest(desc):
    """A relaxed (curled) open hand during calibration: afterwards that hand comes out as the robot's
    rest pose (finger bone directions), the thumb keeps its own, and a fist still curls."""
    from hand_retarget.preprocess import bone_directions, open_rotations

    names = desc.joint_names
    relaxed = np.zeros(len(names))
    for f in ("index", "middle", "ring", "pinky"):
        relaxed[names.index(f"{f}_mcp")] = 0.25
        relaxed[names.index(f"{f}_pip")] = 0.3
    relaxed = desc.couple(relaxed)
    robot = desc.landmarks()
    pre = Preprocessor(robot, PreprocessConfig(filter_min_cutoff=0.0, calibration_time=0.3, scale=1.0,
                                               open_pose=True))
    seen = camera_view(desc.landmarks(relaxed), 3)
    for k in range(20):
        out = pre.process(seen, "right", k / 30.0)
        assert out.ok
    assert pre.calibrator.done
    got, want = bone_directions(out.landmarks), bone_directions(robot)
    assert np.abs(np.einsum("ij,ij->i", got[4:], want[4:]) - 1.0).max() < 1e-6      # fingers: the rest pose
    # a fist is still a fist: the index tip comes nearer the wrist than in the rest pose
    fist = relaxed.copy()
    for f in ("index", "middle", "ring", "pinky"):
        fist[names.index(f"{f}_mcp")] = 1.3
        fist[names.index(f"{f}_pip")] = 1.5
    out = pre.process(camera_view(desc.landmarks(desc.couple(fist)), 3), "right", 1.0)
    assert np.linalg.norm(out.landmarks[8]) < 0.8 * np.linalg.norm(robot[8])
    # the rotation itself: identity for equal directions, exact for a known pair
    r = open_rotations(np.array([[1.0, 0, 0], [0, 1.0, 0]]), np.array([[1.0, 0, 0], [0, 0, 2.0]]))
    assert np.allclose(r[0], np.eye(3)) and np.allclose(r[1] @ [0, 1.0, 0], [0, 0, 1.0])
