"""One servo-driver configure that cannot connect, timed (prints figures, asserts nothing; not a test).

Starts the servo driver with a port that does not exist and ``connect_timeout_s`` (default 3 s),
then requests ``configure`` through :class:`hand_common.lifecycle_client.LifecycleClient` as the
runner does, and prints how long the transition took and how many times the driver logged
``configure failed`` (once: the configure ran once). Before issue 27 the client re-sent a configure
whose callback was still blocking: 6.2-6.7 s and two failed configures per transition.

    python -m hand_bringup.bench_configure [--trials 5] [--connect-timeout 3.0]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time


def main(argv: list[str] | None = None) -> int:
    from hand_bringup.bringup import NODES, SERVO_DRIVER, executable_path, share_file
    from hand_common.lifecycle_client import LifecycleClient
    from hand_common.probe import RosProbe
    from hand_common.processes import NodeProcess

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--connect-timeout", type=float, default=3.0, help="the driver's connect_timeout_s")
    a = ap.parse_args(argv)
    spec = NODES[SERVO_DRIVER]
    tmp = tempfile.mkdtemp(prefix="bench_configure_")
    probe = RosProbe("bench_configure")
    times = []
    try:
        for i in range(a.trials):
            name = f"bench_configure_driver_{i}"
            proc = NodeProcess([executable_path(spec), "--ros-args", "-r", f"__node:={name}", "--params-file",
                                share_file(spec.package, spec.params_file), "-p", f"port:={tmp}/no_such_port",
                                "-p", f"connect_timeout_s:={a.connect_timeout}"], os.path.join(tmp, f"{name}.log"))
            try:
                client = LifecycleClient(probe.node, timeout=30.0)
                client.wait_for([name], timeout=30.0)
                t = time.monotonic()
                ok = client.transition(name, "configure")
                dt = time.monotonic() - t
                times.append(dt)
                print(f"trial {i}: configure -> {'inactive' if ok else 'failed'} in {dt:.2f} s; the driver logged "
                      f"'configure failed' {proc.output().count('configure failed')}x; attempts unanswered in time "
                      f"{client.retries}", flush=True)
            finally:
                proc.stop()
    finally:
        probe.close()
    if times:
        print(f"configure with connect_timeout_s {a.connect_timeout:g}: min {min(times):.2f} median "
              f"{statistics.median(times):.2f} max {max(times):.2f} s over {len(times)} trials; load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
