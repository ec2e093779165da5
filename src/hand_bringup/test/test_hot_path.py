"""Hot-path bookkeeping without ROS traffic: niceness of started nodes, safe-pose trips counted
only while the hand is tracked, CPU seconds. (bench_pipeline's capture → wire figure is the servo
driver's own, per command: hand_servo_driver's test_core.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hand_bringup.bringup import NODES
from hand_bringup.runner_core import RunConfig, Runner, nice_prefix, process_cpu_seconds
from hand_common import contract


def test_non_hot_path_nodes_start_niced():
    assert NODES["tracker"].nice == 0  # the hot path keeps the runner's priority
    assert NODES["twin"].nice > 0 and NODES["joint_mapper"].nice > 0
    assert nice_prefix(0) == []
    out = subprocess.run(nice_prefix(5) + [sys.executable, "-c", "import os; print(os.nice(0))"],
                         capture_output=True, text=True, check=True).stdout
    assert int(out) == min(os.nice(0) + 5, 19)


def test_process_cpu_seconds_reads_proc():
    cpu = process_cpu_seconds(os.getpid())
    assert cpu is not None and cpu > 0
    assert process_cpu_seconds(2**22 + 12345) is None  # beyond pid_max: no such process


def test_safe_pose_trips_count_only_while_tracked(tmp_path):
    runner = Runner(RunConfig(profile="demo", out_dir=tmp_path))
    twin, servo = f"{contract.TWIN_NODE}: physics", f"{contract.SERVO_DRIVER_NODE}: link"
    runner.monitor.frames.append((0, 1.0, True, 0))
    runner.monitor.count_safe_pose(twin, {"watchdog": "waiting", "real_time_factor_total": "0.0"})  # before any command
    runner.monitor.count_safe_pose(twin, {"watchdog": "ok", "real_time_factor_total": "0.998"})
    runner.monitor.count_safe_pose(servo, {"stale": "False"})
    runner.monitor.count_safe_pose(twin, {"watchdog": "timed_out"}, now=2.0)  # a trip in the middle of tracking ...
    runner.monitor.count_safe_pose(twin, {"watchdog": "ok"}, now=3.0)
    runner.monitor.frames.append((1, 4.0, True, 0))  # ... frames came after it
    runner.monitor.count_safe_pose(twin, {"watchdog": "timed_out"}, now=5.0)  # the end of the video: none after
    runner.monitor.count_safe_pose(servo, {"stale": "True"}, now=5.0)
    assert runner.monitor.safe_pose_trips == {"servo_driver": 0, "twin": 1}
    assert runner.monitor.twin_rtf == pytest.approx(0.998)
