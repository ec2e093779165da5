"""A full disk in the middle of a run (issue 27): the runner ends it with exit 1 naming the bag's
file, the servo driver still takes the servos to the safe pose, the bag opens with what it
committed, and the simulated board survives a log it cannot write.

The disk is a 512 KB tmpfs this test mounts (it needs root and a mount namespace that allows it:
skipped, with the reason, elsewhere); the Recorder's reaction is also checked without a mount."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pytest

from hand_common import contract
from hand_common.bag import topic_counts

SAFE_US = [1000] * 5  # config/servo_driver.yaml: safe_flexion 0 -> min_pulse_us on every channel


@pytest.fixture
def small_disk(tmp_path):
    """A 512 KB tmpfs at tmp_path/disk, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a 512 KB tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(disk)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _board_frames(log) -> list[dict]:
    with open(log) as f:
        return [e for e in (json.loads(ln) for ln in f if ln.endswith("\n"))
                if e.get("event") == "frame" and e.get("msg") == "set_pulses"]


@pytest.mark.parametrize("board_on_disk", [False, True], ids=["board_log_apart", "board_log_on_full_disk"])
def test_full_disk_ends_the_run_with_the_file_named_and_servos_safe(small_disk, tmp_path, video_path, board_on_disk):
    out = small_disk / "run"
    board = small_disk / "board" if board_on_disk else tmp_path / "board"
    p = subprocess.run([sys.executable, "-m", "hand_bringup.runner", "hardware", "--video", str(video_path),
                        "--out", str(out), "--sim-board-dir", str(board)],
                       capture_output=True, text=True, timeout=600)
    output = p.stdout + p.stderr
    assert p.returncode == 1, output[-3000:]
    bag = out / "hardware_bag"
    assert f"[runner] error: cannot write the bag {bag} (" in output and "No space left on device" in output
    assert "exited with code" not in output  # no node and not the board died of the full disk
    assert "Traceback" not in output and "terminate called" not in output
    counts = topic_counts(bag)  # the bag opens, with what it committed before the disk filled
    assert counts[contract.TOPIC_LANDMARKS][1] > 0
    if not board_on_disk:  # the board's pulse log is readable: the last frame is the safe pose
        frames = _board_frames(board / "servo_board_pulses.jsonl")
        assert frames and frames[-1]["outputs"] == SAFE_US
        assert max(max(f["outputs"]) for f in frames) > SAFE_US[0]  # the servos had moved before


def test_recorder_stops_on_a_write_error_and_keeps_what_it_committed(tmp_path, monkeypatch):
    from hand_bringup.runner_recording import Recorder

    rec = Recorder(node=None, path=tmp_path / "bag")
    rec.bag.add(contract.TOPIC_DIAGNOSTICS, "diagnostic_msgs/msg/DiagnosticArray")
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.serialization import serialize_message

    cb = rec._callback(contract.TOPIC_DIAGNOSTICS)
    data = serialize_message(DiagnosticArray())
    for _ in range(3):
        cb(data)
    rec.bag.flush()  # 3 committed

    def full(*a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    cb(data)  # pending, lost with the segment
    monkeypatch.setattr(rec.bag, "write", full)
    cb(data)  # raises inside: must not leave the callback
    assert rec.error is not None and f"cannot write the bag {tmp_path / 'bag'}" in rec.error
    assert "No space left on device" in rec.error and "keeps the 3 messages committed before" in rec.error
    cb(data)  # nothing more is recorded, nothing raised
    assert rec.counts() == {contract.TOPIC_DIAGNOSTICS: 3} and rec.count(contract.TOPIC_DIAGNOSTICS) == 3
    rec.close()
    assert topic_counts(tmp_path / "bag")[contract.TOPIC_DIAGNOSTICS][1] == 3
