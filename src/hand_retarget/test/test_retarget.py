"""Retargeting against synthetic ground truth: pose the dexterous URDF, build a human skeleton from its
forward kinematics, retarget it back, and compare the fingertip-to-thumb distances."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from hand_description import dex, paths
from hand_retarget.preprocess import PreprocessConfig, Preprocessor
from hand_retarget.retarget import RetargetConfig, Retargeter

TIPS = (8, 12, 16, 20)


@pytest.fixture(scope="module")
def desc():
    return dex.load()


def tip_distances(landmarks):
    return np.linalg.norm(landmarks[list(TIPS)] - landmarks[4], axis=1)


def motion(desc, seed, poses=10, frames=8, hold=4):
    """A smooth operator motion through random reachable poses: (skeleton seen by a camera, pose q)
    per frame, and the indices of the frames that end each hold."""
    rng = np.random.default_rng(seed)
    rot = Rotation.random(random_state=seed).as_matrix()
    qa = np.zeros(20)
    out, ends = [], []
    for _ in range(poses):
        qb = desc.couple(rng.uniform(desc.lower, desc.upper))
        for s in list(np.linspace(0.0, 1.0, frames + 1)[1:]) + [1.0] * hold:
            q = desc.couple(qa + s * (qb - qa))
            out.append((desc.landmarks(q) @ rot.T + 0.3, q))
        ends.append(len(out) - 1)
        qa = qb
    return out, ends


def run(desc, config, seed):
    pre = Preprocessor(desc.landmarks(), PreprocessConfig(filter_min_cutoff=0.0, calibration_time=0.0))
    ret = Retargeter(desc, str(paths.dex_urdf_path()), config)
    frames, ends = motion(desc, seed)
    results = []
    for k, (skeleton, q_true) in enumerate(frames):
        res = pre.process(skeleton, "right", k / 30.0)
        assert res.ok, res.reason
        q = ret.retarget(res.landmarks)
        assert q.shape == (20,) and np.all(np.isfinite(q))
        assert np.all(q >= desc.lower - 2e-3) and np.all(q <= desc.upper + 2e-3)
        if k in ends:
            results.append((tip_distances(desc.landmarks(q_true)), tip_distances(desc.landmarks(q))))
    return np.array(results)   # (poses, 2, 4)


@pytest.mark.parametrize("seed", [0, 1])
def test_vector_retargeting_gets_the_thumb_distances_back_within_1cm(desc, seed):
    r = run(desc, RetargetConfig(method="vector"), seed)
    err = np.abs(r[:, 1] - r[:, 0])
    assert err.max() < 0.010, np.round(err, 4)


@pytest.mark.parametrize("seed", [0, 1])
def test_dexpilot_gets_the_thumb_distances_back_within_1cm(desc, seed):
    # the pinch prior off (distances are then matched, not closed): the optimizer's own fidelity
    r = run(desc, RetargetConfig(method="dexpilot", project_dist=0.001, escape_dist=0.001), seed)
    err = np.abs(r[:, 1] - r[:, 0])
    assert err.max() < 0.010, np.round(err, 4)


def test_dexpilot_pinch_prior_closes_near_pinches_and_only_those(desc):
    r = run(desc, RetargetConfig(method="dexpilot"), 0)
    true, got = r[:, 0], r[:, 1]
    near = true < 0.03
    assert near.any() and (~near).any()
    assert np.all(got[near] < true[near]) and np.median(got[near]) < 0.005, np.round(got[near], 4)  # pinched
    far = true > 0.07
    assert np.all(np.abs(got[far] - true[far]) < 0.03)                  # the others stay where they were


def test_malformed_input_is_refused(desc):
    ret = Retargeter(desc, str(paths.dex_urdf_path()), RetargetConfig(method="vector"))
    bad = desc.landmarks()
    bad[4] = np.nan
    with pytest.raises(ValueError, match="finite"):
        ret.retarget(bad)
    with pytest.raises(ValueError, match="method"):
        RetargetConfig(method="ik")
    with pytest.raises(ValueError, match="position"):   # dex_hand has no position configuration
        Retargeter(desc, str(paths.dex_urdf_path()), RetargetConfig(method="position"))
    with pytest.raises(ValueError, match="escape_dist"):
        RetargetConfig(project_dist=0.05, escape_dist=0.03)
