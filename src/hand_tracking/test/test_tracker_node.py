"""The tracker node in its own process, driven like the ROS CLI does: lifecycle services,
parameters, the calibration service, topics. Three node processes: the shared video, a live
landmark topic (replay + calibration + watchdog), a recorded bag (replay)."""

import math
import os
import sys
import threading
import time

import numpy as np
import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from hand_msgs.msg import HandLandmarksArray
from hand_msgs.srv import Calibrate
from rcl_interfaces.srv import GetParameters, ListParameters
from sensor_msgs.msg import JointState

from hand_common import contract
from hand_common.testing import NodeProcess, RosProbe, wait_until
from hand_tracking import interface as iface
from hand_tracking.calibration import capture_pose, windows_from_poses
from hand_tracking.fusion import fused_points
from hand_tracking.geometry import joint_angles
from hand_tracking.replay import landmark_array, write_landmark_bag
from hand_tracking.tracker_core import REJECT_REASONS, TrackerConfig, TrackerCore

sys.path.insert(0, os.path.dirname(__file__))
from tracker_video_cache import CAL_FIST, CAL_OPEN, video_landmarks  # noqa: E402

NODE = contract.TRACKER_NODE
PARAMS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "config", "tracker.yaml")
QOS = 100  # the probe keeps every message


@pytest.fixture(scope="module")
def probe():
    p = RosProbe("tracker_test_probe")
    yield p
    p.close()


def start_node(tmp_path, name, *overrides):
    args = ["--ros-args", "--params-file", PARAMS]
    for o in overrides:
        args += ["-p", o]
    return NodeProcess.module("hand_tracking.tracker_node", *args, log_path=str(tmp_path / f"{name}.log"))


def stop_node(node):
    code = node.stop()
    assert code == 0, f"node exit code {code}\n{node.output()[-3000:]}"


