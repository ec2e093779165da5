"""TeleopCore: commands only when allowed, no jumps (rate limits), live mode switch, manual control."""

from __future__ import annotations

import math

import numpy as np
import pytest

from arm_teleop.arm_model import load_arm
from arm_teleop.state_machine import ArmState
from arm_teleop.teleop_core import HandFrame, TeleopConfig, TeleopCore
from hand_tracking.geometry import synthetic_hand

DT = 1 / 30
OPEN = np.full(15, math.pi - 0.15)
FIST = np.array([2.3, 2.3, 2.3] + [1.4, 1.2, 1.6] * 4)


@pytest.fixture(scope="module")
def arm():
    return load_arm()


def frame(t, angles=OPEN, u=0.5, v=0.5, size=0.2):
    world = synthetic_hand(angles)
    # image landmarks: the world hand seen flat (x right, y down), scaled to `size` image heights
    img = world[:, :2] / np.linalg.norm(world[9, :2] - world[0, :2]) * size
    img = img - img[0]
    image = np.zeros((21, 3))
    image[:, 0] = (1 - u) + img[:, 0] * 720 / 1280  # camera not mirrored: u is mirrored x
    image[:, 1] = v + img[:, 1]
    return HandFrame(t, world, image, 0.95, 1280, 720)


def run(core, n, t0=0.0, **kw):
    outs = []
    for i in range(n):
        outs.append(core.process(frame(t0 + i * DT, **kw)))
    return outs


def test_commands_only_while_armed_and_without_jumps(arm):
    core = TeleopCore(arm, TeleopConfig(max_joint_speed=2.0))
    outs = run(core, 40)
    armed = [o for o in outs if o.state == ArmState.ARMED]
    assert all(o.command is None for o in outs if o.state != ArmState.ARMED)
    assert armed and all(o.command is not None for o in armed)
    prev = arm.keyframe("rest")
    for o in armed:
        step = np.abs(o.command - prev)
        assert np.all(step[:5] <= 2.0 * DT + 1e-9) and np.all(np.isfinite(o.command))
        prev = o.command
    # a fist stops the commands at once
    o = core.process(frame(40 * DT, angles=FIST))
    assert o.state == ArmState.DISABLED and o.command is None


def test_cartesian_target_follows_the_hand_inside_the_workspace(arm):
    core = TeleopCore(arm, TeleopConfig(smoothing_time_s=0.0, max_joint_speed=50.0))
    left = run(core, 30, u=0.2, v=0.5)[-1]
    right = run(core, 30, t0=1.0, u=0.8, v=0.5)[-1]
    far = run(core, 30, t0=2.0, u=0.5, v=0.2)[-1]
    assert left.target[0] == pytest.approx(0.20) and right.target[0] == pytest.approx(-0.20)
    assert far.target[1] == pytest.approx(-0.32)
    for o in (left, right, far):
        assert o.ik.converged, o.ik
        assert np.all(o.target >= [-0.2, -0.32, 0.05]) and np.all(o.target <= [0.2, -0.06, 0.30])


def test_mode_switch_live_does_not_jump(arm):
    core = TeleopCore(arm, TeleopConfig(max_joint_speed=2.0))
    outs = run(core, 30, u=0.3)
    last = outs[-1].command
    core.set_mode("joint")
    nxt = run(core, 10, t0=30 * DT, u=0.3)
    assert all(o.mode == "joint" for o in nxt)
    assert np.all(np.abs(nxt[0].command[:5] - last[:5]) <= 2.0 * DT + 1e-9)
    # joint mode: the hand's horizontal position turns the base
    a = run(core, 60, t0=2.0, u=0.2)[-1].command[0]
    b = run(core, 60, t0=4.0, u=0.8)[-1].command[0]
    assert a - b == pytest.approx(2 * 1.2, abs=0.05)
    with pytest.raises(ValueError, match="control mode"):
        core.set_mode("telepathy")
    assert core.mode == "joint"


def test_manual_commands_only_in_manual_mode(arm):
    core = TeleopCore(arm)
    q = arm.keyframe("ready")
    assert core.manual_command(0.0, q) is None  # DISABLED
    assert core.request_manual(0.0)
    cmd = core.manual_command(DT, q + 10.0)  # clamped and rate limited
    assert cmd is not None and np.all(cmd <= arm.upper)
    assert core.process(frame(2 * DT)).command is None  # the hand does not command in MANUAL
    with pytest.raises(ValueError, match="finite"):
        core.manual_command(3 * DT, np.full(6, np.nan))
    assert core.release_manual(3 * DT) and core.sm.state == ArmState.DISABLED
    assert core.manual_command(4 * DT, q) is None


def test_estop_blocks_everything(arm):
    core = TeleopCore(arm)
    run(core, 20)
    core.estop(1.0)
    assert all(o.command is None and o.state == ArmState.ESTOP for o in run(core, 30, t0=1.0))
    assert core.manual_command(2.0, arm.keyframe("ready")) is None


def test_gripper_range_comes_from_the_compiled_model(arm):
    import mujoco

    assert (arm.gripper_closed, arm.gripper_open) == tuple(arm.model.actuator("gripper").ctrlrange)
    m = mujoco.MjModel.from_xml_string(
        __import__("arm_description.paths", fromlist=["x"]).mjcf_path().read_text()
         .replace('ctrlrange="-0.174533 1.74533"', 'ctrlrange="0 1.2"'))
    other = load_arm(model=m)
    assert (other.gripper_closed, other.gripper_open) == (0.0, 1.2)
