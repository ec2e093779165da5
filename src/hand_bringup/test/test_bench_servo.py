"""bench_servo: the board-log figures of the benchmark on synthetic logs with exact answers."""

import numpy as np
import pytest

from hand_bringup import bench_servo
from hand_servo_driver.horn import SG90_SPEED_DPS, US_PER_DEG

SPEED_US_S = SG90_SPEED_DPS * US_PER_DEG  # 6666.7 µs/s


def frame(t, outputs, msg="set_pulses"):
    return {"event": "frame", "msg": msg, "t": t, "mono": t + 1000.0, "outputs": list(outputs)}


def test_link_budget_at_115200_baud():
    b = bench_servo.link_budget(5)
    assert b["frame_bytes"] == 24  # 5 channels: the servo_driver.yaml comment's 24 B
    assert b["frame_ms"] == pytest.approx(24 * 10 / 115200 * 1e3, abs=1e-3)  # 2.083 ms
    assert b["frames_per_10ms_fit"] == pytest.approx(4.8, abs=0.01)


def test_frame_spacing_counts_the_most_frames_in_any_10ms():
    recs = [frame(t, [1500] * 5) for t in (0.0, 0.010, 0.015, 0.0151, 0.040)]
    recs.append({"event": "horn", "t": 0.02, "mono": 1000.02})  # not a frame
    s = bench_servo.frame_spacing(recs)
    assert s["frames"] == 5
    assert s["max_in_window"] == 3  # 0.010, 0.015, 0.0151
    assert s["closer_share"] == pytest.approx(0.5)  # 2 of the 4 gaps are < 10 ms
    assert s["min_gap_ms"] == pytest.approx(0.1, abs=1e-6)
    assert s["rate_hz"] == pytest.approx(4 / 0.040, abs=0.1)


def test_horn_reach_time_is_exact_between_frames():
    # a horn at 1000 µs is sent to 2000 at t=1: it passes 1500 ± 10 at 1 + 490 / speed
    recs = [frame(0.0, [1000]), frame(1.0, [2000]), frame(2.0, [2000])]
    t = bench_servo.horn_reach_time(recs, 0, 1500.0, 10.0, t_from=0.5)
    assert t == pytest.approx(1.0 + 490.0 / SPEED_US_S, abs=1e-9)
    # asked from later in the move: where it is then counts
    t2 = bench_servo.horn_reach_time(recs, 0, 1900.0, 0.0, t_from=1.05)
    assert t2 == pytest.approx(1.0 + 900.0 / SPEED_US_S, abs=1e-9)
    # already there
    assert bench_servo.horn_reach_time(recs, 0, 1000.0, 5.0, t_from=0.2) == pytest.approx(0.2)
    # the target moves away before the horn gets there: never
    recs2 = [frame(0.0, [1000]), frame(1.0, [2000]), frame(1.01, [1000]), frame(3.0, [1000])]
    assert bench_servo.horn_reach_time(recs2, 0, 1500.0, 10.0, t_from=0.5) is None
    # "as far as": a horn that overshoots the target is there when it passes it, one that stops
    # short (the next command wants less) is not; nothing after t_until counts
    recs3 = [frame(0.0, [1000]), frame(1.0, [1700]), frame(2.0, [1700])]
    assert bench_servo.horn_reach_time(recs3, 0, 1800.0, 10.0, t_from=0.5, direction=1) is None
    assert bench_servo.horn_reach_time(recs3, 0, 1600.0, 10.0, t_from=0.5, direction=1) == pytest.approx(
        1.0 + 590.0 / SPEED_US_S, abs=1e-9)
    assert bench_servo.horn_reach_time(recs3, 0, 1600.0, 10.0, t_from=0.5, direction=1, t_until=1.05) is None
    assert bench_servo.horn_reach_time(recs, 0, 1000.0, 5.0, t_from=0.2, direction=-1) == pytest.approx(0.2)


def test_fist_command_is_the_first_frame_at_90_percent_of_the_closure():
    # mean flexion 0.1 (open) rising by 0.1 a frame to 0.9 at frame 248, then held
    frames = [(i, 1000 + i) for i in range(240, 300)]
    flex = {s: [min(0.9, 0.1 + 0.1 * max(0, i - 240))] * 5 for i, s in frames}
    fists = bench_servo.fist_commands(frames, flex, windows=((240, 300),))
    # 0.1 + 0.9 x 0.8 = 0.82: frame 248 (0.9) is the first at or above it
    assert fists == [(248, 1248, 1240)]
    assert bench_servo.fist_commands(frames, {s: [0.5] * 5 for _, s in frames}, windows=((240, 300),)) == []


