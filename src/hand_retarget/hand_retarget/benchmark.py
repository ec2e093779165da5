"""Benchmark: retargeting + safety filter, ms per frame (p50/p95/max) on a hand video.

MediaPipe runs over the video once first (not timed; ``--landmarks`` loads/saves them as .npz to
skip it next time). Then, per frame with a hand, one timed call of the pipeline (preprocessing,
the rest blend's flexions on the fused skeleton, dex-retargeting; as the node) and the safety filter ticks that fall in that frame at ``--rate`` Hz (crossing
clamp included). Prints wall-clock and thread-CPU figures for each method (the CPU time is what
the work costs when other processes share the 2 cores); no ROS involved.

    python -m hand_retarget.benchmark [--video ../shared/media/human_hand_video.mp4] [--methods dexpilot vector]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

import numpy as np


def video_landmarks(video: str, cache: str | None) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray, tuple]:
    """(world (N, 21, 3) m, handedness per frame ('' = none), media time (N,) s, image landmarks
    (N, 21, 3) normalised, image size (width, height) px)."""
    if cache and os.path.isfile(cache):
        z = np.load(cache)
        return z["world"], [str(h) for h in z["handedness"]], z["t"], z["image"], tuple(int(x) for x in z["size"])
    from hand_tracking.landmarks import MediaPipeConfig, MediaPipeHands
    from hand_tracking.sources import VideoFileSource

    src = VideoFileSource(video, realtime=False, loop=False)
    # the tracker's own landmark model (MediaPipeConfig default, model_complexity 1; issue 15)
    backend = MediaPipeHands(MediaPipeConfig(max_num_hands=1), mirror=False)
    world, hands, ts, image, size = [], [], [], [], (0, 0)
    try:
        while (f := src.read()) is not None:
            obs = backend.detect(f.image)
            size = (f.width, f.height)
            world.append(obs[0].world if obs else np.full((21, 3), np.nan))
            image.append(obs[0].image if obs else np.full((21, 3), np.nan))
            hands.append(obs[0].handedness if obs else "")
            ts.append(f.media_time)
    finally:
        backend.close()
        src.close()
    out = np.array(world), hands, np.array(ts), np.array(image), size
    if cache:
        np.savez(cache, world=out[0], handedness=np.array(hands), t=out[2], image=out[3], size=np.array(size))
    return out


def run(method: str, world, hands, ts, rate: float, fast: bool = True, robot: str = "",
        robot_dir: str | None = None, image=None, size=None, rest_blend: bool = True) -> dict[str, np.ndarray]:
    from hand_description import dex, paths
    from hand_retarget.pipeline import DexPipeline, PipelineConfig
    from hand_retarget.rest_blend import RestBlendConfig
    from hand_retarget.retarget import RetargetConfig

    cfg = PipelineConfig(retarget=RetargetConfig(method=method, fast_objective=fast),
                         rest_blend=RestBlendConfig(enabled=None if rest_blend else False))
    if robot:
        from hand_retarget.robot import load_robot

        pipe = DexPipeline(load_robot(robot, method, robot_dir), "", cfg)
    else:
        pipe = DexPipeline(dex.load(), str(paths.dex_urdf_path()), cfg)
    dt = 1.0 / rate
    total, cpu, retarget, filt = [], [], [], []
    target, ticks = None, 0
    for i in range(len(world)):
        c0 = time.thread_time()
        t0 = time.perf_counter()
        if hands[i]:
            res = pipe.frame(world[i], hands[i], float(ts[i]), None if image is None else image[i], size)
            if res.ok:
                target = res.target
                retarget.append(res.retarget_ms)
        t1 = time.perf_counter()
        t_next = ts[i + 1] if i + 1 < len(ts) else ts[i] + 1.0 / 30.0
        while (ticks + 1) * dt <= t_next + 1e-9:
            pipe.tick(target, dt)
            ticks += 1
        t2 = time.perf_counter()
        if hands[i]:
            cpu.append((time.thread_time() - c0) * 1e3)
            total.append((t2 - t0) * 1e3)
            filt.append((t2 - t1) * 1e3)
    return {"retarget+filter (wall)": np.array(total), "retarget+filter (CPU)": np.array(cpu),
            "retarget (wall)": np.array(retarget), "safety filter ticks (wall)": np.array(filt)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_retarget", description=__doc__.split("\n\n")[0])
    root = os.environ.get("HAND_TELEOP_ROOT", ".")
    parser.add_argument("--video", default=str(pathlib.Path(root).parent / "shared" / "media" / "human_hand_video.mp4"))
    parser.add_argument("--landmarks", default=None, help=".npz cache of the video's landmarks (read if present, else written)")
    parser.add_argument("--methods", nargs="+", default=["dexpilot", "vector"])
    parser.add_argument("--rate", type=float, default=100.0, help="safety filter rate (Hz)")
    parser.add_argument("--robot", nargs="+", default=[""],
                        help="robot hands (dex-retargeting names or .yml paths; '' = dex_hand), e.g. leap_hand_right")
    parser.add_argument("--robot-dir", default=None, help="folder of the robot URDFs (default $HAND_ROBOTS_DIR or ../shared/robots)")
    parser.add_argument("--original-objective", action="store_true",
                        help="also time dex-retargeting's own objective evaluation (fast_objective off)")
    parser.add_argument("--no-rest-blend", action="store_true", help="retarget every frame as it is (no rest blend; it is on by default for URDF robots, off for dex_hand)")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.video) and not (args.landmarks and os.path.isfile(args.landmarks)):
        parser.error(f"video {args.video} not found")
    world, hands, ts, image, size = video_landmarks(args.video, args.landmarks)
    print(f"{len(world)} frames, {sum(1 for h in hands if h)} with a hand; filter at {args.rate:g} Hz; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    runs = [(m, True) for m in args.methods] + ([(m, False) for m in args.methods] if args.original_objective else [])
    for robot, (method, fast) in [(r, m) for r in args.robot for m in runs]:
        figures = run(method, world, hands, ts, args.rate, fast, robot, args.robot_dir, image, size,
                      not args.no_rest_blend)
        label = (method if fast else f"{method} (original objective)") + (f" {robot}" if robot else "")
        for name, ms in figures.items():
            print(f"{label:9s} {name:28s} ms/frame  p50 {np.percentile(ms, 50):6.2f}  p95 {np.percentile(ms, 95):6.2f}"
                  f"  max {ms.max():6.2f}  (n={ms.size})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
