"""The rest blend (hand_retarget.rest_blend): weights from flexions and thumb contact, digits moved
towards the robot's rest landmarks, and the pipeline's open hand -> rest pose."""

import pathlib
import warnings

import numpy as np
import pytest

from hand_description import dex, paths
from hand_retarget.pipeline import DexPipeline, PipelineConfig
from hand_retarget.preprocess import PreprocessConfig
from hand_retarget.rest_blend import (
    DIGITS,
    RestBlendConfig,
    blend,
    blend_weights,
    default_windows,
    digit_flexions,
)
from hand_retarget.robot import load_robot

ROBOTS = pathlib.Path(__file__).resolve().parents[4] / "shared" / "robots"
FREE = np.full(10, 1.0)    # thumb tip 1 palm width (in-plane) from every Kapandji site


def test_weights_follow_the_flexion_window():
    w = blend_weights(np.array([0.0, 0.2, 0.35, 0.5, 0.9]), FREE, RestBlendConfig())
    assert np.allclose(w, [1.0, 1.0, 0.5, 0.0, 0.0])


def test_a_thumb_touching_a_site_stops_the_blend():
    open_flex = np.zeros(5)
    touch = FREE.copy()
    touch[2] = 0.2                                                       # on the index tip (level 3)
    assert np.all(blend_weights(open_flex, touch, RestBlendConfig()) == 0.0)
    touch[2] = 0.375                                                     # halfway up the 0.25-0.5 ramp
    assert np.allclose(blend_weights(open_flex, touch, RestBlendConfig()), 0.5)
    assert np.allclose(blend_weights(open_flex, touch, RestBlendConfig(contact=False)), 1.0)
    assert np.all(blend_weights(open_flex, np.full(10, np.nan), RestBlendConfig()) == 0.0)   # unusable


def test_blend_moves_each_digit_by_its_weight():
    rng = np.random.default_rng(0)
    x, rest = rng.normal(size=(21, 3)), rng.normal(size=(21, 3))
    w = np.array([1.0, 0.0, 0.5, 1.0, 0.0])
    out = blend(x, rest, w)
    assert np.allclose(out[0], x[0])                                   # the wrist never moves
    for k, idx in enumerate(DIGITS):
        assert np.allclose(out[list(idx)], x[list(idx)] + w[k] * (rest[list(idx)] - x[list(idx)]))


def test_config_is_validated():
    with pytest.raises(ValueError):
        RestBlendConfig(open_flexion=0.5, release_flexion=0.5)
    with pytest.raises(ValueError):
        RestBlendConfig(contact_free=0.0)


@pytest.fixture(scope="module")
def desc():
    return dex.load()


def _pipe(desc, enabled=True):
    pre = PreprocessConfig(filter_min_cutoff=0.0, calibration_time=0.0)
    return DexPipeline(desc, str(paths.dex_urdf_path()),
                       PipelineConfig(preprocess=pre, rest_blend=RestBlendConfig(enabled=enabled)))


def test_the_blend_is_on_for_every_hand_by_default(desc):
    """dex_hand too since issue 24 (its open frames put a fingertip 73.9 mm from rest without it)."""
    assert DexPipeline(desc, str(paths.dex_urdf_path())).rest_blend is True
    assert _pipe(desc, enabled=False).rest_blend is False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        leap = load_robot("leap_hand_right", "dexpilot", ROBOTS)
    assert DexPipeline(leap, "").rest_blend is True


def test_an_open_hand_is_the_rest_pose_and_a_fist_is_left_alone(desc):
    """The robot's own flat hand read as a human hand: every digit open, thumb far -> exactly the
    rest pose, without an optimizer call. A fist: weights 0, the same target as without the blend."""
    flat = desc.landmarks() + 0.3
    assert np.all(digit_flexions(flat, default_windows()) <= 0.2)
    pipe = _pipe(desc)
    res = pipe.frame(flat, "right", 0.0)
    assert res.ok and np.array_equal(res.target, pipe.rest) and np.allclose(pipe.last_weights, 1.0)
    q = np.zeros(len(desc.joint_names))
    for i, n in enumerate(desc.joint_names):
        if n.endswith(("_mcp", "_pip")) and not n.startswith("thumb"):
            q[i] = 0.9 * desc.upper[i]
    fist = desc.landmarks(desc.couple(q)) + 0.3
    on, off = _pipe(desc), _pipe(desc, enabled=False)
    a, b = on.frame(fist, "right", 0.0), off.frame(fist, "right", 0.0)
    assert np.all(on.last_weights[1:] == 0.0)
    assert np.allclose(a.target, b.target, atol=1e-6)