def stamp(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def get_params(probe, *names):
    res = probe.call(GetParameters, f"/{NODE}/get_parameters", GetParameters.Request(names=list(names)),
                     retry=True)
    out = []
    for v in res.values:
        out.append(v.double_value if v.type == 3 else list(v.double_array_value) if v.type == 8 else
                   v.string_value if v.type == 4 else v.bool_value if v.type == 1 else v.integer_value)
    return out


def latest_status(diags) -> DiagnosticStatus:
    return diags[-1].status[0]


def test_lifecycle_parameters_and_video(probe, tmp_path, video_path):
    # paced like a camera (realtime) but every frame processed, late if need be (drop_late_frames
    # false): which frames arrive does not depend on how fast this machine runs MediaPipe (with
    # drops, a loaded machine skipped 1-7 frames at a time)
    node = start_node(tmp_path, "video", "source:=camera:57", "model_complexity:=0", "realtime:=true",
                      "drop_late_frames:=false", "loop:=true")
    try:
        keep_all = contract.qos(contract.REPLAY)  # the probe keeps every sample it is sent
        lm = probe.collect(HandLandmarksArray, contract.TOPIC_LANDMARKS, keep_all)
        tf = probe.collect(JointState, contract.TOPIC_TARGET_FLEXIONS, keep_all)
        jf = probe.collect(JointState, contract.TOPIC_JOINT_FLEXIONS, keep_all)
        dg = probe.collect(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, QOS)
        assert probe.get_state(NODE, timeout=30) == "unconfigured"

        # every key of config/tracker.yaml is a declared parameter
        declared = set(probe.call(ListParameters, f"/{NODE}/list_parameters",
                                  ListParameters.Request(), retry=True).result.names)
        with open(PARAMS) as f:
            keys = set(yaml.safe_load(f)[NODE]["ros__parameters"])
        assert keys <= declared, keys - declared

        # an invalid transition id (activate from unconfigured) is refused, the node survives
        res = probe.change_state_raw(NODE, 3)
        assert res.success is False
        assert node.alive() and probe.get_state(NODE) == "unconfigured"

        # a missing camera: configure fails with a message, the node stays unconfigured
        assert probe.change_state(NODE, "configure") is False
        assert probe.get_state(NODE) == "unconfigured"
        assert "/dev/video57 does not exist" in node.output()

        [r] = probe.set_parameters(NODE, source="webcam")
        assert not r.successful and "unknown source" in r.reason
        [r] = probe.set_parameters(NODE, source=f"video:{video_path}")
        assert r.successful
        assert probe.change_state(NODE, "configure") is True
        [r] = probe.set_parameters(NODE, source="camera:0")
        assert not r.successful and "read at configure time" in r.reason

        t_activate = time.monotonic()  # the source's pacing clock (CLOCK_MONOTONIC, system-wide)
        assert probe.change_state(NODE, "activate") is True
        assert probe.get_state(NODE) == "active"
        wait_until(lambda: len(tf) >= 20 and len(jf) >= 20, 60, "flexions from the video")

        # landmarks of every frame from the first, in order, the physical right hand
        msgs = list(lm)
        assert all(len(m.hands) == 1 and m.hands[0].handedness == "right" for m in msgs)
        idx = np.array([m.hands[0].frame_index for m in msgs])
        assert (idx == np.arange(len(idx))).all(), idx
        h = msgs[-1].hands[0]
        assert (h.image_width, h.image_height) == (1280, 720) and h.header.frame_id == "camera_optical"
        assert all(math.isfinite(p.x) for p in h.world_landmarks)
        # flexions: contract names, values in [0, 1], stamped with the frame's capture time
        f = tf[-1]
        assert tuple(f.name) == contract.FINGER_NAMES
        contract.parse_flexions(f.name, f.position)
        contract.parse_flexions(jf[-1].name, jf[-1].position, contract.JOINT_NAMES)
        lm_stamps = {stamp(m) for m in msgs}
        assert stamp(tf[5]) in lm_stamps and stamp(jf[5]) == stamp(tf[5])

        # out-of-range values are refused with a reason
        for name, value, reason in (("index_curled_angle", 4.0, "index_curled_angle"),
                                    ("index_curled_angle", 2.9, "index: straight angle"),
                                    ("filter_min_cutoff_hz", 0.0, "filter_min_cutoff_hz"),
                                    ("hand_preference", "middle", "hand_preference"),
                                    ("joint_curled_angles", [1.0, 2.0], "15 values"),
                                    ("frame_timeout", 2.0, "'frame_timeout' is now 'frame_timeout_s'")):
            [r] = probe.set_parameters(NODE, **{name: value})
            assert not r.successful and reason in r.reason, (name, r.reason)
        assert node.alive()

        # a valid change acts on the next frames: index window above every index curl → 1.0
        [a, b] = probe.set_parameters(NODE, index_straight_angle=3.14, index_curled_angle=3.0)
        assert a.successful and b.successful
        # frames read (stamped) after the change returned are processed with it
        t_set = time.time()
        n0 = len(tf)
        wait_until(lambda: sum(stamp(m) > t_set for m in list(tf)[n0:]) >= 10, 60, "flexions after the change")
        after = [m for m in list(tf)[n0:] if stamp(m) > t_set]
        assert len(after) >= 10 and all(m.position[1] == 1.0 for m in after)
        assert any(m.position[1] < 1.0 for m in list(tf)[:n0])
        # ... and below every index curl → 0.0 (curled first: the window must stay valid)
        [a, b] = probe.set_parameters(NODE, index_curled_angle=0.1, index_straight_angle=0.3)
        assert a.successful and b.successful
        t_set = time.time()
        n0 = len(tf)
        wait_until(lambda: sum(stamp(m) > t_set for m in list(tf)[n0:]) >= 10, 60,
                   "flexions after the second change")
        after = [m for m in list(tf)[n0:] if stamp(m) > t_set]
        assert len(after) >= 10 and all(m.position[1] == 0.0 for m in after)
        assert get_params(probe, "index_straight_angle", "index_curled_angle") == [0.3, 0.1]

        # mirror: a selfie camera's image → MediaPipe's own label is the physical hand ('left' here)
        [r] = probe.set_parameters(NODE, mirror=True)
        assert r.successful
        t_set = time.time()
        n0 = len(lm)
        wait_until(lambda: any(stamp(m) > t_set for m in list(lm)[n0:]), 60, "landmarks after mirror:=true")
        after = [m for m in list(lm)[n0:] if stamp(m) > t_set]
        assert after and all(m.hands[0].handedness == "left" for m in after)
        [r] = probe.set_parameters(NODE, backend="tasks")
        assert not r.successful and "mediapipe_hands" in r.reason

        wait_until(lambda: len(dg) >= 2, 10, "diagnostics")
        st = latest_status(dg)
        elapsed = time.monotonic() - t_activate
        values = {kv.key: kv.value for kv in st.values}
        assert st.level == DiagnosticStatus.OK, st.message
        frames = int(values[iface.KEY_FRAMES])
        # realtime pacing at the file's 30 fps: frame n is read no earlier than n/30 s after the
        # first (a slow machine only reads later); every frame processed, a hand in each (621/621):
        # followed, or its pose held where the quality gate refused the reading, never lost
        assert 20 <= frames <= elapsed * 30.0 + 1, (frames, elapsed)
        assert int(values[iface.KEY_DROPPED_FRAMES]) == 0
        tracked, held = int(values["frames_tracked"]), int(values["held_total"])
        assert tracked + held == frames and held <= tracked, values
        assert int(values[iface.KEY_FLEXIONS_PUBLISHED]) == frames, values
        assert float(values["inference_ms"]) > 0
        assert math.isfinite(float(values["frame_rate_hz"]))

        # deactivate: flexions stop (the node's own count, then every one of them received and no more)
        assert probe.change_state(NODE, "deactivate") is True
        n_diag = len(dg)
        def latest_values():
            return {kv.key: kv.value for kv in latest_status(dg).values}

        wait_until(lambda: len(dg) > n_diag and latest_values()[iface.KEY_STATE] == "inactive", 30,
                   "diagnostics of the inactive node")
        n = int(latest_values()[iface.KEY_FLEXIONS_PUBLISHED])
        wait_until(lambda: len(tf) >= n, 30, "every published flexion")
        time.sleep(0.5)
        assert len(tf) == n and len(jf) == n
        assert probe.change_state(NODE, "cleanup") is True
        assert probe.get_state(NODE) == "unconfigured"
    finally:
        stop_node(node)


def landmarks_msg(lm, i, t):
    """rclpy HandLandmarksArray of cached video frame ``i`` (None: a frame without hand) at ``t`` s."""
    from builtin_interfaces.msg import Time
    from geometry_msgs.msg import Point
    from hand_msgs.msg import HandLandmarks
    from std_msgs.msg import Header

    sec = int(t)
    header = Header(stamp=Time(sec=sec, nanosec=int(round((t - sec) * 1e9))), frame_id="camera_optical")
    out = HandLandmarksArray(header=header)
    for h in (lm.hands(i) if i is not None else []):
        out.hands.append(HandLandmarks(
            header=header, frame_index=i, handedness=h.handedness, handedness_score=float(h.score),
            image_width=lm.width, image_height=lm.height,
            image_landmarks=[Point(x=x, y=y, z=z) for x, y, z in h.image.tolist()],
            world_landmarks=[Point(x=x, y=y, z=z) for x, y, z in h.world.tolist()]))
    return out


class Player:
    """Publishes cached video frames on /hand/landmarks from a thread, stamped 1/30 s apart
    (stream time) at ``rate`` Hz wall time; remembers which frame each stamp carried."""

    def __init__(self, pub, lm):
        self.pub, self.lm = pub, lm
        self.t = 1000.0
        self.sent: dict[int, int | None] = {}  # stamp in ns → frame
        self._stop = threading.Event()
        self._thread = None

    def start(self, frames, rate=60.0):
        if self.sent:
            # the stream paused between sessions (seconds of wall time): its stamps resume 1 s on,
            # not 1/30 s after the last frame sent. Abutting stamps made the jump from wherever the
            # previous session stopped (a time-dependent frame) one 33 ms motion, which the gate
            # refused for motion in 7 of 12 runs (load 4-12)
            self.t += 1.0
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(frames, rate))
        self._thread.start()
        return self

    def _run(self, frames, rate):
        k = 0
        while not self._stop.is_set():
            i = frames[k % len(frames)]
            msg = landmarks_msg(self.lm, i, self.t)
            self.sent[msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec] = i
            self.pub.publish(msg)
            self.t += 1 / 30.0
            k += 1
            time.sleep(1.0 / rate)

    def stop(self):
        self._stop.set()
        self._thread.join()


