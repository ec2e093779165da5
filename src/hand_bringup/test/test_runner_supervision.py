"""Supervised processes and crash-safe recording, with a real kill -9 of the runner (hardware
profile: tracker + servo driver + simulated board, the shared video paced at 30 fps):
- a second run on the same ROS_DOMAIN_ID refuses to start and names the live nodes;
- kill -9 of the runner leaves 0 of its processes after 2 s (PR_SET_PDEATHSIG);
- the killed run's bag opens with rosbags and holds every frame but those of its last second."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from hand_bringup.bench_kill import alive, descendants
from hand_bringup.bringup import profile_nodes
from hand_common import contract
from hand_common.bag import read_messages, topic_counts
from hand_common.testing import wait_until


def processes_mentioning(text: str) -> list[int]:
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


def committed_landmarks(bag) -> int:
    try:
        return topic_counts(bag).get(contract.TOPIC_LANDMARKS, ("", 0))[1]
    except Exception:  # noqa: BLE001 - metadata not written yet
        return 0


@pytest.fixture(scope="module")
def live_run(tmp_path_factory, video_path):
    out = tmp_path_factory.mktemp("live")
    kids: list[int] = []
    # every frame processed (no drop_late_frames), so the bag's frame indices must be contiguous
    proc = subprocess.Popen([sys.executable, "-m", "hand_bringup.runner", "hardware", "--video", str(video_path),
                             "-p", "tracker.drop_late_frames=false", "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until(lambda: committed_landmarks(out / "hardware_bag") >= 30 or proc.poll() is not None, 90,
                   "30 landmark messages committed to the bag")
        assert proc.poll() is None, proc.stdout.read()[-3000:]
        kids[:] = descendants(proc.pid)
        yield proc, out
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in processes_mentioning(str(out)) + [p for p in kids if alive(p)]:  # leave nothing behind
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_second_run_on_the_domain_is_refused_and_names_the_live_nodes(live_run, tmp_path, video_path):
    other = tmp_path / "second"
    p = subprocess.run([sys.executable, "-m", "hand_bringup.runner", "hardware", "--video", str(video_path),
                        "--out", str(other)], capture_output=True, text=True, timeout=60)
    output = p.stdout + p.stderr
    assert p.returncode == 3, output[-3000:]
    names = ", ".join(f"/{s.name}" for s in sorted(profile_nodes("hardware"), key=lambda s: s.name))
    assert f"nodes {names} are already running on ROS_DOMAIN_ID {os.environ['ROS_DOMAIN_ID']}" in output
    assert processes_mentioning(str(other)) == []  # nothing of the refused run was started
    assert not (other / "hardware_bag").exists()


def test_kill_9_of_the_runner_leaves_no_process_and_a_readable_bag(live_run):
    proc, out = live_run
    children = descendants(proc.pid)
    assert len(children) >= 3, "tracker, servo driver and simulated board should be running"
    t_kill = time.time()
    proc.send_signal(signal.SIGKILL)
    proc.wait(5)
    time.sleep(2.0)
    assert [p for p in children if alive(p)] == [], "processes survived the runner's kill -9"
    assert processes_mentioning(str(out)) == []
    bag = out / "hardware_bag"
    counts = topic_counts(bag)  # rosbags opens it: metadata.yaml present and every listed file complete
    landmarks = list(read_messages(bag, [contract.TOPIC_LANDMARKS]))
    assert len(landmarks) == counts[contract.TOPIC_LANDMARKS][1] >= 30
    indices = [m.hands[0].frame_index for _, _, m in landmarks if m.hands]
    assert indices == list(range(indices[0], indices[0] + len(indices)))  # no gap: nothing lost inside
    lost_s = t_kill - landmarks[-1][1] * 1e-9
    print(f"kill -9: bag holds {len(landmarks)} landmark messages, the last {lost_s:.2f} s before the kill lost")
    assert lost_s <= 1.0
