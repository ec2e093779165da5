"""dex_retarget and dex_twin as separate processes, driven like ``ros2 lifecycle set`` / ``ros2 param set``.

Proves: every key of both YAML files is declared; a synthetic operator hand (the robot's own FK
skeleton in a pinch, seen by a camera) becomes safe joint commands that the twin follows; both
Kapandji topics report the pinch; NaN landmarks are misses (commands stay finite, held);
malformed commands are rejected by the twin; configure-time parameters are refused while
configured, live ones validated; without landmarks the commands return to the open pose.
"""

from __future__ import annotations

import pathlib
import threading
import time

import numpy as np
import pytest
import yaml
from geometry_msgs.msg import Point
from hand_msgs.msg import HandLandmarks, HandLandmarksArray
from rcl_interfaces.srv import ListParameters
from scipy.optimize import least_squares
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import Image, JointState

from hand_common import contract
from hand_common.testing import NodeProcess, RosProbe, wait_until
from hand_description import dex
from hand_retarget.kapandji import kapandji, site_matrix
from hand_retarget.topics import (
    DEX_TWIN_NODE,
    RETARGET_NODE,
    TOPIC_JOINT_COMMANDS,
    TOPIC_KAPANDJI_HUMAN,
    TOPIC_KAPANDJI_ROBOT,
    TOPIC_TWIN_IMAGE,
    TOPIC_TWIN_JOINT_STATES,
)

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"


@pytest.fixture(scope="module")
def desc():
    return dex.load()


def pinch_pose(desc) -> np.ndarray:
    """Joint angles of the robot with its thumb tip on its index tip (Kapandji 3) by IK."""
    names = desc.joint_names
    free = [names.index(n) for n in ("thumb_cmc_abd", "thumb_cmc_opp", "thumb_mcp", "thumb_ip",
                                     "index_mcp", "index_pip")]
    w = site_matrix()[2]

    def res(x):
        q = np.zeros(20)
        q[free] = x
        lm = desc.landmarks(desc.couple(q))
        n = np.cross(lm[5] - lm[0], lm[17] - lm[0])
        n /= np.linalg.norm(n)
        d = lm[4] - w @ lm
        inplane = d - np.dot(d, n) * n
        return np.r_[inplane, np.linalg.norm(d) - 0.018, 0.01 * x]   # thumb pulp 18 mm over the index tip

    r = least_squares(res, np.full(len(free), 0.3), bounds=(desc.lower[free], desc.upper[free]))
    q = np.zeros(20)
    q[free] = r.x
    return desc.couple(q)


def stamp_s(msg) -> float:
    """A message's header stamp, s."""
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


class LandmarkPublisher:
    """Publishes /hand/landmarks at 30 Hz from a thread, like the tracker."""

    def __init__(self, probe: RosProbe, world: np.ndarray):
        self.pub = probe.publisher(HandLandmarksArray, contract.TOPIC_LANDMARKS, contract.qos(contract.STREAM))
        self.node = probe.node
        self.world = world
        self.rejection = ""     # the tracker's gate verdict on the published hand ('' = accepted)
        self.frame = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(1 / 30):
            if self.world is None:
                continue
            now = self.node.get_clock().now().to_msg()
            h = HandLandmarks()
            h.header.stamp = now
            h.frame_index = self.frame
            h.handedness = "right"
            h.handedness_score = 0.9
            h.image_width, h.image_height = 640, 480
            h.image_landmarks = [Point(x=0.5, y=0.5, z=0.0) for _ in range(21)]
            h.world_landmarks = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])) for p in self.world]
            h.accepted, h.rejection = not self.rejection, self.rejection
            arr = HandLandmarksArray()
            arr.header.stamp = now
            arr.hands = [h]
            self.pub.publish(arr)
            self.frame += 1

    def stop(self):
        self._stop.set()
        self._thread.join(2)


