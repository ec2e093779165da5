"""The /joint_states checker: crafted bad streams (in memory, in a rosbag2, live across processes)
must be reported kind by kind; a clean stream must pass."""

from __future__ import annotations

import math
import pathlib
import sys

import pytest
from rclpy.serialization import serialize_message
from rosbags.typesys import Stores, get_typestore
from sensor_msgs.msg import JointState

from hand_common.bag import BagWriter
from hand_common.contract import JOINT_NAMES, STREAM, TOPIC_JOINT_STATES, qos
from hand_common.testing import NodeProcess, RosProbe, wait_until
from hand_joint_mapper.joint_state_check import JointStateChecker, check_bag, main

FIX = pathlib.Path(__file__).resolve().parent / "fixtures"
URDF = (FIX / "hand15.urdf").read_text()
MIMIC_URDF = (FIX / "hand15_mimic.urdf").read_text()
T0 = 1_700_000_000_000_000_000
DT = 33_000_000


def js(positions=None, names=JOINT_NAMES, stamp_ns=T0, velocity=(), effort=()) -> JointState:
    m = JointState()
    m.header.stamp.sec, m.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    m.name = list(names)
    m.position = [0.1] * len(names) if positions is None else [float(p) for p in positions]
    m.velocity, m.effort = [float(v) for v in velocity], [float(e) for e in effort]
    return m


def crafted_stream() -> list[tuple[JointState, int]]:
    """(message, reception ns): 2 clean, then one of each problem, then clean again."""
    good = [0.5] * 15
    out = [(js(good, stamp_ns=T0), T0 + 2_000_000), (js(good, stamp_ns=T0 + DT), T0 + DT + 2_000_000)]
    t = T0 + 2 * DT
    bad = [
        js(good, names=[*JOINT_NAMES[:14], "pinky_tip_joint"], stamp_ns=t),      # fixed joint name + missing pinky_dip
        js(good[:14], stamp_ns=t + DT),                                            # 15 names, 14 positions
        js([*good[:4], 1.9, *good[5:]], stamp_ns=t + 2 * DT),                      # index_pip 1.9 > 1.75
        js(good, stamp_ns=t + 2 * DT),                                             # same stamp as before
        js([*good[:2], math.nan, *good[3:]], stamp_ns=t + 3 * DT),                 # NaN thumb_ip
        js(good, stamp_ns=t + 4 * DT, velocity=[0.0] * 3),                         # velocity length 3
    ]
    out += [(m, t + k * DT + 2_000_000) for k, m in enumerate(bad)]
    out.append((js(good, stamp_ns=t + 5 * DT), t + 5 * DT + 900_000_000))        # 0.9 s late
    out.append((js(good, stamp_ns=t + 40 * DT), t + 40 * DT + 1_000_000))  # received after the late one
    return out


EXPECTED = {"unknown_name": 1, "missing_joint": 1, "length_mismatch": 2, "out_of_limits": 1,
            "stale_stamp": 2, "non_finite": 1}


def test_clean_stream_passes():
    c = JointStateChecker(URDF)
    for k in range(5):
        assert c.check_msg(js([0.0] * 15, stamp_ns=T0 + k * DT), T0 + k * DT + 1_000_000) == []
    assert c.check_msg(js([1.0, 1.0, 1.3, 1.57, 1.75, 1.4] + [0.0] * 9, stamp_ns=T0 + 9 * DT)) == []
    assert c.report.ok and c.report.messages == 6 and c.report.bad_messages == 0


def test_each_problem_kind_is_reported_with_the_joint():
    c = JointStateChecker(URDF)
    found = [c.check_msg(m, t) for m, t in crafted_stream()]
    assert [len(f) > 0 for f in found] == [False, False] + [True] * 7 + [False]
    assert dict(c.report.counts) == EXPECTED
    by_msg = {i: [(p.kind, p.joint) for p in f] for i, f in enumerate(found) if f}
    assert by_msg[2] == [("unknown_name", "pinky_tip_joint"), ("missing_joint", "pinky_dip")]
    assert by_msg[3] == [("length_mismatch", None)]
    assert by_msg[4] == [("out_of_limits", "index_pip")]
    assert by_msg[5] == [("stale_stamp", None)] and "does not advance" in found[5][0].detail
    assert by_msg[6] == [("non_finite", "thumb_ip")]
    assert by_msg[7] == [("length_mismatch", None)] and "3 velocity" in found[7][0].detail
    assert by_msg[8] == [("stale_stamp", None)] and "0.900 s after its stamp" in found[8][0].detail
    assert not c.report.ok and c.report.bad_messages == 7
    text = c.report.summary()
    assert "10 messages" in text and "out_of_limits: 1" in text and "index_pip" in text


