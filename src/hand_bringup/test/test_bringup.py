"""Bringup end to end on the real video: the embedded runner's `sim` profile (tracker + twin as
separate processes, lifecycle driven by the runner) records a rosbag2 (MCAP) that rosbags and mcap
readers open; replaying its /hand/landmarks through the tracker with the same parameters
reproduces every recorded flexion bit for bit, and with another calibration changes the flexions
in the expected direction."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from hand_common import contract
from hand_common.bag import read_messages, topic_counts
from hand_tracking.tracker_core import DEFAULT_FINGER_CURLED, DEFAULT_FINGER_STRAIGHT

FRAMES = 621  # ../shared/media/README.md
#: twin without offscreen rendering: the test measures the pipeline, not the renderer
QUIET_TWIN = ["-p", "twin.render_rate_hz=0.0", "-p", "twin.publish_image=false"]


def run_runner(args: list[str], out, timeout: float = 240) -> str:
    proc = subprocess.run([sys.executable, "-m", "hand_bringup.runner", *args, "--out", str(out)],
                          capture_output=True, text=True, timeout=timeout)
    logs = "".join(f"\n--- {f}\n" + open(os.path.join(out, "logs", f)).read()[-2000:]
                   for f in sorted(os.listdir(os.path.join(out, "logs"))))
    assert proc.returncode == 0, f"runner failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}{logs}"
    return proc.stdout


def index_flexions(bag_dir) -> dict[int, float]:
    """frame_index -> index-finger flexion, joined on the capture stamp."""
    frames, flex = {}, {}
    for topic, _, msg in read_messages(bag_dir, [contract.TOPIC_LANDMARKS, contract.TOPIC_TARGET_FLEXIONS]):
        stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        if topic == contract.TOPIC_LANDMARKS and msg.hands:
            frames[stamp] = msg.hands[0].frame_index
        elif topic == contract.TOPIC_TARGET_FLEXIONS:
            flex[stamp] = dict(zip(msg.name, msg.position))["index"]
    return {frames[s]: v for s, v in flex.items() if s in frames}


#: Bag replay through the tracker, paced at the recorded rate with every frame kept: an unpaced
#: replay bursts at ~1 kHz and can overrun the recorder's keep-last queues under load.
REPLAY = ["-p", "tracker.realtime=true", "-p", "tracker.drop_late_frames=false",
          "-p", "tracker.replay_stamps=recorded"]


def flexion_messages(bag_dir, topic: str) -> dict[tuple[int, int], tuple[tuple[str, ...], tuple[float, ...]]]:
    """capture stamp (sec, nanosec) -> (names, positions) of every message on ``topic``."""
    out = {}
    for _, _, msg in read_messages(bag_dir, [topic]):
        out[(msg.header.stamp.sec, msg.header.stamp.nanosec)] = (tuple(msg.name), tuple(float(x) for x in msg.position))
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, video_path):
    out = tmp_path_factory.mktemp("sim_run")
    stdout = run_runner(["sim", "--video", str(video_path), "-p", "tracker.realtime=false",
                         "-p", "tracker.model_complexity=0", *QUIET_TWIN], out)
    return out, stdout


def test_sim_profile_records_a_bag_of_the_whole_video(recorded):
    out, stdout = recorded
    bag_dir = out / "sim_bag"
    counts = topic_counts(bag_dir)
    assert counts[contract.TOPIC_LANDMARKS] == ("hand_msgs/msg/HandLandmarksArray", FRAMES)
    assert counts[contract.TOPIC_TARGET_FLEXIONS][0] == "sensor_msgs/msg/JointState"
    assert counts[contract.TOPIC_TARGET_FLEXIONS][1] == FRAMES  # a hand in every frame
    assert counts[contract.TOPIC_JOINT_FLEXIONS][1] == FRAMES
    assert counts[contract.TOPIC_TWIN_JOINT_STATES][1] > FRAMES / 2  # the twin publishes at its own rate
    assert counts[contract.TOPIC_DIAGNOSTICS][0] == "diagnostic_msgs/msg/DiagnosticArray"
    assert "frames 621/621" in stdout and "hand 621/621" in stdout


def test_bag_opens_with_the_mcap_reader(recorded):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    out, _ = recorded
    (mcap_file,) = (out / "sim_bag").glob("*.mcap")
    per_topic: dict[str, int] = {}
    with open(mcap_file, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        summary = reader.get_summary()
        schemas = {c.topic: summary.schemas[c.schema_id].name for c in summary.channels.values()}
        first_hand = None
        for _, channel, _, decoded in reader.iter_decoded_messages(topics=[contract.TOPIC_LANDMARKS]):
            per_topic[channel.topic] = per_topic.get(channel.topic, 0) + 1
            if first_hand is None and decoded.hands:
                first_hand = decoded.hands[0]
    assert schemas[contract.TOPIC_LANDMARKS] == "hand_msgs/msg/HandLandmarksArray"
    assert schemas[contract.TOPIC_TARGET_FLEXIONS] == "sensor_msgs/msg/JointState"
    assert per_topic[contract.TOPIC_LANDMARKS] == FRAMES
    assert first_hand.handedness == "right" and len(first_hand.world_landmarks) == 21


def test_replay_with_the_same_parameters_reproduces_every_flexion_bit_for_bit(recorded, tmp_path):
    """Time comes from the data: the tracker's filter and hold run on the capture stamps carried in
    the recorded /hand/landmarks, so the replay recomputes exactly the floats of the live run."""
    out, _ = recorded
    run_runner(["sim", "--source", f"bag:{out / 'sim_bag'}", *REPLAY, *QUIET_TWIN], tmp_path)
    for topic in (contract.TOPIC_TARGET_FLEXIONS, contract.TOPIC_JOINT_FLEXIONS):
        live = flexion_messages(out / "sim_bag", topic)
        replay = flexion_messages(tmp_path / "sim_bag", topic)
        assert len(live) == FRAMES, topic
        assert sorted(replay) == sorted(live), f"{topic}: replayed stamps differ from the live run's"
        differ = [s for s in live if replay[s] != live[s]]  # exact equality of every float
        assert not differ, (f"{topic}: {len(differ)} of {FRAMES} messages differ, first at stamp {differ[0]}: "
                            f"live {live[differ[0]]} replay {replay[differ[0]]}")


def test_replay_with_another_calibration_changes_flexions_in_the_expected_direction(recorded, tmp_path):
    out, _ = recorded
    original = index_flexions(out / "sim_bag")
    # A curled angle further from straight (1.2 instead of the default 1.6 rad) widens the index
    # finger's window: the same recorded angles must read as *less* flexed.
    run_runner(["sim", "--source", f"bag:{out / 'sim_bag'}", *REPLAY, "-p", "tracker.index_curled_angle=1.2",
                *QUIET_TWIN], tmp_path)
    replayed = index_flexions(tmp_path / "sim_bag")
    common = sorted(set(original) & set(replayed))
    assert len(common) >= FRAMES - 5
    a = np.array([original[i] for i in common])
    b = np.array([replayed[i] for i in common])
    partly = (a > 0.05) & (a < 0.95)  # frames where neither run is clipped at an end of [0, 1]
    assert partly.sum() > 50
    # Both runs filter the same angles on the same capture stamps (deterministic replay): only the
    # window differs, so every unclipped flexion scales by exactly old window / new window.
    less = np.mean(b[partly] <= a[partly] + 1e-6)
    shift = np.mean(a[partly] - b[partly])
    ratio = (DEFAULT_FINGER_STRAIGHT[1] - DEFAULT_FINGER_CURLED[1]) / (DEFAULT_FINGER_STRAIGHT[1] - 1.2)
    print(f"\nrecalibrated replay: {len(common)} frames in common, {partly.sum()} partly flexed, "
          f"{less:.3f} of them read less flexed, mean shift {shift:.4f} (expected "
          f"{(1 - ratio) * np.mean(a[partly]):.4f} = (1 - {ratio:.4f}) x mean flexion)")
    assert less == 1.0
    np.testing.assert_allclose(b[partly], a[partly] * ratio, rtol=1e-9, atol=1e-12)
    assert np.all((b >= 0) & (b <= 1))