def test_horn_latencies_per_moving_channel():
    # capture at 10.0 s of a fist: channel 0 must go 1000 -> 1600 µs (the board is sent on to 1700),
    # channel 2 the other way 2000 -> 1400, channel 1 stays (not counted); channel 2's horn gets
    # there only after the 2 s horizon: never
    stamp, open_stamp = 10_000_000_000, 9_000_000_000
    pulses = {open_stamp: [1000.0, 1200.0, 2000.0], stamp: [1600.0, 1250.0, 1400.0]}
    recs = [frame(9.0, [1000, 1200, 2000]), frame(10.02, [1700, 1250, 2000]), frame(12.5, [1700, 1250, 1400]),
            frame(13.0, [1700, 1250, 1400])]
    out = bench_servo.horn_latencies(recs, [(270, stamp, open_stamp)], pulses.__getitem__, (0, 1, 2), tol_us=16.0)
    assert [h["channel"] for h in out] == [0, 2]
    assert out[0]["latency_s"] == pytest.approx(0.02 + (600.0 - 16.0) / SPEED_US_S, abs=1e-9)
    assert out[1]["latency_s"] is None


def test_replay_driver_ramps_at_max_speed_and_the_horn_follows():
    from hand_common.contract import FINGER_NAMES
    from hand_servo_driver.parameters import build_config

    cfg = build_config({"port": "bench"})[0]  # the YAML's defaults: 1000..2000 µs, 300 °/s = 3333 µs/s
    # open for 0.5 s, then a fist held for 1 s, commands at 30 fps arriving at their capture time
    cmds = [(k / 30.0, dict.fromkeys(FINGER_NAMES, 0.0 if k < 15 else 1.0), k / 30.0) for k in range(45)]
    recs = bench_servo.replay_driver(cmds, cfg)
    assert recs[-1]["outputs"] == [1000] * 5  # commands ended: stale, ramped back to the safe pose
    first_full = next(r["t"] for r in recs if r["outputs"] == [2000] * 5)
    assert first_full == pytest.approx(0.5 + 1000.0 / (300.0 * 11.111), abs=0.011)  # 0.3 s ramp, 10 ms ticks
    # the SG90 (600 °/s) keeps up with a 300 °/s ramp: at the target one ramp step after the last
    # frame (<= 45 µs at 3333 µs/s: ramp frames 10 ms apart, the command's own 13.3 ms after the last)
    t = bench_servo.horn_reach_time(recs, 0, 2000.0, 0.0, t_from=0.5, direction=1)
    assert first_full <= t <= first_full + 45.0 / SPEED_US_S + 1e-9
    ramp = [r["t"] for r in recs if 0.5 <= r["t"] <= first_full]
    gaps = np.diff(ramp)
    assert gaps.min() >= 0.01 - 1e-9 and gaps.max() <= 0.04 / 3 + 1e-9


def test_bench_servo_replay_reads_a_runs_bag_and_prints_the_wire_by_tick_phase(tmp_path, capsys):
    """A recorded 30 fps command stream (log time 3-9 ms after each capture, seeded) through the
    replay: every command back in log-time order, and at each of 10 tick phases the capture → wire
    p95 within 3 ms of the capture → flexion p95 (issue 26), printed."""
    from rclpy.serialization import serialize_message
    from rosbags.typesys import Stores, get_typestore
    from sensor_msgs.msg import JointState

    from hand_bringup import bench_servo_replay
    from hand_common.bag import BagWriter
    from hand_common.contract import FINGER_NAMES, TOPIC_TARGET_FLEXIONS

    rng = np.random.default_rng(26)
    t0 = 1_700_000_000.0
    sent = []
    with BagWriter(tmp_path / "bag", get_typestore(Stores.ROS2_JAZZY)) as w:
        w.add(TOPIC_TARGET_FLEXIONS, "sensor_msgs/msg/JointState")
        for k in range(180):  # 6 s; a hand closing and opening twice a second
            stamp = t0 + k / 30.0
            v = 0.5 - 0.5 * np.cos(2 * np.pi * 2.0 * k / 30.0)
            m = JointState(name=list(FINGER_NAMES), position=[float(v)] * 5)
            m.header.stamp.sec, m.header.stamp.nanosec = int(stamp), int(round((stamp % 1) * 1e9))
            log_ns = int(round((stamp + rng.uniform(0.003, 0.009)) * 1e9))
            w.write(TOPIC_TARGET_FLEXIONS, log_ns, serialize_message(m))
            sent.append(log_ns)
    commands, frames, flexions = bench_servo_replay.bag_run(tmp_path / "bag")
    assert [round(c[0] * 1e9) for c in commands] == pytest.approx(sent, abs=1000) and frames == []
    assert len(flexions) == 180
    assert bench_servo_replay.main([str(tmp_path / "bag")]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(" ") and line.split()[0][0].isdigit()]
    assert len(rows) == 10
    assert all(float(r[3]) <= 3.0 for r in rows), out
    assert "load average" in out
