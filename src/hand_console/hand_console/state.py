"""What the operator console shows, as plain data (no rclpy, no viser): tested directly.

- :class:`LatestSlot`: a keep-last-1 mailbox between a subscription callback and the render loop
  (a message that arrives before the previous one was rendered replaces it: counted, never queued).
- :class:`RenderClock`: the render loop's rate limit (at most :data:`MAX_RENDER_HZ`).
- :class:`FlexionHistory`: the last ``window_s`` seconds of ``/hand/target_flexions`` for the plot.
- :class:`LatencyWindow`: capture → flexion latency as a keep-last-1 subscriber sees it (p50/p95).
- :func:`gate_view`: the quality gate's verdict on the newest frame (tracked / held / lost and why).
- :func:`figures`: tracker fps, detection, held/lost, rejections, safe-pose trips, twin real-time
  factor, read from the nodes' diagnostics through :mod:`hand_console.keys` (named constants).
- :class:`CalibrationLog`: the windows before and after each guided calibration, and undo.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from hand_common.contract import FINGER_NAMES
from hand_console import keys

#: The render loop never runs faster than this (issue 23: the console costs no tracker frames).
MAX_RENDER_HZ = 15.0
#: The console's default render rate: the tracker's preview comes at 10 Hz (preview_max_rate_hz).
DEFAULT_RENDER_HZ = 10.0
#: The 10 s flexion plot is redrawn at most this often (a PNG each time; the bars follow every render).
PLOT_RATE_HZ = 4.0
#: Seconds of flexion history in the plot.
HISTORY_S = 10.0
#: The figures' row of the tracker's rate: its ``frame_rate_hz`` diagnostic, frames processed in its
#: last diagnostics period (``diagnostics_period_s``, 1 s by default) - not a mean over the run
#: (``summary.json``'s ``tracker_fps_over_run``).
FPS_ROW = "tracker fps (last second)"
#: The figures' row of capture → flexion percentiles (the value says whose receive times).
LATENCY_ROW = "capture→flexion p50 / p95"
#: The figures' row of safe-pose trips: counted from the actuators' diagnostics, which the console
#: receives only while a page is open.
TRIPS_ROW = "safe-pose trips (while a page is open)"

T = TypeVar("T")


class LatestSlot(Generic[T]):
    """Keep-last-1 mailbox (any thread). ``received``: items put; ``rendered``: items taken;
    ``dropped``: items replaced before they were taken (the render loop was busy or slower)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._item: T | None = None
        self.received = self.rendered = self.dropped = 0

    def put(self, item: T) -> None:
        with self._lock:
            if self._item is not None:
                self.dropped += 1
            self._item = item
            self.received += 1

    def take(self) -> T | None:
        """The newest item not taken yet (emptying the slot), or None."""
        with self._lock:
            item, self._item = self._item, None
            if item is not None:
                self.rendered += 1
            return item


class RenderClock:
    """Rate limit of the render loop: :meth:`wait_s` says how long to sleep before the next
    render so that renders are at least ``1 / rate_hz`` apart; the rate is clamped to
    (0, :data:`MAX_RENDER_HZ`]. ValueError for a non-positive rate."""

    def __init__(self, rate_hz: float = MAX_RENDER_HZ):
        if not (math.isfinite(rate_hz) and rate_hz > 0.0):
            raise ValueError(f"render rate must be > 0 Hz, got {rate_hz}")
        self.rate_hz = min(float(rate_hz), MAX_RENDER_HZ)
        self._next = -math.inf

    def wait_s(self, now: float) -> float:
        return max(0.0, self._next - now)

    def rendered(self, now: float) -> None:
        """A render started at ``now``: the next one is due a full period later (a late render is
        not made up for by a burst)."""
        self._next = now + 1.0 / self.rate_hz


class FlexionHistory:
    """The last ``window_s`` seconds of flexions (capture stamps, s), bounded to ``max_samples``."""

    def __init__(self, window_s: float = HISTORY_S, max_samples: int = 2048, names: Sequence[str] = FINGER_NAMES):
        self.window_s = float(window_s)
        self.names = tuple(names)
        self._t: deque[float] = deque(maxlen=max_samples)
        self._v: deque[tuple[float, ...]] = deque(maxlen=max_samples)

    def add(self, t: float, values: Sequence[float]) -> None:
        """Append one sample; a stamp older than the newest one (a restarted source, a scrub back
        in a replay) clears the history first."""
        if len(values) != len(self.names):
            raise ValueError(f"expected {len(self.names)} flexions, got {len(values)}")
        if self._t and t < self._t[-1]:
            self.clear()
        self._t.append(float(t))
        self._v.append(tuple(float(v) for v in values))
        while self._t and self._t[-1] - self._t[0] > self.window_s:
            self._t.popleft()
            self._v.popleft()

    def clear(self) -> None:
        self._t.clear()
        self._v.clear()

    def __len__(self) -> int:
        return len(self._t)

    def series(self) -> tuple[np.ndarray, np.ndarray]:
        """(t, v): t (N,) seconds relative to the newest sample (<= 0), v (N, 5) flexions."""
        if not self._t:
            return np.zeros(0), np.zeros((0, len(self.names)))
        t = np.asarray(self._t)
        return t - t[-1], np.asarray(self._v)

    def latest(self) -> tuple[float, ...] | None:
        return self._v[-1] if self._v else None


