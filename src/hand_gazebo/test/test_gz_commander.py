"""The Gazebo commander: flexions → proximal joint angles with a per-finger deadband and a stale →
safe pose watchdog, pure and as a node in its own process (what goes onto the bridged topics)."""

from __future__ import annotations

import math
import os
import time

import numpy as np
import pytest
import yaml
from rcl_interfaces.srv import ListParameters
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64

from hand_common import contract
from hand_common.testing import NodeProcess, RosProbe, wait_until
from hand_description.paths import urdf_path
from hand_gazebo.commander import DRIVEN_JOINTS, CommanderConfig, HandCommander, proximal_limits
from hand_gazebo.world import command_topic

CONFIG = os.path.join(os.path.dirname(os.path.dirname(__file__)), "config", "gz_commander.yaml")
NODE = "gz_hand_commander"


@pytest.fixture(scope="module")
def upper():
    return proximal_limits(urdf_path().read_text())


def test_limits_from_the_urdf_and_bad_urdfs(upper):
    assert upper == pytest.approx((math.radians(35), math.radians(90), math.radians(90), math.radians(90),
                                   math.radians(90)), abs=1e-5)
    with pytest.raises(ValueError, match="no revolute joint 'thumb_cmc'"):
        proximal_limits("<robot name='x'/>")
    bad = urdf_path().read_text().replace('<limit lower="0" upper="0.610865"', '<limit lower="-0.610865" upper="0"')
    with pytest.raises(ValueError, match="thumb_cmc"):
        proximal_limits(bad)
    with pytest.raises(ValueError, match="deadband"):
        CommanderConfig(upper=upper, deadband=(0.01,) * 4 + (-1.0,))


def test_flexion_to_angle_deadband_and_stale_safe_pose(upper):
    c = HandCommander(CommanderConfig(upper=upper, deadband=(0.01,) * 5, command_timeout=0.5))
    assert c.tick(0.0) == []  # nothing before the first command
    out = c.command([0.0, 0.5, 0.25, 1.0, 0.1], 0.0)
    assert [i for i, _ in out] == [0, 1, 2, 3, 4]
    np.testing.assert_allclose([a for _, a in out], np.array([0.0, 0.5, 0.25, 1.0, 0.1]) * upper)
    assert c.command([0.0, 0.5, 0.25, 1.0, 0.1], 0.03) == []  # a held pose sends nothing
    assert c.command([0.004, 0.506, 0.25, 0.995, 0.1], 0.06) == []  # jitter inside the deadband
    out = c.command([0.0, 0.53, 0.25, 1.0, 0.1], 0.09)
    assert out == [(1, pytest.approx(0.53 * upper[1]))]  # only the finger that moved
    assert c.tick(0.5) == [] and not c.stale
    out = c.tick(0.6)  # stale: the safe pose once (every finger not already at it)
    assert c.stale and sorted(i for i, _ in out) == [1, 2, 3, 4] and all(a == 0.0 for _, a in out)
    assert c.tick(0.7) == [] and c.tick(5.0) == []
    assert [i for i, _ in c.command([0.0, 0.53, 0.25, 1.0, 0.1], 6.0)] == [1, 2, 3, 4]  # back from the safe pose
    assert [a for _, a in c.safe_pose()] == [0.0] * 5


# --- the node in its own process ----------------------------------------------------------------------

