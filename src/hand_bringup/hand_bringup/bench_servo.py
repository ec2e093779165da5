"""What the servo board saw in a benchmark run, from its log (pure; no rclpy): frames per 10 ms
against the serial link's budget, and capture → horn at target for the fist closures.

Inputs are the simulated board's JSON-lines log (:mod:`hand_servo_driver.sim_board`: ``frame``
records with wall time ``t`` and every channel's ``outputs`` in µs) and the commands the run
published (capture stamp s → flexions thumb..pinky). Horns are replayed with the board's own
:class:`hand_servo_driver.horn.HornModel` (SG90: 600 °/s, dead band ±5 µs).
"""

from __future__ import annotations

import json
import math
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hand_servo_driver import protocol as p
from hand_servo_driver.horn import SG90_DEADBAND_US, SG90_SPEED_DPS, HornModel

#: The board link (HSB_BAUD) and its framing: 8N1 = 10 bits a byte.
LINK_BAUD = 115200
BITS_PER_BYTE = 10
#: The window the link's budget is stated in (s): the driver's frame cap is 100 frames/s.
BUDGET_WINDOW_S = 0.010
#: Shared video (README oracles): fists near frame 270 and in the last frames; each window runs
#: from the open hand before to the fist's end.
SHARED_FIST_WINDOWS = ((240, 300), (585, 621))
#: A closure's command counts from the first frame whose mean flexion is this far from the
#: window's open level to its peak (the camera "sees the fist").
CLOSED_FRACTION = 0.9
#: A channel counts in a closure when its target moved at least this far (µs) from the open level.
MIN_TRAVEL_US = 100.0
#: A horn that is not as far as the fist command within this long after its capture counts as
#: never there (s): the driver's ramp covers its whole range in 1000 µs / (300 °/s) = 0.3 s.
HORN_HORIZON_S = 2.0


def frame_bytes(channels: int = 5) -> int:
    """Bytes of one SET_PULSES frame for ``channels`` channels on the wire."""
    return len(p.encode_set_pulses(0, [(c, 1500) for c in range(channels)]))


def link_budget(channels: int = 5, baud: int = LINK_BAUD) -> dict[str, float]:
    """The serial link's budget: ms one SET_PULSES frame occupies the wire, and how many frames
    fit in :data:`BUDGET_WINDOW_S` at ``baud`` (8N1)."""
    ms = frame_bytes(channels) * BITS_PER_BYTE / baud * 1e3
    return {"frame_bytes": frame_bytes(channels), "frame_ms": round(ms, 3),
            "frames_per_10ms_fit": round(BUDGET_WINDOW_S * 1e3 / ms, 2)}


def read_board_frames(log: pathlib.Path) -> list[dict[str, Any]]:
    """The board's accepted frames and output events (``frame``/``watchdog``/``boot`` records
    with ``outputs``), in log order."""
    out = []
    if not log.exists():
        return out
    with open(log) as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("event") in ("frame", "watchdog", "boot") and "outputs" in rec:
                out.append(rec)
    return out


def frame_spacing(records: Sequence[Mapping[str, Any]], window_s: float = BUDGET_WINDOW_S) -> dict[str, Any]:
    """Frames the board accepted (``frame`` records): count, mean rate (frames/s), the most in any
    ``window_s`` window, the share of successive frames closer than ``window_s``, smallest gap (ms)."""
    t = np.sort(np.array([r["mono"] for r in records if r.get("event") == "frame"], dtype=float))
    if t.size < 2:
        return {"frames": int(t.size), "rate_hz": None, "max_in_window": int(t.size), "closer_share": None,
                "min_gap_ms": None}
    ends = np.searchsorted(t, t + window_s - 1e-9, side="right")
    gaps = np.diff(t)
    return {"frames": int(t.size), "rate_hz": round((t.size - 1) / float(t[-1] - t[0]), 1),
            "max_in_window": int((ends - np.arange(t.size)).max()),
            "closer_share": round(float(np.mean(gaps < window_s - 1e-9)), 4),
            "min_gap_ms": round(float(gaps.min()) * 1e3, 2)}


def horn_reach_time(records: Sequence[Mapping[str, Any]], channel: int, target_us: float, tol_us: float,
                    t_from: float, speed_dps: float = SG90_SPEED_DPS, deadband_us: float = SG90_DEADBAND_US,
                    direction: int = 0, t_until: float = math.inf) -> float | None:
    """First time (s, the records' wall clock ``t``) in [``t_from``, ``t_until``] that the horn on
    ``channel`` is within ``tol_us`` of ``target_us`` (``direction`` +1 / -1: at or beyond
    ``target_us`` - / + ``tol_us`` moving up / down: as far as the target, wherever it goes next),
    replaying the board's outputs through :class:`HornModel` (exact between frames: the horn moves
    at constant speed toward its target). None when it does not get there in that time."""
    def there(x: float) -> bool:
        return (x - target_us) * direction >= -tol_us if direction else abs(x - target_us) <= tol_us

    n = max(len(r["outputs"]) for r in records) if records else 0
    if channel >= n:
        return None
    horns = HornModel(n, speed_dps=speed_dps, deadband_us=deadband_us)
    speed = horns.speed_us_s
    for i, rec in enumerate(records):
        t = float(rec["t"])
        horns.command(t, rec["outputs"])
        t_next = float(records[i + 1]["t"]) if i + 1 < len(records) else math.inf
        if t_next < t_from:
            continue
        if t > t_until:
            return None
        pos, tgt = horns.position[channel], horns.target[channel]
        if pos is None:
            continue
        start = max(t, t_from)
        if tgt is not None and start > t:  # where the horn is at t_from
            step = min(abs(tgt - pos), speed * (start - t))
            pos = pos + math.copysign(step, tgt - pos)
        if there(pos):
            return start if start <= t_until else None
        if tgt is None or (tgt - pos) * (target_us - pos) <= 0:
            continue
        need = abs(target_us - pos) - tol_us  # travel until within tol of the target
        if abs(tgt - pos) >= need and start + need / speed <= t_next:
            return start + need / speed if start + need / speed <= t_until else None
    return None


