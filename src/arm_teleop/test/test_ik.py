"""Damped-least-squares IK (mj_jacBody, scratch MjData): convergence on reachable targets,
clamped finite results on unreachable ones, the live data never touched."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from arm_teleop.arm_model import ARM_JOINTS, load_arm
from arm_teleop.ik import IkConfig, IkSolver

WS_LO = np.array([-0.20, -0.32, 0.05])
WS_HI = np.array([0.20, -0.06, 0.30])


@pytest.fixture(scope="module")
def arm():
    return load_arm()


def _rate(arm, solver, n, seed_of, in_workspace, rng):
    ok, its, done = 0, [], 0
    while done < n:
        q = rng.uniform(arm.lower, arm.upper)
        target = solver.fk(q)
        if in_workspace and not (np.all(target >= WS_LO) and np.all(target <= WS_HI)):
            continue
        seed = seed_of(q)
        seed[4] = q[4]  # wrist roll is set from the hand, not by the position IK
        r = solver.solve(target, seed)
        assert r.iterations <= 12 and np.all(np.isfinite(r.q))
        if r.converged:
            assert r.error <= 0.005
            assert np.linalg.norm(solver.fk(r.q) - target) <= 0.005
        ok += r.converged
        its.append(r.iterations)
        done += 1
    return ok / n, float(np.percentile(its, 95))


def test_reachable_targets_converge_from_the_current_state(arm):
    """FK of random joint vectors over the whole joint space; the seed (the current state) is
    that vector disturbed by 0.3 rad rms per joint (the hand moved since the last solve)."""
    solver = IkSolver(arm, IkConfig(max_iterations=12, tolerance=0.005, step=0.5))
    rng = np.random.default_rng(11)
    rate, p95 = _rate(arm, solver, 400, lambda q: arm.clamp(q + rng.normal(0, 0.3, 6)), False, rng)
    print(f"\nIK, random joint vectors, seed = target ± 0.3 rad: {rate:.1%} converged, p95 {p95:.0f} iterations")
    assert rate >= 0.95


def test_workspace_targets_converge_from_the_ready_pose(arm):
    """FK of random joint vectors that land in the soft workspace, all solved from the `ready`
    pose (where teleoperation starts)."""
    solver = IkSolver(arm)
    rng = np.random.default_rng(12)
    rate, p95 = _rate(arm, solver, 400, lambda q: arm.keyframe("ready").copy(), True, rng)
    print(f"\nIK, workspace targets from `ready`: {rate:.1%} converged, p95 {p95:.0f} iterations")
    assert rate >= 0.95


@pytest.mark.parametrize("target, closer", [((1.0, 0.0, 0.2), True), ((0.0, -0.9, 0.1), True),
                                            ((0.0, 0.0, 1.5), True), ((0.0, 0.0, -0.5), False)])
def test_unreachable_targets_end_clamped_and_finite(arm, target, closer):
    solver = IkSolver(arm)
    r = solver.solve(np.array(target), arm.keyframe("ready"))
    assert not r.converged and r.iterations == 12
    assert np.all(np.isfinite(r.q)) and np.isfinite(r.error)
    assert np.all(r.q >= arm.lower - 1e-12) and np.all(r.q <= arm.upper + 1e-12)
    if closer:  # it stretched towards the target: closer than from where it started
        assert r.error < np.linalg.norm(solver.fk(arm.keyframe("ready")) - np.array(target))


def test_the_live_simulation_is_never_written(arm):
    live = mujoco.MjData(arm.model)
    mujoco.mj_resetDataKeyframe(arm.model, live, arm.model.key("rest").id)
    before = live.qpos.copy()
    solver = IkSolver(arm)
    solver.solve(np.array([0.05, -0.2, 0.15]), before[arm.qpos_adr])
    assert solver.data is not live and np.array_equal(live.qpos, before)


def test_only_the_ik_joints_move_and_bad_input_is_refused(arm):
    solver = IkSolver(arm)
    seed = arm.keyframe("ready")
    r = solver.solve(np.array([0.1, -0.25, 0.12]), seed)
    assert r.q[4] == seed[4] and r.q[5] == seed[5]
    assert set(np.flatnonzero(r.q != seed)) <= {0, 1, 2, 3}
    with pytest.raises(ValueError, match="finite"):
        solver.solve(np.array([np.nan, 0, 0]), seed)
    with pytest.raises(ValueError, match="seed"):
        solver.solve(np.zeros(3), seed[:5])
    assert len(ARM_JOINTS) == 5