def calibrate(probe, player, pose, frames, duration=1.0):
    player.start(frames)
    try:
        req = Calibrate.Request(pose=pose, duration_s=duration)
        return probe.call(Calibrate, f"/{NODE}/calibrate", req, timeout=20)
    finally:
        player.stop()


def test_topic_replay_calibration_and_watchdog(probe, tmp_path, video_path):
    lm = video_landmarks(video_path)
    node = start_node(tmp_path, "topic", "source:=topic:/hand/landmarks", "frame_timeout_s:=0.5",
                      "diagnostics_period_s:=0.2", "filter_enabled:=false")
    try:
        tf = probe.collect(JointState, contract.TOPIC_TARGET_FLEXIONS, QOS)
        dg = probe.collect(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, QOS)
        pub = probe.publisher(HandLandmarksArray, contract.TOPIC_LANDMARKS, 10)
        player = Player(pub, lm)
        assert probe.get_state(NODE, timeout=30) == "unconfigured"
        # calibrating before activation is refused, not hung
        res = probe.call(Calibrate, f"/{NODE}/calibrate", Calibrate.Request(pose=0, duration_s=0.5))
        assert not res.success and "activate" in res.message
        assert probe.change_state(NODE, "configure") and probe.change_state(NODE, "activate")
        probe.wait_for_subscribers(pub)
        # replaying a topic: the node must not publish on the topic it reads
        time.sleep(0.5)
        assert probe.node.count_publishers(contract.TOPIC_LANDMARKS) == 1

        # watchdog: nothing arrives → ERROR
        wait_until(lambda: dg and latest_status(dg).level == DiagnosticStatus.ERROR, 5, "watchdog ERROR")
        assert "no frame" in latest_status(dg).message

        res = calibrate(probe, player, Calibrate.Request.OPEN, [None])
        assert not res.success and "no hand" in res.message, res.message
        res = calibrate(probe, player, Calibrate.Request.OPEN, list(CAL_OPEN))
        assert res.success, res.message
        assert 25 <= res.frames <= 31
        def skeleton_angles(frames):  # the node's default skeleton: the fused heads
            f = list(frames)
            return joint_angles(fused_points(lm.image[f], lm.world[f], lm.width, lm.height))

        expect_open = capture_pose("open", skeleton_angles(CAL_OPEN))
        np.testing.assert_allclose(res.captured_curl_rad, expect_open.curls, atol=0.03)
        # a "fist" that is the open hand again: refused, the fingers and angles named
        res = calibrate(probe, player, Calibrate.Request.FIST, list(CAL_OPEN))
        assert not res.success and "fist capture looks open: index 2." in res.message, res.message
        assert "pinky" in res.message
        res = calibrate(probe, player, Calibrate.Request.FIST, list(CAL_FIST), duration=0.4)
        assert res.success, res.message
        expect = windows_from_poses(expect_open, capture_pose("fist", skeleton_angles(CAL_FIST)))
        assert f"quality {expect.quality:.2f}" in res.message, res.message
        names = [f"{f}_{e}_angle" for e in ("straight", "curled") for f in contract.FINGER_NAMES]
        np.testing.assert_allclose(get_params(probe, *names), expect.fingers.straight + expect.fingers.curled,
                                   atol=0.03)

        # the calibrated windows read the video's open hand (frame 135) and fist (frame 270)
        n0 = len(tf)
        # in blocks of 3 frames: open <-> fist in one 33 ms frame is the fastest change the gate's
        # motion check lets through (1.22 of its 1.27 hand sizes); alternating every frame, a
        # fist and an open hand 60 times a second, is no hand's motion and would be refused
        player.start([135] * 3 + [270] * 3)
        try:
            wait_until(lambda: len(tf) >= n0 + 20, 10, "flexions from replayed landmarks")
            # frames are back: the watchdog clears
            wait_until(lambda: latest_status(dg).level == DiagnosticStatus.OK, 5, "watchdog cleared")
        finally:
            player.stop()
        values = {kv.key: kv.value for kv in latest_status(dg).values}
        for reason in REJECT_REASONS:  # every gate reason is counted (none fires on these frames)
            assert values[f"rejected_{reason}"] == "0", (reason, values)
        frame_of = {m.header.stamp.sec * 10**9 + m.header.stamp.nanosec: m for m in list(tf)[n0:]}
        got = {135: [], 270: []}
        for ns, m in frame_of.items():
            if player.sent.get(ns) in got:
                got[player.sent[ns]].append(list(m.position))
        assert len(got[135]) >= 5 and len(got[270]) >= 5
        assert np.max(got[135]) <= 0.2
        assert np.min(np.array(got[270])[:, 1:]) >= 0.7
        # frames stop → ERROR again, the node lives on
        wait_until(lambda: latest_status(dg).level == DiagnosticStatus.ERROR, 5, "watchdog ERROR again")
        assert node.alive()
    finally:
        stop_node(node)


