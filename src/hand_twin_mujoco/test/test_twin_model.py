"""Model loading, the contract checks, and the flexion → tendon length map (fixture scene)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from fixture_hand import fixture_xml

from hand_common.contract import FINGER_JOINTS, FINGER_NAMES, JOINT_NAMES
from hand_twin_mujoco.model import ModelContractError, load_hand
from hand_twin_mujoco.targets import tendon_map


def write(tmp_path, xml: str) -> str:
    p = tmp_path / "scene.xml"
    p.write_text(xml)
    return str(p)


def test_load_resolves_every_name(fixture_scene):
    hand = load_hand(fixture_scene)
    m = hand.model
    assert [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in hand.joint_ids] == list(JOINT_NAMES)
    assert [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_TENDON, t) for t in hand.flexor_tendon] == \
        [f"{f}_flexor" for f in FINGER_NAMES]
    assert [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) for a in hand.actuator] == \
        [f"{f}_flexor" for f in FINGER_NAMES]
    np.testing.assert_allclose(hand.joint_upper[:3], [1.0, 1.2, 1.4])
    np.testing.assert_allclose(hand.joint_lower, 0.0)
    assert hand.timestep == pytest.approx(0.002)
    # the twin integrates implicitly unless told otherwise
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert load_hand(fixture_scene, integrator="model").model.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    for f in FINGER_NAMES:
        dofs = hand.digit_dofs[f]
        assert [JOINT_NAMES[list(hand.dof_adr).index(d)] for d in dofs] == list(FINGER_JOINTS[f])


@pytest.mark.parametrize("old,new,message", [
    ('name="index_pip"', 'name="index_pipx"', "joint 'index_pip' not found"),
    ('<spatial name="ring_extensor"', '<spatial name="ring_ext"', "tendon 'ring_extensor' not found"),
    ('<position name="pinky_flexor" tendon="pinky_flexor" kp="10" ',
     '<motor name="pinky_flexor" tendon="pinky_flexor" ', "not a plain MuJoCo position actuator"),
    ('<position name="middle_flexor" tendon="middle_flexor" kp="10" forcelimited="true" forcerange="-40 0"/>',
     '<position name="middle_flexor" tendon="middle_flexor" kp="10" forcelimited="true" forcerange="-40 40"/>',
     "not pull-only"),
    ('<position name="middle_flexor" tendon="middle_flexor"', '<position name="middle_flexor" tendon="index_flexor"',
     "does not act on tendon 'middle_flexor'"),
    ('<key name="open"', '<key name="rest"', "keyframe 'open' not found"),
    ('<camera name="front"', '<camera name="side"', "camera 'front' not found"),
    ('range="0 1.57"', 'range="0.2 1.57"', "does not run from 0"),
])
def test_contract_violations_are_named(tmp_path, old, new, message):
    xml = fixture_xml()
    assert old in xml
    with pytest.raises(ModelContractError, match=message):
        load_hand(write(tmp_path, xml.replace(old, new, 1)))


def test_missing_or_broken_file(tmp_path):
    with pytest.raises(ModelContractError, match="does not exist"):
        load_hand(str(tmp_path / "nope.xml"))
    with pytest.raises(ModelContractError, match="cannot compile"):
        load_hand(write(tmp_path, "<mujoco><worldbody><body></mujoco>"))
    with pytest.raises(ModelContractError, match="integrator"):
        load_hand(write(tmp_path, fixture_xml()), integrator="leapfrog")


def test_tendon_map_measures_the_model(fixture_scene):
    hand = load_hand(fixture_scene)
    tmap = tendon_map(hand)
    m, d = hand.model, mujoco.MjData(hand.model)
    mujoco.mj_forward(m, d)
    np.testing.assert_allclose(tmap.l_open, d.ten_length[hand.flexor_tendon], atol=1e-12)
    # closed: set one digit's joints to their upper limits by hand and measure
    for k, f in enumerate(FINGER_NAMES):
        d.qpos[:] = 0.0
        for j in FINGER_JOINTS[f]:
            i = JOINT_NAMES.index(j)
            d.qpos[hand.qpos_adr[i]] = hand.joint_upper[i]
        mujoco.mj_forward(m, d)
        assert tmap.l_closed[k] == pytest.approx(d.ten_length[hand.flexor_tendon[k]], abs=1e-12)
    assert np.all(tmap.excursion > 0.02)  # centimetres of flexor travel on a finger
    # linear map and its inverse
    f = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    ctrl = tmap.ctrl(f)
    np.testing.assert_allclose(ctrl, tmap.l_open + f * (tmap.l_closed - tmap.l_open))
    np.testing.assert_allclose(ctrl[[0, 4]], [tmap.l_open[0], tmap.l_closed[4]])
    np.testing.assert_allclose(tmap.flexion_of_length(ctrl), f, atol=1e-12)


@pytest.mark.parametrize("bad", [[0.1] * 4, [0.1, 0.2, np.nan, 0.3, 0.4], [0, 0, 0, 0, 1.01], [-0.01, 0, 0, 0, 0],
                                 [0, np.inf, 0, 0, 0]])
def test_tendon_map_rejects_bad_flexions(fixture_scene, bad):
    tmap = tendon_map(load_hand(fixture_scene))
    with pytest.raises(ValueError):
        tmap.ctrl(np.array(bad, dtype=float))


def test_dorsal_flexor_is_refused(tmp_path):
    """A flexor routed like an extensor (it lengthens with flexion) is a model error."""
    xml = fixture_xml(flex_y=-0.008)
    with pytest.raises(ModelContractError, match="shortens by only"):
        tendon_map(load_hand(write(tmp_path, xml)))
