"""Benchmark of the two-host setup over a bad link (issue 27's acceptance list; prints figures).

Sessions (each: the operator runner with the tracker on the shared video, looped and paced like a
camera, and the robot runner with the servo driver and the simulated board; see
:mod:`hand_bringup.two_host_rig`):

``transport`` as ``latency`` with a stand-in publisher instead of the tracker (30 Hz, every command
             one servo frame): command → its frame on the wire, the link's own share without
             MediaPipe's load.
``latency``  a single-host session (both runners in one namespace, loopback discovery and shared
             memory: the ordinary setup) and a two-host one (namespaces, DDS over the emulated
             link, clean), ``--reps`` windows of ``--window`` s each: capture → servo frame on the
             wire p95 per window.
``faults``   two hosts: link down 0.5 s, 2 s, 10 s (``ip link set down``), then 20 % loss, 100 ms ±
             50 ms delay, reordering (25 % held back 50 ms), ``--reps`` times each.
``source``   a second publisher of the commands (a fist) on the operator's side for 5 s, ``--reps``
             times, beside the stand-in operator the driver is configured to follow.
``clock``    two hosts with the operator's clock +2 s and −2 s (every capture stamp moved as it
             crosses the link) against 0: ``--reps`` 2 s outages each, and the share of commands
             refused as late, stale decisions not explained by the arrivals.

``faults`` and ``clock`` use the stand-in publisher by default (``--operator standin``: the link and
the driver judged without MediaPipe's load, every command timely when it leaves) or the tracker on
the looped video (``--operator tracker``: on a loaded machine the tracker's own latency varies by
hundreds of ms and the driver refuses most of its commands as late, which then dominates).

Needs root, ``ip netns`` and /dev/net/tun. The load average is printed with the figures: on the
shared 2-core machine they are noisy.

  python -m hand_bringup.bench_link [--reps 5] [--sessions transport,latency,faults,source,clock]
      [--operator standin|tracker] [--json out.json]      (ros2 run hand_bringup bench_link)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from typing import Any

import numpy as np

from hand_bringup import two_host_rig as rig
from hand_bringup.netlink import LinkFaults
from hand_common.stats import percentiles_ms

#: ``--operator``: a stand-in publisher (the link alone) or the real tracker on the looped video.
OPERATOR_STANDIN, OPERATOR_TRACKER = "standin", "tracker"

COMMAND_TIMEOUT_S = 0.15
SPEED_DPS = 300.0  # max_speed_dps (tracking)
SAFE_SPEED_DPS = 600.0  # safe_speed_dps (the ramp to the safe pose)
SAFE_RATE_US_PER_S = SAFE_SPEED_DPS * rig.US_PER_DEG
BOUND = rig.step_bound_us(SPEED_DPS, 0.02)
SAFE_BOUND = rig.step_bound_us(SAFE_SPEED_DPS, 0.02)
PHASES = {
    "loss 20%": LinkFaults(loss=0.2),
    "delay 100 ms ± 50 ms": LinkFaults(delay_s=0.1, jitter_s=0.05),
    "reordering 25% by 50 ms": LinkFaults(reorder=0.25, reorder_gap_s=0.05),
}


def _mmm(values: list[float | int | None]) -> str:
    v = [x for x in values if x is not None]
    if not v:
        return "-"
    return f"min {min(v):.1f}  median {float(np.median(v)):.1f}  max {max(v):.1f}  (n={len(v)}" + \
        (f", {len(values) - len(v)} missing)" if len(v) != len(values) else ")")


def _session(workdir: str, video: str, name: str, **kw: Any) -> rig.TwoHostRig:
    r = rig.TwoHostRig(os.path.join(workdir, name), video, loop=True, **kw)
    r.start()
    time.sleep(3.0)  # past the tracker's first frames
    return r


def _measure_windows(windows: list[tuple[float, float]], reps: int, window: float) -> None:
    """Append ``reps`` back-to-back measurement windows of ``window`` s, as (start, end) CLOCK_MONOTONIC
    pairs, to ``windows`` (appended as they end, so a session stopped early keeps the finished ones)."""
    for _ in range(reps):
        t0 = time.monotonic()
        time.sleep(window)
        windows.append((t0, time.monotonic()))


def latency_session(workdir: str, video: str, single: bool, reps: int, window: float) -> dict[str, Any]:
    name = "single_host" if single else "two_host"
    r = _session(workdir, video, name, single_host=single)
    windows = []
    try:
        _measure_windows(windows, reps, window)
    finally:
        codes = r.stop()
        with open(r.workdir / "windows.json", "w") as fh:
            json.dump(windows, fh)
    stamps, frames = r.operator_stamps(), r.board_frames()
    out = []
    for t0, t1 in windows:
        lat = percentiles_ms(rig.wire_latencies(stamps, frames, t0, t1))
        out.append(lat)
    return {"session": name, "codes": codes, "windows": out, "load": os.getloadavg()}


def transport_session(workdir: str, video: str, single: bool, reps: int, window: float) -> dict[str, Any]:
    """The link's own share: a stand-in publisher (no MediaPipe) in the operator's namespace, 30 Hz,
    every command one servo frame; command stamp → that frame on the wire, per window."""
    name = "transport_single_host" if single else "transport_two_host"
    r = rig.TwoHostRig(os.path.join(workdir, name), video, single_host=single)
    windows = []
    try:
        r.start(operator=False)
        r.start_publisher("a", "standin_operator")
        r.wait_publishing("standin_operator")
        time.sleep(2.0)
        _measure_windows(windows, reps, window)
    finally:
        codes = r.stop()
    stamps, frames = r.publisher_stamps("standin_operator"), r.board_frames()
    out = [percentiles_ms(rig.command_wire_latencies(stamps, frames, a, b, r.wall_minus_mono)) for a, b in windows]
    return {"session": name, "codes": codes, "windows": out, "commands": len(stamps), "load": os.getloadavg()}


def source_session(workdir: str, video: str, reps: int) -> dict[str, Any]:
    """A second publisher of /hand/target_flexions on the operator's side (another host as the robot
    sees it) commanding a fist (flexion 1.0: 2000 us) while the stand-in operator moves 0.1-0.9
    (1100-1900 us); the driver configured to follow the stand-in (``command_source``, when the driver
    has it). Per repetition (5 s of the second publisher): the highest pulse on the wire, the frames
    above 1900 us (the fist followed), the driver's WARN naming the second source."""
    from hand_servo_driver.parameters import GLOBAL_PARAMS

    has_source = any(p.name == "command_source" for p in GLOBAL_PARAMS)
    r = rig.TwoHostRig(os.path.join(workdir, "source"), video,
                       robot_params=["servo_driver.command_source=/standin_operator"] if has_source else ())
    marks = []
    try:
        r.start(operator=False)
        r.start_publisher("a", "standin_operator")
        r.wait_publishing("standin_operator")
        for i in range(reps):
            time.sleep(3.0)
            foreign = r.start_publisher("a", f"foreign_publisher_{i}", mode="1.0")
            deadline = time.monotonic() + 60
            while not r.publisher_stamps(f"foreign_publisher_{i}") and time.monotonic() < deadline:
                time.sleep(0.2)
            t0 = time.monotonic()
            time.sleep(5.0)
            r.stop_publisher(foreign)
            marks.append((f"foreign_publisher_{i}", t0, time.monotonic()))
        time.sleep(2.0)
    finally:
        codes = r.stop()
    frames, diags = r.board_frames(), r.driver_diagnostics(messages=True)
    reps_out = []
    for name, t0, t1 in marks:
        window = [f for f in frames if t0 <= f["mono"] <= t1]
        highest = max((max(x for x in f["outputs"] if x is not None) for f in window if f.get("outputs")), default=None)
        named = [d for d in diags if t0 <= d[0] <= t1 + 1.5 and d[1] >= 1
                 and (name in d[3] or name in d[2].get("command_sources_other", ""))]
        reps_out.append({"publisher": name, "frames": len(window), "highest_us": highest,
                         "frames_above_1900": sum(1 for f in window if f.get("outputs")
                                                  and max(x for x in f["outputs"] if x is not None) > 1900),
                         "warn_naming_it": bool(named), "warn_message": named[0][3] if named else ""})
    return {"session": "source", "command_source": has_source, "codes": codes, "reps": reps_out,
            "load": os.getloadavg()}


