"""Dexterous demo video: the operator's hand beside the dexterous twin, with both Kapandji scores.

Offline and in-process (no ROS): every video frame goes through MediaPipe (hand_tracking's
backend), the :class:`~hand_retarget.pipeline.DexPipeline` (preprocessing, DexPilot, safety filter
at 100 Hz) and the dexterous twin's physics (:class:`~hand_retarget.dex_sim.DexSim`) in simulated
time; the twin is rendered from the scene's ``front`` camera (hand_twin_mujoco's offscreen
renderer) and composed with the annotated video (hand_bringup.demo_video's skeleton drawing and
side-by-side layout). The HUD shows the human and robot Kapandji scores (0-10, robot from the
twin's *measured* joint angles) and the retargeting time.

    python -m hand_bringup.dex_demo [--video ../shared/media/human_hand_video.mp4] [--out out/dex_demo.mp4]
    python -m hand_bringup.dex_demo --robot leap_hand_right     # any dex-retargeting hand (URDFs: --robot-dir)

With ``--robot`` the twin is that robot's URDF compiled by :mod:`hand_retarget.urdf_twin` and the
robot score uses its Kapandji site table; the HUD names the levels the hand cannot reach.

Prints how often the robot's score was within +-1 of the human's (frames with human >= 3), and per
episode of opposition (>= 3 consecutive frames with human >= 3: a thumb-fingertip pinch) the human
and robot maxima. The tracker's frame-quality gate (:class:`hand_tracking.tracker_core.TrackerCore`)
judges every detection first: a refused skeleton is not retargeted (the twin holds).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

import cv2
import numpy as np

GREEN, ORANGE, GREY = (60, 200, 60), (0, 165, 255), (90, 90, 90)


def draw_kapandji(frame: np.ndarray, human: int, robot: int, note: str) -> None:
    """Two 10-segment bars (human, robot) and a note line, drawn in place (BGR frame)."""
    h, w = frame.shape[:2]
    s = h / 480.0
    font = cv2.FONT_HERSHEY_SIMPLEX
    cv2.rectangle(frame, (0, 0), (w, int(86 * s)), (0, 0, 0), -1)
    for row, (label, score) in enumerate((("human", human), ("robot", robot))):
        y = int((12 + row * 30) * s)
        cv2.putText(frame, f"Kapandji {label}", (int(8 * s), y + int(17 * s)), font, 0.55 * s, (255, 255, 255), 1,
                    cv2.LINE_AA)
        x0, seg = int(170 * s), int(26 * s)
        for k in range(10):
            colour = (GREEN if row == 0 else ORANGE) if k < score else GREY
            cv2.rectangle(frame, (x0 + k * seg, y), (x0 + (k + 1) * seg - 3, y + int(20 * s)), colour, -1)
        text = str(score) if score >= 0 else "-"
        cv2.putText(frame, text, (x0 + 10 * seg + int(8 * s), y + int(17 * s)), font, 0.6 * s, (255, 255, 255), 2,
                    cv2.LINE_AA)
    cv2.putText(frame, note, (int(8 * s), int(80 * s)), font, 0.45 * s, (0, 255, 255), 1, cv2.LINE_AA)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hand_bringup.dex_demo", description=__doc__.split("\n\n")[0])
    root = pathlib.Path(os.environ.get("HAND_TELEOP_ROOT", "."))
    parser.add_argument("--video", default=str(root.parent / "shared" / "media" / "human_hand_video.mp4"))
    parser.add_argument("--out", default="", help="output video (default out/dex_demo.mp4, out/dex_demo_<robot>.mp4)")
    parser.add_argument("--robot", default="", help="robot hand: empty = dex_hand; a dex-retargeting name "
                        "(leap_hand_right, allegro_hand_right, ...) or a .yml path")
    parser.add_argument("--robot-dir", default="", help="folder of the robot URDFs (default $HAND_ROBOTS_DIR, "
                        "else ../shared/robots)")
    parser.add_argument("--method", default="dexpilot", choices=("dexpilot", "vector"))
    parser.add_argument("--frames", type=int, default=0, help="stop after this many frames (0 = all)")
    parser.add_argument("--height", type=int, default=480, help="output height (px)")
    args = parser.parse_args(argv)
    if not args.out:
        name = pathlib.Path(args.robot).stem.replace("_dexpilot", "") if args.robot else ""
        args.out = str(root / "out" / (f"dex_demo_{name}.mp4" if name else "dex_demo.mp4"))
    os.environ.setdefault("MUJOCO_GL", "egl")

    from hand_bringup.demo_video import draw_skeleton, side_by_side
    from hand_description import dex, paths
    from hand_retarget.dex_sim import DexSim
    from hand_retarget.pipeline import DexPipeline, PipelineConfig
    from hand_retarget.retarget import RetargetConfig
    from hand_tracking.landmarks import MediaPipeConfig, MediaPipeHands
    from hand_tracking.sources import VideoFileSource
    from hand_tracking.tracker_core import TrackerCore
    from hand_twin_mujoco.render import OffscreenRenderer, RenderConfig

    cfg = PipelineConfig(retarget=RetargetConfig(method=args.method))
    if args.robot:
        from hand_retarget.robot import load_robot

        robot = load_robot(args.robot, args.method, args.robot_dir or None)
        pipe = DexPipeline(robot, "", cfg)
        sim = DexSim.for_urdf(robot.urdf_path, robot.joint_names)
        for note in robot.warnings + sim.warnings:
            print(f"warning: {note}", file=sys.stderr)
    else:
        desc = dex.load()
        pipe = DexPipeline(desc, str(paths.dex_urdf_path()), cfg)
        sim = DexSim(desc.joint_names)
    unreachable = pipe.robot_score(pipe.rest).unreachable
    suffix = f"  robot cannot reach {unreachable[0]}-{unreachable[-1]}" if unreachable else ""

    class _Hand:
        model = sim.model

    renderer = OffscreenRenderer(_Hand(), RenderConfig(args.height * 4 // 3, args.height, "front"))
    src = VideoFileSource(args.video, realtime=False, loop=False)
    # the tracker's own landmark model (MediaPipeConfig default, model_complexity 1): complexity 0's
    # 3-D tips stay >= 58 mm apart in a thumb-index pinch (issue 15)
    backend = MediaPipeHands(MediaPipeConfig(max_num_hands=1), mirror=False)
    # and its frame-quality gate: a skeleton the tracker refuses (and holds) is not retargeted either
    gate = TrackerCore()
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    writer = None
    dt = 1.0 / 100.0
    target, ticks, n, refused = None, 0, 0, 0
    scores, cpu_ms, wall_ms = [], [], []
    try:
        while (f := src.read()) is not None and (args.frames <= 0 or n < args.frames):
            hands = backend.detect(f.image)
            human, note = -1, "no hand"
            spent_cpu = spent_wall = 0.0     # retarget + filter (not MediaPipe, not the twin, not rendering)
            verdict = gate.update(hands, f.media_time, f.width, f.height)
            if hands and not verdict.accepted:
                refused += 1
                note = f"held: {verdict.reason}"
                draw_skeleton(f.image, hands[0].image)
            elif hands:
                c0, t0 = time.thread_time(), time.perf_counter()
                res = pipe.frame(hands[0].world, hands[0].handedness, f.media_time, image=hands[0].image,
                                 size=(f.width, f.height))
                spent_cpu, spent_wall = time.thread_time() - c0, time.perf_counter() - t0
                if res.ok:
                    target, human = res.target, res.human.score
                    note = f"{args.method}  retarget {res.retarget_ms:.1f} ms  frame {f.index}{suffix}"
                else:
                    note = f"miss: {res.reason}"
                draw_skeleton(f.image, hands[0].image)
            while (ticks + 1) * dt <= f.media_time + 1.0 / src.fps + 1e-9:
                c0, t0 = time.thread_time(), time.perf_counter()
                q = pipe.tick(target, dt)
                spent_cpu += time.thread_time() - c0
                spent_wall += time.perf_counter() - t0
                sim.set_command(q)
                sim.advance(dt)
                ticks += 1
            robot = pipe.robot_score(sim.state().position).score
            scores.append((human, robot))
            cpu_ms.append(spent_cpu * 1e3)
            wall_ms.append(spent_wall * 1e3)
            sim.copy_state_into(renderer.data)
            twin = cv2.cvtColor(renderer.render(), cv2.COLOR_RGB2BGR)
            out = side_by_side(f.image, twin, args.height)
            draw_kapandji(out, human, robot, note)
            if writer is None:
                writer = cv2.VideoWriter(args.out, cv2.VideoWriter_fourcc(*"mp4v"), src.fps,
                                         (out.shape[1], out.shape[0]))
            writer.write(out)
            n += 1
    finally:
        backend.close()
        src.close()
        renderer.close()
        if writer is not None:
            writer.release()
    s = np.array(scores)
    sel = s[:, 0] >= 3
    follow = float(np.mean(np.abs(s[sel, 1] - s[sel, 0]) <= 1)) if sel.any() else float("nan")
    print(f"wrote {args.out}: {n} frames{' on ' + args.robot if args.robot else ''}"
          f"{' (levels ' + ', '.join(map(str, unreachable)) + ' unreachable)' if unreachable else ''}; human Kapandji max {s[:, 0].max()}, robot max {s[:, 1].max()}; "
          f"robot within +-1 on {follow:.1%} of {int(sel.sum())} frames with human >= 3; "
          f"{refused} frames refused by the tracker's quality gate")
    load = os.getloadavg()
    print(f"retarget + filter per frame p95: {np.percentile(cpu_ms, 95):.2f} ms thread CPU, "
          f"{np.percentile(wall_ms, 95):.2f} ms wall (load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} "
          f"on {os.cpu_count()} cores)")
    for first, last in opposition_episodes(s[:, 0]):
        h, r = s[first:last + 1, 0], s[first:last + 1, 1]
        print(f"  frames {first}-{last}: human Kapandji max {h.max()}, robot max {r.max()}, "
              f"robot within +-1 on {np.mean(np.abs(r - h) <= 1):.0%}")
    return 0


def opposition_episodes(human: np.ndarray, level: int = 3, min_frames: int = 3) -> list[tuple[int, int]]:
    """(first, last) frame of every run of >= ``min_frames`` consecutive frames with human score >= ``level``."""
    out, start = [], None
    for i, v in enumerate([*(np.asarray(human) >= level), False]):
        if v and start is None:
            start = i
        elif not v and start is not None:
            if i - start >= min_frames:
                out.append((start, i - 1))
            start = None
    return out


def _main() -> int:
    try:
        return main()
    except (OSError, ValueError, RuntimeError) as exc:  # e.g. a missing video: one line, no traceback
        print(f"hand_bringup.dex_demo: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(_main())
