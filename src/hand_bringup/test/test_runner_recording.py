"""Recording loses nothing: an unpaced bag replay (the tracker as fast as it can read) records every
landmark message, in 5 of 5 runs, and the runner prints published vs recorded counts per topic; a
run whose bag lacks messages fails loudly, naming the topic and the numbers.

What makes it lossless (each measured on this 2-core machine, 600-frame bursts; the tracker's
batch rate is now bounded, tracker.batch_max_rate_hz 200 Hz, which long bags need):
- the recorder subscribes keep-all (contract.RECORD): a keep-last reader drops when the runner
  falls behind;
- the tracker's data publishers are keep-all when its source is a recording read faster than
  real time (contract.REPLAY): with keep-last 10, unacknowledged samples were overwritten
  (33-133 lost per run);
- the tracker activates its lifecycle publishers before its worker reads the first frame
  (frames 0-2, counted as published, went to still-inactive publishers in 4 of 76 runs); the
  runner activates nodes once its recorder subscriptions have matched their publishers, and
  the batch source starts once every subscription the graph shows has matched;
- the drain before stopping ends on the counted topics only (/diagnostics kept it waiting
  forever: the hangs).
With all of these: N of N runs held 600/600 of landmarks, target and joint flexions (see the note)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from hand_common import contract
from hand_common.bag import read_messages, topic_counts

N = 600  # synthetic ground truth: messages in the source bag


@pytest.fixture(scope="module")
def source_bag(tmp_path_factory) -> pathlib.Path:
    from hand_tracking.geometry import synthetic_hand
    from hand_tracking.landmarks import HandObservation
    from hand_tracking.replay import write_landmark_bag

    path = tmp_path_factory.mktemp("src") / "landmarks_bag"

    def observation(i: int) -> HandObservation:
        # a plausible hand (the tracker's quality gate refuses random points), slowly curling
        world = synthetic_hand(np.full(15, np.pi - 0.15 - 0.3 * (1 + np.sin(i / 10))))
        xy = world[:, :2] - world[:, :2].mean(axis=0)
        xy = 0.5 + 0.3 * xy / np.abs(xy).max()  # the whole hand inside the picture
        image = np.c_[xy[:, 0] * 480 / 640 + 0.5 * (1 - 480 / 640), xy[:, 1], np.zeros(21)]
        return HandObservation(image=image, world=world, handedness="right", score=0.9)

    frames = [(1000.0 + i / 30, i, [observation(i)]) for i in range(N)]
    assert write_landmark_bag(path, frames, width=640, height=480) == N
    return path


@pytest.mark.parametrize("run", range(int(os.environ.get("UNPACED_RUNS", "5"))))  # more runs: UNPACED_RUNS=30
def test_unpaced_bag_replay_records_every_message(source_bag, tmp_path, run):
    out = tmp_path / "replay"
    p = subprocess.run([sys.executable, "-m", "hand_bringup.runner", "rviz", "--source", f"bag:{source_bag}",
                        "-p", "tracker.realtime=false", "--out", str(out)],
                       capture_output=True, text=True, timeout=180)
    output = p.stdout + p.stderr
    assert p.returncode == 0, output[-3000:]
    bag = out / "rviz_bag"
    counts = topic_counts(bag)
    assert counts[contract.TOPIC_LANDMARKS][1] == N
    assert counts[contract.TOPIC_TARGET_FLEXIONS][1] == N  # a hand in every synthetic frame
    assert counts[contract.TOPIC_JOINT_FLEXIONS][1] == N
    assert f"{contract.TOPIC_LANDMARKS}: published {N}, recorded {N}" in output
    indices = [m.hands[0].frame_index for _, _, m in read_messages(bag, [contract.TOPIC_LANDMARKS])]
    assert sorted(indices) == list(range(N))


@pytest.mark.parametrize("record", [True, False], ids=["bag", "no-record"])
def test_a_looped_source_ended_by_duration_prints_published_counts(source_bag, tmp_path, record):
    """A looped recording (like a camera: it never finishes) ended by --duration: the runner
    deactivates the tracker, takes its final counts and checks the bag (or, --no-record, its own
    subscriptions) against them: every tracker topic has a published number, not '?'. The loop
    is paced (600 frames, 20 s a pass): a few seconds end it in its first pass."""
    import re

    out = tmp_path / "loop"
    args = [sys.executable, "-m", "hand_bringup.runner", "operator", "--source", f"bag:{source_bag}",
            "-p", "tracker.loop=true", "--duration", "4", "--out", str(out)] + ([] if record else ["--no-record"])
    p = subprocess.run(args, capture_output=True, text=True, timeout=180)
    output = p.stdout + p.stderr
    assert p.returncode == 0, output[-3000:]
    got = "recorded" if record else "received"
    counts = {}
    for topic in (contract.TOPIC_LANDMARKS, contract.TOPIC_TARGET_FLEXIONS):
        assert f"  {topic}: published ?" not in output, output[-3000:]  # (/diagnostics has no count)
        m = re.search(rf"  {re.escape(topic)}: published (\d+), {got} (\d+)", output)
        assert m, output[-3000:]
        counts[topic] = int(m[1])
        assert int(m[2]) == counts[topic]
    assert 0 < counts[contract.TOPIC_LANDMARKS] < N  # ended by --duration, in its first pass
    assert counts[contract.TOPIC_TARGET_FLEXIONS] == counts[contract.TOPIC_LANDMARKS]  # a hand in every frame
    if record:
        bag = topic_counts(out / "operator_bag")
        assert bag[contract.TOPIC_LANDMARKS][1] == counts[contract.TOPIC_LANDMARKS]
        assert bag[contract.TOPIC_JOINT_FLEXIONS][1] == counts[contract.TOPIC_TARGET_FLEXIONS]


class _FakeRecorder:
    def __init__(self, counts):
        self._counts = counts

    def counts(self):
        return dict(self._counts)


def test_a_lost_message_is_named_with_the_topic_and_the_numbers(tmp_path):
    from hand_bringup.runner_core import RunConfig, Runner

    runner = Runner(RunConfig(profile="rviz", out_dir=tmp_path))
    runner.monitor.diagnostics = {"hand_tracker: tracking": {"watchdog": "finished", "frames": "533"}}
    runner.monitor.landmark_msgs = 533
    runner.recorder = _FakeRecorder({contract.TOPIC_LANDMARKS: 483, contract.TOPIC_JOINT_STATES: 100})
    runner._check_recording()
    assert runner.recording[contract.TOPIC_LANDMARKS] == {"published": 533, "recorded": 483, "monitor": 533}
    assert runner.recording[contract.TOPIC_JOINT_STATES]["published"] is None
    assert f"{contract.TOPIC_LANDMARKS}: published 533, recorded 483 (50 lost)" in runner.recording_problems
    assert "/hand/landmarks: published 533, recorded 483" in runner.recording_summary()
    # /joint_states has no count: the tally says what its "?" means, once
    summary = runner.recording_summary().splitlines()
    assert f"  {contract.TOPIC_JOINT_STATES}: published ?, recorded 100" in summary
    assert summary[-1].startswith("  (published ?: no count to check against")


def test_nothing_lost_is_no_problem(tmp_path):
    from hand_bringup.runner_core import RunConfig, Runner

    runner = Runner(RunConfig(profile="rviz", out_dir=tmp_path))
    runner.monitor.diagnostics = {"hand_tracker: tracking": {"watchdog": "finished", "frames": "533"}}
    runner.monitor.landmark_msgs = 533
    runner.recorder = _FakeRecorder({contract.TOPIC_LANDMARKS: 533})
    runner._check_recording()
    assert runner.recording_problems == []
    assert runner.recording_summary() == f"  {contract.TOPIC_LANDMARKS}: published 533, recorded 533"  # no legend


def test_frames_the_tracker_dropped_from_its_source_fail_the_run(tmp_path):
    """A paced replay with drop_late_frames under load: the tracker published all it processed
    (so the bag matches it) but dropped frames of the recording: the run fails, saying so."""
    from hand_bringup.runner_core import RunConfig, Runner

    runner = Runner(RunConfig(profile="rviz", out_dir=tmp_path))
    runner.monitor.diagnostics = {"hand_tracker: tracking": {"watchdog": "finished", "frames": "619",
                                                             "dropped_frames": "2"}}
    runner.monitor.landmark_msgs = 619
    runner.recorder = _FakeRecorder({contract.TOPIC_LANDMARKS: 619})
    runner._check_recording()
    assert runner.recording_problems == [
        f"{contract.TOPIC_LANDMARKS}: the source had 621 frames, the tracker dropped 2 (drop_late_frames: not "
        "processed in time at realtime pacing), 619 published; to keep every frame of a recording: "
        "-p tracker.drop_late_frames=false or tracker.realtime=false"]


def test_two_hands_counts_are_checked_per_side(tmp_path):
    from hand_bringup.runner_core import RunConfig, Runner

    runner = Runner(RunConfig(profile="two_hands", out_dir=tmp_path))
    assert runner.two_hands
    left_target = contract.side_topic(contract.TOPIC_TARGET_FLEXIONS, "left")
    right_target = contract.side_topic(contract.TOPIC_TARGET_FLEXIONS, "right")
    runner.monitor.diagnostics = {"hand_tracker: tracking": {
        "watchdog": "finished", "frames": "300", "flexions_published": "450",
        "flexions_published_left": "290", "flexions_published_right": "160"}}
    runner.monitor.landmark_msgs = 300
    runner.monitor.flexion_msgs_by_topic = {left_target: 290, right_target: 160}
    published = runner.published_counts()
    assert published[contract.TOPIC_LANDMARKS] == 300
    assert published[left_target] == 290 and published[right_target] == 160
    assert published[contract.side_topic(contract.TOPIC_JOINT_FLEXIONS, "right")] == 160
    runner.recorder = _FakeRecorder({contract.TOPIC_LANDMARKS: 300, left_target: 290, right_target: 150})
    runner._check_recording()
    assert runner.recording_problems == [
        f"{right_target}: published 160, recorded 150 (10 lost)",
        f"{right_target}: the runner received 160, the bag holds 150 (10 lost)"]


def test_without_a_bag_the_runner_tallies_what_it_received(tmp_path):
    """--no-record: the counts (and a loss) come from the runner's own subscriptions."""
    from hand_bringup.runner_core import RunConfig, Runner

    runner = Runner(RunConfig(profile="rviz", out_dir=tmp_path, record=False))
    runner.probe = SimpleNamespace(callback_errors=0)  # connected (no ROS needed for the check)
    runner.monitor.diagnostics = {"hand_tracker: tracking": {"watchdog": "finished", "frames": "533",
                                                             "flexions_published": "500"}}
    runner.monitor.landmark_msgs = 533
    runner.monitor.flexion_msgs_by_topic = {contract.TOPIC_TARGET_FLEXIONS: 498}
    runner._check_recording()
    assert runner.recording[contract.TOPIC_LANDMARKS] == {"published": 533, "recorded": None, "monitor": 533}
    assert runner.recording_problems == [f"{contract.TOPIC_TARGET_FLEXIONS}: published 500, the runner received 498 "
                                         "(2 lost)"]
    assert f"{contract.TOPIC_LANDMARKS}: published 533, received 533 (no bag)" in runner.recording_summary()
    runner.probe = None


