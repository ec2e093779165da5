"""The runner's memory over a long looped run, measured (prints figures, asserts nothing; not a test).

Starts ``python -m hand_bringup.runner <profile>`` on a video looped forever (``tracker.loop``),
for ``--duration`` s, and samples the *runner's* resident memory (VmRSS of its process, the node
processes excluded) every ``--every`` s. Prints one line per sample (elapsed s, RSS MB, frames
the runner has seen, the 1-minute load average) and at the end the first/last RSS, the peak, and
the slope of a least-squares line through the samples after ``--warmup`` s, in MB per minute
(and per hour). A flat runner has a slope near 0 once its rings (HISTORY frames) are full;
before its history was bounded it grew ~1.5 MB a minute (issue 27).

Also counts Fast DDS shared-memory files in /dev/shm before and after the run.

    python -m hand_bringup.bench_memory [--duration 3600] [--every 30] [--profile operator]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

DEFAULT_VIDEO = "/work/shared/media/human_hand_video.mp4"


def rss_mb(pid: int) -> float | None:
    """Resident set size of ``pid`` in MB (VmRSS), None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def slope_mb_per_min(samples: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (elapsed s, MB) samples, MB per minute; None for < 3 samples."""
    if len(samples) < 3:
        return None
    t = np.array([s[0] for s in samples]) / 60.0
    m = np.array([s[1] for s in samples])
    return float(np.polyfit(t, m, 1)[0])


def shm_files() -> int:
    try:
        return sum(1 for n in os.listdir("/dev/shm") if n.startswith("fastrtps_") or n.startswith("fast_datasharing"))
    except OSError:
        return -1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=3600.0, help="s of looped run")
    ap.add_argument("--every", type=float, default=30.0, help="s between RSS samples")
    ap.add_argument("--warmup", type=float, default=360.0, help="s excluded from the slope (rings filling)")
    ap.add_argument("--profile", default="operator", help="runner profile with a tracker")
    ap.add_argument("--video", default=DEFAULT_VIDEO)
    ap.add_argument("--out", help="run directory (default: a temporary one)")
    ap.add_argument("--no-record", action="store_true", help="run without a bag")
    a = ap.parse_args(argv)
    out = a.out or tempfile.mkdtemp(prefix="bench_memory_")
    cmd = [sys.executable, "-m", "hand_bringup.runner", a.profile, "--video", a.video, "--out", out,
           "-p", "tracker.loop=true", "--duration", str(a.duration)] + (["--no-record"] if a.no_record else [])
    shm0 = shm_files()
    print(f"[bench_memory] {' '.join(cmd)}", flush=True)
    log = open(os.path.join(out, "runner_stdout.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    t0 = time.monotonic()
    samples: list[tuple[float, float]] = []
    frames_re = re.compile(r"frames (\d+)")
    try:
        while proc.poll() is None:
            time.sleep(a.every)
            mb = rss_mb(proc.pid)
            if mb is None:
                break
            elapsed = time.monotonic() - t0
            samples.append((elapsed, mb))
            log.flush()
            with open(log.name) as f:
                found = frames_re.findall(f.read()[-4000:])
            print(f"t {elapsed:7.0f} s  rss {mb:7.1f} MB  frames {found[-1] if found else '?':>7}  "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
    except KeyboardInterrupt:
        proc.send_signal(2)
    rc = proc.wait()
    steady = [s for s in samples if s[0] >= a.warmup]
    slope = slope_mb_per_min(steady)
    if samples:
        print(f"[bench_memory] runner exit {rc}; {len(samples)} samples over {samples[-1][0]:.0f} s: "
              f"RSS first {samples[0][1]:.1f} MB, last {samples[-1][1]:.1f} MB, peak {max(s[1] for s in samples):.1f} MB")
    if slope is not None:
        print(f"[bench_memory] slope after {a.warmup:.0f} s: {slope:+.3f} MB/min ({slope * 60:+.1f} MB/h) "
              f"over {len(steady)} samples", flush=True)
    print(f"[bench_memory] /dev/shm Fast DDS files: {shm0} before, {shm_files()} after; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; run dir {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
