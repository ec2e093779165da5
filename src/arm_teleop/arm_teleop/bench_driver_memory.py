"""Benchmark: the arm driver's memory over a long session (issue 25: the driver's write history
grew with every command). Runs ``--commands`` joint commands through
:class:`~arm_teleop.driver_core.ArmDriverCore` at an opt-in level that records them (dry run, the
default of every launch: no bus) and prints the process's resident memory (VmRSS) at the start,
after the first 10 % and at the end, with the history the driver kept and its totals.

    python -m arm_teleop.bench_driver_memory --commands 100000

Exit 1 when the resident memory grew by more than ``--max-growth-kb`` after the first 10 % (the
rings are full by then). Figures depend on the interpreter, not on the machine's speed.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from arm_teleop.arm_model import load_arm
from arm_teleop.driver_core import WRITE_HISTORY, ArmDriverCore, Calibration, OptIn


def rss_kb() -> int:
    """Resident set size of this process, kB (Linux /proc/self/status VmRSS)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def run(commands: int, seed: int = 0) -> dict[str, int]:
    """Send ``commands`` random in-limit commands through a dry-run driver; RSS figures in kB."""
    arm = load_arm()
    core = ArmDriverCore(OptIn.DRY_RUN, Calibration(), arm.lower, arm.upper, gripper_open=arm.gripper_open)
    rng = np.random.default_rng(seed)
    qs = rng.uniform(arm.lower, arm.upper, size=(1000, len(arm.lower)))
    core.connect()
    start = rss_kb()
    warm = max(commands // 10, 1)
    after_warm = start
    for i in range(commands):
        core.command(qs[i % len(qs)])
        if i + 1 == warm:
            after_warm = rss_kb()
    end = rss_kb()
    return {"commands": commands, "rss_start_kb": start, "rss_after_10pct_kb": after_warm, "rss_end_kb": end,
            "kept_writes": len(core.intended), "intended_total": core.intended_total}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commands", type=int, default=100_000)
    ap.add_argument("--max-growth-kb", type=int, default=512)
    a = ap.parse_args(argv)
    r = run(a.commands)
    growth = r["rss_end_kb"] - r["rss_after_10pct_kb"]
    print(f"arm driver (dry run), {r['commands']} commands: RSS start {r['rss_start_kb']} kB, after 10 % "
          f"{r['rss_after_10pct_kb']} kB, end {r['rss_end_kb']} kB (growth after 10 %: {growth:+d} kB); "
          f"writes kept {r['kept_writes']} (ring of {WRITE_HISTORY}), total {r['intended_total']}")
    return 0 if growth <= a.max_growth_kb else 1


if __name__ == "__main__":
    sys.exit(main())
