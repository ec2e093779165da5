"""Replay of a recorded run (``console --bag``): a bag written with the project's bag module
(landmarks with frame indices of the shared video, flexions, the tracker's diagnostics naming its
source), read back on one time axis; scrubbing the page's timeline in a real browser (chromium
headless) shows the frame and the flexions of that moment."""

from __future__ import annotations

import re
import socket
import threading

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point
from hand_msgs.msg import HandLandmarks, HandLandmarksArray
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState

from hand_common import contract
from hand_common.bag import BagWriter
from hand_console.replay import Replay, ReplayData, VideoFrames
from hand_console.state import figures

FPS = 30.0
N = 90
T0_NS = 1_700_000_000_000_000_000


def flexion(i: int) -> list[float]:
    """Ground truth: digit d of frame i."""
    return [round((i % 30) / 30.0 * (d + 1) / 5.0, 4) for d in range(5)]


def recorder_latency_ms(i: int) -> int:
    """Ground truth: the recorder received frame i's flexions this many ms after its capture."""
    return 25 + i % 11


def hand_joints() -> tuple[list[str], list[tuple[float, float]]]:
    """The sim profile's hand URDF: its actuated joints and their (lower, upper) limits."""
    import yourdfpy

    from hand_console.robots import robot_views

    urdf = yourdfpy.URDF.load(str(robot_views("sim")[0].urdf()), load_meshes=False, build_scene_graph=False)
    names = list(urdf.actuated_joint_names)
    return names, [(urdf.joint_map[n].limit.lower, urdf.joint_map[n].limit.upper) for n in names]


def twin_joints(i: int) -> list[float]:
    """Ground truth: the twin's joints at frame i, each at i/N of its range."""
    return [lo + (hi - lo) * i / N for lo, hi in hand_joints()[1]]


@pytest.fixture(scope="module")
def bag(tmp_path_factory, video_path):
    path = tmp_path_factory.mktemp("replay") / "sim_bag"
    names = hand_joints()[0]
    with BagWriter(path) as w:
        w.add(contract.TOPIC_TWIN_JOINT_STATES, "sensor_msgs/msg/JointState")
        w.add(contract.TOPIC_LANDMARKS, "hand_msgs/msg/HandLandmarksArray")
        w.add(contract.TOPIC_TARGET_FLEXIONS, "sensor_msgs/msg/JointState")
        w.add(contract.TOPIC_DIAGNOSTICS, "diagnostic_msgs/msg/DiagnosticArray")
        for i in range(N):
            t_ns = T0_NS + int(i / FPS * 1e9)
            lm = HandLandmarksArray()
            lm.header.stamp.sec, lm.header.stamp.nanosec = divmod(t_ns, 1_000_000_000)
            if i != 40:  # frame 40: no hand
                h = HandLandmarks(frame_index=i, handedness="right", handedness_score=0.9, accepted=True,
                                  quality=0.9)
                h.image_landmarks = [Point(x=0.3 + 0.01 * k, y=0.5, z=0.0) for k in range(21)]
                lm.hands = [h]
            js = JointState(name=list(contract.FINGER_NAMES), position=flexion(i))
            js.header.stamp = lm.header.stamp
            w.write(contract.TOPIC_LANDMARKS, t_ns + 20_000_000, serialize_message(lm))
            w.write(contract.TOPIC_TARGET_FLEXIONS, t_ns + recorder_latency_ms(i) * 1_000_000, serialize_message(js))
            twin = JointState(name=names, position=twin_joints(i))
            twin.header.stamp = lm.header.stamp  # the twin stamps its states with the command's capture stamp
            w.write(contract.TOPIC_TWIN_JOINT_STATES, t_ns + 35_000_000, serialize_message(twin))
            if i % 30 == 0:
                st = DiagnosticStatus(name=f"{contract.TRACKER_NODE}: tracking", values=[
                    KeyValue(key="tracking", value="tracked"), KeyValue(key="frames", value=str(i)),
                    KeyValue(key="source", value=f"video:{video_path}")])
                w.write(contract.TOPIC_DIAGNOSTICS, t_ns + 40_000_000, serialize_message(DiagnosticArray(status=[st])))
    return path


def test_a_recorded_run_on_one_time_axis(bag, video_path):
    data = ReplayData.load(bag)
    assert len(data.frames) == N and data.source == f"video:{video_path}"
    assert data.duration_s == pytest.approx((N - 1) / FPS, abs=1e-6)
    assert data.frame_at(1.0).frame_index == 30 and data.frame_at(1.0 + 0.5 / FPS).frame_index == 30
    assert data.frame_at(-1.0).frame_index == 0 and data.frame_at(99.0).frame_index == N - 1
    assert data.frame_at(40 / FPS).frame_index == -1 and data.frame_at(40 / FPS).hands == []
    latest, hist = data.flexions_at(55 / FPS)
    assert latest == pytest.approx(flexion(55), abs=1e-6)
    t, v = hist.series()
    assert len(t) == 56 and t[-1] == 0.0 and v[0] == pytest.approx(flexion(0), abs=1e-6)
    assert data.diagnostics_at(0.5)[f"{contract.TRACKER_NODE}: tracking"]["frames"] == "0"
    assert data.diagnostics_at(2.5)[f"{contract.TRACKER_NODE}: tracking"]["frames"] == "60"
    with pytest.raises(ValueError, match="no /hand/left/landmarks recorded"):
        ReplayData.load(bag, side="left")
    # the recorded twin's joint states: the sim profile's hand, posed as at each moment
    assert data.robot.name == "hand" and data.robot.topic_name() == contract.TOPIC_TWIN_JOINT_STATES
    assert data.joints_at(-0.1) is None
    names, positions = data.joints_at(55.5 / FPS)
    assert names == hand_joints()[0] and positions == pytest.approx(twin_joints(55))


