"""Acceptance of issue 5 on hand_description's model: the 41-point sweep and the step response.

The sweep is the same code as the ``sweep`` script (3 s from rest per flexion, all fingers).
"""

from __future__ import annotations

import csv

import numpy as np
import pytest
from fixture_hand import fixture_xml, real_scene

from hand_common.contract import FINGER_NAMES
from hand_twin_mujoco import sweep
from hand_twin_mujoco.sim import build_twin


@pytest.fixture(scope="module")
def real_build():
    path = real_scene()
    if path is None:
        pytest.fail("hand_description's mjcf/scene.xml is missing: the acceptance runs on the real model")
    return build_twin(path)


@pytest.fixture(scope="module")
def measured(real_build):
    s = sweep.run_sweep(real_build, points=41, duration=3.0)
    st = sweep.run_step(real_build, 0.5, duration=1.0)
    return s, st, sweep.evaluate(real_build, s, st)


def test_sweep_is_proportional_on_the_real_model(real_build, measured):
    s, st, verdicts = measured
    print(sweep.format_table(real_build, s, st, verdicts))
    assert [v.finger for v in verdicts] == list(FINGER_NAMES)
    for v in verdicts:
        assert v.increasing, v
        assert v.min_increment_deg > 0.3, v  # 41 visibly distinct steady states, not a binary curl
        assert v.span_fraction >= sweep.SPAN_MIN, v
        assert v.max_over_limit_deg <= sweep.LIMIT_TOL_DEG, v
    # open at flexion 0, steady state never beyond any limit
    np.testing.assert_allclose(s.angles[0], 0.0, atol=np.radians(0.5))
    assert np.all(s.angles <= real_build.hand.joint_upper + np.radians(0.5))
    # no build warnings: the model meets what the gain sizing needs
    assert not real_build.notes, real_build.notes


def test_step_to_half_flexion_settles_within_150_ms(measured):
    _, st, verdicts = measured
    for v in verdicts:
        assert v.step_settle_s <= sweep.STEP_MAX_S, v
    assert np.all(st.settle_joint <= sweep.STEP_MAX_S), st.settle_joint
    # and it does curl about halfway
    assert np.all(st.q[-1] > 0.3 * np.radians(45))


def test_script_writes_table_and_plots(tmp_path, capsys):
    rc = sweep.main(["--out", str(tmp_path), "--points", "5", "--duration", "1.0"])
    out = capsys.readouterr().out
    assert rc == 0 and "ACCEPTANCE: PASS" in out
    rows = list(csv.reader(open(tmp_path / "sweep.csv")))
    assert len(rows) == 6 and rows[0][1] == "thumb_cmc_deg"
    for name in ("sweep.png", "step.png"):
        assert (tmp_path / name).stat().st_size > 20_000


def test_acceptance_fails_for_a_hand_that_cannot_close(tmp_path):
    """The criteria can fail: an actuator too weak to hold the fingers closed loses the span."""
    path = tmp_path / "weak.xml"
    path.write_text(fixture_xml().replace('forcerange="-40 0"', 'forcerange="-0.5 0"'))
    build = build_twin(str(path))
    assert any("forcerange" in n for n in build.notes)
    s = sweep.run_sweep(build, points=5, duration=1.0)
    verdicts = sweep.evaluate(build, s, sweep.run_step(build, 0.5, duration=0.5))
    assert all(v.span_fraction < sweep.SPAN_MIN and not v.ok for v in verdicts)
