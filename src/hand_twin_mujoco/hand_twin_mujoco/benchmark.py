"""Benchmark: real-time factor of the twin while it renders headless (prints figures, asserts nothing).

Two modes:

- ``node`` (default): starts ``twin_node`` as its own process with ``render_rate`` Hz offscreen
  rendering published on /hand_twin/image, feeds it 30 Hz flexion commands (a slow open/close
  wave) from this process, subscribes to the images like a viewer would, and after ``--seconds``
  prints the node's own /diagnostics figures: real-time factor (windowed and since activation),
  worst physics lag, share of time in mj_step, render rate and time per frame; plus the image
  rate seen by the subscriber.
- ``inprocess``: the same physics loop + render thread without ROS (isolates MuJoCo's cost).

Usage (embedded): ``. tools/env.sh && ROS_DOMAIN_ID=120 python -m hand_twin_mujoco.benchmark``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import threading
import time

import numpy as np


def _wave(t: float) -> list[float]:
    """Flexions of a slow open/close wave, one phase per finger (like a hand waving)."""
    return [0.5 - 0.45 * math.cos(2 * math.pi * 0.5 * t + k * 0.6) for k in range(5)]


def run_inprocess(model: str | None, seconds: float, rate: float, width: int, height: int) -> dict[str, float]:
    from .loop import PhysicsLoop
    from .render import RenderConfig, RenderWorker
    from .sim import build_twin
    from .watchdog import CommandWatchdog

    build = build_twin(model)
    loop = PhysicsLoop(build.sim(), CommandWatchdog(0.5), publish_rate=100.0)
    frames = []
    worker = RenderWorker(build.hand, RenderConfig(width, height), rate, loop.snapshot,
                          lambda rgb, meta: frames.append(meta.sim_time))
    worker.start()
    worker.enabled.set()
    loop.start()
    t0 = time.monotonic()
    cpu0 = time.process_time()
    while time.monotonic() - t0 < seconds:
        loop.command(np.array(_wave(time.monotonic() - t0)), stamp=time.time())
        time.sleep(1 / 30)
    wall = time.monotonic() - t0
    cpu = time.process_time() - cpu0
    st = loop.stats()
    loop.stop()
    worker.close()
    return {
        "real_time_factor": st.real_time_factor,
        "real_time_factor_total": st.real_time_factor_total,
        "max_lag_ms": st.max_lag * 1e3,
        "lag_p99_ms": st.lag_p99 * 1e3,
        "dropped_time_s": st.dropped_time,
        "physics_busy_fraction": st.busy_fraction,
        "render_fps": len(frames) / wall,
        "render_ms": worker.render_time / max(worker.frames, 1) * 1e3,
        "process_cpu_cores": cpu / wall,
    }


def run_node(model: str | None, seconds: float, rate: float, width: int, height: int) -> dict[str, float]:
    import yaml
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import Image, JointState

    from hand_common import contract
    from hand_common.testing import NodeProcess, RosProbe, wait_until

    tmp = tempfile.mkdtemp(prefix="twin_bench_")
    params = {"render_rate_hz": rate, "publish_image": True, "image_width_px": width, "image_height_px": height}
    if model:
        params["model_path"] = model
    cfg = os.path.join(tmp, "params.yaml")
    with open(cfg, "w") as fh:
        yaml.safe_dump({contract.TWIN_NODE: {"ros__parameters": params}}, fh)
    proc = NodeProcess.module("hand_twin_mujoco.twin_node", "--ros-args", "--params-file", cfg,
                              log_path=os.path.join(tmp, "twin.log"))
    probe = RosProbe("twin_benchmark")
    stop = threading.Event()
    try:
        images = probe.collect(Image, contract.TOPIC_TWIN_IMAGE, contract.qos(contract.IMAGE))
        diags = probe.collect(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, contract.qos(contract.STREAM))
        if not (probe.change_state(contract.TWIN_NODE, "configure") and probe.change_state(contract.TWIN_NODE,
                                                                                            "activate")):
            raise RuntimeError(f"twin did not start:\n{proc.output()}")
        pub = probe.publisher(JointState, contract.TOPIC_TARGET_FLEXIONS, contract.qos(contract.STREAM))
        probe.wait_for_subscribers(pub)
        t0 = time.monotonic()

        def feed():
            while not stop.wait(1 / 30):
                m = JointState()
                m.header.stamp = probe.node.get_clock().now().to_msg()
                m.name = list(contract.FINGER_NAMES)
                m.position = _wave(time.monotonic() - t0)
                pub.publish(m)

        threading.Thread(target=feed, daemon=True).start()
        time.sleep(2.0)  # warm-up (first frames, discovery)
        n0, t1 = len(images), time.monotonic()
        wait_until(lambda: time.monotonic() - t1 >= seconds, seconds + 5, "benchmark duration")
        n1, t2 = len(images), time.monotonic()
        wait_until(lambda: diags and diags[-1].header.stamp.sec >= int(time.time()) - 1, 5, "fresh diagnostics")
        values = {k.key: k.value for k in diags[-1].status[0].values}
        out = {k: float(values[k]) for k in ("real_time_factor", "real_time_factor_total", "max_lag_ms", "lag_p99_ms",
                                             "dropped_time_s", "physics_busy_fraction", "render_fps", "render_ms")}
        out["images_received_fps"] = (n1 - n0) / (t2 - t1)
        return out
    finally:
        stop.set()
        probe.close()
        proc.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("node", "inprocess"), default="node")
    ap.add_argument("--model", default="", help="MJCF scene (default: hand_description's)")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--render-rate", type=float, default=30.0)
    ap.add_argument("--width", type=int, default=640)
    ap.add_argument("--height", type=int, default=480)
    args = ap.parse_args(argv)
    run = run_node if args.mode == "node" else run_inprocess
    print(f"twin benchmark ({args.mode}): {args.seconds:.0f} s, rendering {args.width}x{args.height} at "
          f"{args.render_rate:g} Hz headless (MUJOCO_GL={os.environ.get('MUJOCO_GL', '')}), "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    figures = run(args.model or None, args.seconds, args.render_rate, args.width, args.height)
    for k, v in figures.items():
        print(f"  {k:24s} {v:10.4f}")
    ok = figures["real_time_factor_total"] >= 1.0 and figures["dropped_time_s"] == 0.0
    print("real-time factor ≥ 1.0 while rendering:", "YES" if ok else "NO")
    return 0


if __name__ == "__main__":
    sys.exit(main())