def fist_commands(frames: Sequence[tuple[int, int]], flexions: Mapping[int, Sequence[float]],
                  windows: Sequence[tuple[int, int]] = SHARED_FIST_WINDOWS) -> list[tuple[int, int, int]]:
    """Per closure window (frame indices [a, b)): (frame index, capture stamp ns, open-level stamp
    ns) of the first command whose mean flexion reached :data:`CLOSED_FRACTION` of the way from
    the window's open level (its lowest mean flexion before the peak) to its peak. ``frames``:
    (frame index, capture stamp ns) of the run's frames; ``flexions``: stamp ns → flexions."""
    out = []
    for a, b in windows:
        rows = [(i, s, float(np.mean(flexions[s]))) for i, s in frames if a <= i < b and s in flexions]
        if len(rows) < 3:
            continue
        k_peak = int(np.argmax([m for _, _, m in rows]))
        k_open = int(np.argmin([m for _, _, m in rows[:k_peak + 1]]))
        lo, hi = rows[k_open][2], rows[k_peak][2]
        if hi - lo <= 0.2:  # no closure in this window
            continue
        level = lo + CLOSED_FRACTION * (hi - lo)
        k = next(k for k in range(k_open, k_peak + 1) if rows[k][2] >= level)
        out.append((rows[k][0], rows[k][1], rows[k_open][1]))
    return out


def horn_latencies(records: Sequence[Mapping[str, Any]], fists: Sequence[tuple[int, int, int]],
                   pulses_of, channels: Sequence[int], tol_us: float, speed_dps: float = SG90_SPEED_DPS,
                   ) -> list[dict[str, Any]]:
    """Capture → horn at target per fist closure and moving channel: ``pulses_of(stamp ns)`` gives
    the driver's target pulses (µs, one per servo, in ``channels`` order) for a command; each
    servo whose target moved ≥ :data:`MIN_TRAVEL_US` from the open level counts, from the fist
    command's capture to the horn as far as its target in the closing direction, less ``tol_us``
    (None: not within :data:`HORN_HORIZON_S`)."""
    out = []
    for frame, stamp, open_stamp in fists:
        target, start = pulses_of(stamp), pulses_of(open_stamp)
        for k, ch in enumerate(channels):
            if abs(target[k] - start[k]) < MIN_TRAVEL_US:
                continue
            t = horn_reach_time(records, ch, float(target[k]), tol_us, stamp * 1e-9, speed_dps,
                                direction=1 if target[k] > start[k] else -1, t_until=stamp * 1e-9 + HORN_HORIZON_S)
            out.append({"frame": frame, "channel": ch, "target_us": round(float(target[k]), 1),
                        "travel_us": round(float(target[k] - start[k]), 1),
                        "latency_s": None if t is None else t - stamp * 1e-9})
    return out


def replay_driver(commands: Sequence[tuple[float, Mapping[str, float], float]], config, channels: int = 5,
                  tick_s: float = 0.01) -> list[dict[str, Any]]:
    """Board records (``t``, ``outputs`` per channel) of the servo driver's pure core
    (:class:`hand_servo_driver.core.DriverCore`, ``config`` a DriverConfig) fed ``commands``
    (arrival s, {finger: flexion}, capture stamp s) on time and stepped as the node steps it
    (:func:`hand_servo_driver.schedule.drive`: each command, each frame when due, the control tick
    every ``tick_s``): what reaches the wire when nothing on the machine is late. The rate
    limit's cost in capture → horn at target, independent of the machine's load."""
    return replay_core(commands, config, channels, tick_s)[1]


def replay_core(commands: Sequence[tuple[float, Mapping[str, float], float]], config, channels: int = 5,
                tick_s: float = 0.01, tick_phase_s: float = 0.0) -> tuple[Any, list[dict[str, Any]]]:
    """:func:`replay_driver` with the tick ``tick_phase_s`` (s) after one ``tick_s`` before the
    first command; returns the core too (its ``wire_latency``: capture → wire per command, s)
    and the board records until :data:`HORN_HORIZON_S` after the last command."""
    from hand_servo_driver.core import DriverCore
    from hand_servo_driver.schedule import drive

    core = DriverCore(config, expect_acks=False)
    parser = p.Parser()
    outputs: list[int | None] = [None] * channels
    records: list[dict[str, Any]] = []
    if not commands:
        return core, records
    t0 = commands[0][0] - tick_s + tick_phase_s
    core.on_link_up(t0)
    core.activate()
    for t, frames in drive(core, commands, tick_s, commands[-1][0] + HORN_HORIZON_S, tick_phase_s=t0):
        for f in (f for data in frames for f in parser.feed(data, 0)):
            if f.type == p.MsgType.SET_PULSES:
                for ch, us in p.decode_set_pulses(f.payload, channels):
                    outputs[ch] = us
                records.append({"event": "frame", "t": t, "mono": t, "outputs": list(outputs)})
    return core, records
