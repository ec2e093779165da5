"""Benchmark of the tracker on a video (default: the shared hand video). Not a test: prints figures.

In one run, over the same frames:
1. a bare MediaPipe loop (OpenCV decode → BGR→RGB → ``Hands.process``), per-stage ms and frames/s;
2. the tracker node as its own process (``source:=video:…``, ``realtime:=false``), driven through
   its lifecycle services; frames/s measured from the arrival of its ``/hand/landmarks`` messages
   in this process, per-stage ms (decode, inference, geometry+filter, publish) from its
   ``/diagnostics``;
3. geometry + filter alone, in process, on the bare loop's landmarks (mean and p95 ms/frame).
Prints the node/bare frames/s ratio (target ≥ 0.9) and geometry+filter ms (target ≤ 1).

    bench_tracker [--video PATH] [--model-complexity 0|1] [--repeats N]

Runs on ROS_DOMAIN_ID (default: a random private one) with ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time

import numpy as np


def default_video() -> str:
    root = os.environ.get("HAND_TELEOP_ROOT", os.getcwd())
    return os.path.normpath(os.path.join(root, "..", "shared", "media", "human_hand_video.mp4"))


def bare_loop(video: str, model_complexity: int) -> dict:
    """OpenCV decode + MediaPipe hands, nothing else. Returns timings and the world landmarks."""
    import cv2
    from mediapipe.python.solutions import hands as mp_hands

    hands = mp_hands.Hands(static_image_mode=False, max_num_hands=1, model_complexity=model_complexity,
                           min_detection_confidence=0.5, min_tracking_confidence=0.5)
    hands.process(np.full((480, 640, 3), 128, np.uint8))  # warm-up, as the node does at configure
    cap = cv2.VideoCapture(video)
    decode, infer, world, image = [], [], [], []
    t_start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        ok, frame = cap.read()
        t1 = time.perf_counter()
        if not ok:
            break
        rgb = cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)
        rgb.flags.writeable = False
        res = hands.process(rgb)
        t2 = time.perf_counter()
        decode.append(t1 - t0)
        infer.append(t2 - t1)
        if res.multi_hand_world_landmarks:
            world.append([(p.x, p.y, p.z) for p in res.multi_hand_world_landmarks[0].landmark])
            image.append([(p.x, p.y, p.z) for p in res.multi_hand_landmarks[0].landmark])
        else:
            world.append(np.full((21, 3), np.nan))
            image.append(np.full((21, 3), np.nan))
    total = time.perf_counter() - t_start
    cap.release()
    hands.close()
    n = len(decode)
    return {"frames": n, "fps": n / total, "decode_ms": 1e3 * float(np.mean(decode)),
            "inference_ms": 1e3 * float(np.mean(infer)), "world": np.array(world), "image": np.array(image),
            "detected": int(np.isfinite(np.array(world)[:, 0, 0]).sum())}


def geometry_filter(world: np.ndarray, image: np.ndarray, fps: float = 30.0) -> dict:
    """TrackerCore.update (skeleton check, 15 angles, 1€ filter, windows) per frame, in process."""
    from hand_tracking.landmarks import HandObservation
    from hand_tracking.tracker_core import TrackerCore

    core = TrackerCore()
    hands = [[HandObservation(image[i], world[i], "right")] if np.isfinite(world[i]).all() else []
             for i in range(len(world))]
    times = []
    for i, h in enumerate(hands):
        t0 = time.perf_counter()
        core.update(h, i / fps, 1280, 720)
        times.append(time.perf_counter() - t0)
    t = 1e3 * np.array(times[1:])
    return {"mean_ms": float(t.mean()), "p95_ms": float(np.percentile(t, 95))}


def node_run(video: str, model_complexity: int, expected: int) -> dict:
    """The tracker node in its own process, on the same video, as fast as it goes."""
    from diagnostic_msgs.msg import DiagnosticArray
    from hand_msgs.msg import HandLandmarksArray

    from hand_common import contract
    from hand_common.testing import NodeProcess, RosProbe, wait_until

    args = ["--ros-args"]
    try:
        from ament_index_python.packages import get_package_share_directory

        args += ["--params-file", os.path.join(get_package_share_directory("hand_tracking"), "config",
                                               "tracker.yaml")]
    except Exception:  # noqa: BLE001 - package not installed: node defaults
        pass
    args += ["-p", f"source:=video:{video}", "-p", "realtime:=false", "-p", "loop:=false",
             "-p", f"model_complexity:={model_complexity}", "-p", "diagnostics_period_s:=0.5"]
    log = tempfile.NamedTemporaryFile(prefix="bench_tracker_", suffix=".log", delete=False).name
    node = NodeProcess.module("hand_tracking.tracker_node", *args, log_path=log)
    probe = RosProbe("bench_tracker_probe")
    arrivals: list[float] = []
    diags: list = []
    try:
        probe.node.create_subscription(HandLandmarksArray, contract.TOPIC_LANDMARKS,
                                       lambda m: arrivals.append(time.perf_counter()), 1000, raw=True)
        probe.node.create_subscription(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, diags.append, 100)
        name = contract.TRACKER_NODE
        probe.get_state(name, timeout=30)
        if not probe.change_state(name, "configure"):
            raise RuntimeError(f"configure failed; node log {log}:\n{node.output()[-2000:]}")
        time.sleep(1.0)  # subscriptions matched before the first frame
        if not probe.change_state(name, "activate"):
            raise RuntimeError(f"activate failed; node log {log}")
        wait_until(lambda: len(arrivals) >= expected, 120, f"{expected} landmark messages")
        t_done = time.perf_counter()
        wait_until(lambda: diags and time.perf_counter() - t_done > 1.2, 10, "final diagnostics")
    finally:
        probe.close()
        node.stop()
    values = {kv.key: kv.value for kv in diags[-1].status[0].values}
    span = arrivals[-1] - arrivals[0]
    return {"frames": len(arrivals), "fps": (len(arrivals) - 1) / span if span > 0 else float("nan"),
            **{k: float(values[f"{k}_ms_mean_total"]) for k in ("decode", "inference", "geometry_filter", "publish")},
            "tracked": int(values["frames_tracked"]), "log": log}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--video", default=default_video())
    ap.add_argument("--model-complexity", type=int, default=1, choices=(0, 1))
    ap.add_argument("--repeats", type=int, default=1, help="alternate bare/node runs, keep the best of each")
    a = ap.parse_args(argv)
    if not os.path.isfile(a.video):
        print(f"bench_tracker: no video at {a.video}", file=sys.stderr)
        return 2
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(1, 101)))  # private; 1-101 is safe on Linux

    bares, nodes = [], []
    for _ in range(max(1, a.repeats)):
        bares.append(bare_loop(a.video, a.model_complexity))
        nodes.append(node_run(a.video, a.model_complexity, bares[-1]["frames"]))
    bare = max(bares, key=lambda r: r["fps"])
    node = max(nodes, key=lambda r: r["fps"])
    geo = geometry_filter(bare["world"], bare["image"])
    print(f"bench_tracker: {a.video}, {bare['frames']} frames, model_complexity {a.model_complexity}, "
          f"{os.cpu_count()} CPUs, best of {len(bares)}")
    print(f"  bare MediaPipe loop : decode {bare['decode_ms']:6.2f} ms | inference {bare['inference_ms']:6.2f} ms"
          f" |                                   | {bare['fps']:6.1f} frames/s ({bare['detected']} with a hand)")
    print(f"  tracker node        : decode {node['decode']:6.2f} ms | inference {node['inference']:6.2f} ms"
          f" | geometry+filter {node['geometry_filter']:5.3f} ms | publish {node['publish']:5.3f} ms"
          f" | {node['fps']:6.1f} frames/s ({node['tracked']} tracked, {node['frames']} received)")
    print(f"  geometry+filter in process: mean {geo['mean_ms']:.3f} ms, p95 {geo['p95_ms']:.3f} ms per frame"
          f" (target <= 1 ms)")
    ratio = node["fps"] / bare["fps"]
    print(f"  node / bare frames/s ratio: {ratio:.2f} (target >= 0.9)")
    if len(bares) > 1:
        print("  all runs, frames/s: bare " + ", ".join(f"{r['fps']:.1f}" for r in bares) +
              "; node " + ", ".join(f"{r['fps']:.1f}" for r in nodes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