def _tracker_diagnostics(state: str, watchdog: str, frames: int, dropped: int,
                         flexions: int | None = None) -> SimpleNamespace:
    """A /diagnostics message with the tracker's status as the node publishes it (the keys the
    end check reads, from hand_tracking.interface); ``flexions`` published (default: ``frames``)."""
    from hand_tracking import interface as tracker_iface

    flexions = frames if flexions is None else flexions
    values = {tracker_iface.KEY_STATE: state, tracker_iface.KEY_WATCHDOG: watchdog,
              tracker_iface.KEY_FRAMES: str(frames), tracker_iface.KEY_FLEXIONS_PUBLISHED: str(flexions),
              tracker_iface.KEY_DROPPED_FRAMES: str(dropped), tracker_iface.KEY_BAD_FRAMES: "0",
              tracker_iface.KEY_LAST_ERROR: ""}
    status = SimpleNamespace(name=f"{tracker_iface.NODE}{tracker_iface.STATUS_SUFFIX}", level=1,
                             message=f"source finished after {frames} frames",
                             values=[SimpleNamespace(key=k, value=v) for k, v in values.items()])
    return SimpleNamespace(status=[status])


def test_dropped_frames_count_from_the_source_end_not_from_the_deactivated_tracker(tmp_path):
    """The dex run on the shared video under load: the tracker processed 114 of 621 frames and
    dropped 507; the runner then deactivated it and its next status (inactive, no prefetch queue)
    said dropped_frames 0. The end check read that last status and the run exited 0. It must count
    from the status of the source's end."""
    from hand_bringup.runner_core import RunConfig, Runner

    runner = Runner(RunConfig(profile="dex", out_dir=tmp_path))
    runner.monitor.read_diagnostics(_tracker_diagnostics("active", "ok", 100, 430))
    runner.monitor.read_diagnostics(_tracker_diagnostics("active", "finished", 114, 507))
    runner.monitor.read_diagnostics(_tracker_diagnostics("inactive", "finished", 114, 0))  # after bring_down
    runner.monitor.landmark_msgs = 114
    runner.recorder = _FakeRecorder({contract.TOPIC_LANDMARKS: 114, contract.TOPIC_TARGET_FLEXIONS: 114})
    assert runner.monitor.source_frames() == (621, 507)
    assert runner.published_counts()[contract.TOPIC_LANDMARKS] == 114
    runner._check_recording()
    assert len(runner.recording_problems) == 1
    assert runner.recording_problems[0].startswith(
        f"{contract.TOPIC_LANDMARKS}: the source had 621 frames, the tracker dropped 507 ")


