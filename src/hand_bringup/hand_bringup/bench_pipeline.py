"""Benchmark of the real-time hot path (prints figures, asserts nothing; not a test).

In one run (``make bench``), on the shared video paced like a camera, scenarios one after the other
(:data:`SCENARIOS`; ``--scenarios`` picks some):

- ``alone``:  the tracker alone (30 fps);
- ``full``:   the demo graph as ``make demo`` runs it: tracker, twin, joint mapper, servo driver +
  simulated board, the runner's recorder (bag), live calibration, and the demo video composed
  after the run (its seconds are reported apart);
- ``burner``: ``full`` plus one CPU-burner process (a busy Python loop) for the scenario;
- ``fps60`` / ``fps60_mc0``: ``full`` with the video at ``playback_rate`` 2.0 (a 60 fps camera),
  MediaPipe model_complexity 1 / 0 (no demo video after it);
- ``sg90``: ``full`` with the servo driver's ``max_speed_dps`` at the SG90's own 600 °/s (default
  300): what the default rate limit costs in capture → horn at target;
- ``two_hands``: the ``two_hands`` profile (tracker ``hands: two`` + two-hand twin) on the shared
  video beside its mirrored copy (2560x720, the layout of hand_tracking's test clip), 30 fps;
- ``dex``:    the ``dex`` profile (DexPilot retargeting onto dex_hand + its MuJoCo twin);
- ``arm``:    the ``arm`` profile (gesture teleoperation of the SO-101, twin, dry-run driver);
- ``console`` (not in ``make bench``): ``full`` plus the operator console with a headless chromium
  on its page (at nice :data:`BENCH_BROWSER_NICE`, its animation frames capped at
  :data:`BENCH_BROWSER_FPS`: three.js renders the 3D scene in software here, on the tracker's two
  cores; on an operator's desktop the browser renders on its GPU); compared with ``full`` (issue 23);
- ``console_server`` (not in ``make bench``): ``console`` with a page client that draws nothing
  (``python -m hand_console.browser URL``, its own process, niced like the browser) instead of
  chromium: the console's server does all its work for a page (preview subscribed, renders,
  pictures encoded, messages sent) and no browser renders three.js in software on the same cores:
  the server's cost alone;
- ``console_idle`` (not in ``make bench``): ``full`` plus the console with no page open (it then
  subscribes to nothing: its idle cost).

``--repeat N`` runs the scenario list N times, interleaved (full, console, full, console, ...), and
the console comparison uses medians: figures taken minutes apart on a shared machine differ by
more than the console does.

Per scenario: tracker frames/s, processed / dropped, capture → ``/hand/target_flexions`` p50/p95/max
as a keep-last-1 subscriber receives it (what an actuator sees; two hands: both sides), its p95 over
the two halves of the run, inference p95 (the tracker's diagnostics); the servo driver's capture →
frame on the wire p50/p95 (its own figure per followed command: ``capture_to_wire_ms_*``), frames
at the board (most in any 10 ms, mean rate; the 115200 baud link's budget is printed), capture →
horn at target for the shared video's fist closures (:mod:`hand_bringup.bench_servo`); ``dex`` /
``arm``: capture → ``/dex_hand/joint_commands`` / ``/arm/joint_commands`` p95 at a keep-last-1
subscriber (the first message of each capture stamp); twins' real-time factor; CPU seconds per
process; safe-pose trips. Then the ratios: fps to ``alone`` and to the camera rate, p95 − inference.

  python -m hand_bringup.bench_pipeline [--scenarios a,b] [--video V] [--quick] [--json out.json]

``--no-nice``: every node at nice 0 (A/B of NodeSpec.nice); ``--drop-late``: the tracker drops late
frames like a live camera; ``--live-render``: the twin renders during the run. The machine's load
average is printed before and after: figures on a shared machine are noisy.
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

from hand_bringup import bench_servo
from hand_bringup.bringup import ARM_TWIN, CONSOLE, DEX_TWIN, SERVO_DRIVER, TRACKER, TWIN
from hand_common.stats import percentiles_ms, rate_hz

#: The scenario that adds the operator console (and a headless browser) to ``full``.
CONSOLE_SCENARIO = "console"
#: ``console`` with a page client that draws nothing instead of the browser (the server's cost).
CONSOLE_SERVER_SCENARIO = "console_server"
#: The console with no page open (its idle cost).
CONSOLE_IDLE_SCENARIO = "console_idle"
BURNER_CODE = "while True:\n    pass\n"
#: Niceness of the ``console`` scenario's chromium and of the ``console_server`` page client.
BENCH_BROWSER_NICE = 19
#: The ``console`` scenario's chromium runs its animation frames (three.js renders) at most this
#: often, per s: the console's page changes at most render_rate_hz (10) times a second.
BENCH_BROWSER_FPS = 10.0
#: The SG90's own speed (°/s), for the ``sg90`` scenario's driver rate limit.
SG90_DPS = 600.0


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One benchmark scenario: a bringup profile and what it changes (see the module docstring)."""

    name: str
    profile: str = "demo"
    tracker_only: bool = False
    playback_rate: float = 1.0
    model_complexity: int | None = None  # None: the tracker's YAML (1)
    burner: bool = False
    console: bool = False
    headless_page: bool = False  # console: a client that draws nothing instead of chromium
    page_open: bool = True  # console: a browser (or the headless client) on the page
    two_hand_clip: bool = False
    servo_speed_dps: float | None = None  # every finger's max_speed_dps (None: the YAML's 300)
    demo_outputs: bool = False  # compose the demo video after the run (full, burner)
    latency_topic: str | None = None  # a command topic stamped with capture times, probed keep-last-1