def faults_session(workdir: str, video: str, reps: int, stamp_offset_s: float = 0.0, name: str = "faults",
                   outages: tuple[float, ...] = (0.5, 2.0, 10.0), phases: dict[str, LinkFaults] | None = None,
                   phase_s: float = 4.0, operator: str = OPERATOR_STANDIN) -> dict[str, Any]:
    phases = PHASES if phases is None else phases
    if operator == OPERATOR_TRACKER:
        r = _session(workdir, video, name, stamp_offset_s=stamp_offset_s)
    else:  # the link and the driver without MediaPipe's load: every command timely when it leaves
        r = rig.TwoHostRig(os.path.join(workdir, name), video, stamp_offset_s=stamp_offset_s)
        r.start(operator=False)
        r.start_publisher("a", "standin_operator")
        r.wait_publishing("standin_operator")
    marks: list[tuple[str, float, float, float]] = []
    marks: list[tuple[str, float, float, float]] = []
    clean: list[tuple[float, float]] = []
    try:
        t = time.monotonic()
        time.sleep(5.0)
        clean.append((t, time.monotonic()))
        for down in outages:
            for _ in range(reps):
                t_down, t_up = r.outage(down, settle_s=3.0)
                marks.append(("outage", down, t_down, t_up))
        for label, faults in phases.items():
            for _ in range(reps):
                t0, t1 = r.phase(faults, phase_s, settle_s=1.5)
                marks.append((label, 0.0, t0, t1))
        t = time.monotonic()
        time.sleep(5.0)
        clean.append((t, time.monotonic()))
    finally:
        codes = r.stop()
        with open(r.workdir / "marks.json", "w") as fh:
            json.dump({"marks": marks, "clean": clean, "wall_minus_mono": r.wall_minus_mono}, fh)
    crossed, frames, records, stale = r.crossings(), r.board_frames(), r.board_records(), r.stale_decisions()
    lateness = r.stale_lateness()
    diags = r.driver_diagnostics()
    outs, phs, late = [], [], []
    for label, down, a, b in marks:
        if label == "outage":
            outs.append(rig.outage_figures(down, a, b, crossed, frames, records, stale, rig.safe_pulses(),
                                           SAFE_RATE_US_PER_S, BOUND, SAFE_BOUND))
            # the driver's own account of the outage's decision: how long after its deadline
            late.append(next((ms for t, ms in lateness if a - 0.2 <= t <= b), None))
        else:
            phs.append(rig.phase_figures(label, a, b, crossed, records, stale, COMMAND_TIMEOUT_S, BOUND,
                                         r.wall_minus_mono, diags, safe_step_bound_us=SAFE_BOUND))
    cleans = [rig.phase_figures("clean", a, b, crossed, records, stale, COMMAND_TIMEOUT_S, BOUND, r.wall_minus_mono,
                                diags, safe_step_bound_us=SAFE_BOUND) for a, b in clean]
    last = diags[-1][2] if diags else {}
    return {"session": name, "operator": operator, "stamp_offset_s": stamp_offset_s, "codes": codes, "outages": outs,
            "decision_late_ms": late, "phases": phs,
            "clean": cleans, "crossed": len(crossed),
            "followed": int(last.get("commands", 0)), "late": int(last.get("commands_late", 0)),
            "out_of_order": int(last.get("commands_out_of_order", 0)),
            "clock_rebases": int(last.get("clock_rebases", 0)),
            "unexplained_stale": len(rig.unexplained_stale(stale, crossed, COMMAND_TIMEOUT_S)),
            "stale_decisions": len(stale), "load": os.getloadavg()}