@pytest.mark.parametrize("record", [True, False], ids=["bag", "no-record"])
def test_a_looping_run_counts_from_the_deactivated_tracker_and_fails_on_a_loss(tmp_path, record):
    """A camera or a looped file never reports 'finished': the runner deactivates the tracker at
    the end and its first inactive status is the final count. An inactive status from bring-up
    (frames 0) or an active one is not; a flexion lost after that fails the run, topic and
    numbers named (issue 27: a 1-hour looped run printed 'published ?' for every topic)."""
    from hand_bringup.runner_core import RunConfig, Runner

    runner = Runner(RunConfig(profile="operator", out_dir=tmp_path, record=record))
    mon = runner.monitor
    mon.read_diagnostics(_tracker_diagnostics("inactive", "ok", 0, 0))  # configured, not yet active
    mon.read_diagnostics(_tracker_diagnostics("active", "ok", 150, 3, flexions=140))
    assert runner.published_counts() == {}  # still publishing: no final count
    mon.expect_stopped_status()  # the runner deactivates the tracker
    mon.read_diagnostics(_tracker_diagnostics("active", "ok", 175, 3, flexions=165))  # sent before it stopped
    assert mon.tracker_stopped is None and runner.published_counts() == {}
    mon.read_diagnostics(_tracker_diagnostics("inactive", "ok", 180, 0, flexions=170))
    mon.read_diagnostics(_tracker_diagnostics("inactive", "ok", 999, 0, flexions=999))  # later: not read
    assert runner.published_counts() == {contract.TOPIC_LANDMARKS: 180, contract.TOPIC_TARGET_FLEXIONS: 170,
                                         contract.TOPIC_JOINT_FLEXIONS: 170}
    assert mon.source_frames() is None  # a camera's stale frames are not a loss of the source
    mon.landmark_msgs = 180
    mon.flexion_msgs_by_topic = {contract.TOPIC_TARGET_FLEXIONS: 168}
    if record:
        runner.recorder = _FakeRecorder({contract.TOPIC_LANDMARKS: 180, contract.TOPIC_TARGET_FLEXIONS: 168,
                                         contract.TOPIC_JOINT_FLEXIONS: 170})
        lost = f"{contract.TOPIC_TARGET_FLEXIONS}: published 170, recorded 168 (2 lost)"
    else:
        runner.probe = SimpleNamespace(callback_errors=0)
        lost = f"{contract.TOPIC_TARGET_FLEXIONS}: published 170, the runner received 168 (2 lost)"
    runner._check_recording()
    runner.probe = None
    assert runner.recording_problems == [lost]
    assert "?" not in runner.recording_summary()