def test_retarget_and_twin_nodes(tmp_path, desc):
    probe = RosProbe("dex_test_probe")
    procs = [
        NodeProcess.module("hand_retarget.retarget_node", "--ros-args", "--params-file", str(CONFIG / "retarget.yaml"),
                           log_path=str(tmp_path / "retarget.log")),
        NodeProcess.module("hand_retarget.dex_twin_node", "--ros-args", "--params-file", str(CONFIG / "dex_twin.yaml"),
                           "-p", "render_rate_hz:=10.0", "-p", "image_width_px:=160", "-p", "image_height_px:=120",
                           log_path=str(tmp_path / "twin.log")),
    ]
    publisher = None
    try:
        for node, cfg in ((RETARGET_NODE, "retarget.yaml"), (DEX_TWIN_NODE, "dex_twin.yaml")):
            listed = probe.call(ListParameters, f"/{node}/list_parameters", ListParameters.Request(), timeout=30)
            keys = set(yaml.safe_load((CONFIG / cfg).read_text())[node]["ros__parameters"])
            assert keys <= set(listed.result.names), keys - set(listed.result.names)
        stream = contract.qos(contract.STREAM)
        cmds = probe.collect(JointState, TOPIC_JOINT_COMMANDS, stream)
        measured = probe.collect(JointState, TOPIC_TWIN_JOINT_STATES, stream)
        human = probe.collect(JointState, TOPIC_KAPANDJI_HUMAN, stream)
        robot = probe.collect(JointState, TOPIC_KAPANDJI_ROBOT, stream)
        images = probe.collect(Image, TOPIC_TWIN_IMAGE, contract.qos(contract.IMAGE))
        t_activate = time.time()  # before the retarget node's timers exist
        for node in (DEX_TWIN_NODE, RETARGET_NODE):
            assert probe.change_state(node, "configure"), procs[0].tail() + procs[1].tail()
            assert probe.change_state(node, "activate")

        # configure-time parameters are refused while configured; live ones are validated
        res = probe.set_parameters(RETARGET_NODE, method="vector")
        assert not res[0].successful and "configure" in res[0].reason
        assert not probe.set_parameters(RETARGET_NODE, max_velocity=-1.0)[0].successful
        assert probe.set_parameters(RETARGET_NODE, max_velocity=8.0)[0].successful

        q_true = pinch_pose(desc)
        truth = kapandji(desc.landmarks(q_true)).score
        assert truth == 3
        rot = Rotation.from_euler("xyz", [170, 10, 80], degrees=True).as_matrix()   # a camera's view
        publisher = LandmarkPublisher(probe, desc.landmarks(q_true) @ rot.T + np.array([0.01, -0.02, 0.05]))
        wait_until(lambda: len(human) >= 30 and len(robot) >= 50, 20, "Kapandji scores")
        wait_until(lambda: robot[-1].position[0] == truth, 10, f"robot Kapandji {truth}")
        # the robot score: a measured state (its stamp) scored at most once, at most
        # kapandji_robot_rate_hz (a timer: at most one score per period since activation) while the
        # twin publishes its state at 100 Hz
        scored, t_now = [stamp_s(m) for m in list(robot)], time.time()
        rate = float(yaml.safe_load((CONFIG / "retarget.yaml").read_text())[RETARGET_NODE]["ros__parameters"]
                     ["kapandji_robot_rate_hz"])
        assert rate == 30.0 and len(scored) <= rate * (t_now - t_activate) + 1, (len(scored), t_now - t_activate)
        assert all(b > a for a, b in zip(scored, scored[1:]))
        assert {round(m.position[0]) for m in human[-10:]} == {truth}
        wait_until(lambda: len(images) >= 3, 10, "rendered twin images")
        assert (images[-1].width, images[-1].height, images[-1].encoding) == (160, 120, "rgb8")
        assert list(human[-1].name[:2]) == ["kapandji", "site_01"] and len(human[-1].position) == 11
        last = cmds[-1]
        assert list(last.name) == list(desc.joint_names)
        q_cmd = np.array(last.position)
        assert np.all(q_cmd >= desc.lower - 1e-9) and np.all(q_cmd <= desc.upper + 1e-9)
        q_meas = np.array(measured[-1].position)
        free = [i for i, n in enumerate(desc.joint_names) if not n.startswith(("thumb", "index"))]
        assert np.abs(q_meas - q_cmd)[free].max() < 0.02   # the twin tracks the commands (rad) ...
        assert np.abs(q_meas - q_cmd).max() < 0.15         # ... except where thumb and index press together
        # thumb-to-index distance on the twin: a pinch (the prior closes what the operator nearly closes)
        lm = desc.landmarks(q_meas)
        assert np.linalg.norm(lm[8] - lm[4]) < 0.03

        # NaN landmarks, then a skeleton the tracker's quality gate refused (accepted false): misses,
        # not retargeted; the commands stay finite and hold the last pose until target_timeout_s
        # (0.5 s after the last accepted frame, wall clock: then they go to the open pose). Judged
        # on the commands' own stamps, never on how many arrived: a held command carries the capture
        # stamp of the last accepted frame (before the misses began), the open pose's are stamped now.
        good = publisher.world
        timeout = float(yaml.safe_load((CONFIG / "retarget.yaml").read_text())[RETARGET_NODE]["ros__parameters"]
                        ["target_timeout_s"])

        def held_after(world, rejection, log_line):
            n_human = len(human)
            wait_until(lambda: len(human) > n_human + 5, 10, "accepted frames")   # a fresh target first
            t0 = time.time()
            publisher.world, publisher.rejection = world, rejection
            wait_until(lambda: log_line in procs[0].output(), 5, log_line)
            n0 = len(cmds)
            wait_until(lambda: stamp_s(cmds[-1]) > t0 + timeout, 10, "commands past the timeout")
            window = [m for m in cmds[n0:] if stamp_s(m) < t0 + 0.05][10:]  # held (the first 0.1 s settles)
            assert window, "no command in the hold window"
            assert all(stamp_s(m) >= t0 + timeout - 0.1 for m in cmds[n0:] if stamp_s(m) > t0 + 0.05)
            q = np.array([m.position for m in window])
            assert np.all(np.isfinite(q)) and np.abs(q - q[-1]).max() < 0.02
            # nothing was retargeted from the missed frames: no human score stamped after they began
            assert not [m for m in human if stamp_s(m) > t0 + 0.1]
            publisher.world, publisher.rejection = good, ""

        bad = good.copy()
        bad[7] = np.nan
        held_after(bad, "", "non-finite landmark")
        refused = good.copy()
        refused[7] = 0.0
        held_after(refused, "outside_image", "refused by the tracker's quality gate (outside_image)")

        # a malformed command is rejected by the twin, never applied
        bad_pub = probe.publisher(JointState, TOPIC_JOINT_COMMANDS, stream)
        probe.wait_for_subscribers(bad_pub)

        def rejected() -> bool:   # the twin keeps only the newest command (LATEST): resend until it sees one
            bad_pub.publish(JointState(name=["index_mcp"], position=[float("nan")]))
            return "rejected /dex_hand/joint_commands" in procs[1].output()

        wait_until(rejected, 10, "twin rejection")

        # no landmarks: after target_timeout_s the commands (and the twin) return to the open pose
        publisher.stop()
        publisher = None
        wait_until(lambda: np.abs(np.array(cmds[-1].position)).max() < 1e-6, 10, "open pose commanded")
        wait_until(lambda: np.abs(np.array(measured[-1].position)).max() < 0.03, 5, "twin open")

        for node in (RETARGET_NODE, DEX_TWIN_NODE):
            assert probe.change_state(node, "deactivate")
            assert probe.change_state(node, "cleanup")
            assert probe.get_state(node) == "unconfigured"
    finally:
        if publisher is not None:
            publisher.stop()
        probe.close()
        codes = [p.stop() for p in procs]
    assert codes == [0, 0], [p.tail() for p in procs]


