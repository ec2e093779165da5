"""TwinSim: flexion commands, instability detection and reset, state sign conventions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hand_common.contract import FINGER_JOINTS, JOINT_NAMES
from hand_twin_mujoco.sim import TwinSim, build_twin


@pytest.fixture(scope="module")
def build(fixture_scene):
    return build_twin(fixture_scene)


def test_flexion_curls_only_the_commanded_digit(build):
    sim = TwinSim(build.hand, build.tmap)
    sim.set_flexions(np.array([0.0, 0.6, 0.0, 0.0, 0.0]))
    assert sim.step(500) is None
    st = sim.state()
    idx = [JOINT_NAMES.index(j) for j in FINGER_JOINTS["index"]]
    others = [i for i in range(15) if i not in idx]
    assert np.all(st.position[idx] > np.radians(20))
    assert np.all(np.abs(st.position[others]) < np.radians(0.5))
    # effort: the flexor flexes (positive torque) on its own joints only; tension pulls
    assert np.all(st.effort[idx] > 0) and np.allclose(st.effort[others], 0.0)
    assert st.tension[1] > 0.5 and np.allclose(st.tension[[0, 2, 3, 4]], 0.0, atol=1e-9)
    assert st.tendon_length[1] < build.tmap.l_open[1] - 0.5 * 0.6 * build.tmap.excursion[1]
    assert math.isclose(st.sim_time, 1.0, abs_tol=1e-9)


def test_invalid_flexions_are_not_applied(build):
    sim = TwinSim(build.hand, build.tmap)
    sim.set_flexions(np.full(5, 0.3))
    before = sim.goal.copy()
    for bad in ([0.3, np.nan, 0.3, 0.3, 0.3], [0.3, 0.3, 1.5, 0.3, 0.3], [0.3] * 3):
        with pytest.raises(ValueError):
            sim.set_flexions(np.array(bad))
    np.testing.assert_array_equal(sim.goal, before)
    np.testing.assert_array_equal(sim.flexions, np.full(5, 0.3))


@pytest.mark.parametrize("blow_up,expected", [
    (lambda d: d.qvel.__setitem__(3, np.nan), "BADQVEL"),
    (lambda d: d.qpos.__setitem__(0, np.inf), "BADQPOS"),
    (lambda d: d.qfrc_applied.__setitem__(5, 1e30), "BADQACC"),
])
def test_instability_resets_to_the_open_keyframe(build, blow_up, expected):
    sim = TwinSim(build.hand, build.tmap)
    sim.set_flexions(np.full(5, 0.5))
    assert sim.step(100) is None
    assert np.max(sim.state().position) > 0.2
    blow_up(sim.data)
    reason = sim.step(1)
    assert reason is not None and expected in reason
    assert sim.resets == 1
    st = sim.state()
    np.testing.assert_array_equal(st.position, 0.0)  # keyframe 'open'
    np.testing.assert_array_equal(st.velocity, 0.0)
    assert st.sim_time == 0.0
    sim.data.qfrc_applied[:] = 0.0
    # the simulation continues normally afterwards, still following the command
    assert sim.step(200) is None
    assert np.all(np.isfinite(sim.state().position)) and np.max(sim.state().position) > 0.2


def test_non_finite_state_without_warning_is_caught(build):
    sim = TwinSim(build.hand, build.tmap)
    sim.data.qacc[2] = np.nan  # as if a plugin/callback had corrupted it after the step
    assert sim.instability() == "non-finite qacc"