def print_outages(outs: list[rig.OutageFigures], late: list[float | None] | None = None) -> None:
    """``late``: per outage, the driver's stale decision's lateness past its deadline (ms, its log)."""
    late = late if late is not None else [None] * len(outs)
    for down in sorted({o.down_s for o in outs}):
        g = [o for o in outs if o.down_s == down]
        g_late = [x for o, x in zip(outs, late) if o.down_s == down]
        print(f"  link down {down:g} s (n={len(g)}):")
        print(f"    stale decision after the last command   {_mmm([o.stale_ms for o in g])} ms")
        print(f"    ... after its deadline (driver's log)   {_mmm(g_late)} ms (deadline: the last followed "
              f"command's reception + command_timeout_s {COMMAND_TIMEOUT_S * 1e3:.0f} ms)")
        print(f"    safe pulses held (after the last cmd)   {_mmm([o.safe_ms for o in g])} ms"
              f"   [ramp needed at safe_speed_dps {SAFE_SPEED_DPS:g} {_mmm([o.ramp_ms for o in g])} ms]")
        print(f"    safe pulses reached after the decision  "
              f"{_mmm([o.safe_ms - o.stale_ms if o.safe_ms is not None and o.stale_ms is not None else None for o in g])}"
              " ms")
        print(f"    first command after the link returned   {_mmm([o.resume_cmd_ms for o in g])} ms")
        print(f"    first servo frame after it              {_mmm([o.resume_frame_ms for o in g])} ms")
        print(f"    largest per-frame change                {_mmm([o.largest_step_us for o in g])} us, "
              f"tracking {_mmm([o.largest_track_step_us for o in g])} us (bounds {BOUND - 1:.0f} us tracking, "
              f"{SAFE_BOUND - 1:.0f} us toward the safe pose); jumps {sum(o.jumps for o in g)}; board watchdog trips (driver "
              f"stalled > 0.5 s) {sum(o.watchdog_trips for o in g)}")