class LatencyWindow:
    """Capture → arrival latencies (s) of the newest ``size`` samples; p50/p95 in ms."""

    def __init__(self, size: int = 300):
        self._s: deque[float] = deque(maxlen=size)

    def add(self, latency_s: float) -> None:
        if math.isfinite(latency_s) and -0.5 < latency_s < 10.0:  # else the stamp is not on this clock
            self._s.append(latency_s)

    def clear(self) -> None:
        self._s.clear()

    def percentiles_ms(self) -> tuple[float | None, float | None]:
        if not self._s:
            return None, None
        a = np.asarray(self._s) * 1e3
        return float(np.percentile(a, 50)), float(np.percentile(a, 95))


# --- the quality gate ------------------------------------------------------------------------------
@dataclass(frozen=True)
class HandInfo:
    """One detection of a landmarks message, as the console needs it. image: (21, 2) normalised
    image coordinates (x right, y down, 0..1)."""

    handedness: str
    score: float
    accepted: bool
    quality: float
    rejection: str
    image: np.ndarray


@dataclass(frozen=True)
class GateView:
    """The gate's verdict shown beside the camera: state (tracked / held / lost / no data),
    reason (why not tracked), the followed hand's handedness, score and quality."""

    state: str
    reason: str = ""
    handedness: str = ""
    score: float = math.nan
    quality: float = math.nan

    def text(self) -> str:
        """One line: ``tracked: right hand (score 0.98, quality 0.97)`` / ``held: bone_jump``."""
        hand = f"{self.handedness} hand" if self.handedness else ""
        nums = (f" (score {self.score:.2f}, quality {self.quality:.2f})"
                if math.isfinite(self.score) and math.isfinite(self.quality) else "")
        if self.state == "tracked":
            return f"tracked: {hand}{nums}".rstrip()
        return f"{self.state}: {self.reason or 'no reason given'}" + (f" - {hand}{nums}" if hand else "")


def gate_view(hands: Sequence[HandInfo], tracking: str | None = None) -> GateView:
    """The verdict on the newest frame. hands: its detections; tracking: the tracker's last
    ``tracking`` diagnostic value (tracked / held / lost), which tells a held pose from a lost
    one when the frame's detection was refused (the message alone cannot)."""
    accepted = [h for h in hands if h.accepted]
    if accepted:
        h = accepted[0]
        return GateView("tracked", "", h.handedness, h.score, h.quality)
    state = tracking if tracking in ("held", "lost") else "lost" if not hands else "held"
    if not hands:
        return GateView(state, "no hand in the frame")
    h = max(hands, key=lambda x: x.quality)
    return GateView(state, f"refused: {h.rejection or 'not followed'}", h.handedness, h.score, h.quality)


# --- figures from the diagnostics --------------------------------------------------------------------
def _num(entry: Mapping[str, str], key: str) -> float | None:
    try:
        v = float(entry[key])
    except (KeyError, ValueError, TypeError):
        return None
    return v if math.isfinite(v) else None


@dataclass
class SafePoseCounter:
    """Counts each actuator's transitions from following commands to its safe pose, from its
    diagnostics (twin: :data:`keys.TWIN_WATCHDOG` ok → not ok; servo driver: :data:`keys.SERVO_STALE`
    False → True)."""

    trips: dict[str, int] = field(default_factory=dict)
    _ok: dict[str, bool] = field(default_factory=dict)

    def update(self, actuator: str, ok: bool) -> None:
        if self._ok.get(actuator) and not ok:
            self.trips[actuator] = self.trips.get(actuator, 0) + 1
        self.trips.setdefault(actuator, 0)
        self._ok[actuator] = ok


def find_status(diagnostics: Mapping[str, Mapping[str, str]], node: str, suffix: str = "") -> dict[str, str]:
    """The newest values of the diagnostic status named ``<node>: ...`` (ending in ``suffix``), {}."""
    for name, entry in diagnostics.items():
        if name.startswith(f"{node}:") and name.endswith(suffix):
            return dict(entry)
    return {}


