"""Crash-safe bags: a writer process killed with SIGKILL at any moment (while writing, while
committing a segment, while merging on close) leaves a bag that rosbags opens, holding a prefix of
what was written that lacks at most the pending segment."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from hand_common.bag import read_messages, topic_counts

WRITER = textwrap.dedent("""
    import sys, time
    from rclpy.serialization import serialize_message
    from std_msgs.msg import String
    from hand_common.bag import BagWriter
    path, n, segment_s, period = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    w = BagWriter(path, segment_s=segment_s)
    w.add("/seq", "std_msgs/msg/String")
    print("open", flush=True)
    for i in range(n):
        w.write("/seq", time.time_ns(), serialize_message(String(data=str(i))))
        print(f"w {i} {time.time():.6f}", flush=True)
        if period:
            time.sleep(period)
    w.close()
    print("closed", flush=True)
""")


def start_writer(tmp_path, n: int, segment_s: float, period: float) -> tuple[subprocess.Popen, object]:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "bag"), str(n), str(segment_s), str(period)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "open"
    return proc, tmp_path / "bag"


def written(lines: list[str]) -> list[tuple[int, float]]:
    return [(int(p[1]), float(p[2])) for p in (ln.split() for ln in lines) if len(p) == 3 and p[0] == "w"]


def recorded(bag) -> list[int]:
    topic_counts(bag)  # the metadata opens
    return [int(m.data) for _, _, m in read_messages(bag)]


@pytest.mark.parametrize("delay", [0.15, 0.4, 0.75, 1.1, 1.6])
def test_kill_9_while_recording_loses_at_most_the_pending_segment(tmp_path, delay):
    segment_s = 0.25
    proc, bag = start_writer(tmp_path, 100000, segment_s, 0.004)
    time.sleep(delay)
    proc.kill()
    out, _ = proc.communicate(timeout=10)
    w = written(out.splitlines())
    got = recorded(bag)
    assert got == list(range(len(got)))  # a prefix, in order, no gap
    assert len(got) <= len(w)  # killed before its first write: an empty but valid bag
    lost = w[len(got):]
    if lost:  # the lost messages all belong to the last, uncommitted segment
        span = w[-1][1] - lost[0][1]
        print(f"kill after {delay} s: {len(got)} of {len(w)} messages kept, last {span:.3f} s lost")
        assert span <= segment_s + 0.25


@pytest.mark.parametrize("delay", [0.2, 0.5, 0.8, 1.2, 1.6, 2.2])
def test_kill_9_during_segment_commits_and_the_merge_keeps_the_bag_readable(tmp_path, delay):
    # tiny segments, no pause between writes: the kill lands in commits, metadata rewrites or the merge
    proc, bag = start_writer(tmp_path, 3000, 0.01, 0.0)
    time.sleep(delay)
    proc.kill()
    out, _ = proc.communicate(timeout=10)
    lines = out.splitlines()
    got = recorded(bag)
    assert got == list(range(len(got)))
    if "closed" in lines:
        assert len(got) == 3000
    else:
        assert len(got) <= len(written(lines))


def test_a_clean_close_leaves_one_file_with_every_message(tmp_path):
    proc, bag = start_writer(tmp_path, 500, 0.01, 0.0)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "closed" in out
    assert recorded(bag) == list(range(500))
    assert sorted(p.name for p in bag.iterdir()) == ["bag.mcap", "metadata.yaml"]