def _scenarios() -> dict[str, Scenario]:
    from arm_teleop import topics as arm_topics
    from hand_retarget.topics import TOPIC_JOINT_COMMANDS

    return {s.name: s for s in (
        Scenario("alone", tracker_only=True),
        Scenario("full", demo_outputs=True),
        Scenario("burner", burner=True, demo_outputs=True),
        Scenario("fps60", playback_rate=2.0, model_complexity=1),
        Scenario("fps60_mc0", playback_rate=2.0, model_complexity=0),
        Scenario("sg90", servo_speed_dps=SG90_DPS),
        Scenario("two_hands", profile="two_hands", two_hand_clip=True),
        Scenario("dex", profile="dex", latency_topic=TOPIC_JOINT_COMMANDS),
        Scenario("arm", profile="arm", latency_topic=arm_topics.JOINT_COMMANDS),
        Scenario(CONSOLE_SCENARIO, console=True),
        Scenario(CONSOLE_SERVER_SCENARIO, console=True, headless_page=True),
        Scenario(CONSOLE_IDLE_SCENARIO, console=True, page_open=False),
    )}


#: Scenario names; ``make bench`` runs :data:`BENCH_SCENARIOS` (all but the console's browser).
CONSOLE_SCENARIOS = (CONSOLE_IDLE_SCENARIO, CONSOLE_SERVER_SCENARIO, CONSOLE_SCENARIO)
SCENARIOS = ("alone", "full", "burner", "fps60", "fps60_mc0", "sg90", "two_hands", "dex", "arm") + CONSOLE_SCENARIOS
BENCH_SCENARIOS = tuple(s for s in SCENARIOS if s not in CONSOLE_SCENARIOS)


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


def make_two_hand_clip(video: str, path: str, offset: int = 310) -> str:
    """The shared video beside its mirrored copy played ``offset`` frames ahead (wrapping): a
    physical right hand on the image's left, a left hand on its right, doing different things at
    the same time (the layout of hand_tracking's test/two_hand_clip.py). Returns ``path``."""
    import cv2

    cap = cv2.VideoCapture(video)
    fps = cap.get(cv2.CAP_PROP_FPS) or 30.0
    frames = []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        frames.append(frame)
    cap.release()
    if not frames:
        raise ValueError(f"no frame in {video}")
    h, w = frames[0].shape[:2]
    writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"mp4v"), fps, (2 * w, h))
    for k, frame in enumerate(frames):
        writer.write(np.hstack([frame, cv2.flip(frames[(k + offset) % len(frames)], 1)]))
    writer.release()
    return path


class CommandProbe:
    """Capture → a command topic at a keep-last-1 subscriber (contract.LATEST, as an actuator
    subscribes): the first message of each capture stamp counts (a tick repeating a command
    carries its stamp again and would only add the time it waited); messages stamped with
    anything but a frame's capture time (a hold or rest pose stamped when made) do not."""

    def __init__(self, node, topic: str):
        from sensor_msgs.msg import JointState

        from hand_common import contract

        self.messages = 0
        self._first: dict[int, float] = {}  # stamp ns -> wall time of its first message
        node.create_subscription(JointState, topic, self._on_msg, contract.qos(contract.LATEST))

    def _on_msg(self, msg) -> None:
        self.messages += 1
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        self._first.setdefault(stamp, time.time())

    def latencies(self, capture_stamps_ns: set[int]) -> list[float]:
        """Seconds from capture to the first message of each capture stamp in ``capture_stamps_ns``."""
        return [t - s * 1e-9 for s, t in self._first.items() if s in capture_stamps_ns]