def test_stamp_rules_and_options():
    c = JointStateChecker(URDF, max_age_s=0.1)
    assert [p.detail for p in c.check_msg(js(stamp_ns=0))] == ["zero stamp"]
    assert "future" in c.check_msg(js(stamp_ns=T0), T0 - 500_000_000)[0].detail
    assert c.check_msg(js(stamp_ns=T0 + DT), None) == []  # no reception time: age not judged
    c = JointStateChecker(URDF, max_age_s=None, tolerance=0.2)
    assert c.check_msg(js([*[0.0] * 4, 1.9, *[0.0] * 10], stamp_ns=T0), T0 + 10**10) == []


def test_mimic_joints_may_be_left_to_robot_state_publisher():
    c = JointStateChecker(MIMIC_URDF)
    without_dips = [n for n in JOINT_NAMES if not n.endswith("_dip") or n == "thumb_ip"]
    assert c.check_msg(js(names=without_dips, stamp_ns=T0)) == []
    only = [n for n in without_dips if n != "ring_pip"]  # ring_dip's source gone: both missing
    assert {p.joint for p in c.check_msg(js(names=only, stamp_ns=T0 + DT))} == {"ring_pip", "ring_dip"}
    assert JointStateChecker(URDF, require_all=False).check_msg(js(names=JOINT_NAMES[:3], stamp_ns=T0)) == []


def write_bag(path: pathlib.Path, stream) -> None:
    with BagWriter(path, get_typestore(Stores.ROS2_JAZZY)) as w:
        w.add(TOPIC_JOINT_STATES, "sensor_msgs/msg/JointState")
        for m, t in stream:
            w.write(TOPIC_JOINT_STATES, t, serialize_message(m))


def test_bag_and_cli(tmp_path, capsys):
    bad, good = tmp_path / "bad_bag", tmp_path / "good_bag"
    write_bag(bad, crafted_stream())
    write_bag(good, crafted_stream()[:2])
    report = check_bag(URDF, str(bad))
    assert dict(report.counts) == EXPECTED and report.messages == 10
    assert main(["--urdf", str(FIX / "hand15.urdf"), "--bag", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "7 with problems" in out and "message 4: out_of_limits index_pip" in out
    assert main(["--urdf", str(FIX / "hand15.urdf"), "--bag", str(good)]) == 0
    assert "2 passed, 0 with problems" in capsys.readouterr().out
    assert main(["--urdf", str(FIX / "hand15.urdf"), "--bag", str(good), "--topic", "/nope"]) == 2
    assert "has no topic /nope" in capsys.readouterr().err


def test_live_stream_from_another_process(tmp_path):
    """The CLI listens live (and records) while this process publishes a crafted bad stream."""
    probe = RosProbe("joint_state_check_probe")
    rec = tmp_path / "recorded"
    proc = NodeProcess([sys.executable, "-m", "hand_joint_mapper.joint_state_check", "--urdf", str(FIX / "hand15.urdf"),
                        "--live", "--count", "10", "--duration", "30", "--record", str(rec), "--max-age", "-1"],
                       log_path=str(tmp_path / "checker.log"))
    try:
        pub = probe.publisher(JointState, TOPIC_JOINT_STATES, qos(STREAM))
        probe.wait_for_subscribers(pub, timeout=20)
        for m, _ in crafted_stream():
            pub.publish(m)
        wait_until(lambda: not proc.alive(), 20, "the checker to exit after 10 messages")
    finally:
        proc.stop()
        probe.close()
    out = proc.output()
    assert proc.proc.returncode == 1, out
    expected = {**EXPECTED, "stale_stamp": 1}  # --max-age -1: only the repeated stamp is stale
    for kind, n in expected.items():
        assert f"{kind}: {n}" in out, out
    assert dict(check_bag(URDF, str(rec), max_age_s=None).counts) == expected


@pytest.mark.parametrize("args", [["--bag", "/nonexistent/bag"], ["--urdf", "/nonexistent.urdf", "--bag", "x"]])
def test_cli_unusable_input_exit_2(args, capsys):
    assert main(["--urdf", str(FIX / "hand15.urdf"), *args] if "--urdf" not in args else args) == 2
    assert "check_joint_states:" in capsys.readouterr().err
