"""``bench_servo_replay``: a recorded run's commands through the servo driver's core on a fake clock.
Prints figures, asserts nothing.

The flexions a run recorded (``/hand/target_flexions`` in the runner's bag, e.g. a
``bench_pipeline`` scenario's ``demo_bag``) arrive at the driver when the recorder logged them (the
bag's log time; its stamp is the capture), and :func:`bench_servo.replay_core` steps the driver's
core as the node steps it (:mod:`hand_servo_driver.schedule`), with the control tick at each of
``--phases`` phases. Printed, independent of the machine's load now:

1. capture → wire p95 minus capture → flexion p95 per tick phase (issue 26: <= 3 ms);
2. capture → horn at target for the shared video's fists (median, p95), modelled at the default
   ``max_speed_dps`` and at the SG90's own speed (:func:`bench_pipeline.horn_figures`; the frame
   indices come from ``/hand/landmarks``).

``python -m hand_bringup.bench_servo_replay BAG [--phases 10] [--camera-fps 30] [--max-speed-dps D]``
(the driver installed; the same
bag before and after a driver change is an A/B).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence

import numpy as np

from hand_bringup import bench_servo
from hand_common.contract import FINGER_NAMES, TOPIC_TARGET_FLEXIONS

TOPIC_LANDMARKS = "/hand/landmarks"

Command = tuple[float, Mapping[str, float], float]


def bag_run(path: str | os.PathLike) -> tuple[list[Command], list[tuple[int, int]], dict[int, list[float]]]:
    """From a runner's bag: the commands (log time s, {finger: flexion}, capture stamp s) in log-time
    order, the frames (frame index, capture stamp ns) and the flexions by capture stamp (ns)."""
    from hand_common.bag import read_messages

    commands: list[Command] = []
    frames: list[tuple[int, int]] = []
    flexions: dict[int, list[float]] = {}
    for topic, t, msg in read_messages(path, [TOPIC_LANDMARKS, TOPIC_TARGET_FLEXIONS]):
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        if topic == TOPIC_LANDMARKS:
            frames.extend((h.frame_index, stamp) for h in msg.hands[:1])
        else:
            flexions[stamp] = [float(x) for x in msg.position]
            commands.append((t * 1e-9, dict(zip(msg.name, flexions[stamp])), stamp * 1e-9))
    return commands, sorted(frames), flexions


def wire_by_phase(commands: Sequence[Command], config, phases_s: Sequence[float],
                  tick_s: float = 0.01) -> list[dict[str, float]]:
    """Per tick phase (s): capture → wire p50/p95 (ms, :attr:`DriverCore.wire_latency`) and its p95
    minus the commands' capture → arrival p95 (``p95_diff``)."""
    flexion = np.array([a - s for a, _, s in commands]) * 1e3
    out = []
    for phase in phases_s:
        core, _ = bench_servo.replay_core(commands, config, len(config.channels), tick_s, phase)
        wire = np.array(core.wire_latency) * 1e3
        out.append({"phase_ms": phase * 1e3, "n": len(wire), "wire_p50": float(np.percentile(wire, 50)),
                    "wire_p95": float(np.percentile(wire, 95)),
                    "p95_diff": float(np.percentile(wire, 95) - np.percentile(flexion, 95))})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_servo_replay", description=__doc__.split("\n")[0])
    ap.add_argument("bag", help="a runner's bag directory (rosbag2)")
    ap.add_argument("--phases", type=int, default=10, help="tick phases, evenly over one 10 ms tick")
    ap.add_argument("--camera-fps", type=float, default=30.0, help="the run's camera rate (the horn model's "
                    "ideal camera; bench_pipeline's fps60 scenarios: 60)")
    ap.add_argument("--max-speed-dps", type=float, default=None, help="the driver's max_speed_dps for the wire "
                    "figures (default: the driver's default; the sg90 scenario: 600)")
    args = ap.parse_args(argv)
    from hand_bringup import bench_pipeline

    commands, frames, flexions = bag_run(args.bag)
    if not commands or set(commands[0][1]) != set(FINGER_NAMES):
        print(f"{args.bag}: no {TOPIC_TARGET_FLEXIONS} commands with {FINGER_NAMES}", file=sys.stderr)
        return 1
    cfg = bench_pipeline._driver_config(args.max_speed_dps)
    flexion = np.array([a - s for a, _, s in commands]) * 1e3
    print(f"{args.bag}: {len(commands)} commands, capture → flexion (log time) p50 "
          f"{np.percentile(flexion, 50):.1f} p95 {np.percentile(flexion, 95):.1f} ms; load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} (the figures do not depend on it)")
    rows = wire_by_phase(commands, cfg, [k * 0.01 / args.phases for k in range(args.phases)])
    print(" tick phase ms   wire p50   wire p95   p95 − flexion p95   (ms)")
    for r in rows:
        print(f" {r['phase_ms']:12.1f} {r['wire_p50']:10.2f} {r['wire_p95']:10.2f} {r['p95_diff']:+19.2f}")
    horn = bench_pipeline.horn_figures([], frames, flexions, None, args.camera_fps)
    for key in ("model_default", "model_sg90"):
        h = horn.get(key)
        if h:
            print(f" capture → horn at target, {key}: median {h['p50']} p95 {h['p95']} ms "
                  f"({h['n']} arrivals, {h['never']} never; fists at frames {horn['fists']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