def worst_case_line() -> str:
    """The safe pose's worst case by the driver's default parameters (no measurement): the decision
    ``command_timeout_s`` after the last command's reception, then the longest ramp
    (:meth:`DriverConfig.safe_ramp_bound_s`: a fist to the open pose at ``safe_speed_dps``), within
    one control tick."""
    from hand_servo_driver.parameters import build_config

    cfg, settings = build_config({})
    timeout, ramp, tick = cfg.command_timeout_s * 1e3, cfg.safe_ramp_bound_s() * 1e3, 1e3 / settings.rate_hz
    return (f"  worst case by the driver's defaults: decision {timeout:.0f} ms after the last command's reception "
            f"(+ the driver's scheduling); ramp to the safe pose <= {ramp:.0f} ms (a fist, {cfg.safe_speed_dps:g} °/s); "
            f"reached <= {timeout + ramp + tick:.0f} ms after it (the two + one {tick:.0f} ms tick)")


def print_phases(phs: list[rig.PhaseFigures]) -> None:
    for label in dict.fromkeys(p.name for p in phs):
        g = [p for p in phs if p.name == label]
        print(f"  {label} (n={len(g)}, {g[0].seconds:g} s each):")
        print(f"    commands crossed {_mmm([p.crossed for p in g])}; crossed > {COMMAND_TIMEOUT_S:g} s late "
              f"{_mmm([p.late_crossings for p in g])}; driver refused late {_mmm([p.driver_late_refused for p in g])}"
              f", out of order {_mmm([p.driver_out_of_order for p in g])}")
        print(f"    stale decisions {_mmm([p.stale_decisions for p in g])}; largest per-frame change "
              f"{_mmm([p.largest_step_us for p in g])} us; jumps {sum(p.jumps for p in g)}; frames/s max "
              f"{_mmm([p.max_frames_per_s for p in g])}; per 10 ms max {max(p.max_frames_per_10ms for p in g)}; board "
              f"watchdog trips {sum(p.watchdog_trips for p in g)}")
        print(f"    diagnostics WARN seen in {sum(p.warn_seen for p in g)}/{len(g)} phases")


def _print_p95(sessions: list[dict], title: str, single: str, two: str) -> None:
    """Print each session's p95/p50 over its windows (min/median/max) and two-host − single-host."""
    print(title)
    p95 = {}
    for s in sessions:
        p95[s["session"]] = [w["p95"] for w in s["windows"]]
        print(f"  {s['session']:<22} p95 {_mmm(p95[s['session']])} ms; p50 {_mmm([w['p50'] for w in s['windows']])}"
              f" ms; n/window {[w.get('n') for w in s['windows']]}; exit codes {s.get('codes')}")
    a, b = p95.get(single), p95.get(two)
    if a and b and None not in a + b:
        print(f"  two-host − single-host median p95: {float(np.median(b) - np.median(a)):+.1f} ms "
              "(acceptance: within 3 ms)")