def _p95(values: list[float]) -> float | None:
    return percentiles_ms(values).get("p95") if values else None


def _driver_config(speed_dps: float | None):
    """The servo driver's DriverConfig from its parameters (defaults = config/servo_driver.yaml),
    every finger's max_speed_dps set to ``speed_dps`` (None: the default)."""
    from hand_common.contract import FINGER_NAMES
    from hand_servo_driver.parameters import build_config

    values: dict[str, Any] = {"port": "bench"}
    if speed_dps is not None:
        values.update({f"{f}.max_speed_dps": speed_dps for f in FINGER_NAMES})
    return build_config(values)[0]


def horn_figures(board: list[dict[str, Any]], frames: list[tuple[int, int]], flexions: dict[int, list[float]],
                 speed_dps: float | None, camera_fps: float) -> dict[str, Any]:
    """Capture → horn at target for the shared video's fist closures: ``measured`` from the
    board's log (``board``; empty: not measured), and modelled (``model_default``, ``model_sg90``)
    with the driver's core fed the same flexions from an ideal ``camera_fps`` camera, each command
    arriving at its capture time (:func:`bench_servo.replay_driver`): the rate limit's and the
    horn's own cost at the default and at the SG90's speed, whatever the machine's load.
    ``frames``: (frame index, capture stamp ns); ``flexions``: capture stamp ns → flexions."""
    from hand_common.contract import FINGER_NAMES
    from hand_servo_driver.horn import SG90_DEADBAND_US

    out: dict[str, Any] = {}
    ideal = {int(round(i / camera_fps * 1e9)): flexions[s] for i, s in frames if s in flexions}
    ideal_frames = [(i, int(round(i / camera_fps * 1e9))) for i, s in frames if s in flexions]
    commands = [(s * 1e-9, dict(zip(FINGER_NAMES, f)), s * 1e-9) for s, f in sorted(ideal.items())]
    for key, dps, records, fl, fr in (("measured", speed_dps, board, flexions, frames),
                                      ("model_default", None, None, ideal, ideal_frames),
                                      ("model_sg90", SG90_DPS, None, ideal, ideal_frames)):
        cfg = _driver_config(dps)
        fists = bench_servo.fist_commands(fr, fl)
        out.setdefault("fists", [f[0] for f in fists])
        if records is None:
            records = bench_servo.replay_driver(commands, cfg)
        if not records or not fists:
            continue
        tol = float(np.max(cfg.deadbands_us())) + SG90_DEADBAND_US  # the driver's deadband + the horn's

        def pulses_of(stamp: int, cfg=cfg, fl=fl) -> np.ndarray:
            return cfg.pulses(dict(zip(FINGER_NAMES, fl[stamp])))

        h = bench_servo.horn_latencies(records, fists, pulses_of, cfg.channels, tol)
        out[key] = percentiles_ms([x["latency_s"] for x in h if x["latency_s"] is not None])
        out[key]["never"] = sum(x["latency_s"] is None for x in h)
    return out


def _status(runner, suffix: str) -> dict[str, str]:
    return next((e for n, e in runner.monitor.diagnostics.items() if n.endswith(suffix)), {})


def _num(entry: dict[str, str], key: str) -> float | None:
    try:
        return float(entry[key])
    except (KeyError, ValueError):
        return None


