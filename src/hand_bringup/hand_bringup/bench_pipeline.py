"""Benchmark of the real-time hot path (prints figures, asserts nothing; not a test).

In one run, on the shared video paced at 30 fps like a camera, three scenarios one after the other:

(a) ``alone``:  the tracker alone;
(b) ``full``:   the demo graph as ``make demo`` runs it: tracker, twin, joint mapper, servo driver
                + simulated board, the runner's recorder (bag), live calibration, and the demo
                video composed after the run (its seconds are reported apart);
(c) ``burner``: (b) plus one CPU-burner process (a busy Python loop) that the benchmark starts
                before and stops after the scenario;
(d) ``console``: (b) plus the operator console (hand_console, ``runner --console``) with a
                headless chromium showing its page for the whole run (the console draws only
                while a browser looks); its figures are compared with (b)'s: tracker fps ratio,
                capture → flexion p95 difference, the console's and the browser's CPU seconds.

Per scenario: tracker frames/s, frames processed / dropped, capture → ``/hand/target_flexions``
p50/p95/max as a keep-last-1 subscriber receives it (what an actuator sees), its p95 over the first
and the second half of the run (growth), inference p95 (the tracker's diagnostics), capture → servo
frame on the wire p95 (see :func:`wire_latencies`), twin real-time factor, CPU seconds per process,
safe-pose trips; then the ratios against (a). ``--no-nice`` starts every node at nice 0 (the
A/B of :attr:`hand_bringup.bringup.NodeSpec.nice`). ``--drop-late``: the tracker drops late
frames like a live camera (always the newest frame) instead of keeping every frame. ``--live-render`` makes the twin render (30 Hz,
frames to files) during (b) and (c), as the demo did before the rendering moved after the run.

  python -m hand_bringup.bench_pipeline [--video V] [--quick] [--live-render] [--json out.json]

The machine's load average is printed before and after: figures on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

from hand_bringup.bringup import CONSOLE
from hand_common.stats import percentiles_ms, rate_hz

#: The scenario that adds the operator console (and a headless browser) to ``full``.
CONSOLE_SCENARIO = "console"
SCENARIOS = ("alone", "full", "burner", CONSOLE_SCENARIO)
BURNER_CODE = "while True:\n    pass\n"


def make_clip(video: str, frames: int, path: str) -> str:
    """Write the first ``frames`` frames of ``video`` to ``path`` (mp4v, same fps); returns path."""
    import cv2

    cap = cv2.VideoCapture(video)
    fps = cap.get(cv2.CAP_PROP_FPS) or 30.0
    writer = None
    for _ in range(frames):
        ok, frame = cap.read()
        if not ok:
            break
        if writer is None:
            writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"mp4v"), fps, (frame.shape[1], frame.shape[0]))
        writer.write(frame)
    cap.release()
    if writer is None:
        raise ValueError(f"no frame in {video}")
    writer.release()
    return path


def wire_latencies(board_log: pathlib.Path, capture_stamps: list[float]) -> list[float]:
    """capture → servo frame on the wire (s), per SET_PULSES frame the simulated board accepted:
    its arrival wall time minus the newest capture stamp at or before it. The frame carries no
    stamp, so this is a LOWER bound (a frame computed from an older capture counts as newer)."""
    if not board_log.exists() or not capture_stamps:
        return []
    caps = np.sort(np.asarray(capture_stamps))
    out = []
    with open(board_log) as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("event") != "frame" or rec.get("msg") != "set_pulses":
                continue
            k = int(np.searchsorted(caps, rec["t"], side="right")) - 1
            if k >= 0 and rec["t"] - caps[k] < 2.0:
                out.append(rec["t"] - caps[k])
    return out


def _browser_cpu_seconds() -> float:
    """User + system CPU seconds of the running chromium processes (the benchmark's browser)."""
    from hand_bringup.runner_core import process_cpu_seconds

    total = 0.0
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"chromium" in cmd and b"chromedriver" not in cmd:
            total += process_cpu_seconds(int(pid)) or 0.0
    return total


def _p95(values: list[float]) -> float | None:
    return percentiles_ms(values).get("p95") if values else None


def run_scenario(name: str, video: str, n_frames: int, out: pathlib.Path, live_render: bool,
                 shared: bool, niced: bool = True, drop_late: bool = False) -> dict[str, Any]:
    from hand_bringup.bringup import NODES, TRACKER, TWIN
    from hand_bringup.demo import CALIBRATION_SCHEDULE, LiveCalibration, tracker_diagnostics, write_outputs
    from hand_bringup.runner_core import RunConfig, Runner
    from hand_tracking import interface as tracker_iface

    out.mkdir(parents=True, exist_ok=True)
    full = name != "alone"
    overrides: dict[str, dict[str, Any]] = {
        TRACKER: {tracker_iface.PARAM_SOURCE: f"video:{video}", tracker_iface.PARAM_REALTIME: True,
                  tracker_iface.PARAM_DROP_LATE_FRAMES: drop_late}}
    if full:
        overrides[TWIN] = ({"render_rate": 30.0, "publish_image": False, "record_dir": str(out / "twin_frames")}
                             if live_render else {"render_rate": 0.0, "publish_image": False})
    with_console = name == CONSOLE_SCENARIO
    if with_console:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            console_port = sock.getsockname()[1]
        overrides[CONSOLE] = {"port": console_port}
    cfg = RunConfig(profile="demo", out_dir=out, overrides=overrides, record=full, sim_board=full,
                    video_frames=n_frames, idle_stop_s=5.0, console=with_console)
    runner = Runner(cfg)
    if not full:
        runner.specs = [NODES[TRACKER]]
    if not niced:  # A/B: every node at the runner's priority, as before NodeSpec.nice
        runner.specs = [dataclasses.replace(spec, nice=0) for spec in runner.specs]
    calibration = LiveCalibration(CALIBRATION_SCHEDULE if (full and shared) else ())
    burner = None
    if name == "burner":
        burner = subprocess.Popen([sys.executable, "-c", BURNER_CODE], stdin=subprocess.DEVNULL)
    error = None
    browser = None
    browser_cpu = None
    try:
        runner.start()
        runner.connect()
        runner.bring_up()
        if with_console:  # a browser on the page for the whole run (niced as hand_console.browser does)
            from hand_console.browser import ConsoleBrowser

            browser = ConsoleBrowser(f"http://127.0.0.1:{console_port}", 1000, 760)
            browser.driver.get(browser.url)
        runner.supervise(on_tick=calibration.tick)
        time.sleep(0.5)
    except Exception as exc:  # noqa: BLE001 - reported with the figures
        error = f"{type(exc).__name__}: {exc}"
    finally:
        if browser is not None:
            browser_cpu = _browser_cpu_seconds()
            browser.close()
        runner.stop()
        burner_cpu = None
        if burner is not None:
            from hand_bringup.runner_core import process_cpu_seconds

            burner_cpu = process_cpu_seconds(burner.pid)
            burner.kill()
            burner.wait(5)
    post_s = None
    if full and error is None:
        t0 = time.monotonic()
        write_outputs(runner, calibration, video, n_frames, out, shared)
        post_s = round(time.monotonic() - t0, 1)
    diag = tracker_diagnostics(runner)
    lat = list(runner.monitor.flexion_latency)  # a bounded deque: slices need a list
    half = len(lat) // 2
    cpu = dict(runner.cpu_seconds)
    if burner_cpu is not None:
        cpu["burner"] = round(burner_cpu, 2)
    if browser_cpu is not None:
        cpu["browser"] = round(browser_cpu, 2)

    def num(key: str) -> float | None:
        try:
            return float(diag[key])
        except (KeyError, ValueError):
            return None

    wire = wire_latencies(out / "servo_board_pulses.jsonl", [f[3] * 1e-9 for f in runner.monitor.frames])
    return {
        "scenario": name,
        "error": error or runner.failure,
        "tracker_fps": rate_hz([f[1] for f in runner.monitor.frames]),
        "frames": n_frames,
        "frames_processed": len(runner.monitor.frames),
        "frames_dropped": int(num("dropped_frames")) if num("dropped_frames") is not None else None,
        "latency_ms": percentiles_ms(lat),
        "latency_p95_first_half_ms": _p95(lat[:half]),
        "latency_p95_second_half_ms": _p95(lat[half:]),
        "inference_ms_p95": num("inference_ms_p95_total"),
        "wire_latency_lower_bound_ms": percentiles_ms(wire) if wire else None,
        "twin_real_time_factor": runner.monitor.twin_rtf,
        "safe_pose_trips": runner.monitor.safe_pose_trips,
        "cpu_seconds": cpu,
        "demo_video_after_run_s": post_s,
    }


def _fmt(v: Any, unit: str = "") -> str:
    if v is None:
        return "-"
    return f"{v:.1f}{unit}" if isinstance(v, float) else f"{v}{unit}"


def print_report(results: list[dict[str, Any]], load: dict[str, Any]) -> None:
    print(f"\nload average (1, 5, 15 min) before {load['before']}, after {load['after']}; "
          f"{os.cpu_count()} CPUs")
    for r in results:
        lat, wire = r["latency_ms"], r["wire_latency_lower_bound_ms"] or {}
        print(f"\n({r['scenario']}) tracker {_fmt(r['tracker_fps'])} fps, frames {r['frames_processed']}/{r['frames']}"
              f" processed, {_fmt(r['frames_dropped'])} dropped" + (f"  ERROR {r['error']}" if r["error"] else ""))
        print(f"  capture→/hand/target_flexions (keep-last-1): p50 {_fmt(lat.get('p50'))} p95 {_fmt(lat.get('p95'))} "
              f"max {_fmt(lat.get('max'))} ms (n {lat.get('n')}); p95 1st half {_fmt(r['latency_p95_first_half_ms'])}"
              f", 2nd half {_fmt(r['latency_p95_second_half_ms'])} ms; inference p95 {_fmt(r['inference_ms_p95'])} ms")
        print(f"  capture→servo frame on the wire p95 ≥ {_fmt(wire.get('p95'))} ms (lower bound); twin RTF "
              f"{_fmt(r['twin_real_time_factor'])}; safe-pose trips {r['safe_pose_trips']}")
        print(f"  CPU s: {r['cpu_seconds']}" + (f"; demo video after the run {r['demo_video_after_run_s']} s"
                                                 if r["demo_video_after_run_s"] is not None else ""))
    base = next((r for r in results if r["scenario"] == "alone"), None)
    if base and base["tracker_fps"]:
        for r in results:
            if r is base or not r["tracker_fps"]:
                continue
            p95, inf = r["latency_ms"].get("p95"), r["inference_ms_p95"]
            print(f"ratio ({r['scenario']}/alone): fps {r['tracker_fps'] / base['tracker_fps']:.3f}; "
                  f"p95 − inference p95 = {_fmt(p95 - inf if p95 is not None and inf is not None else None)} ms")
    full = next((r for r in results if r["scenario"] == "full"), None)
    con = next((r for r in results if r["scenario"] == CONSOLE_SCENARIO), None)
    if full and con and full["tracker_fps"] and con["tracker_fps"]:
        p_full, p_con = full["latency_ms"].get("p95"), con["latency_ms"].get("p95")
        print(f"console (console/full, issue 23 targets: fps ratio >= 0.98, p95 + <= 2 ms): fps ratio "
              f"{con['tracker_fps'] / full['tracker_fps']:.3f}; capture→flexion p95 "
              f"{_fmt(p_con - p_full if p_con is not None and p_full is not None else None)} ms; CPU s console "
              f"{con['cpu_seconds'].get(CONSOLE)}, browser {con['cpu_seconds'].get('browser')}")


def main(argv: list[str] | None = None) -> int:
    from hand_bringup.demo import default_video, is_shared_video

    ap = argparse.ArgumentParser(prog="bench_pipeline", description=__doc__.split("\n\n")[0])
    ap.add_argument("--video", default=None, help="video (default: the shared hand video)")
    ap.add_argument("--quick", action="store_true", help="first 90 frames only (a smoke run)")
    ap.add_argument("--frames", type=int, default=None, help="first N frames only")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma list of {SCENARIOS}")
    ap.add_argument("--live-render", action="store_true", help="the twin renders live (30 Hz, frame files)")
    ap.add_argument("--no-nice", action="store_true", help="start every node at nice 0 (A/B of NodeSpec.nice)")
    ap.add_argument("--drop-late", action="store_true",
                    help="tracker drop_late_frames: true (live-camera semantics: always the newest frame)")
    ap.add_argument("--out", default=None, help="working directory (default: a temporary one)")
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    args = ap.parse_args(argv)
    video = os.path.abspath(args.video or default_video())
    shared = is_shared_video(video)
    out = pathlib.Path(args.out or tempfile.mkdtemp(prefix="bench_pipeline_")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    frames = args.frames or (90 if args.quick else None)
    if frames:
        video = make_clip(video, frames, str(out / "clip.mp4"))
        shared = False  # the calibration schedule needs the whole shared video
    from hand_bringup.runner import _video_frame_count

    n = _video_frame_count(video)
    load = {"before": [round(x, 2) for x in os.getloadavg()]}
    results = []
    for name in [s.strip() for s in args.scenarios.split(",") if s.strip()]:
        if name not in SCENARIOS:
            ap.error(f"unknown scenario '{name}'")
        print(f"[bench] scenario {name}: {n} frames of {video}", flush=True)
        results.append(run_scenario(name, video, n, out / name, args.live_render, shared, not args.no_nice,
                                    args.drop_late))
    load["after"] = [round(x, 2) for x in os.getloadavg()]
    print_report(results, load)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"load_average": load, "live_render": args.live_render, "niced": not args.no_nice, "drop_late": args.drop_late,
                       "results": results}, f, indent=2)
    return 1 if any(r["error"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