def test_a_finite_run_that_stopped_on_idle_fails(tmp_path):
    """No landmarks for idle_stop_s and no 'finished' from the tracker (a stalled tracker): the
    run ended early, which must fail it (it ended with exit 0, the counts of nothing known)."""
    import time

    from hand_bringup.runner_core import RunConfig, Runner

    runner = Runner(RunConfig(profile="dex", out_dir=tmp_path, video_frames=621, idle_stop_s=30.0))
    runner.monitor.read_diagnostics(_tracker_diagnostics("active", "ok", 114, 0))
    runner.monitor.landmark_msgs = 114
    runner.monitor.frames.append((113, time.time() - 31.0, True, 0))
    assert runner.finished()
    runner.recorder = _FakeRecorder({contract.TOPIC_LANDMARKS: 114})
    runner._check_recording()
    assert len(runner.recording_problems) == 1
    assert runner.recording_problems[0].startswith(
        f"{contract.TOPIC_LANDMARKS}: no message for 30 s after 114 of 621 frames and the tracker never "
        "reported its source finished: the run stopped early")


class _FakeSubscription:
    def __init__(self, matched: int) -> None:
        self.matched = matched

    def get_publisher_count(self) -> int:
        return self.matched


class _FakeGraphNode:
    """The graph shows two /diagnostics publishers (two nodes); the recorder's reader has matched
    ``matched`` of them."""

    def __init__(self, matched: int) -> None:
        self.matched = matched

    def create_subscription(self, msg_type, topic, callback, qos, raw=False):
        return _FakeSubscription(self.matched)

    def get_publisher_names_and_types_by_node(self, name, namespace):
        return [(contract.TOPIC_DIAGNOSTICS, ["diagnostic_msgs/msg/DiagnosticArray"])]

    def count_publishers(self, topic):
        return 2 if topic == contract.TOPIC_DIAGNOSTICS else 0


