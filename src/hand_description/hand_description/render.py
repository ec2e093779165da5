"""Render the hand offscreen with MuJoCo (``MUJOCO_GL=egl`` headless) and write a PNG.

``render_hand --pose open --out out/hand_open.png`` (console script) loads the scene
(``mjcf/scene.xml``, or ``scene_left.xml`` with ``--side left``), drives every flexor actuator
to the flexion of the pose (``open`` = 0, ``fist`` = 1, or a number in [0, 1]) with the
same map the twin uses, ``ctrl = L_open + f (L_closed - L_open)`` (lengths measured on the
compiled model), simulates ``--settle`` seconds from the ``open`` keyframe and renders camera
``front``. ``--kinematic`` sets the joints to ``f * upper`` directly instead of simulating.
Prints the steady joint angles and the render time. Shadows and reflections are off unless
``--shadows`` / ``--reflections`` (they cost about 4x on software EGL).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time
from collections.abc import Sequence

import numpy as np

from hand_common.contract import FINGER_NAMES as DIGITS


def flexor_lengths(model, data=None) -> dict[str, tuple[float, float]]:
    """{digit: (L_open, L_closed)} of each ``{digit}_flexor`` tendon (m): all joints at 0 / at upper."""
    import mujoco

    data = mujoco.MjData(model)
    out: dict[str, list[float]] = {d: [0.0, 0.0] for d in DIGITS}
    for k, closed in enumerate((False, True)):
        for j in range(model.njnt):
            if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE:
                data.qpos[model.jnt_qposadr[j]] = model.jnt_range[j, 1] if closed else 0.0
        mujoco.mj_fwdPosition(model, data)
        for d in DIGITS:
            out[d][k] = float(data.ten_length[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_TENDON, f"{d}_flexor")])
    return {d: (v[0], v[1]) for d, v in out.items()}


def flexion_ctrl(model, flexion: float | Sequence[float]) -> np.ndarray:
    """Actuator controls (tendon lengths, m) for per-digit flexion(s) in [0, 1], in actuator order."""
    import mujoco

    f = np.broadcast_to(np.asarray(flexion, float), (len(DIGITS),))
    if not np.all(np.isfinite(f)) or np.any(f < 0.0) or np.any(f > 1.0):
        raise ValueError(f"flexion must be finite and in [0, 1], got {flexion!r}")
    lengths = flexor_lengths(model)
    ctrl = np.zeros(model.nu)
    for d, fd in zip(DIGITS, f):
        a = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, f"{d}_flexor")
        lo, hi = lengths[d]
        ctrl[a] = lo + fd * (hi - lo)
    return ctrl


def set_quality(model, renderer_scene=None, shadows: bool = False, reflections: bool = False) -> None:
    """Turn shadows and floor reflections on or off (model fields and, if given, the mjvScene flags)."""
    import mujoco

    model.light_castshadow[:] = 1 if shadows else 0
    floor = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_MATERIAL, "scene_floor")
    if floor >= 0:
        model.mat_reflectance[floor] = 0.2 if reflections else 0.0
    if renderer_scene is not None:
        renderer_scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = shadows
        renderer_scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = reflections


def benchmark(model, data, renderer, camera: str, n: int) -> dict[str, float]:
    """Median render time (ms) of ``n`` frames: as configured, with shadows + reflections, with tendons.
    Prints the figures and their ratios to the plain render; restores the plain settings."""
    import mujoco

    def timed(shadows: bool, tendons: bool) -> float:
        option = mujoco.MjvOption()
        option.flags[mujoco.mjtVisFlag.mjVIS_TENDON] = tendons
        option.tendongroup[3] = tendons
        set_quality(model, None, shadows, shadows)
        times = []
        for _ in range(n + 2):
            renderer.update_scene(data, camera=camera, scene_option=option)
            set_quality(model, renderer.scene, shadows, shadows)
            t0 = time.perf_counter()
            renderer.render()
            times.append(time.perf_counter() - t0)
        return 1e3 * float(np.median(times[2:]))

    result = {"plain": timed(False, False), "shadows+reflections": timed(True, False), "tendons": timed(False, True)}
    set_quality(model, renderer.scene, False, False)
    base = result["plain"]
    print(f"render benchmark (median of {n}): "
          + ", ".join(f"{k} {v:.1f} ms ({v / base:.1f}x)" for k, v in result.items()))
    return result


def pose_flexion(pose: str) -> float:
    if pose == "open":
        return 0.0
    if pose == "fist":
        return 1.0
    try:
        f = float(pose)
    except ValueError:
        raise ValueError(f"--pose must be open, fist or a flexion in [0, 1], got {pose!r}") from None
    if not (0.0 <= f <= 1.0):
        raise ValueError(f"--pose flexion must be in [0, 1], got {f}")
    return f


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="render_hand", description=__doc__.split("\n\n")[0])
    parser.add_argument("--pose", default="open", help="open, fist, or a flexion in [0, 1] for all digits")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("out/hand_open.png"), help="PNG to write")
    parser.add_argument("--side", choices=("right", "left"), default="right")
    parser.add_argument("--scene", type=pathlib.Path, default=None, help="scene MJCF (default: the package's scene)")
    parser.add_argument("--camera", default="front")
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=480)
    parser.add_argument("--settle", type=float, default=1.0, help="seconds simulated before rendering")
    parser.add_argument("--kinematic", action="store_true", help="set joint angles directly instead of simulating")
    parser.add_argument("--shadows", action="store_true")
    parser.add_argument("--reflections", action="store_true")
    parser.add_argument("--tendons", action="store_true", help="draw the tendons (group 3, hidden by default)")
    parser.add_argument("--benchmark", type=int, default=0, metavar="N",
                        help="also time N renders each: as configured, with shadows+reflections, with tendons")
    args = parser.parse_args(argv)
    os.environ.setdefault("MUJOCO_GL", "egl")
    import mujoco
    from PIL import Image

    from hand_description.paths import scene_path

    try:
        flexion = pose_flexion(args.pose)
    except ValueError as exc:
        parser.error(str(exc))
    path = args.scene or scene_path(args.side)
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "open"))
    if args.kinematic:
        for j in range(model.njnt):
            data.qpos[model.jnt_qposadr[j]] = flexion * model.jnt_range[j, 1]
        mujoco.mj_forward(model, data)
    else:
        data.ctrl[:] = flexion_ctrl(model, flexion)
        for _ in range(int(round(args.settle / model.opt.timestep))):
            mujoco.mj_step(model, data)
    set_quality(model, None, args.shadows, args.reflections)
    with mujoco.Renderer(model, height=args.height, width=args.width) as renderer:
        option = mujoco.MjvOption()
        option.flags[mujoco.mjtVisFlag.mjVIS_TENDON] = args.tendons
        option.tendongroup[3] = args.tendons  # the tendons are in group 3: hidden by default (cheaper)
        renderer.update_scene(data, camera=args.camera, scene_option=option)
        set_quality(model, renderer.scene, args.shadows, args.reflections)
        t0 = time.perf_counter()
        pixels = renderer.render()
        ms = (time.perf_counter() - t0) * 1e3
        if args.benchmark > 0:
            benchmark(model, data, renderer, args.camera, args.benchmark)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(args.out)
    names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(model.njnt)]
    angles = " ".join(f"{n}={np.degrees(data.qpos[model.jnt_qposadr[j]]):.0f}" for j, n in enumerate(names))
    print(f"pose {args.pose} (flexion {flexion:g}, side {args.side}): {angles} [deg]")
    print(f"wrote {args.out} ({args.width}x{args.height}, render {ms:.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