def run_scenario(sc: Scenario, video: str, n_frames: int, out: pathlib.Path, live_render: bool,
                 shared: bool, niced: bool = True, drop_late: bool = False) -> dict[str, Any]:
    from hand_bringup.bringup import NODES, PROFILES
    from hand_bringup.demo import CALIBRATION_SCHEDULE, LiveCalibration, tracker_diagnostics, write_outputs
    from hand_bringup.runner_core import RunConfig, Runner
    from hand_common.contract import FINGER_NAMES
    from hand_servo_driver import interface as servo_iface
    from hand_tracking import interface as tracker_iface

    out.mkdir(parents=True, exist_ok=True)
    load_at_start = round(os.getloadavg()[0], 2)
    keys = set(PROFILES[sc.profile])
    tracker: dict[str, Any] = {tracker_iface.PARAM_SOURCE: f"video:{video}", tracker_iface.PARAM_REALTIME: True,
                               tracker_iface.PARAM_DROP_LATE_FRAMES: drop_late}
    if sc.playback_rate != 1.0:
        tracker["playback_rate"] = sc.playback_rate
    if sc.model_complexity is not None:
        tracker["model_complexity"] = sc.model_complexity
    overrides: dict[str, dict[str, Any]] = {TRACKER: tracker}
    if TWIN in keys and not sc.tracker_only:
        overrides[TWIN] = ({"render_rate_hz": 30.0, "publish_image": False, "record_dir": str(out / "twin_frames")}
                           if live_render and sc.profile == "demo" else {"render_rate_hz": 0.0, "publish_image": False})
    if sc.servo_speed_dps is not None:
        overrides[SERVO_DRIVER] = {f"{f}.max_speed_dps": sc.servo_speed_dps for f in FINGER_NAMES}
    console_port = None
    if sc.console:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            console_port = sock.getsockname()[1]
        overrides[CONSOLE] = {"port": console_port}
    cfg = RunConfig(profile=sc.profile, out_dir=out, overrides=overrides, record=not sc.tracker_only,
                    sim_board=SERVO_DRIVER in keys and not sc.tracker_only, video_frames=n_frames, idle_stop_s=5.0,
                    console=sc.console)
    runner = Runner(cfg)
    if sc.tracker_only:
        runner.specs = [NODES[TRACKER]]
    if not niced:  # A/B: every node at the runner's priority, as before NodeSpec.nice
        runner.specs = [dataclasses.replace(spec, nice=0) for spec in runner.specs]
    calibration = LiveCalibration(CALIBRATION_SCHEDULE if (sc.profile == "demo" and not sc.tracker_only and shared)
                                  else ())
    arm_sim: list[tuple[float, float]] = []  # (wall s, arm twin sim_time s) when it changed

    def on_tick(r) -> None:
        calibration.tick(r)
        sim = _num(_status(r, f"{NODES[ARM_TWIN].name}: twin"), "sim_time")
        if sim and (not arm_sim or sim != arm_sim[-1][1]):
            arm_sim.append((time.time(), sim))

    burner = subprocess.Popen([sys.executable, "-c", BURNER_CODE], stdin=subprocess.DEVNULL) if sc.burner else None
    error = browser = browser_cpu = probe = page_client = page_traffic = None
    window: list[Any] = []  # [t0, CPU s per process, page CPU s, t1, CPU s per process, page CPU s]
    try:
        runner.start()
        runner.connect()
        if sc.latency_topic:
            probe = CommandProbe(runner.probe.node, sc.latency_topic)
        runner.bring_up()
        if sc.console and sc.headless_page:  # a client that draws nothing, in its own process like a browser
            page_client = subprocess.Popen(
                ["nice", "-n", str(BENCH_BROWSER_NICE), sys.executable, "-m", "hand_console.browser",
                 f"http://127.0.0.1:{console_port}"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
            if page_client.stdout.readline().strip() != "connected":
                raise RuntimeError("the headless page client did not connect")
        elif sc.console and sc.page_open:  # a browser on the page for the whole run, niced, its frame rate capped
            from hand_console.browser import ConsoleBrowser

            browser = ConsoleBrowser(f"http://127.0.0.1:{console_port}", 1000, 760, nice=BENCH_BROWSER_NICE,
                                     max_fps=BENCH_BROWSER_FPS)
            browser.driver.get(browser.url)
        # CPU over the run once everything is up (and the page open): the console's and the
        # browser's start-up (imports, meshes, chromium) is not what they cost the hot path
        window = [time.monotonic(), dict(runner.sample_cpu()), _page_cpu(browser, page_client)]
        runner.supervise(on_tick=on_tick)
        window += [time.monotonic(), dict(runner.sample_cpu()), _page_cpu(browser, page_client)]
        time.sleep(1.0)  # the last commands reach the actuators, the horns their targets
    except Exception as exc:  # noqa: BLE001 - reported with the figures
        error = f"{type(exc).__name__}: {exc}"
    finally:
        if browser is not None:
            browser_cpu = browser.cpu_seconds()  # chromedriver's process tree: this run's browser only
            browser.close()
        if page_client is not None:
            page_traffic = _stop_page_client(page_client)
        runner.stop()
        burner_cpu = None
        if burner is not None:
            from hand_bringup.runner_core import process_cpu_seconds

            burner_cpu = process_cpu_seconds(burner.pid)
            burner.kill()
            burner.wait(5)
    post_s = None
    if sc.demo_outputs and error is None:
        t0 = time.monotonic()
        write_outputs(runner, calibration, video, n_frames, out, shared)
        post_s = round(time.monotonic() - t0, 1)
    diag = tracker_diagnostics(runner)
    at_end = runner.monitor.source_status()
    lat = list(runner.monitor.flexion_latency)  # a bounded deque: slices need a list
    half = len(lat) // 2
    cpu = dict(runner.cpu_seconds)
    if burner_cpu is not None:
        cpu["burner"] = round(burner_cpu, 2)
    if browser_cpu is not None:
        cpu["browser"] = round(browser_cpu, 2)
    if page_traffic is not None and page_traffic.get("client_cpu_s") is not None:
        cpu["page_client"] = round(page_traffic["client_cpu_s"], 2)
    servo = next((e for e in runner.monitor.diagnostics.values() if servo_iface.KEY_WIRE_P95 in e), {})
    board = bench_servo.read_board_frames(out / "servo_board_pulses.jsonl")
    horn = None
    if SERVO_DRIVER in keys and shared and not sc.tracker_only:
        horn = horn_figures(board, [(f[0], f[3]) for f in runner.monitor.frames], runner.monitor.flexions,
                            sc.servo_speed_dps, 30.0 * sc.playback_rate)
    twin_rtf = runner.monitor.twin_rtf
    if DEX_TWIN in keys:
        twin_rtf = _num(_status(runner, f"{NODES[DEX_TWIN].name}: physics"), "real_time_factor")
    if ARM_TWIN in keys and len(arm_sim) >= 2:
        twin_rtf = round((arm_sim[-1][1] - arm_sim[0][1]) / (arm_sim[-1][0] - arm_sim[0][0]), 4)
    return {
        "scenario": sc.name,
        "load_at_start": load_at_start,
        "profile": sc.profile,
        "camera_fps": 30.0 * sc.playback_rate,
        "model_complexity": sc.model_complexity,
        "error": error or runner.failure,
        "tracker_fps": rate_hz([f[1] for f in runner.monitor.frames]),
        "frames": n_frames,
        "frames_processed": len(runner.monitor.frames),
        "frames_dropped": int(_num(at_end, "dropped_frames")) if _num(at_end, "dropped_frames") is not None else None,
        "latency_ms": percentiles_ms(lat),
        "latency_p95_first_half_ms": _p95(lat[:half]),
        "latency_p95_second_half_ms": _p95(lat[half:]),
        "inference_ms_p95": _num(diag, "inference_ms_p95_total"),
        "wire_ms": ({"p50": _num(servo, servo_iface.KEY_WIRE_P50), "p95": _num(servo, servo_iface.KEY_WIRE_P95),
                     "n": _num(servo, servo_iface.KEY_WIRE_N), "commands": _num(servo, "commands"),
                     "late": _num(servo, "commands_late")} if servo else None),
        "board_frames": bench_servo.frame_spacing(board) if board else None,
        "horn_ms": horn,
        "command_topic": sc.latency_topic,
        "command_latency_ms": (percentiles_ms(probe.latencies({f[3] for f in runner.monitor.frames}))
                               if probe else None),
        "twin_real_time_factor": twin_rtf,
        "safe_pose_trips": runner.monitor.safe_pose_trips,
        "cpu_seconds": cpu,
        "cpu_window": _cpu_window(window, "browser" if browser is not None else "page_client"),
        "demo_video_after_run_s": post_s,
        "page_traffic": page_traffic,
    }


def _page_cpu(browser, page_client) -> float | None:
    """CPU seconds so far of the benchmark's browser (its driver's process tree) or page client."""
    from hand_bringup.runner_core import process_cpu_seconds

    if browser is not None:
        return browser.cpu_seconds()
    return process_cpu_seconds(page_client.pid) if page_client is not None else None


def _cpu_window(window: list[Any], page_key: str) -> dict[str, Any] | None:
    """{"s": wall seconds from bring-up (page open) to the source's end, "cpu_s": {process: CPU s
    in that window}} (the page's under ``page_key``); None when the run did not get that far."""
    if len(window) < 6:
        return None
    t0, cpu0, page0, t1, cpu1, page1 = window
    cpu = {k: round(v - cpu0[k], 2) for k, v in cpu1.items() if k in cpu0}
    if page0 is not None and page1 is not None:
        cpu[page_key] = round(page1 - page0, 2)
    return {"s": round(t1 - t0, 2), "cpu_s": cpu}


def _stop_page_client(proc: subprocess.Popen) -> dict[str, Any]:
    """Stop the headless page client: {messages, bytes} it received and its CPU seconds."""
    from hand_bringup.runner_core import process_cpu_seconds

    cpu = process_cpu_seconds(proc.pid)
    proc.terminate()
    traffic: dict[str, Any] = {}
    try:
        traffic = json.loads(proc.communicate(timeout=10)[0].strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        proc.kill()
        proc.wait(5)
    return {**traffic, "client_cpu_s": cpu}


def _fmt(v: Any, unit: str = "") -> str:
    if v is None:
        return "-"
    return f"{v:.1f}{unit}" if isinstance(v, float) else f"{v}{unit}"


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def print_report(results: list[dict[str, Any]], load: dict[str, Any]) -> None:
    print(f"\nload average (1, 5, 15 min) before {load['before']}, after {load['after']}; "
          f"{os.cpu_count()} CPUs")
    budget = bench_servo.link_budget()
    print(f"servo link budget: a SET_PULSES frame is {budget['frame_bytes']} B = {budget['frame_ms']} ms at "
          f"{bench_servo.LINK_BAUD} baud 8N1; the driver caps frames at 100/s (one per 10 ms = "
          f"{budget['frame_ms'] / 10:.0%} of the link)")
    for r in results:
        lat = r["latency_ms"]
        mc = f", model_complexity {r['model_complexity']}" if r["model_complexity"] is not None else ""
        print(f"\n({r['scenario']}) profile {r['profile']}, camera {r['camera_fps']:g} fps{mc}: tracker "
              f"{_fmt(r['tracker_fps'])} fps, frames {r['frames_processed']}/{r['frames']} processed, "
              f"{_fmt(r['frames_dropped'])} dropped" + (f"  ERROR {r['error']}" if r["error"] else ""))
        print(f"  capture→flexion (keep-last-1): p50 {_fmt(lat.get('p50'))} p95 {_fmt(lat.get('p95'))} "
              f"max {_fmt(lat.get('max'))} ms (n {lat.get('n')}); p95 1st half {_fmt(r['latency_p95_first_half_ms'])}"
              f", 2nd half {_fmt(r['latency_p95_second_half_ms'])} ms; inference p95 {_fmt(r['inference_ms_p95'])} ms")
        if r["wire_ms"]:
            w, b = r["wire_ms"], r["board_frames"] or {}
            print(f"  capture→servo frame on the wire (driver): p50 {_fmt(w['p50'])} p95 {_fmt(w['p95'])} ms "
                  f"(n {_fmt(w['n'])}; commands followed {_fmt(w['commands'])}, refused as late {_fmt(w['late'])}); "
                  f"p95 − flexion p95 = {_fmt(_diff(w['p95'], lat.get('p95')))} ms\n  board: "
                  f"{b.get('frames')} frames, {_fmt(b.get('rate_hz'))}/s, most in any 10 ms {b.get('max_in_window')}, "
                  f"gaps < 10 ms {_fmt(b.get('closer_share'))}, smallest gap {_fmt(b.get('min_gap_ms'))} ms")
        if r["horn_ms"]:
            parts = []
            for key, what in (("measured", "measured"), ("model_default", "driver model at the default max_speed_dps"),
                              ("model_sg90", f"at {SG90_DPS:g} °/s")):
                h = r["horn_ms"].get(key)
                if h:
                    parts.append(f"{what}: median {_fmt(h['p50'])} p95 {_fmt(h['p95'])} ms ({h['n']} arrivals, "
                                 f"{h['never']} never)")
            print(f"  capture→horn at target (fists at frames {r['horn_ms']['fists']}): " + "; ".join(parts))
        if r["command_latency_ms"]:
            c = r["command_latency_ms"]
            print(f"  capture→{r['command_topic']} (keep-last-1, first of each stamp): p50 {_fmt(c['p50'])} "
                  f"p95 {_fmt(c['p95'])} max {_fmt(c['max'])} ms (n {c['n']}); p95 − inference p95 = "
                  f"{_fmt(_diff(c['p95'], r['inference_ms_p95']))} ms")
        own = {k: v for k, v in r["cpu_seconds"].items() if k not in ("burner", "browser")}
        if r["frames_processed"]:
            per_frame = sum(own.values()) / r["frames_processed"]
            print(f"  CPU per frame: all processes {per_frame * 1e3:.1f} ms (= {per_frame * r['camera_fps']:.2f} cores at "
                  f"the camera's {r['camera_fps']:g} fps), tracker {own.get(TRACKER, 0.0) / r['frames_processed'] * 1e3:.1f} ms")
        print(f"  twin RTF {_fmt(r['twin_real_time_factor'])}; safe-pose trips {r['safe_pose_trips']}; "
              f"CPU s: {r['cpu_seconds']}" + (f"; demo video after the run {r['demo_video_after_run_s']} s"
                                              if r["demo_video_after_run_s"] is not None else ""))
    base = next((r for r in results if r["scenario"] == "alone"), None)
    print()
    for r in results:
        if not r["tracker_fps"]:
            continue
        p95 = r["latency_ms"].get("p95")
        vs_alone = (f"fps/alone {r['tracker_fps'] / base['tracker_fps']:.3f}; "
                    if base and base["tracker_fps"] and r is not base and r["camera_fps"] == base["camera_fps"] else "")
        print(f"ratio ({r['scenario']}): {vs_alone}fps/camera {r['tracker_fps'] / r['camera_fps']:.3f}; "
              f"flexion p95 − inference p95 = {_fmt(_diff(p95, r['inference_ms_p95']))} ms")
    two = next((r for r in results if r["scenario"] == "two_hands"), None)
    if two and base and base["inference_ms_p95"] is not None and two["latency_ms"].get("p95") is not None:
        print(f"two_hands: p95 {_fmt(two['latency_ms']['p95'])} ms vs 2 × single-hand inference p95 + 5 = "
              f"{2 * base['inference_ms_p95'] + 5:.1f} ms")
    for line in console_comparison(results):
        print(line)


def _median(values: list[float | None]) -> float | None:
    v = [x for x in values if x is not None]
    return float(np.median(v)) if v else None


def core_share(runs: list[dict[str, Any]], key: str) -> str:
    """The median share of one core process ``key`` took over the runs' windows (from bring-up, or
    the page opened, to the source's end: ``cpu_window``), as a percentage; '-' without one."""
    v = _median([r["cpu_window"]["cpu_s"][key] / r["cpu_window"]["s"] for r in runs
                 if r.get("cpu_window") and r["cpu_window"]["s"] > 0 and key in r["cpu_window"]["cpu_s"]])
    return "-" if v is None else f"{v:.1%}"


def console_comparison(results: list[dict[str, Any]]) -> list[str]:
    """Lines comparing each console scenario with ``full`` (medians over the repetitions): tracker
    fps ratio, capture→flexion p95 difference, tracker CPU ms per processed frame, the console's,
    the browser's and the headless page client's CPU seconds (issue 23 targets: fps ratio >= 0.98,
    p95 + <= 2 ms)."""
    def of(name: str) -> list[dict[str, Any]]:
        return [r for r in results if r["scenario"] == name and not r["error"]]

    def tracker_ms_per_frame(r: dict[str, Any]) -> float | None:
        cpu = r["cpu_seconds"].get(TRACKER)
        return cpu / r["frames_processed"] * 1e3 if cpu is not None and r["frames_processed"] else None

    full = of("full")
    fps_full = _median([r["tracker_fps"] for r in full])
    p95_full = _median([r["latency_ms"].get("p95") for r in full])
    lines = []
    for name in CONSOLE_SCENARIOS:
        runs = of(name)
        if not runs or not fps_full:
            continue
        fps, p95 = _median([r["tracker_fps"] for r in runs]), _median([r["latency_ms"].get("p95") for r in runs])
        cpu = {k: _median([r["cpu_seconds"].get(k) for r in runs]) for k in (CONSOLE, "browser", "page_client")}

        # each run against the full run of its own repetition (minutes apart at most)
        pairs = [(r, f) for r in runs for f in full if f.get("repetition") == r.get("repetition") and f["tracker_fps"]]
        per_run = ", ".join(f"{r['tracker_fps'] / f['tracker_fps']:.3f} (load {r.get('load_at_start')})"
                            for r, f in pairs if r["tracker_fps"])
        lines.append(
            f"{name}/full ({len(runs)} vs {len(full)} runs, medians; issue 23 targets: fps ratio >= 0.98, p95 + <= 2 ms):"
            f" fps ratio {f'{fps / fps_full:.3f}' if fps else '-'}; capture→flexion p95 {_fmt(_diff(p95, p95_full))} ms"
            f" ({_fmt(p95)} vs {_fmt(p95_full)});"
            f" tracker CPU {_fmt(_median([tracker_ms_per_frame(r) for r in runs]))} vs "
            f"{_fmt(_median([tracker_ms_per_frame(r) for r in full]))} ms/frame; CPU s console {_fmt(cpu[CONSOLE])}, "
            f"browser {_fmt(cpu['browser'])}, headless page client {_fmt(cpu['page_client'])} (whole run, start-up"
            f" included); once up, share of a core: console {core_share(runs, CONSOLE)}, browser"
            f" {core_share(runs, 'browser')}, page client {core_share(runs, 'page_client')}, tracker"
            f" {core_share(runs, TRACKER)} (full: {core_share(full, TRACKER)})"
            + (f"; fps ratio per repetition {per_run}" if per_run else ""))
    return lines


def main(argv: list[str] | None = None) -> int:
    from hand_bringup.demo import default_video, is_shared_video

    ap = argparse.ArgumentParser(prog="bench_pipeline", description=__doc__.split("\n\n")[0])
    ap.add_argument("--video", default=None, help="video (default: the shared hand video)")
    ap.add_argument("--quick", action="store_true", help="first 90 frames only (a smoke run)")
    ap.add_argument("--frames", type=int, default=None, help="first N frames only")
    ap.add_argument("--scenarios", default=",".join(BENCH_SCENARIOS), help=f"comma list of {SCENARIOS}")
    ap.add_argument("--repeat", type=int, default=1, help="run the scenario list this many times, interleaved")
    ap.add_argument("--live-render", action="store_true", help="the twin renders live (30 Hz, frame files)")
    ap.add_argument("--no-nice", action="store_true", help="start every node at nice 0 (A/B of NodeSpec.nice)")
    ap.add_argument("--drop-late", action="store_true",
                    help="tracker drop_late_frames: true (live-camera semantics: always the newest frame)")
    ap.add_argument("--out", default=None, help="working directory (default: a temporary one)")
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    args = ap.parse_args(argv)
    names = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    scenarios = _scenarios()
    for name in names:
        if name not in scenarios:
            ap.error(f"unknown scenario '{name}' (choose from {', '.join(SCENARIOS)})")
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    video = os.path.abspath(args.video or default_video())
    shared = is_shared_video(video)
    out = pathlib.Path(args.out or tempfile.mkdtemp(prefix="bench_pipeline_")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    frames = args.frames or (90 if args.quick else None)
    if frames:
        video = make_clip(video, frames, str(out / "clip.mp4"))
        shared = False  # the calibration schedule and the fist windows need the whole shared video
    from hand_bringup.runner import _video_frame_count

    n = _video_frame_count(video)
    load = {"before": [round(x, 2) for x in os.getloadavg()]}
    t0 = time.monotonic()
    results = []
    for k in range(args.repeat):
        for name in names:
            sc = scenarios[name]
            source = make_two_hand_clip(video, str(out / "two_hand_clip.mp4")) if sc.two_hand_clip else video
            run = f" ({k + 1}/{args.repeat})" if args.repeat > 1 else ""
            print(f"[bench] scenario {name}{run}: {n} frames of {source} (load {os.getloadavg()[0]:.2f})", flush=True)
            results.append({**run_scenario(sc, source, n, out / (f"{name}_{k + 1}" if args.repeat > 1 else name),
                                           args.live_render, shared, not args.no_nice, args.drop_late),
                            "repetition": k + 1})
    load["after"] = [round(x, 2) for x in os.getloadavg()]
    print_report(results, load)
    print(f"\n[bench] {len(results)} scenarios in {time.monotonic() - t0:.0f} s; figures in {out}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"load_average": load, "live_render": args.live_render, "niced": not args.no_nice,
                       "drop_late": args.drop_late, "results": results}, f, indent=2)
    return 1 if any(r["error"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
