"""What the tracker reports (no rclpy): per-stage timings, the run's counters and watchdog shared
between the worker thread and the executor's timer (:class:`RunState`, every access under its
lock), and the pure builder of the ``/diagnostics`` status from a snapshot of them
(:func:`build_status`).

Levels are diagnostic_msgs/DiagnosticStatus levels as ints (:data:`OK`, :data:`WARN`,
:data:`ERROR`); the node turns them into the message's byte.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field, replace

import numpy as np

from hand_tracking import interface as iface

#: diagnostic_msgs/DiagnosticStatus levels
OK, WARN, ERROR = 0, 1, 2
#: The timed stages of one frame (ms each in /diagnostics).
STAGES = ("decode", "inference", "geometry_filter", "publish")


@dataclass
class FrameStats:
    """Per-stage timings (ms) and frame counters: since the last diagnostics message or since
    activation."""

    frames: int = 0
    tracked: int = 0
    sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))

    #: the last inference times (ms), bounded: their p95 goes into /diagnostics
    inference: deque = field(default_factory=lambda: deque(maxlen=4096))

    def add(self, tracked: bool, **ms: float) -> None:
        self.frames += 1
        self.tracked += int(tracked)
        for k, v in ms.items():
            self.sums[k] += v
        if "inference" in ms:
            self.inference.append(ms["inference"])

    def inference_p95(self) -> float:
        return float(np.percentile(self.inference, 95)) if self.inference else float("nan")

    def mean(self, key: str) -> float:
        return self.sums[key] / self.frames if self.frames else 0.0

    def copy(self) -> FrameStats:
        return replace(self, sums=dict(self.sums), inference=deque(self.inference, maxlen=self.inference.maxlen))


@dataclass(frozen=True)
class RunSnapshot:
    """The run's counters at one instant (:meth:`RunState.snapshot`); ``period`` covers the
    frames since the previous snapshot, ``total`` those since activation. Times: wall s
    (time.monotonic)."""

    period: FrameStats
    total: FrameStats
    watchdog: str  # ok or timeout
    finished: bool
    since_last_frame_s: float
    bad_frames: int
    flexions_published: int
    publish_retries: int
    last_error: str
    tracking: str  # the last frame's status: tracked, held, lost ("" before the first frame)
    reason: str
    sides_status: dict[str, str]
    #: two hands: flexion messages per side (``flexions_published`` is their sum)
    flexions_by_side: dict[str, int] = field(default_factory=dict)


class RunState:
    """The counters and the watchdog of one run, written by the worker thread (and by the topic
    replay callback) and read by the executor's timer: every access goes through a method that
    holds :attr:`lock`. Times are wall s (time.monotonic)."""

    def __init__(self, now: float) -> None:
        self.lock = threading.Lock()
        self.reset(now)

    def reset(self, now: float) -> None:
        with self.lock:
            self._period = FrameStats()
            self._total = FrameStats()
            self._last_frame = now
            self._frame_gap = 0.0  # wall s between the last two processed frames (a capture's pace)
            self._frames_seen = 0
            self._watchdog = "ok"
            self._finished = False
            self._last_error = ""
            self._bad_frames = 0
            self._flexions_published = 0  # /hand/target_flexions (= /hand/joint_flexions) messages, one hand
            self._flexions_by_side: dict[str, int] = {}  # two hands: per side (their sum is the above)
            self._publish_retries = 0  # batch source: publishes retried while a keep-all history was full
            #: frames the prefetch queues of this run dropped that are closed (deactivate): the
            #: count outlives the queue, so a deactivated tracker still reports them (it said 0)
            self._dropped_closed = 0
            self._tracking = ""
            self._reason = ""
            self._sides_status: dict[str, str] = {}

    # --- writers (worker thread, topic replay callback) -------------------------------------------
    def frame_done(self, now: float, tracking: str, reason: str, sides_status: dict[str, str] | None,
                   ms: dict[str, float]) -> bool:
        """One frame processed and published at ``now``; returns True when it clears a watchdog
        timeout (frames are back)."""
        with self.lock:
            cleared = self._watchdog == "timeout"
            self._watchdog = "ok"
            self._frame_gap = now - self._last_frame if self._frames_seen else 0.0
            self._frames_seen += 1
            self._last_frame = now
            self._tracking, self._reason = tracking, reason
            if sides_status is not None:
                self._sides_status = dict(sides_status)
            tracked = tracking == "tracked"
            self._period.add(tracked, **ms)
            self._total.add(tracked, **ms)
        return cleared

    def bad_frame(self, error: str | None = None) -> None:
        """A frame could not be read or processed (``error``: the last error to report)."""
        with self.lock:
            self._bad_frames += 1
            if error is not None:
                self._last_error = error

    def error(self, text: str) -> None:
        with self.lock:
            self._last_error = text

    def finish(self) -> int:
        """The source ended; returns the frames processed since activation."""
        with self.lock:
            self._finished = True
            return self._total.frames

    def flexions_sent(self, side: str | None = None) -> None:
        """One flexion message pair published (two hands: on ``side``'s topics)."""
        with self.lock:
            self._flexions_published += 1
            if side is not None:
                self._flexions_by_side[side] = self._flexions_by_side.get(side, 0) + 1

    def prefetch_closed(self, dropped: int) -> None:
        """The prefetch queue that dropped ``dropped`` frames is closed (the node left active)."""
        with self.lock:
            self._dropped_closed += int(dropped)

    def dropped_frames(self, open_queue: int) -> int:
        """Frames dropped this run: the closed queues' plus ``open_queue`` (the open one's count)."""
        with self.lock:
            return self._dropped_closed + int(open_queue)

    def publish_retried(self) -> None:
        with self.lock:
            self._publish_retries += 1

    # --- readers (executor) -----------------------------------------------------------------------
    def frame_gap(self) -> float:
        with self.lock:
            return self._frame_gap

    def check_watchdog(self, now: float, timeout: float) -> bool:
        """True when no frame came for ``timeout`` s (and the source has not finished): the
        watchdog trips, once, until a frame comes back."""
        with self.lock:
            if not self._finished and self._watchdog == "ok" and now - self._last_frame > timeout:
                self._watchdog = "timeout"
                return True
            return False

    def snapshot(self, now: float) -> RunSnapshot:
        """The counters now; starts a new diagnostics period."""
        with self.lock:
            period, self._period = self._period, FrameStats()
            return RunSnapshot(period=period, total=self._total.copy(), watchdog=self._watchdog,
                               finished=self._finished, since_last_frame_s=now - self._last_frame,
                               bad_frames=self._bad_frames, flexions_published=self._flexions_published,
                               publish_retries=self._publish_retries, last_error=self._last_error,
                               tracking=self._tracking, reason=self._reason,
                               sides_status=dict(self._sides_status),
                               flexions_by_side=dict(self._flexions_by_side))


@dataclass(frozen=True)
class TrackerReport:
    """Everything one ``/diagnostics`` status says: the run's snapshot and the node's state."""

    node_name: str
    state: str  # lifecycle state label
    source: str
    period_s: float  # wall s covered by ``run.period``
    run: RunSnapshot
    dropped_frames: int  # by the prefetch queue
    rejections: dict[str, int]  # frames refused by the quality gate per reason since configure
    calibration: str
    two_hands: bool = False
    #: held frames per cause (:data:`hand_tracking.tracker_core.HOLD_CAUSES`) since configure
    holds: dict[str, int] = field(default_factory=dict)
    #: holds that fell back to the last confirmed pose (the last reading disagreed with its
    #: neighbour and was not held)
    holds_skipped_unconfirmed: int = 0
    identity_swaps: int = 0
    label_disagreements: int = 0
    sides: tuple[str, ...] = ()
    followed_hand: str = ""  # one hand: the followed hand's identity ('N (side)' or 'none')
    hand_switches: int = 0  # one hand: times another hand was taken up after the followed one was lost


@dataclass(frozen=True)
class Status:
    """A diagnostic status as data (level: :data:`OK`, :data:`WARN` or :data:`ERROR`)."""

    level: int
    name: str
    message: str
    hardware_id: str
    values: dict[str, str]


def build_status(r: TrackerReport) -> Status:
    """The tracker's ``/diagnostics`` status for the report ``r``."""
    run, sp, st = r.run, r.run.period, r.run.total
    active = r.state == "active"
    level, message = OK, iface.STATUS_TRACKING
    if not active:
        message = r.state
    elif run.watchdog == "timeout":
        level = ERROR
        message = f"no frame for {run.since_last_frame_s:.1f} s (frame_timeout_s)"
    elif run.finished:
        level, message = WARN, f"source finished after {st.frames} frames"
    elif run.tracking == "lost":
        level, message = WARN, f"no hand ({run.reason})"
    elif run.tracking == "held":
        message = f"holding last pose ({run.reason})"
    rate = sp.frames / r.period_s
    values = {
        iface.KEY_STATE: r.state,
        iface.KEY_SOURCE: r.source,
        iface.KEY_WATCHDOG: iface.WATCHDOG_FINISHED if run.finished else run.watchdog,
        "frame_rate_hz": f"{rate:.2f}",
        "detection_rate": f"{(sp.tracked / sp.frames) if sp.frames else 0.0:.3f}",
        iface.KEY_FRAMES: str(st.frames),
        "frames_tracked": str(st.tracked),
        iface.KEY_BAD_FRAMES: str(run.bad_frames),
        iface.KEY_FLEXIONS_PUBLISHED: str(run.flexions_published),
        "publish_retries": str(run.publish_retries),
        iface.KEY_DROPPED_FRAMES: str(r.dropped_frames),
        "tracking": run.tracking or "none",
        **{iface.key_rejected(k): str(n) for k, n in r.rejections.items()},
        **{iface.key_held(k): str(n) for k, n in r.holds.items()},
        iface.KEY_HELD_TOTAL: str(sum(r.holds.values())),
        "held_skipped_unconfirmed": str(r.holds_skipped_unconfirmed),
        "calibration": r.calibration,
        iface.KEY_LAST_ERROR: run.last_error,
    }
    if r.two_hands:
        for side in r.sides:
            values[f"tracking_{side}"] = run.sides_status.get(side, "none")
            values[iface.key_flexions_published(side)] = str(run.flexions_by_side.get(side, 0))
        values["identity_swaps"] = str(r.identity_swaps)
        values["label_disagreements"] = str(r.label_disagreements)
    else:
        values["followed_hand"] = r.followed_hand or "none"
        values["hand_switches"] = str(r.hand_switches)
    for key in STAGES:
        values[f"{key}_ms"] = f"{sp.mean(key):.3f}"
        values[f"{key}_ms_mean_total"] = f"{st.mean(key):.3f}"
    values["inference_ms_p95_total"] = f"{st.inference_p95():.3f}"  # the last ≤ 4096 frames
    return Status(level=level, name=r.node_name + iface.STATUS_SUFFIX, message=message,
                  hardware_id=values[iface.KEY_SOURCE],
                  values=values)
