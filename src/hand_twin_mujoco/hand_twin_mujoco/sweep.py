"""``sweep``: measure the twin's flexion → joint angle curve and its step response.

For each of N flexions evenly spaced in [0, 1] (default 41), all five fingers get that flexion
from rest (keyframe ``open``), the model runs for ``duration`` s (default 3) and the steady-state
angles (mean of the last 50 ms) are recorded; the peak angle during the run is kept to check limit
excursions. Then a step from open to flexion 0.5 is simulated and each digit's settling time
(last time outside ±5 % of the final value) is measured.

Acceptance (issue 5), evaluated per finger on the mean of its 3 joint angles:
strictly increasing over the N flexions; span (mean angle at 1 − at 0) ≥ 80 % of the mean joint
range; no joint more than 2° past its limit (steady state or transient); step 0 → 0.5 within 5 %
in ≤ 150 ms (finger mean, also reported per joint).

Usage: ``ros2 run hand_twin_mujoco sweep [--model scene.xml] [--out DIR]``, or
``python -m hand_twin_mujoco.sweep``. Prints the table, writes ``sweep.csv``, ``sweep.png`` and
``step.png`` into ``--out``; exit code 0 when every criterion holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
from dataclasses import dataclass

import numpy as np

from hand_common.contract import FINGER_JOINTS, FINGER_NAMES, JOINT_NAMES

from .sim import TwinBuild, build_twin

SPAN_MIN = 0.80
LIMIT_TOL_DEG = 2.0
STEP_TOL = 0.05
STEP_MAX_S = 0.150


@dataclass(frozen=True)
class SweepResult:
    flexions: np.ndarray  # (N,)
    angles: np.ndarray  # (N, 15) steady-state joint angles, rad
    peak: np.ndarray  # (N, 15) maximum angle during the run, rad
    trough: np.ndarray  # (N, 15) minimum angle during the run, rad


@dataclass(frozen=True)
class StepResult:
    flexion: float
    t: np.ndarray  # (T,) s
    q: np.ndarray  # (T, 15) rad
    settle_finger: np.ndarray  # (5,) s, finger-mean angle settles within STEP_TOL of its final value
    settle_joint: np.ndarray  # (15,) s, per joint


@dataclass(frozen=True)
class FingerVerdict:
    finger: str
    increasing: bool
    min_increment_deg: float
    span_fraction: float
    max_over_limit_deg: float
    step_settle_s: float

    @property
    def ok(self) -> bool:
        return (self.increasing and self.span_fraction >= SPAN_MIN and self.max_over_limit_deg <= LIMIT_TOL_DEG
                and self.step_settle_s <= STEP_MAX_S)


def _finger_idx(f: str) -> list[int]:
    return [JOINT_NAMES.index(j) for j in FINGER_JOINTS[f]]


def run_sweep(build: TwinBuild, points: int = 41, duration: float = 3.0, chunk: int = 5) -> SweepResult:
    """Steady-state angles for ``points`` flexions (all fingers alike), each from rest."""
    sim = build.sim()
    dt = build.hand.timestep
    steps = int(round(duration / dt))
    tail = max(1, int(round(0.05 / dt)) // chunk)
    flexions = np.linspace(0.0, 1.0, points)
    angles = np.zeros((points, len(JOINT_NAMES)))
    peak = np.zeros_like(angles)
    trough = np.zeros_like(angles)
    for i, f in enumerate(flexions):
        sim.set_flexions(np.full(len(FINGER_NAMES), f))
        sim.reset()
        hi = np.full(len(JOINT_NAMES), -np.inf)
        lo = np.full(len(JOINT_NAMES), np.inf)
        last = []
        for _ in range(steps // chunk):
            reason = sim.step(chunk)
            if reason:
                raise RuntimeError(f"physics unstable at flexion {f:.3f}: {reason}")
            q = sim.data.qpos[build.hand.qpos_adr]
            hi = np.maximum(hi, q)
            lo = np.minimum(lo, q)
            last.append(q.copy())
        angles[i] = np.mean(last[-tail:], axis=0)
        peak[i], trough[i] = hi, lo
    return SweepResult(flexions, angles, peak, trough)


def _settle(t: np.ndarray, y: np.ndarray, tol: float) -> float:
    final = y[-1]
    band = tol * abs(final) if abs(final) > 1e-9 else tol
    outside = np.nonzero(np.abs(y - final) > band)[0]
    if len(outside) == 0:
        return 0.0
    return float(t[min(outside[-1] + 1, len(t) - 1)])


def run_step(build: TwinBuild, flexion: float = 0.5, duration: float = 1.5) -> StepResult:
    """Step all fingers from rest (open) to ``flexion``; angles every timestep."""
    sim = build.sim()
    sim.reset()
    dt = build.hand.timestep
    n = int(round(duration / dt))
    t = np.arange(n + 1) * dt
    q = np.zeros((n + 1, len(JOINT_NAMES)))
    q[0] = sim.data.qpos[build.hand.qpos_adr]
    sim.set_flexions(np.full(len(FINGER_NAMES), flexion))
    for k in range(1, n + 1):
        reason = sim.step(1)
        if reason:
            raise RuntimeError(f"physics unstable in the step response: {reason}")
        q[k] = sim.data.qpos[build.hand.qpos_adr]
    settle_finger = np.array([_settle(t, q[:, _finger_idx(f)].mean(axis=1), STEP_TOL) for f in FINGER_NAMES])
    settle_joint = np.array([_settle(t, q[:, j], STEP_TOL) for j in range(len(JOINT_NAMES))])
    return StepResult(flexion, t, q, settle_finger, settle_joint)


def evaluate(build: TwinBuild, sweep: SweepResult, step: StepResult) -> list[FingerVerdict]:
    """Acceptance per finger (see the module docstring)."""
    lower, upper = build.hand.joint_lower, build.hand.joint_upper
    out = []
    for k, f in enumerate(FINGER_NAMES):
        idx = _finger_idx(f)
        mean = sweep.angles[:, idx].mean(axis=1)
        inc = np.diff(mean)
        span = (mean[-1] - mean[0]) / float(np.mean(upper[idx] - lower[idx]))
        over = max(float(np.max(sweep.peak[:, idx] - upper[idx])), float(np.max(lower[idx] - sweep.trough[:, idx])),
                   float(np.max(step.q[:, idx] - upper[idx])), float(np.max(lower[idx] - step.q[:, idx])), 0.0)
        out.append(FingerVerdict(f, bool(np.all(inc > 0)), math.degrees(float(inc.min())), float(span),
                                 math.degrees(over), float(step.settle_finger[k])))
    return out


def format_table(build: TwinBuild, sweep: SweepResult, step: StepResult, verdicts: list[FingerVerdict]) -> str:
    """The sweep table (degrees) and the per-finger verdicts as text."""
    short = [j.split("_")[0][:2] + "_" + j.split("_")[1] for j in JOINT_NAMES]
    lines = ["steady-state joint angles (deg) after 3 s from rest, all fingers at the same flexion",
             "flex  " + " ".join(f"{s:>7}" for s in short) + "  | " + " ".join(f"{f[:5]:>6}" for f in FINGER_NAMES)]
    for f, row in zip(sweep.flexions, sweep.angles):
        means = [np.degrees(row[_finger_idx(g)].mean()) for g in FINGER_NAMES]
        lines.append(f"{f:5.3f} " + " ".join(f"{np.degrees(a):7.1f}" for a in row) + "  | "
                     + " ".join(f"{m:6.1f}" for m in means))
    lines.append("limit " + " ".join(f"{np.degrees(u):7.1f}" for u in build.hand.joint_upper))
    lines.append("")
    lines.append(f"step 0 → {step.flexion}: 5 % settling per joint (ms): "
                 + " ".join(f"{s}={t * 1e3:.0f}" for s, t in zip(short, step.settle_joint)))
    lines.append("finger  increasing  min_step_deg  span_of_range  max_past_limit_deg  step_settle_ms  verdict")
    for v in verdicts:
        lines.append(f"{v.finger:7} {str(v.increasing):>10} {v.min_increment_deg:13.3f} {v.span_fraction:14.3f}"
                     f" {v.max_over_limit_deg:19.2f} {v.step_settle_s * 1e3:15.0f}  {'PASS' if v.ok else 'FAIL'}")
    return "\n".join(lines)


def write_outputs(out_dir: str, build: TwinBuild, sweep: SweepResult, step: StepResult) -> dict[str, str]:
    """sweep.csv, sweep.png (angle vs flexion per joint) and step.png into ``out_dir``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    paths = {"csv": os.path.join(out_dir, "sweep.csv"), "sweep": os.path.join(out_dir, "sweep.png"),
             "step": os.path.join(out_dir, "step.png")}
    with open(paths["csv"], "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["flexion", *(f"{j}_deg" for j in JOINT_NAMES)])
        for f, row in zip(sweep.flexions, sweep.angles):
            w.writerow([f"{f:.4f}", *(f"{np.degrees(a):.3f}" for a in row)])
    fig, axes = plt.subplots(1, 5, figsize=(20, 4.2), sharey=True)
    for ax, f in zip(axes, FINGER_NAMES):
        idx = _finger_idx(f)
        for i in idx:
            line, = ax.plot(sweep.flexions, np.degrees(sweep.angles[:, i]), ".-", label=JOINT_NAMES[i])
            ax.axhline(np.degrees(build.hand.joint_upper[i]), color=line.get_color(), ls=":", lw=1)
        ax.plot(sweep.flexions, np.degrees(sweep.angles[:, idx].mean(axis=1)), "k--", lw=2, label="mean")
        ax.set_title(f)
        ax.set_xlabel("commanded flexion")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("steady-state joint angle (deg); dotted = upper limit")
    fig.suptitle(f"twin sweep: {len(sweep.flexions)} flexions, from rest, {os.path.basename(build.hand.path)}")
    fig.tight_layout()
    fig.savefig(paths["sweep"], dpi=90)
    plt.close(fig)
    fig, axes = plt.subplots(1, 5, figsize=(20, 4.2), sharey=True)
    for ax, f, ts in zip(axes, FINGER_NAMES, step.settle_finger):
        idx = _finger_idx(f)
        for i in idx:
            ax.plot(step.t * 1e3, np.degrees(step.q[:, i]), label=JOINT_NAMES[i])
        mean = np.degrees(step.q[:, idx].mean(axis=1))
        ax.plot(step.t * 1e3, mean, "k--", lw=2, label="mean")
        ax.axhspan(mean[-1] * (1 - STEP_TOL), mean[-1] * (1 + STEP_TOL), color="g", alpha=0.15)
        ax.axvline(ts * 1e3, color="g", ls=":")
        ax.axvline(STEP_MAX_S * 1e3, color="r", ls=":")
        ax.set_xlim(0, 500)
        ax.set_title(f"{f}: mean settles in {ts * 1e3:.0f} ms")
        ax.set_xlabel("time (ms)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("joint angle (deg)")
    fig.suptitle(f"step response, flexion 0 → {step.flexion} (green band ±5 %, red = 150 ms)")
    fig.tight_layout()
    fig.savefig(paths["step"], dpi=90)
    plt.close(fig)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="", help="MJCF scene (default: hand_description's scene.xml)")
    ap.add_argument("--out", default="out/twin_sweep", help="output directory for csv/png")
    ap.add_argument("--points", type=int, default=41)
    ap.add_argument("--duration", type=float, default=3.0, help="seconds simulated per flexion")
    ap.add_argument("--integrator", default="implicitfast")
    ap.add_argument("--reference-settle-time", type=float, default=0.06,
                    help="s, 5 %% settling of the command reference filter (0 = raw steps)")
    args = ap.parse_args(argv)
    build = build_twin(args.model or None, integrator=args.integrator,
                       reference_settle_time=args.reference_settle_time)
    print(f"model: {build.hand.path}")
    print("\n".join(build.gains.lines()))
    for note in build.notes[len(build.gains.warnings):]:
        print(f"WARNING: {note}")
    sweep = run_sweep(build, points=args.points, duration=args.duration)
    step = run_step(build, 0.5)
    verdicts = evaluate(build, sweep, step)
    print(format_table(build, sweep, step, verdicts))
    paths = write_outputs(args.out, build, sweep, step)
    print(f"table: {paths['csv']}\nplot: {paths['sweep']}\nstep response: {paths['step']}")
    ok = all(v.ok for v in verdicts)
    print("ACCEPTANCE:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
