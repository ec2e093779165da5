"""Gain sizing from the model, checked against static and dynamic measurements on the fixture."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from fixture_hand import fixture_xml

from hand_common.contract import FINGER_NAMES
from hand_twin_mujoco.gains import apply_gains, size_gains
from hand_twin_mujoco.model import load_hand
from hand_twin_mujoco.sim import build_twin
from hand_twin_mujoco.targets import tendon_map


def write(tmp_path, xml: str) -> str:
    p = tmp_path / "scene.xml"
    p.write_text(xml)
    return str(p)


def settle(m, d, seconds=3.0):
    mujoco.mj_step(m, d, nstep=int(seconds / m.opt.timestep))


def test_passive_tendon_stiffness_matches_a_static_pull(fixture_scene):
    """K_t predicted at the open pose = constant tension / measured static shortening (small pull)."""
    hand = load_hand(fixture_scene)
    tmap = tendon_map(hand)
    report = size_gains(hand, tmap)
    m = hand.model
    # turn the flexors into constant-force actuators on this copy: force = ctrl
    m.actuator_gainprm[hand.actuator, :] = 0.0
    m.actuator_biasprm[hand.actuator, :] = 0.0
    m.actuator_gainprm[hand.actuator, 0] = 1.0
    d = mujoco.MjData(m)
    tension = 0.05  # N: about a degree of flexion, linear regime
    d.ctrl[hand.actuator] = -tension
    settle(m, d)
    shortening = tmap.l_open - d.ten_length[hand.flexor_tendon]
    for k, g in enumerate(report.digits):
        measured_k = tension / shortening[k]
        assert measured_k == pytest.approx(g.k_tendon_poses[0], rel=0.05), g.finger


def test_applied_gains_reach_the_predicted_fraction(fixture_scene):
    """With the sized kp the steady tendon shortening is the predicted fraction of its target."""
    build = build_twin(fixture_scene, settle_time=0.1, reach=0.95)
    hand, tmap = build.hand, build.tmap
    for g in build.gains.digits:
        assert g.reach == pytest.approx(0.95, abs=1e-6)  # kp set by accuracy, not speed, on this model
        assert g.kp == pytest.approx(g.k_tendon * 19.0, rel=1e-6)
        assert g.zeta == pytest.approx(1.0, rel=1e-6)
        assert g.settle_time <= 0.1
        a = hand.actuator[FINGER_NAMES.index(g.finger)]
        assert hand.model.actuator_gainprm[a, 0] == g.kp
        assert hand.model.actuator_biasprm[a, 1] == -g.kp
        assert hand.model.actuator_biasprm[a, 2] == -g.kv
    d = mujoco.MjData(hand.model)
    f = 0.02  # small: K_t changes with flexion on this fixture
    d.ctrl[hand.actuator] = tmap.ctrl(np.full(5, f))
    settle(hand.model, d)
    achieved = (tmap.l_open - d.ten_length[hand.flexor_tendon]) / (f * tmap.excursion)
    for k, g in enumerate(build.gains.digits):
        predicted = g.kp / (g.kp + g.k_tendon_poses[0])
        assert achieved[k] == pytest.approx(predicted, abs=0.01), g.finger
    assert not build.notes


def test_faster_target_raises_kp(fixture_scene):
    slow = build_twin(fixture_scene, settle_time=0.1)
    fast = build_twin(fixture_scene, settle_time=0.02)
    for gs, gf in zip(slow.gains.digits, fast.gains.digits):
        assert gf.kp > gs.kp
        assert gf.settle_time <= 0.02 + 1e-3
    assert not fast.notes


def test_model_problems_are_reported_with_the_parameter_to_change(tmp_path):
    # no passive springs at all: the digits have no defined rest distribution
    xml = fixture_xml().replace('stiffness="30"', 'stiffness="0"').replace('stiffness="0.03"', 'stiffness="0"')
    notes = build_twin(write(tmp_path, xml)).notes
    assert any("near-)singular" in n and "joint stiffness" in n for n in notes)
    # the actuator cannot pull hard enough to close the digit
    xml = fixture_xml().replace('forcerange="-40 0"', 'forcerange="-1 0"')
    notes = build_twin(write(tmp_path, xml)).notes
    assert sum("forcerange" in n for n in notes) == 5
    # a long timestep: the kp needed for the settling target breaks the integrator cap
    xml = fixture_xml().replace('timestep="0.002"', 'timestep="0.02"')
    notes = build_twin(write(tmp_path, xml)).notes
    assert sum("armature" in n and "timestep" in n for n in notes) == 5


def test_ctrlrange_that_does_not_cover_the_lengths_is_widened(tmp_path):
    xml = fixture_xml().replace('tendon="index_flexor" kp="10"', 'tendon="index_flexor" kp="10" ctrlrange="0.06 0.09"')
    hand = load_hand(write(tmp_path, xml))
    tmap = tendon_map(hand)
    notes = apply_gains(hand, tmap, size_gains(hand, tmap))
    assert len(notes) == 1 and "index_flexor ctrlrange" in notes[0]
    lo, hi = hand.model.actuator_ctrlrange[hand.actuator[1]]
    assert lo <= tmap.l_closed[1] and hi >= tmap.l_open[1]