def figures(diagnostics: Mapping[str, Mapping[str, str]], latency_ms: tuple[float | None, float | None],
            trips: Mapping[str, int], latency_note: str = "") -> list[tuple[str, str]]:
    """(label, value) rows of the figures panel. diagnostics: status name → {key: value} (newest);
    latency_ms: capture → flexion (p50, p95) in ms, None where there is no figure; latency_note:
    whose receive times they are, or why there is no figure (shown in brackets after them)."""
    tr = find_status(diagnostics, keys.TRACKER_NODE, keys.TRACKER_STATUS_SUFFIX)
    rows: list[tuple[str, str]] = []

    def fmt(v: float | None, spec: str, unit: str = "") -> str:
        return "-" if v is None else f"{v:{spec}}{unit}"

    rows.append(("tracker", tr.get(keys.TRACKER_TRACKING, "-") if tr else "no diagnostics yet"))
    rows.append((FPS_ROW, fmt(_num(tr, keys.TRACKER_FRAME_RATE), ".1f", " Hz")))
    det = _num(tr, keys.TRACKER_DETECTION_RATE)
    rows.append(("hand detected", fmt(None if det is None else det * 100, ".0f", " %")))
    p50, p95 = latency_ms
    rows.append((LATENCY_ROW, f"{fmt(p50, '.1f')} / {fmt(p95, '.1f')} ms" + (f" ({latency_note})" if latency_note
                                                                               else "")))
    rows.append(("inference p95", fmt(_num(tr, keys.TRACKER_INFERENCE_P95), ".1f", " ms")))
    rows.append(("frames / dropped", f"{fmt(_num(tr, keys.TRACKER_FRAMES), '.0f')} / "
                                     f"{fmt(_num(tr, keys.TRACKER_DROPPED), '.0f')}"))
    refused = sum(v for k in keys.TRACKER_REJECTED for v in [_num(tr, k)] if v is not None)
    rows.append(("gate refusals", f"{refused:.0f}" if tr else "-"))
    rows.append(("held frames", held_text(tr)))
    twin = find_status(diagnostics, keys.TWIN_NODE)
    if twin:
        rows.append(("twin real-time factor", fmt(_num(twin, keys.TWIN_RTF), ".2f")))
    if trips:
        rows.append((TRIPS_ROW, ", ".join(f"{k} {v}" for k, v in sorted(trips.items()))))
    rows.append(("calibration", tr.get(keys.TRACKER_CALIBRATION, "-") if tr else "-"))
    return rows


def held_text(tracker: Mapping[str, str]) -> str:
    """The tracker's held frames: ``12 (no_hand 10, motion 2)`` (total, then each cause that held
    a frame, from :data:`keys.TRACKER_HELD_TOTAL` and :data:`keys.TRACKER_HELD`); ``-`` without
    the total."""
    total = _num(tracker, keys.TRACKER_HELD_TOTAL)
    if total is None:
        return "-"
    causes = [(c, n) for c, k in keys.TRACKER_HELD for n in [_num(tracker, k)] if n]
    return f"{total:.0f}" + (" (" + ", ".join(f"{c} {n:.0f}" for c, n in causes) + ")" if causes else "")


def update_trips(counter: SafePoseCounter, diagnostics: Mapping[str, Mapping[str, str]]) -> None:
    """Feed the actuators' newest watchdog states into ``counter``."""
    twin = find_status(diagnostics, keys.TWIN_NODE)
    if keys.TWIN_WATCHDOG in twin:
        counter.update("twin", twin[keys.TWIN_WATCHDOG] == "ok")
    servo = find_status(diagnostics, keys.SERVO_DRIVER_NODE)
    if keys.SERVO_STALE in servo:
        counter.update("servo_driver", servo[keys.SERVO_STALE] != "True")


def markdown_table(rows: Sequence[tuple[str, str]]) -> str:
    """A two-column markdown table of (label, value) rows (``|`` in a value is escaped)."""
    body = "\n".join(f"| {a} | {str(b).replace('|', '/')} |" for a, b in rows)
    return "| | |\n|---|---|\n" + body


