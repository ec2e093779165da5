"""Memory of the runner's bag writer over a long run, on a simulated clock (issue 27 item 6: the runner
grew +0.35 MB a minute over a looped run).

Writes what a ``sim`` run records — /hand/landmarks, /hand/target_flexions, /hand/joint_flexions,
/joint_states at 30 Hz, /hand_twin/joint_states at 100 Hz, /diagnostics ~6 a second — into a
:class:`hand_common.bag.BagWriter` whose clock is simulated (segments of 0.5 s of *simulated* time
are committed exactly as in a run), and prints once a simulated minute: Python heap in use
(tracemalloc, after a collection), the process's RSS, the bag's committed files and the size of
metadata.yaml, and the slopes (MB per simulated minute) over the second half. The figures do not
depend on the machine's speed (the clock is simulated; RSS is the process's, printed with the load).

  python -m hand_common.bench_bag_memory [--minutes 20] [--consolidate-n 120]   (0: never, as before the fix)
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import tracemalloc

import numpy as np

from hand_common.bag import BagWriter

#: (topic, type, messages a second, payload bytes): what a sim run records
STREAMS = (
    ("/hand/landmarks", "sensor_msgs/msg/JointState", 30, 1400),
    ("/hand/target_flexions", "sensor_msgs/msg/JointState", 30, 160),
    ("/hand/joint_flexions", "sensor_msgs/msg/JointState", 30, 400),
    ("/joint_states", "sensor_msgs/msg/JointState", 30, 900),
    ("/hand_twin/joint_states", "sensor_msgs/msg/JointState", 100, 900),
    ("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", 6, 1500),
)


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


class SimClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def run(minutes: float, workdir: str, consolidate_n: int = 120) -> list[tuple[float, float, float, int, int]]:
    """(simulated minute, heap MB, RSS MB, committed files, metadata.yaml bytes) once a simulated minute."""
    clock = SimClock()
    w = BagWriter(os.path.join(workdir, "bag"), clock=clock, consolidate_n=consolidate_n)
    for topic, msgtype, _, _ in STREAMS:
        w.add(topic, msgtype)
    # one second of messages, in time order: (offset s, topic, payload)
    second = sorted((k / hz, topic, bytes(size)) for topic, _, hz, size in STREAMS for k in range(hz))
    rows = []
    tracemalloc.start()
    t0_ns = 1_700_000_000 * 10**9
    for s in range(int(minutes * 60)):
        for off, topic, payload in second:
            clock.t = s + off
            w.write(topic, t0_ns + int(clock.t * 1e9), payload)
        if (s + 1) % 60 == 0:
            w.flush_if_due()
            gc.collect()
            heap = tracemalloc.get_traced_memory()[0] / 2**20
            meta = os.path.getsize(os.path.join(workdir, "bag", "metadata.yaml"))
            rows.append(((s + 1) / 60.0, heap, rss_mb(), len(w._files), meta))
            print(f"  minute {rows[-1][0]:4.0f}: heap {heap:7.2f} MB  RSS {rows[-1][2]:7.1f} MB  files "
                  f"{rows[-1][3]:5d}  metadata.yaml {meta / 1024:8.1f} KB", flush=True)
    tracemalloc.stop()
    w.close()
    return rows


def slope(rows, col: int) -> float:
    half = rows[len(rows) // 2:]
    x = np.array([r[0] for r in half])
    y = np.array([r[col] for r in half])
    return float(np.polyfit(x, y, 1)[0]) if len(half) >= 2 else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--consolidate-n", type=int, default=120, help="BagWriter.consolidate_n (0: never)")
    args = ap.parse_args(argv)
    print(f"[bench_bag_memory] {args.minutes:g} simulated minutes of a sim run's topics "
          f"({sum(s[2] for s in STREAMS)} messages/s), segments of 0.5 s, consolidate_n {args.consolidate_n}; "
          "load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_bag_memory_") as d:
        rows = run(args.minutes, d, args.consolidate_n)
    print(f"[bench_bag_memory] second half: heap {slope(rows, 1):+.3f} MB/min, RSS {slope(rows, 2):+.3f} MB/min, "
          f"committed files {slope(rows, 3):+.1f}/min, metadata.yaml {slope(rows, 4) / 1024:+.1f} KB/min; load "
          f"average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