def main(argv: list[str] | None = None) -> int:
    from hand_bringup.demo import default_video

    ap = argparse.ArgumentParser(prog="bench_link", description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--window", type=float, default=8.0, help="latency: seconds per window")
    ap.add_argument("--sessions", default="transport,latency,faults,source,clock",
                    help="comma list of transport, latency, faults, source, clock")
    ap.add_argument("--operator", choices=(OPERATOR_STANDIN, OPERATOR_TRACKER), default=OPERATOR_STANDIN,
                    help="faults/clock: a stand-in publisher (30 Hz, stamped at publish) or the MediaPipe tracker "
                         "on the looped video")
    ap.add_argument("--video", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    why = rig.problem()
    if why:
        print(f"bench_link: {why}", file=sys.stderr)
        return 2
    video = os.path.abspath(args.video or default_video())
    out = args.out or tempfile.mkdtemp(prefix="bench_link_")
    sessions = [s.strip() for s in args.sessions.split(",") if s.strip()]
    unknown = sorted(set(sessions) - {"transport", "latency", "faults", "source", "clock"})
    if unknown or not sessions:
        ap.error(f"--sessions: unknown {unknown}" if unknown else "--sessions: none given")
    load0 = [round(x, 2) for x in os.getloadavg()]
    res: dict[str, Any] = {}
    if "source" in sessions:
        print("[bench_link] second publisher", flush=True)
        res["source"] = source_session(out, video, args.reps)
    if "transport" in sessions:
        print("[bench_link] transport: single host, then two hosts (stand-in publisher)", flush=True)
        res["transport"] = [transport_session(out, video, True, args.reps, args.window),
                            transport_session(out, video, False, args.reps, args.window)]
    if "latency" in sessions:
        print("[bench_link] latency: single host, then two hosts", flush=True)
        res["latency"] = [latency_session(out, video, True, args.reps, args.window),
                          latency_session(out, video, False, args.reps, args.window)]
    if "faults" in sessions:
        print(f"[bench_link] faults ({args.operator})", flush=True)
        res["faults"] = faults_session(out, video, args.reps, operator=args.operator)
    if "clock" in sessions:
        res["clock"] = []
        for off in (0.0, 2.0, -2.0):
            print(f"[bench_link] clock offset {off:+g} s ({args.operator})", flush=True)
            res["clock"].append(faults_session(out, video, args.reps, off, f"clock{off:+g}", outages=(2.0,), phases={},
                                               operator=args.operator))
    load1 = [round(x, 2) for x in os.getloadavg()]
    print(f"\nload average (1, 5, 15 min) before {load0}, after {load1}; {os.cpu_count()} CPUs; work dir {out}")
    ok = True
    for kind, title, single, two in (
            ("latency", "capture → servo frame on the wire (lower bound), p95 per window:", "single_host", "two_host"),
            ("transport", "command (stand-in publisher, 30 Hz) → its servo frame on the wire, per window:",
             "transport_single_host", "transport_two_host")):
        if kind in res:
            _print_p95(res[kind], title, single, two)
    if "faults" in res:
        f = res["faults"]
        print(f"faults, operator {f['operator']} (exit codes {f['codes']}; commands crossed {f['crossed']}, followed {f['followed']}, refused late "
              f"{f['late']}, out of order {f['out_of_order']}):")
        print(worst_case_line())
        print_outages(f["outages"], f.get("decision_late_ms"))
        print_phases(f["phases"])
        print_phases(f["clean"])
        ok &= all(o.jumps == 0 for o in f["outages"]) and all(p.jumps == 0 for p in f["phases"])
    if "clock" in res:
        print("clock offset (operator's clock as the robot sees it):")
        for s in res["clock"]:
            share = s["late"] / max(1, s["followed"] + s["late"] + s["out_of_order"])
            print(f"  {s['stamp_offset_s']:+g} s: followed {s['followed']}, refused late {s['late']} ({share:.0%}), out of"
                  f" order {s['out_of_order']}, clock rebases {s['clock_rebases']}; stale decisions {s['stale_decisions']}"
                  f" ({s['unexplained_stale']} not explained by a gap in the arrivals); exit codes {s['codes']}")
            print_outages(s["outages"], s.get("decision_late_ms"))
            ok &= all(o.jumps == 0 for o in s["outages"])
    if "source" in res:
        s = res["source"]
        print(f"second publisher (fist) beside the followed stand-in; driver command_source "
              f"{'set' if s['command_source'] else 'NOT AVAILABLE (every publisher followed)'}; exit codes {s['codes']}:")
        reps = s["reps"]
        print(f"  highest pulse {_mmm([x['highest_us'] for x in reps])} us; frames above 1900 us "
              f"{_mmm([x['frames_above_1900'] for x in reps])}; WARN naming it in {sum(x['warn_naming_it'] for x in reps)}"
              f"/{len(reps)}" + (f" ('{reps[0]['warn_message']}')" if reps and reps[0]["warn_message"] else ""))
        ok &= all(x["frames_above_1900"] == 0 and x["warn_naming_it"] for x in reps)
    if args.json:
        def enc(o):
            return dataclasses.asdict(o) if dataclasses.is_dataclass(o) else str(o)
        with open(args.json, "w") as fh:
            json.dump({"load_before": load0, "load_after": load1, **res}, fh, indent=1, default=enc)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