# --- guided calibration --------------------------------------------------------------------------------
@dataclass
class CalibrationLog:
    """Windows before / after each completed calibration (``{parameter: value}``) and undo.

    ``before`` is read from the tracker when the open-hand capture starts; ``after`` once the fist
    capture set the new windows. :meth:`undo_values` gives what to set to go back."""

    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    step: str = "idle"  # idle, open, fist, done, undone, failed
    message: str = ""

    def table(self, names: Sequence[str]) -> list[tuple[str, str]]:
        """(parameter, 'before → after') rows for the finger windows."""
        def f(v: Any) -> str:
            return f"{v:.3f}" if isinstance(v, float) else "-" if v is None else str(v)
        return [(n, f"{f(self.before.get(n))} → {f(self.after.get(n))}") for n in names]

    def undo_values(self) -> dict[str, Any]:
        """The windows to set to undo the last calibration; ValueError when there is none."""
        if self.step != "done" or not self.before:
            raise ValueError("nothing to undo: no calibration has completed")
        return dict(self.before)


# --- live parameter sliders -------------------------------------------------------------------------
@dataclass(frozen=True)
class SliderSpec:
    """A live parameter of a node offered as a slider: node, parameter name, label, range, step."""

    node: str
    name: str
    label: str
    lo: float
    hi: float
    step: float


def slider_specs(node: str, described: Sequence[tuple[str, float, float, str]], patterns: Sequence[str],
                 ) -> list[SliderSpec]:
    """Sliders for the described double parameters whose name matches one of ``patterns``
    (regular expressions, matched from the start), in pattern order. described: (name, lo, hi,
    description) of the node's double parameters with a range (from ``describe_parameters``)."""
    import re

    out: list[SliderSpec] = []
    for pat in patterns:
        rx = re.compile(pat)
        for name, lo, hi, _ in described:
            if rx.match(name) and not any(s.name == name for s in out):
                step = 0.01 if hi - lo <= 10 else 0.1
                out.append(SliderSpec(node, name, name.replace("_", " "), float(lo), float(hi), step))
    return out


# --- the robot panel ------------------------------------------------------------------------------------
def servo_rows(diagnostics: Mapping[str, Mapping[str, str]]) -> list[tuple[str, str]]:
    """The servo driver's pulses and acks (from its diagnostics, :mod:`hand_console.keys`):
    [] before its first diagnostics."""
    sv = find_status(diagnostics, keys.SERVO_DRIVER_NODE)
    if not sv:
        return []
    channels = sv.get(keys.SERVO_CHANNELS, "").split()
    pulses = sv.get(keys.SERVO_PULSES, "").split()
    shown = " · ".join(f"{d} {p}" for d, p in zip(FINGER_NAMES, pulses)) if pulses else "-"
    rows = [("servo link", sv.get(keys.SERVO_LINK, "-")),
            ("pulses (us)" + (f", channels {' '.join(channels)}" if channels else ""), shown),
            ("frames sent / acked / unacked", " / ".join(sv.get(k, "-") for k in (
                keys.SERVO_FRAMES_SENT, keys.SERVO_FRAMES_ACKED, keys.SERVO_FRAMES_UNACKED))),
            ("board rejects, loss rate", f"{sv.get(keys.SERVO_BOARD_REJECTS, '-')}, {sv.get(keys.SERVO_LOSS_RATE, '-')}"),
            ("servo safe pose", "held (stale commands)" if sv.get(keys.SERVO_STALE) == "True" else "no")]
    return rows


def kapandji_rows(human: float | None, robot: float | None) -> list[tuple[str, str]]:
    """Kapandji scores (0-10; -1 or None: not measurable) of the operator's and the robot's thumb."""
    def f(v: float | None) -> str:
        return "-" if v is None or not math.isfinite(v) or v < 0 else f"{v:.1f} / 10"
    return [("Kapandji human", f(human)), ("Kapandji robot", f(robot))]


#: The arm teleop's states (arm_teleop.state_machine.ArmState values) as the operator reads them.
ARM_STATE_WORDS = {"DISABLED": "disarmed", "ARMED": "armed", "HOLD": "armed, holding",
                   "MANUAL": "manual", "ESTOP": "e-stop latched"}


def arm_rows(state_json: str | None) -> list[tuple[str, str]]:
    """The arm's gesture state from one /arm/teleop_state message (JSON object with state, mode,
    gesture, gripper_closed); [("arm", "no state yet")] without one, the error for bad JSON."""
    import json

    if state_json is None:
        return [("arm", "no state yet")]
    try:
        d = json.loads(state_json)
        state = str(d["state"])
    except (ValueError, KeyError, TypeError) as exc:
        return [("arm", f"unreadable state: {type(exc).__name__}")]
    rows = [("arm", ARM_STATE_WORDS.get(state, state.lower())), ("gesture", str(d.get("gesture", "-"))),
            ("mode", str(d.get("mode", "-"))), ("gripper", "closed" if d.get("gripper_closed") else "open")]
    if d.get("ik_error_mm") is not None:
        rows.append(("IK error", f"{float(d['ik_error_mm']):.1f} mm"))
    return rows
