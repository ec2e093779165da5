"""Watchdog trips while the physics stalls: ``python -m hand_twin_mujoco.bench_watchdog``.

Issue 27: one twin watchdog trip of 15 took 1.01 s because the twin's physics pass, which ran the
watchdog, stalled ~1 s. This runs the real :class:`~hand_twin_mujoco.loop.PhysicsLoop` (its
physics and watchdog threads, the default hand) ``--trials`` times: commands at 30 Hz, then a
physics step blocked for ``--stall-s`` while the commands stop; it prints, per trial and as
min/median/max, the age of the last command when the trip was reported, with the load average.
A figure, not a test: the tests assert the ordering (trip before the step is released).
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

import numpy as np


class _StallingSim:
    def __init__(self, sim):
        self._sim = sim
        self.armed = threading.Event()
        self.stall_s = 1.0

    def step(self, n: int):
        if self.armed.is_set() and n:
            self.armed.clear()
            time.sleep(self.stall_s)
        return self._sim.step(n)

    def __getattr__(self, name):
        return getattr(self._sim, name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=15)
    ap.add_argument("--stall-s", type=float, default=1.0)
    ap.add_argument("--timeout", type=float, default=0.1, help="command_timeout (s)")
    ap.add_argument("--scene", default=None, help="MJCF scene (default: the twin's default hand)")
    args = ap.parse_args(argv)
    from hand_twin_mujoco.loop import PhysicsLoop
    from hand_twin_mujoco.sim import TwinSim, build_twin
    from hand_twin_mujoco.watchdog import CommandWatchdog

    build = build_twin(args.scene)
    ages = []
    for k in range(args.trials):
        sim = _StallingSim(TwinSim(build.hand, build.tmap))
        sim.stall_s = args.stall_s
        warns: list[tuple[float, str]] = []
        loop = PhysicsLoop(sim, CommandWatchdog(args.timeout), publish_rate=100.0,
                           on_event=lambda lvl, msg, w=warns: w.append((time.monotonic(), msg)) if lvl == "warn" else None)
        loop.start()
        try:
            for _ in range(10):
                loop.command(np.full(5, 0.5), stamp=0.0)
                time.sleep(1 / 30)
            sim.armed.set()
            time.sleep(0.005)
            loop.command(np.full(5, 0.5), stamp=0.0)
            t_last = time.monotonic()
            end = t_last + args.stall_s + 2.0
            while not warns and time.monotonic() < end:
                time.sleep(0.002)
        finally:
            loop.stop()
        # the watchdog's own age of the last command at the trip (its receive time is taken before
        # any lock: a command fed while the physics holds the sim lock is still dated right)
        age = float(warns[0][1].split("no flexion command for ")[1].split(" s")[0]) if warns else float("nan")
        ages.append(age)
        print(f"trial {k + 1:2d}: trip at command age {1000 * age:.1f} ms, reported "
              f"{1000 * (warns[0][0] - t_last) if warns else float('nan'):.1f} ms after the last command() returned "
              f"(physics stalled {args.stall_s:g} s)")
    load = os.getloadavg()
    ok = [a for a in ages if a == a]
    print(f"bench_watchdog: {len(ok)}/{args.trials} trips, min/median/max {1000 * min(ok):.1f} / "
          f"{1000 * statistics.median(ok):.1f} / {1000 * max(ok):.1f} ms (command_timeout {1000 * args.timeout:g} ms); "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0 if len(ok) == args.trials else 1


if __name__ == "__main__":
    raise SystemExit(main())