def test_commander_node_sends_only_changes_and_the_safe_pose(tmp_path, upper):
    node = NodeProcess.module("hand_gazebo.commander_node", "--ros-args", "--params-file", CONFIG,
                              "-p", "diagnostics_period_s:=0.2",
                              "-p", "command_timeout_s:=0.5",  # this process paces 30 Hz with sleeps: room for hiccups
                              log_path=str(tmp_path / "gz_commander.log"))
    probe = RosProbe("gz_commander_probe")
    try:
        listed = probe.call(ListParameters, f"/{NODE}/list_parameters", ListParameters.Request(), timeout=30)
        with open(CONFIG) as f:
            keys = set(yaml.safe_load(f)[NODE]["ros__parameters"])
        assert keys <= set(listed.result.names)
        got = {s: {j: probe.collect(Float64, command_topic(s, j), 200) for j in DRIVEN_JOINTS}
               for s in contract.HAND_SIDES}
        pub = probe.publisher(JointState, contract.side_topic(contract.TOPIC_TARGET_FLEXIONS, "left"),
                              contract.qos(contract.STREAM))
        assert probe.change_state(NODE, "configure") and probe.change_state(NODE, "activate")
        [r] = probe.set_parameters(NODE, hands="one")
        assert not r.successful and "configure" in r.reason
        probe.wait_for_subscribers(pub)
        wait_until(lambda: all(probe.node.count_publishers(command_topic(s, j)) >= 1
                               for s in contract.HAND_SIDES for j in DRIVEN_JOINTS), 10, "the commander's publishers")
        time.sleep(0.3)  # let the matching complete
        pose = [0.2, 0.6, 0.6, 0.3, 0.9]
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.0:  # a held pose at 30 Hz: 30 commands
            pub.publish(JointState(name=list(contract.FINGER_NAMES), position=pose))
            time.sleep(1 / 30)
        left = got["left"]
        wait_until(lambda: all(len(left[j]) >= 1 for j in DRIVEN_JOINTS), 5, "left commands")
        for k, j in enumerate(DRIVEN_JOINTS):
            assert len(left[j]) == 1, f"{j}: {len(left[j])} messages for a held pose"  # sent once, never repeated
            assert left[j][0].data == pytest.approx(pose[k] * upper[k])
        assert all(got["right"][j] == [] for j in DRIVEN_JOINTS)  # the other hand got nothing
        # the left operator hand is lost: after command_timeout_s its Gazebo hand opens, once
        wait_until(lambda: all(len(left[j]) == 2 for j in DRIVEN_JOINTS), 3, "safe pose")
        assert all(left[j][-1].data == 0.0 for j in DRIVEN_JOINTS)
        time.sleep(0.5)
        assert all(len(left[j]) == 2 for j in DRIVEN_JOINTS)
        assert probe.change_state(NODE, "deactivate") and probe.change_state(NODE, "cleanup")
    finally:
        probe.close()
        code = node.stop()
    assert code == 0, node.output()[-2000:]


def test_commander_sends_the_safe_pose_when_stopped_while_active(tmp_path, upper):
    """Ctrl-C/SIGTERM of an active commander: run() takes it through shutdown from active, and
    on_shutdown sends the safe pose (state.label is 'active'; lifecycle_state is 'shuttingdown')."""
    node = NodeProcess.module("hand_gazebo.commander_node", "--ros-args", "--params-file", CONFIG,
                              "-p", "command_timeout_s:=30.0",  # no stale safe pose before the stop
                              log_path=str(tmp_path / "gz_commander_stop.log"))
    probe = RosProbe("gz_commander_stop_probe")
    try:
        left = {j: probe.collect(Float64, command_topic("left", j), 20) for j in DRIVEN_JOINTS}
        pub = probe.publisher(JointState, contract.side_topic(contract.TOPIC_TARGET_FLEXIONS, "left"),
                              contract.qos(contract.STREAM))
        assert probe.change_state(NODE, "configure") and probe.change_state(NODE, "activate")
        probe.wait_for_subscribers(pub)
        wait_until(lambda: all(probe.node.count_publishers(command_topic("left", j)) >= 1 for j in DRIVEN_JOINTS),
                   10, "the commander's publishers")
        time.sleep(0.3)  # let the matching complete
        pose = [0.2, 0.6, 0.6, 0.3, 0.9]
        pub.publish(JointState(name=list(contract.FINGER_NAMES), position=pose))
        wait_until(lambda: all(len(left[j]) == 1 for j in DRIVEN_JOINTS), 5, "the pose")
        code = node.stop()
        assert code == 0, node.output()[-2000:]
        wait_until(lambda: all(len(left[j]) == 2 for j in DRIVEN_JOINTS), 5, "the safe pose on shutdown")
        assert all(left[j][-1].data == 0.0 for j in DRIVEN_JOINTS)
    finally:
        probe.close()
        node.stop()