def test_bag_replay_matches_the_pure_pipeline(probe, tmp_path, video_path):
    lm = video_landmarks(video_path)
    # 2 s without frames after the 20th (more than frame_timeout_s = 1 s): the held pose is dropped
    frames = [(2000.0 + i / 30.0 + (2.0 if i >= 270 else 0.0), i, lm.hands(i)) for i in range(250, 290)]
    frames[5] = (frames[5][0], 255, [])  # one frame without a hand: held, and published
    write_landmark_bag(tmp_path / "bag", frames, width=lm.width, height=lm.height)
    node = start_node(tmp_path, "bag", f"source:=bag:{tmp_path / 'bag'}", "realtime:=false",
                      "replay_stamps:=recorded")
    try:
        lms = probe.collect(HandLandmarksArray, contract.TOPIC_LANDMARKS, QOS)
        tf = probe.collect(JointState, contract.TOPIC_TARGET_FLEXIONS, QOS)
        assert probe.get_state(NODE, timeout=30) == "unconfigured"
        assert probe.change_state(NODE, "configure")
        time.sleep(1.0)  # let the probe's subscriptions match before the first frame
        assert probe.change_state(NODE, "activate")
        wait_until(lambda: len(tf) >= 40 and len(lms) >= 40, 20, "replayed frames")
    finally:
        stop_node(node)
    assert [m.hands[0].frame_index if m.hands else None for m in lms] == \
        [i if hands else None for _, i, hands in frames]
    np.testing.assert_allclose([stamp(m) for m in tf], [t for t, _, _ in frames], atol=1e-6)
    # the node filters on the recorded capture stamps as read from the messages: bit for bit the
    # pure pipeline run on those stamps
    core = TrackerCore(TrackerConfig())
    expect = []
    for k, ((_, _, h), m) in enumerate(zip(frames, lms)):
        if k == 20:
            core.reset()  # the node decides the reset on the capture stamps: a replay does the same
        expect.append(core.update(h, stamp(m), lm.width, lm.height).finger_flexions.tolist())
    assert [list(m.position) for m in tf] == expect
    # after the gap the filter starts afresh: the first frame reads its unfiltered flexions
    fresh = TrackerCore(TrackerConfig(filter_enabled=False)).update(frames[20][2], 0.0, lm.width, lm.height)
    assert list(tf[20].position) == fresh.finger_flexions.tolist()
    world = np.array([(p.x, p.y, p.z) for p in lms[0].hands[0].world_landmarks])
    np.testing.assert_array_equal(world, lm.world[250])


def test_landmark_array_helper_builds_rosbags_messages():
    from hand_common.bag import typestore

    store = typestore()
    msg = landmark_array(store, [], stamp=12.5, frame_index=3, width=640, height=480)
    assert msg.header.stamp.sec == 12 and msg.header.stamp.nanosec == 500_000_000 and list(msg.hands) == []
