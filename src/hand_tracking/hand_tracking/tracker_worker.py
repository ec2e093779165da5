"""The tracker's source side (no rclpy): the landmark model of a configured node
(:class:`LandmarkModel`) and the worker thread of an active one (:class:`FrameWorker`): read a
frame from the prefetch queue → pace a batch source → MediaPipe (or a recorded frame's landmarks)
→ the frame's capture stamp → the node's ``handle`` (geometry, filter, calibration, publish).

Nothing here is read by another thread without a lock: the counters go to the node's
:class:`~hand_tracking.tracker_diagnostics.RunState`, the model's swap and mirror flag are under
:attr:`LandmarkModel.lock`; the worker's own state (media epoch, pacing) stays in its thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from hand_tracking.landmarks import HandObservation, LandmarkBackend
from hand_tracking.replay import LandmarkFrame
from hand_tracking.sources import Frame, FrameError, PrefetchSource, SourceError, SourceSpec
from hand_tracking.tracker_diagnostics import RunState
from hand_tracking.tracker_messages import capture_time, stamp_from_ns, stamp_from_seconds


class Logger(Protocol):
    def info(self, msg: str, **kw: Any) -> Any: ...
    def warning(self, msg: str, **kw: Any) -> Any: ...
    def error(self, msg: str, **kw: Any) -> Any: ...


class Handle(Protocol):
    def __call__(self, hands: list[HandObservation], index: int, stamp: Any, capture: float, width: int,
                 height: int, frame_id: str, *, decode_ms: float, infer_ms: float,
                 with_landmarks: bool) -> None: ...


class LandmarkModel:
    """The landmark backend of a configured node: built by ``make`` (at configure), rebuilt by the
    worker between two frames after :meth:`rebuild_later` (a MediaPipe parameter changed), closed
    by :meth:`close` (cleanup). The swap and the mirror flag are under :attr:`lock`."""

    def __init__(self, make: Callable[[], LandmarkBackend]) -> None:
        self.lock = threading.Lock()
        self._make = make
        self._backend = make()
        self._dirty = False

    def warm_up(self) -> float:
        """Run the model once (ms it took)."""
        return self._backend.warm_up()

    def rebuild_later(self) -> None:
        with self.lock:
            self._dirty = True

    def set_mirror(self, mirror: bool) -> None:
        with self.lock:
            self._backend.mirror = mirror

    def detect(self, image, log: Logger) -> list[HandObservation]:
        """Hands in one BGR image (the worker thread); ValueError for a malformed image."""
        with self.lock:
            dirty, self._dirty = self._dirty, False
        if dirty:
            new = self._make()
            with self.lock:
                old, self._backend = self._backend, new
            old.close()
            log.info("MediaPipe rebuilt with the new parameters")
        return self._backend.detect(image)

    def close(self) -> None:
        with self.lock:
            self._backend.close()


class FrameWorker:
    """The worker thread of an active node with a frame source (camera, video, images, bag).

    prefetch: the source's reader thread and queue. batch: a recording read faster than real
    time (paced at ``batch_max_rate_hz``; ``wait_for_readers`` runs first). param(name): a node
    parameter's current value. handle: the node's per-frame step. on_end: the source ended (no
    frame will come). stop: set to end the thread. preview(frame, stamp): offered each camera /
    video / image frame *after* its flexions were published (the operator preview; it must only
    hand the frame over, see :mod:`hand_tracking.preview`).
    """

    def __init__(self, prefetch: PrefetchSource, spec: SourceSpec, *, batch: bool, model: LandmarkModel | None,
                 param: Callable[[str], Any], handle: Handle, state: RunState, log: Logger,
                 wait_for_readers: Callable[[], None], on_end: Callable[[], None], stop: threading.Event,
                 preview: Callable[[Frame, Any], None] | None = None) -> None:
        self.prefetch = prefetch
        self._spec = spec
        self._batch = batch
        self._model = model
        self._param = param
        self._handle = handle
        self._state = state
        self._log = log
        self._wait_for_readers = wait_for_readers
        self._on_end = on_end
        self._stop = stop
        self._preview = preview
        self._media_epoch: float | None = None
        self._thread = threading.Thread(target=self._run, name="tracker worker", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float) -> bool:
        """Wait for the thread (``stop`` must be set); True when it ended within ``timeout`` s."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        """Read → (MediaPipe) → geometry/filter → publish, until stopped."""
        log = self._log
        if self._batch:
            self._wait_for_readers()
        next_due = time.monotonic()
        while not self._stop.is_set():
            rate = float(self._param("batch_max_rate_hz")) if self._batch else 0.0
            if rate > 0.0:  # a bounded batch rate: no subscriber falls far behind a keep-all writer
                now = time.monotonic()
                if next_due > now:
                    time.sleep(next_due - now)
                next_due = max(next_due, now - 0.1) + 1.0 / rate
            try:
                item = self.prefetch.read(timeout=0.2)
            except TimeoutError:
                continue
            except FrameError as exc:
                self._state.bad_frame()
                log.warning(str(exc), throttle_duration_sec=5.0)
                continue
            except SourceError as exc:
                self._state.error(str(exc))
                log.error(str(exc), throttle_duration_sec=5.0)
                continue
            if item is None:
                frames = self._state.finish()
                log.info(f"{self.prefetch.name}: end of stream after {frames} frames")
                self._on_end()  # no frame will come: answer a capture with what was captured
                return
            try:
                self._process(item)
            except Exception as exc:  # noqa: BLE001 - one bad frame must not end the node
                error = f"{type(exc).__name__}: {exc}"
                self._state.bad_frame(error)
                log.error(f"frame {getattr(item, 'index', '?')} failed: {error}", throttle_duration_sec=5.0)

    def _process(self, item: Frame | LandmarkFrame) -> None:
        t0 = time.monotonic()
        if isinstance(item, LandmarkFrame):
            hands, width, height = item.hands, item.width, item.height
            for p in item.problems:
                self._log.warning(f"recorded frame {item.index}: {p}", throttle_duration_sec=5.0)
            # time comes from the data: the recorded capture stamp (at a playback rate other than
            # 1, the recording's timeline as played), whatever the output stamps
            capture = item.filter_time
            recorded = self._param("replay_stamps") == "recorded"
            stamp = stamp_from_ns(item.recorded_ns) if recorded else stamp_from_seconds(item.stamp)
            frame_id = item.frame_id or self._param("frame_id")
            infer_ms = 0.0
        else:
            try:
                hands = self._model.detect(item.image, self._log)
            except ValueError as exc:
                self._state.bad_frame()
                self._log.warning(f"frame {item.index}: {exc}", throttle_duration_sec=5.0)
                return
            width, height, stamp = item.width, item.height, stamp_from_seconds(self._capture_stamp(item))
            capture = capture_time(stamp)  # the published stamp, read back as a replay reads it
            frame_id = self._param("frame_id")
            infer_ms = (time.monotonic() - t0) * 1e3
        self._handle(hands, item.index, stamp, capture, width, height, frame_id, decode_ms=item.decode_ms,
                     infer_ms=infer_ms, with_landmarks=bool(self._param("publish_landmarks")))
        if self._preview is not None and isinstance(item, Frame):
            self._preview(item, stamp)

    def _capture_stamp(self, item: Frame) -> float:
        """Capture stamp (s) of a camera/video/image frame: the source's read time, except for a
        file read faster than real time (``realtime: false``), whose frames are stamped on their
        media timeline (first read time + media time), as if played live: its outputs then do
        not depend on how fast this machine processes it."""
        if self._spec.kind in ("video", "images") and not bool(self._param("realtime")):
            if self._media_epoch is None:
                self._media_epoch = item.stamp - item.media_time
            return self._media_epoch + item.media_time
        self._media_epoch = None
        return item.stamp


def publish_patiently(pub: Any, msg: Any, *, patience_s: float, stop: threading.Event,
                      on_retry: Callable[[], None]) -> None:
    """Publish ``msg`` on a batch source's keep-all publisher ``pub`` (contract.REPLAY). A full
    writer history is backpressure, not an error: Fast DDS blocks for its max_blocking_time and
    rclpy then raises "cannot publish data" (measured: after ~14 000 frames of a 20 000-frame
    unpaced replay, once the recorder fell behind). The sample is retried every 5 ms
    (``on_retry`` counts each) until it is taken, for up to ``patience_s`` (a subscriber that
    never reads can stall a batch run that long per frame, then RuntimeError names the topic), or
    until ``stop`` is set (RuntimeError too)."""
    end = time.monotonic() + patience_s
    while True:
        try:
            pub.publish(msg)
            return
        except Exception as exc:  # noqa: BLE001 - rclpy's RCLError: the writer's history is full
            if stop.is_set() or time.monotonic() > end:
                raise RuntimeError(f"{pub.topic_name}: a subscriber took no sample for "
                                   f"{patience_s:.0f} s ({exc})") from exc
            on_retry()
            time.sleep(0.005)