@pytest.mark.parametrize("matched", [1, 2])
def test_activation_waits_for_every_diagnostics_publisher(tmp_path, capsys, matched):
    """A node's status published at activation reached the bag only if the recorder's /diagnostics
    reader had matched that node's publisher; one matched publisher (another node's) was enough
    before, so the runner activated the nodes with a reader that could miss their first statuses."""
    from hand_bringup.runner_recording import Recorder

    rec = Recorder(_FakeGraphNode(matched), tmp_path / "bag")
    rec.record(contract.TOPIC_DIAGNOSTICS, "diagnostic_msgs/msg/DiagnosticArray")
    rec.wait_for_publishers(set(), ["servo_driver", "hand_tracker"], timeout=0.3)
    out = capsys.readouterr().out
    assert (f"matched no publisher on ['{contract.TOPIC_DIAGNOSTICS}']" in out) == (matched < 2)
    rec.close()


def test_a_message_after_the_recorder_closed_is_counted_not_written(tmp_path):
    # a two-host run: the other host's nodes still publish /diagnostics while this runner closes its
    # bag; the callback then raised "write after close" out of the probe's executor and the run exited 1
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    from hand_bringup.runner_recording import Recorder

    callbacks = {}

    def create_subscription(_cls, topic, cb, _qos, raw=False):
        callbacks[topic] = cb
        return SimpleNamespace(get_publisher_count=lambda: 1)

    rec = Recorder(SimpleNamespace(create_subscription=create_subscription), tmp_path / "bag")
    rec.record(contract.TOPIC_TARGET_FLEXIONS, "sensor_msgs/msg/JointState")
    data = serialize_message(JointState(name=list(contract.FINGER_NAMES), position=[0.5] * 5))
    callbacks[contract.TOPIC_TARGET_FLEXIONS](data)
    rec.close()
    callbacks[contract.TOPIC_TARGET_FLEXIONS](data)  # after the close: no exception
    assert rec.after_close == 1
    assert rec.counts()[contract.TOPIC_TARGET_FLEXIONS] == 1
    assert topic_counts(tmp_path / "bag")[contract.TOPIC_TARGET_FLEXIONS][1] == 1
