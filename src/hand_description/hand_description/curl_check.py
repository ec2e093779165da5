"""Check that the model curls in proportion to the flexor length target (a benchmark script, prints figures).

``python -m hand_description.curl_check [--points 41] [--settle 2.0] [--side right]``

For each flexion f of a sweep, all five flexor actuators get ``ctrl = L_open + f (L_closed - L_open)``
(the twin's map; lengths measured on the compiled scene), the model is simulated from the ``open``
keyframe for ``--settle`` s, and the steady joint angles are recorded. Prints per digit the mean
angle as a fraction of the joint ranges, whether it rises strictly, the span between f = 0 and 1,
the worst excursion past a limit, each joint's fraction of its range at f = 0.5 and 1 (equal
fractions = proportional curl), then the step response 0 -> 0.5 (time to within 5 % of the final
mean angle) and the passive return 1 -> 0 (time until every joint is within 2 % of its range).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from hand_description.render import DIGITS, flexion_ctrl


def _digit_joints(model) -> dict[str, np.ndarray]:
    import mujoco

    names = {"thumb": ("cmc", "mcp", "ip")}
    out = {}
    for d in DIGITS:
        parts = names.get(d, ("mcp", "pip", "dip"))
        out[d] = np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, f"{d}_{p}") for p in parts])
    return out


def settle(model, data, ctrl: np.ndarray, seconds: float) -> None:
    """Reset to the ``open`` keyframe, apply ``ctrl`` and simulate ``seconds``."""
    import mujoco

    mujoco.mj_resetDataKeyframe(model, data, mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "open"))
    data.ctrl[:] = ctrl
    for _ in range(int(round(seconds / model.opt.timestep))):
        mujoco.mj_step(model, data)


def sweep(model, points: int = 41, seconds: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """(flexions (P,), steady joint angles (P, njnt) in rad) for a sweep of ``points`` flexions in [0, 1]."""
    import mujoco

    data = mujoco.MjData(model)
    flexions = np.linspace(0.0, 1.0, points)
    angles = np.zeros((points, model.njnt))
    for k, f in enumerate(flexions):
        settle(model, data, flexion_ctrl(model, f), seconds)
        angles[k] = [data.qpos[model.jnt_qposadr[j]] for j in range(model.njnt)]
        if not np.all(np.isfinite(angles[k])):
            raise FloatingPointError(f"simulation diverged at flexion {f}")
    mujoco.mj_resetData(model, data)
    return flexions, angles


def step_times(model, f0: float, f1: float, seconds: float = 1.0) -> dict[str, float]:
    """Per digit: time (s) after a step f0 -> f1 until the mean joint angle stays within 5 % of its final change."""
    import mujoco

    data = mujoco.MjData(model)
    settle(model, data, flexion_ctrl(model, f0), 1.5)
    data.ctrl[:] = flexion_ctrl(model, f1)
    joints = _digit_joints(model)
    n = int(round(seconds / model.opt.timestep))
    trace = np.zeros((n, len(DIGITS)))
    start = np.array([np.mean(data.qpos[model.jnt_qposadr[joints[d]]]) for d in DIGITS])
    for i in range(n):
        mujoco.mj_step(model, data)
        trace[i] = [np.mean(data.qpos[model.jnt_qposadr[joints[d]]]) for d in DIGITS]
    final = trace[-1]
    out = {}
    for k, d in enumerate(DIGITS):
        tol = 0.05 * abs(final[k] - start[k])
        outside = np.nonzero(np.abs(trace[:, k] - final[k]) > tol)[0]
        out[d] = (outside[-1] + 1 if outside.size else 0) * model.opt.timestep
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="curl_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=41)
    parser.add_argument("--settle", type=float, default=2.0)
    parser.add_argument("--side", choices=("right", "left"), default="right")
    parser.add_argument("--scene", default=None, help="scene MJCF (default: the package's scene for --side)")
    args = parser.parse_args(argv)
    import mujoco

    from hand_description.paths import scene_path

    path = args.scene or str(scene_path(args.side))
    model = mujoco.MjModel.from_xml_path(path)
    joints = _digit_joints(model)
    flexions, angles = sweep(model, args.points, args.settle)
    upper = model.jnt_range[:, 1]
    print(f"sweep: {args.points} flexions, {args.settle} s each, scene {path}")
    print("digit   rising  span   past-limit  per-joint fraction of range at f=0.5 | f=1")
    ok = True
    for d in DIGITS:
        j = joints[d]
        frac = angles[:, j] / upper[j]
        mean = angles[:, j].mean(axis=1)
        rising = bool(np.all(np.diff(mean) > 0))
        span = (mean[-1] - mean[0]) / upper[j].mean()
        past = np.degrees(max(0.0, float(np.max(angles[:, j] - upper[j])), float(np.max(-angles[:, j]))))
        half = frac[len(flexions) // 2]
        print(f"{d:7s} {str(rising):6s}  {span:5.1%}  {past:5.2f} deg   "
              + " ".join(f"{x:5.1%}" for x in half) + " | " + " ".join(f"{x:5.1%}" for x in frac[-1]))
        ok &= rising and span >= 0.8 and past <= 2.0
    print("mean angle (deg) per digit vs flexion:")
    for k in range(0, len(flexions), max(1, len(flexions) // 10)):
        print(f"  f={flexions[k]:.3f} " + " ".join(f"{d}={np.degrees(angles[k, joints[d]].mean()):6.1f}" for d in DIGITS))
    close = step_times(model, 0.0, 0.5)
    print("step 0 -> 0.5, time to within 5 % (ms): " + " ".join(f"{d}={1e3 * t:.0f}" for d, t in close.items()))
    release = step_times(model, 1.0, 0.0)
    print("release 1 -> 0, time to within 5 % (ms): " + " ".join(f"{d}={1e3 * t:.0f}" for d, t in release.items()))
    ok &= max(close.values()) <= 0.15
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