def test_capture_to_flexion_percentiles_come_from_the_recorders_receive_times(bag, tmp_path):
    data = ReplayData.load(bag)
    # the 10 s before frame 55 hold all 56 flexions; the 30.5 frames before frame 89: frames 59-89
    for t, window, frames in ((55 / FPS, 10.0, range(56)), (89 / FPS, 30.5 / FPS, range(59, 90))):
        p50, p95, note = data.latency_at(t, window)
        truth = [recorder_latency_ms(i) for i in frames]
        assert (p50, p95) == pytest.approx((np.percentile(truth, 50), np.percentile(truth, 95)), abs=1e-3)
        assert note.startswith("recorder's keep-all receive times") and f"{len(truth)} flexions" in note
    assert data.latency_at(-1.0) == (None, None, "no flexion in the 10 s before")
    # the page's figures row shows them, and whose times they are
    p50, p95, note = data.latency_at(55 / FPS)
    assert dict(figures({}, (p50, p95), {}, note))["capture→flexion p50 / p95"] == \
        f"{p50:.1f} / {p95:.1f} ms ({note})"
    # an unpaced file: stamps on the media timeline, ahead of the recorder's clock: no figure, and why
    unpaced = tmp_path / "unpaced_bag"
    with BagWriter(unpaced) as w:
        w.add(contract.TOPIC_LANDMARKS, "hand_msgs/msg/HandLandmarksArray")
        w.add(contract.TOPIC_TARGET_FLEXIONS, "sensor_msgs/msg/JointState")
        for i in range(10):
            t_ns = T0_NS + int(i / FPS * 1e9)
            lm = HandLandmarksArray()
            lm.header.stamp.sec, lm.header.stamp.nanosec = divmod(t_ns, 1_000_000_000)
            js = JointState(name=list(contract.FINGER_NAMES), position=flexion(i))
            js.header.stamp = lm.header.stamp
            log = T0_NS + i * 5_000_000  # read 6 times faster than the media time
            w.write(contract.TOPIC_LANDMARKS, log, serialize_message(lm))
            w.write(contract.TOPIC_TARGET_FLEXIONS, log + 1_000_000, serialize_message(js))
    p50, p95, note = ReplayData.load(unpaced).latency_at(9 / FPS)
    assert (p50, p95) == (None, None) and "not on the recorder's clock" in note


def test_the_replay_poses_the_recorded_robot(bag):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    replay = Replay(ReplayData.load(bag), "127.0.0.1", port)
    try:
        assert replay.robot is not None and list(replay.pose.names) == hand_joints()[0]
        for i in (70, 20):  # scrubbing back poses it as it was then
            replay.show(i / FPS)
            assert replay.pose.cfg == pytest.approx(twin_joints(i))
    finally:
        replay.close()


def test_video_frames_by_index_seek_or_read_on(video_path):
    import cv2

    frames = VideoFrames(str(video_path))
    try:
        a = frames.get(30)
        b = frames.get(31)  # read on
        c = frames.get(30)  # seek back
        assert a.shape == (180, 320, 3) and (a == c).all() and not (a == b).all()
        assert frames.get(-1) is None and frames.get(10_000) is None
    finally:
        frames.close()
    cap = cv2.VideoCapture(str(video_path))
    for _ in range(31):
        ok, bgr = cap.read()
    cap.release()
    ref = cv2.cvtColor(cv2.resize(bgr, (320, 180), interpolation=cv2.INTER_AREA), cv2.COLOR_BGR2RGB)
    assert np.abs(ref.astype(int) - c.astype(int)).mean() < 1.0


def test_scrubbing_in_a_browser_shows_the_frame_and_flexions_of_that_moment(bag):
    from hand_console.browser import ConsoleBrowser, browser_problem
    from hand_console.page import TIMELINE_LABEL

    if problem := browser_problem():
        pytest.fail(problem)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    replay = Replay(ReplayData.load(bag), "127.0.0.1", port)
    thread = threading.Thread(target=replay.run, daemon=True)
    thread.start()
    page = ConsoleBrowser(f"http://127.0.0.1:{port}", width=1000, height=760, nice=0)
    try:
        page.open()
        page.wait_for(lambda: "frame 0)" in page.text(), 60, "the first moment")
        for i in (45, 12):
            page.type_into(TIMELINE_LABEL, f"{(i + 0.5) / FPS:.2f}")  # within frame i's 33 ms
            page.wait_for(lambda i=i: f"frame {i})" in page.text(), 60, f"frame {i}")
            text = page.text()
            shown = [float(x) for x in re.findall(r"(?:thumb|index|middle|ring|pinky) ([0-9.]+)", text)[:5]]
            assert shown == pytest.approx(flexion(i), abs=0.006), (i, shown)
            # capture→flexion of the 10 s before, from the recorder's receive times (frames 0..i)
            truth = [recorder_latency_ms(k) for k in range(i + 1)]
            latency = (f"{np.percentile(truth, 50):.1f} / {np.percentile(truth, 95):.1f} ms (recorder's keep-all "
                       f"receive times, {i + 1} flexions in the last 10 s)")
            page.wait_for(lambda latency=latency: latency in page.text(), 30, f"capture→flexion '{latency}'")
        assert replay.video is not None  # the source video named in the diagnostics: real frames shown
    finally:
        page.close()
        replay.close()
        thread.join(5)
