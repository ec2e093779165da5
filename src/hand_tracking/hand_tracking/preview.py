"""The tracker's operator preview (issue 23): a downscaled, rate-limited JPEG of the camera frame for
the browser console, published on ``contract.TOPIC_IMAGE_PREVIEW`` only while someone subscribes.

No rclpy. The hot path pays one lock and a reference assignment per offered frame
(:meth:`PreviewMailbox.offer`, at most ``max_rate_hz`` times a second, and only while a subscriber
exists): the downscale, the JPEG encoding and the publish run on :class:`PreviewWorker`'s own thread.
A frame offered while the previous one still waits is replaced (never queued) and counted in
``replaced``; the tracker reports the counters in its diagnostics.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Defaults of the tracker parameters ``preview_max_rate_hz`` and ``preview_width_px``.
DEFAULT_MAX_RATE_HZ = 10.0
DEFAULT_WIDTH_PX = 320
#: JPEG quality of the preview (OpenCV's 0-100 scale).
JPEG_QUALITY = 70


@dataclass(frozen=True)
class PreviewFrame:
    """One offered camera frame: BGR uint8 (H, W, 3) image (not copied: the source makes a new
    array per frame), its capture stamp (as the flexions carry it: a builtin_interfaces/Time or
    seconds) and its index in the source."""

    image: np.ndarray
    stamp: Any
    index: int


def downscale(image: np.ndarray, width: int) -> np.ndarray:
    """``image`` (H, W, 3) resized to ``width`` px wide, aspect kept (area interpolation); the image
    itself when it is not wider. ValueError for a width < 8."""
    import cv2

    if width < 8:
        raise ValueError(f"preview width must be >= 8 px, got {width}")
    h, w = image.shape[:2]
    if w <= width:
        return image
    height = max(1, int(round(h * width / w)))
    return cv2.resize(image, (int(width), height), interpolation=cv2.INTER_AREA)


def encode_jpeg(image: np.ndarray, quality: int = JPEG_QUALITY) -> bytes:
    """JPEG bytes of a BGR uint8 image; RuntimeError if OpenCV cannot encode it."""
    import cv2

    ok, buf = cv2.imencode(".jpg", image, [int(cv2.IMWRITE_JPEG_QUALITY), int(quality)])
    if not ok:
        raise RuntimeError(f"JPEG encoding of a {image.shape} image failed")
    return buf.tobytes()


class PreviewMailbox:
    """A one-slot mailbox between the tracker's worker (producer) and the preview thread.

    max_rate_hz: at most this many frames a second are taken in (:meth:`due`, on the caller's
    monotonic clock); 0 disables the preview. Counters: ``offered`` (frames put in), ``replaced``
    (put in while the previous one was still waiting: dropped), ``taken``.
    """

    def __init__(self, max_rate_hz: float = DEFAULT_MAX_RATE_HZ):
        self.max_rate_hz = float(max_rate_hz)
        self._cond = threading.Condition()
        self._item: PreviewFrame | None = None
        self._last_offer = -float("inf")
        self.offered = self.replaced = self.taken = 0

    def due(self, now: float) -> bool:
        """Whether a frame offered at ``now`` (monotonic s) would be taken in: the rate allows it
        (1 ms of slack, so that a 30 fps source is not cut to 7.5 Hz by a 10 Hz limit's rounding)."""
        return self.max_rate_hz > 0.0 and now - self._last_offer + 1e-3 >= 1.0 / self.max_rate_hz

    def offer(self, frame: PreviewFrame, now: float) -> bool:
        """Put ``frame`` in if :meth:`due`; returns whether it was taken in."""
        if not self.due(now):
            return False
        with self._cond:
            self._last_offer = now
            if self._item is not None:
                self.replaced += 1
            self._item = frame
            self.offered += 1
            self._cond.notify()
        return True

    def take(self, timeout: float) -> PreviewFrame | None:
        """The waiting frame (emptying the slot), or None after ``timeout`` s without one."""
        with self._cond:
            if self._item is None:
                self._cond.wait(timeout)
            item, self._item = self._item, None
            if item is not None:
                self.taken += 1
            return item

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()


class PreviewWorker:
    """The preview thread: takes frames from a :class:`PreviewMailbox`, downscales them to
    ``width`` px, JPEG-encodes them and calls ``publish(jpeg_bytes, frame, (w, h))``. Errors in
    ``publish`` are counted (``errors``, ``last_error``) and never end the thread."""

    def __init__(self, mailbox: PreviewMailbox, publish: Callable[[bytes, PreviewFrame, tuple[int, int]], None],
                 width: int = DEFAULT_WIDTH_PX, quality: int = JPEG_QUALITY):
        self.mailbox, self.publish = mailbox, publish
        self.width, self.quality = int(width), int(quality)
        self.published = self.errors = 0
        self.last_error = ""
        self.encode_ms_total = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tracker preview", daemon=True)

    def start(self) -> PreviewWorker:
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self.mailbox.wake()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            frame = self.mailbox.take(0.2)
            if frame is None:
                continue
            t0 = time.monotonic()
            try:
                small = downscale(frame.image, self.width)
                data = encode_jpeg(small, self.quality)
                self.encode_ms_total += (time.monotonic() - t0) * 1e3
                self.publish(data, frame, (int(small.shape[1]), int(small.shape[0])))
                self.published += 1
            except Exception as exc:  # noqa: BLE001 - the preview must never take the tracker down
                self.errors += 1
                self.last_error = f"{type(exc).__name__}: {exc}"


class PreviewOutlet:
    """The tracker's preview while active: a :class:`PreviewMailbox` and its :class:`PreviewWorker`.

    publish(jpeg, frame, (w, h)): sends one encoded frame (preview thread). subscribers(): how many
    subscribe now (a frame is offered only when > 0). max_rate_hz, width_px: the tracker's
    ``preview_max_rate_hz`` and ``preview_width_px``; change them with :meth:`set_rate` and
    :meth:`set_width` while it runs."""

    def __init__(self, publish: Callable[[bytes, PreviewFrame, tuple[int, int]], None],
                 subscribers: Callable[[], int], max_rate_hz: float = DEFAULT_MAX_RATE_HZ,
                 width_px: int = DEFAULT_WIDTH_PX):
        self.box = PreviewMailbox(max_rate_hz)
        self.worker = PreviewWorker(self.box, publish, width_px).start()
        self._subscribers = subscribers

    def offer(self, image: np.ndarray, stamp: Any, index: int) -> None:
        """Worker thread, after the frame's flexions went out: hand the frame to the preview thread
        when the rate allows and someone subscribes (no copy, no encoding here)."""
        now = time.monotonic()
        if self.box.due(now) and self._subscribers() > 0:
            self.box.offer(PreviewFrame(image, stamp, index), now)

    def set_rate(self, max_rate_hz: float) -> None:
        self.box.max_rate_hz = float(max_rate_hz)

    def set_width(self, width_px: int) -> None:
        self.worker.width = int(width_px)

    def values(self) -> dict[str, str]:
        """The diagnostics counters: published, replaced (a newer frame came first), errors."""
        return {"preview_published": str(self.worker.published), "preview_replaced": str(self.box.replaced),
                "preview_errors": str(self.worker.errors)}

    def stop(self) -> None:
        self.worker.stop()