ROBOTS = pathlib.Path(__file__).resolve().parents[4] / "shared" / "robots"


def test_nodes_drive_a_robot_by_name(tmp_path, desc):
    """robot:=leap_hand_right on both nodes: LEAP's own (numeric) joint names, its URDF limits, its
    twin; an unknown robot fails configure with a message that names it."""
    from hand_retarget.robot import load_robot

    leap = load_robot("leap_hand_right", "dexpilot", ROBOTS)
    common = ["-p", "robot:=leap_hand_right", "-p", f"robot_dir:={ROBOTS}"]
    probe = RosProbe("dex_robot_probe")
    procs = [
        NodeProcess.module("hand_retarget.retarget_node", "--ros-args", "--params-file", str(CONFIG / "retarget.yaml"),
                           *common, log_path=str(tmp_path / "retarget.log")),
        NodeProcess.module("hand_retarget.dex_twin_node", "--ros-args", "--params-file", str(CONFIG / "dex_twin.yaml"),
                           *common, log_path=str(tmp_path / "twin.log")),
    ]
    publisher = None
    try:
        stream = contract.qos(contract.STREAM)
        cmds = probe.collect(JointState, TOPIC_JOINT_COMMANDS, stream)
        measured = probe.collect(JointState, TOPIC_TWIN_JOINT_STATES, stream)
        robot = probe.collect(JointState, TOPIC_KAPANDJI_ROBOT, stream)
        for node in (DEX_TWIN_NODE, RETARGET_NODE):
            assert probe.change_state(node, "configure"), procs[0].tail() + procs[1].tail()
            assert probe.change_state(node, "activate")
        # a human-like hand pinching thumb and index (dex_hand's FK skeleton), seen by a camera
        rot = Rotation.from_euler("xyz", [170, 10, 80], degrees=True).as_matrix()
        publisher = LandmarkPublisher(probe, desc.landmarks(pinch_pose(desc)) @ rot.T)
        wait_until(lambda: len(cmds) > 100 and len(robot) > 20 and len(measured) > 20, 20, "robot commands")
        assert list(cmds[-1].name) == list(leap.joint_names) == list(measured[-1].name)
        q = np.array(cmds[-1].position)
        assert np.all(q >= leap.lower - 1e-9) and np.all(q <= leap.upper + 1e-9)
        lm = leap.landmarks(q)
        assert np.linalg.norm(lm[4] - lm[8]) < 0.015                      # the pinch, on LEAP
        publisher.stop()
        publisher = None
        wait_until(lambda: np.abs(np.array(cmds[-1].position) - leap.rest).max() < 1e-6, 10, "rest pose commanded")
        for node in (RETARGET_NODE, DEX_TWIN_NODE):
            assert probe.change_state(node, "deactivate")
            assert probe.change_state(node, "cleanup")
        assert probe.set_parameters(RETARGET_NODE, robot="my_hand_right")[0].successful
        assert not probe.change_state(RETARGET_NODE, "configure")
        wait_until(lambda: "my_hand_right" in procs[0].output(), 5, "the configure error")
        assert "known robots" in procs[0].output()
    finally:
        if publisher is not None:
            publisher.stop()
        probe.close()
        codes = [p.stop() for p in procs]
    assert codes == [0, 0], [p.tail() for p in procs]
