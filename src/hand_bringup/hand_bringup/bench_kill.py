"""kill -9 of the embedded runner, measured (prints figures, asserts nothing; not a test).

Each trial starts ``runner hardware`` (tracker + servo driver + simulated board) on the shared
video paced at 30 fps, waits until the bag has committed ``--after`` landmark messages, sends
SIGKILL to the runner and then reports:

- how long its child processes lived on (PR_SET_PDEATHSIG: they are killed with it) and how
  many were still alive 2 s after the kill;
- whether the killed run's bag opens with rosbags, how many landmark messages it holds, whether
  their frame indices are contiguous, and how much of the run before the kill it lost (seconds
  between the kill and the capture stamp of the last recorded frame).

With a real board the servos then reach their safe pose by the board's own watchdog (0.5 s):
the driver dies with the runner and sends nothing more; ``bench_faults`` (hand_servo_driver)
measures that path ("kill -9 driver"). The simulated board here is a child of the runner and
dies with it, so it cannot report it.

    python -m hand_bringup.bench_kill [--trials 3] [--after 60]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from hand_common import contract
from hand_common.bag import read_messages, topic_counts


def _parents() -> dict[int, int]:
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                out[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return out


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (from /proc/<pid>/stat parent ids)."""
    parent = _parents()
    out, todo = [], [root]
    while todo:
        ppid = todo.pop()
        kids = [p for p, pp in parent.items() if pp == ppid]
        out += kids
        todo += kids
    return out


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _committed(bag) -> int:
    try:
        return topic_counts(bag).get(contract.TOPIC_LANDMARKS, ("", 0))[1]
    except Exception:  # noqa: BLE001 - no metadata.yaml yet
        return 0


def trial(video: str, workdir: str, after: int) -> dict:
    """One kill -9 of the runner; returns the figures (see the module docstring)."""
    out = tempfile.mkdtemp(prefix="kill_", dir=workdir)
    bag = os.path.join(out, "hardware_bag")
    proc = subprocess.Popen([sys.executable, "-m", "hand_bringup.runner", "hardware", "--video", video,
                             "-p", "tracker.drop_late_frames=false", "--out", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while _committed(bag) < after and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if proc.poll() is not None or _committed(bag) < after:
            return {"error": f"the run did not reach {after} committed frames (exit {proc.poll()})"}
        children = descendants(proc.pid)
        t_kill = time.time()
        proc.send_signal(signal.SIGKILL)
        proc.wait(5)
        t0 = time.monotonic()
        while any(alive(p) for p in children) and time.monotonic() - t0 < 2.0:
            time.sleep(0.01)
        gone_s = time.monotonic() - t0
        left = [p for p in children if alive(p)]
        messages = list(read_messages(bag, [contract.TOPIC_LANDMARKS]))
        indices = [m.hands[0].frame_index for _, _, m in messages if m.hands]
        return {"children": len(children), "left_after_2s": len(left), "children_gone_s": gone_s,
                "bag_messages": len(messages),
                "contiguous": indices == list(range(indices[0], indices[0] + len(indices))) if indices else False,
                "lost_s": t_kill - messages[-1][1] * 1e-9 if messages else float("nan")}
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in descendants(proc.pid):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_kill", description=__doc__.split("\n\n")[0])
    ap.add_argument("--video", default=None, help="video (default: the shared hand video)")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--after", type=int, default=60, help="landmark messages committed before the kill")
    args = ap.parse_args(argv)
    from hand_bringup.demo import default_video
    from hand_common.testing import require_local_ros_env

    require_local_ros_env()
    video = args.video or default_video()
    workdir = tempfile.mkdtemp(prefix="bench_kill_")
    bad = 0
    for i in range(args.trials):
        r = trial(video, workdir, args.after)
        if "error" in r:
            bad += 1
            print(f"trial {i + 1}: {r['error']}")
            continue
        bad += r["left_after_2s"] > 0 or not r["contiguous"]
        print(f"trial {i + 1}: {r['children']} children, gone {1000 * r['children_gone_s']:.0f} ms after the kill, "
              f"{r['left_after_2s']} left after 2 s; bag opens with rosbags: {r['bag_messages']} landmark messages, "
              f"contiguous {r['contiguous']}, last {r['lost_s']:.2f} s before the kill lost")
    print(f"workdir {workdir}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
