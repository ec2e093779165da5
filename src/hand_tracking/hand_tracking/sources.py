"""Frame sources for the tracker: V4L2 camera, video file, image folder. No rclpy.

Every source has ``read() -> Frame | None`` (None: end of a finite stream), ``close()``, ``fps``
and ``name``. Each :class:`Frame` carries its index in the stream, its capture stamp (the
source's clock at the moment the frame was read: wall-clock seconds by default, the node passes
its ROS clock) and its *media time* (seconds on the stream's own monotonic timeline: frame
index / fps for files, a monotonic clock for cameras; filters run on it, so a video processed
faster than real time is filtered exactly as if it had been played live).

Recordings (video files, image folders, bags) take a ``playback_rate``: 1.0 plays them at the
recording's pace; 2.0 replays a 30 fps video as a 60 fps camera would deliver it: ``fps`` is 60,
frames are paced 1/60 s apart (``realtime``), media times advance 1/60 s a frame and stamps are the
clock at read time, exactly as for a live 60 fps camera (the motion in the images is then twice as
fast as it was recorded). Every frame is still read once: nothing is skipped to reach the rate.

Errors: :class:`SourceError` when a source cannot be opened or stops delivering (the message says
what to check); :class:`FrameError` for one unreadable frame (the stream goes on). Every finite
source ends (``read()`` returns None); a file that ends before its container says it should (a
damaged or truncated video) raises SourceError naming the frame where decoding stopped, and a
folder whose every image is unreadable raises SourceError instead of looping on FrameErrors.

Source strings (the node's ``source`` parameter), parsed by :func:`parse_source`:
``camera:0`` or ``camera:/dev/video2``, ``video:/path/clip.mp4``, ``images:/path/dir``,
``bag:/path/to/rosbag2`` (recorded /hand/landmarks, see :mod:`hand_tracking.replay`) and
``topic:/hand/landmarks`` (live landmarks, handled by the node).
"""

from __future__ import annotations

import glob
import math
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from hand_tracking.source_errors import Clock, FrameError, SourceError, check_playback_rate

SOURCE_KINDS = ("camera", "video", "images", "bag", "topic")
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")


@dataclass
class Frame:
    """One camera/video/image frame.

    image: (H, W, 3) uint8, BGR (OpenCV order).
    index: 0-based frame number in the source (video: index in the file, restarts on loop).
    stamp: capture time, seconds on the source's clock (wall clock / ROS clock).
    media_time: seconds on the stream's own monotonic timeline (for filters).
    decode_ms: time spent reading/decoding this frame.
    """

    image: np.ndarray
    index: int
    stamp: float
    media_time: float
    decode_ms: float = 0.0

    @property
    def width(self) -> int:
        return int(self.image.shape[1])

    @property
    def height(self) -> int:
        return int(self.image.shape[0])


class FrameSource(Protocol):
    name: str
    fps: float

    def read(self) -> Frame | None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class SourceSpec:
    """A parsed source string: ``kind`` in SOURCE_KINDS and its ``target`` (index, path, topic)."""

    kind: str
    target: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.target}"


def parse_source(text: str) -> SourceSpec:
    """Parse ``kind:target``; ValueError with the accepted forms otherwise.

    ``camera`` alone means ``camera:0``; ``topic`` alone means ``topic:/hand/landmarks``.
    """
    forms = ("camera:0, camera:/dev/video2, video:/path/clip.mp4, images:/path/dir, "
             "bag:/path/to/rosbag2, topic:/hand/landmarks")
    t = (text or "").strip()
    kind, sep, target = t.partition(":")
    kind = kind.strip().lower()
    target = target.strip()
    if kind not in SOURCE_KINDS:
        raise ValueError(f"unknown source {text!r}; use one of: {forms}")
    if not target:
        if kind == "camera":
            target = "0"
        elif kind == "topic":
            target = "/hand/landmarks"
        else:
            raise ValueError(f"source {text!r} needs a path after '{kind}:' ({forms})")
    if kind == "camera" and not (target.isdigit() or target.startswith("/dev/")):
        raise ValueError(f"camera source {text!r}: give a V4L2 index (camera:0) or a device path "
                         "(camera:/dev/video0)")
    if kind == "topic" and not target.startswith("/"):
        raise ValueError(f"topic source {text!r}: give an absolute topic name (topic:/hand/landmarks)")
    return SourceSpec(kind, target)


def _video_devices() -> list[str]:
    return sorted(glob.glob("/dev/video*"))


class CameraSource:
    """A V4L2 camera (OpenCV ``CAP_V4L2``) by index or ``/dev/videoN`` path.

    Opening reads one real frame (``isOpened()`` alone succeeds on devices that never deliver,
    e.g. metadata nodes); failure raises SourceError naming the device, the devices that exist
    and what to check. width/height/fps: requested capture mode (0 = driver default).
    """

    def __init__(self, device: int | str, *, width: int = 0, height: int = 0, fps: float = 0.0,
                 clock: Clock = time.time):
        import cv2

        self._cv2 = cv2
        self.device = device
        self.name = f"camera:{device}"
        self._clock = clock
        dev = int(device) if isinstance(device, str) and device.isdigit() else device
        path = f"/dev/video{dev}" if isinstance(dev, int) else str(dev)
        existing = _video_devices()
        hint = (f"video devices present: {', '.join(existing)}" if existing else
                "no /dev/video* device exists (camera unplugged, or not passed into this container/VM?)")
        if not os.path.exists(path):
            raise SourceError(f"camera {device!r}: {path} does not exist; {hint}")
        if not os.access(path, os.R_OK | os.W_OK):
            raise SourceError(f"camera {device!r}: no permission to open {path}; add the user to the "
                              f"'video' group (sudo usermod -aG video $USER, then log in again)")
        cap = cv2.VideoCapture(dev, cv2.CAP_V4L2)
        if not cap.isOpened():
            cap.release()
            raise SourceError(f"camera {device!r}: OpenCV cannot open {path} with V4L2; is it a capture "
                              f"device (v4l2-ctl --list-devices) and not busy in another program? {hint}")
        if width > 0:
            cap.set(cv2.CAP_PROP_FRAME_WIDTH, width)
        if height > 0:
            cap.set(cv2.CAP_PROP_FRAME_HEIGHT, height)
        if fps > 0:
            cap.set(cv2.CAP_PROP_FPS, fps)
        t0 = time.monotonic()
        ok, img = cap.read()
        if not ok or img is None or img.size == 0:
            cap.release()
            raise SourceError(f"camera {device!r}: {path} opened but delivered no frame in "
                              f"{time.monotonic() - t0:.1f} s; it may be a metadata node (try the "
                              f"other /dev/videoN of the same camera), busy, or unsupported. {hint}")
        self._cap = cap
        self.fps = float(cap.get(cv2.CAP_PROP_FPS)) or 30.0
        self._pending: np.ndarray | None = img
        self._index = 0
        self._t0 = time.monotonic()

    def read(self) -> Frame | None:
        if self._cap is None:
            raise SourceError(f"{self.name}: read after close")
        t0 = time.monotonic()
        if self._pending is not None:
            img, self._pending = self._pending, None
        else:
            ok, img = self._cap.read()
            if not ok or img is None:
                raise SourceError(f"{self.name}: frame read failed (camera unplugged or stalled?)")
        t1 = time.monotonic()
        f = Frame(img, self._index, self._clock(), t1 - self._t0, (t1 - t0) * 1e3)
        self._index += 1
        return f

    def close(self) -> None:
        if self._cap is not None:
            self._cap.release()
            self._cap = None


class VideoFileSource:
    """A video file decoded with OpenCV (FFmpeg).

    realtime: pace reads at ``fps`` (like a live camera); else as fast as decoded.
    loop: restart at the end (media_time keeps increasing; ``index`` restarts at 0).
    playback_rate: > 0, 1.0 = the file's own rate; ``fps`` = the file's rate (``native_fps``) x
    playback_rate, and media time = frame time / playback_rate (2.0: a 30 fps file is a 60 fps
    camera). ValueError if not positive.
    ``realtime`` and ``loop`` may be changed between reads.
    Raises SourceError if the file is missing or yields no decodable frame, and from ``read()``
    when decoding stops before the frame count the container declares (``frame_count``, when it
    declares one): "decoding stopped at frame N of M" (N = the first frame that could not be read).
    """

    #: Frames the decoder may deliver fewer than the container declares before the file counts as
    #: broken (some containers round their declared count).
    COUNT_TOLERANCE = 1

    def __init__(self, path: str | os.PathLike, *, realtime: bool = True, loop: bool = False,
                 clock: Clock = time.time, playback_rate: float = 1.0):
        import cv2

        self._cv2 = cv2
        self.playback_rate = check_playback_rate(playback_rate)
        self.path = os.fspath(path)
        self.name = f"video:{self.path}"
        self.realtime = realtime
        self.loop = loop
        self._clock = clock
        if not os.path.isfile(self.path):
            raise SourceError(f"video file {self.path!r} does not exist (cwd {os.getcwd()})")
        self._cap = None
        self._open()
        ok, img = self._cap.read()
        if not ok or img is None:
            self.close()
            raise SourceError(f"video file {self.path!r}: no frame could be decoded (not a video, "
                              "or a codec this OpenCV build lacks)")
        self._pending: np.ndarray | None = img
        fps = float(self._cap.get(cv2.CAP_PROP_FPS))
        #: The file's own frame rate (Hz); ``fps`` is the rate frames are served at.
        self.native_fps = fps if math.isfinite(fps) and 1.0 <= fps <= 1000.0 else 30.0
        self.fps = self.native_fps * self.playback_rate
        self.frame_count = int(self._cap.get(cv2.CAP_PROP_FRAME_COUNT))
        self._index = 0          # index of the next frame in the file
        self._offset = 0.0       # media time of the current loop's frame 0
        self._served = 0         # frames delivered since pacing (re)started
        self._pace_t0: float | None = None

    def _open(self) -> None:
        if self._cap is not None:
            self._cap.release()
        self._cap = self._cv2.VideoCapture(self.path)
        if not self._cap.isOpened():
            raise SourceError(f"video file {self.path!r}: OpenCV cannot open it")

    def _pace(self) -> None:
        if not self.realtime:
            self._pace_t0 = None
            return
        now = time.monotonic()
        if self._pace_t0 is None:
            self._pace_t0, self._served = now, 0
        due = self._pace_t0 + self._served / self.fps
        if now - due > 0.5:  # far behind (a pause, a slow consumer): restart the clock
            self._pace_t0, self._served = now, 0
        elif due > now:
            time.sleep(due - now)
        self._served += 1

    def read(self) -> Frame | None:
        if self._cap is None:
            raise SourceError(f"{self.name}: read after close")
        t0 = time.monotonic()
        if self._pending is not None:
            img, self._pending = self._pending, None
        else:
            ok, img = self._cap.read()
            if not ok or img is None:
                if self.frame_count > 0 and self._index < self.frame_count - self.COUNT_TOLERANCE:
                    raise SourceError(f"{self.name}: decoding stopped at frame {self._index} of "
                                      f"{self.frame_count} the file declares: the file is damaged or truncated")
                if not self.loop or self._index == 0:
                    return None
                self._offset += self._index / self.fps
                self._index = 0
                self._open()
                ok, img = self._cap.read()
                if not ok or img is None:
                    return None
        decode_ms = (time.monotonic() - t0) * 1e3
        self._pace()
        f = Frame(img, self._index, self._clock(), self._offset + self._index / self.fps, decode_ms)
        self._index += 1
        return f

    def close(self) -> None:
        if self._cap is not None:
            self._cap.release()
            self._cap = None


class ImageFolderSource:
    """The images of a folder (png, jpg, bmp, tif, webp), in file-name order, as a stream.

    fps: the folder's frame rate (``native_fps``); frames are served at fps x playback_rate
    (``fps`` after construction; media time = index / that rate; pacing when ``realtime``).
    An unreadable file raises FrameError for that frame ("frame N: <file>: not a readable image");
    the next read goes on. Raises SourceError if the folder is missing or holds no image, and from
    ``read()`` at the end of a pass in which no image was readable (looping would only repeat
    the errors).
    """

    def __init__(self, path: str | os.PathLike, *, fps: float = 30.0, realtime: bool = False,
                 loop: bool = False, clock: Clock = time.time, playback_rate: float = 1.0):
        import cv2

        self._cv2 = cv2
        self.path = os.fspath(path)
        self.name = f"images:{self.path}"
        if not math.isfinite(fps) or fps <= 0:
            raise ValueError(f"fps must be positive, got {fps}")
        self.playback_rate = check_playback_rate(playback_rate)
        self.native_fps = float(fps)
        self.fps = self.native_fps * self.playback_rate
        self.realtime = realtime
        self.loop = loop
        self._clock = clock
        if not os.path.isdir(self.path):
            raise SourceError(f"image folder {self.path!r} does not exist or is not a directory")
        self.files = sorted(f for f in os.listdir(self.path) if f.lower().endswith(IMAGE_EXTENSIONS))
        if not self.files:
            raise SourceError(f"image folder {self.path!r} holds no image ({', '.join(IMAGE_EXTENSIONS)})")
        self._i = 0
        self._n = 0
        self._pace_t0: float | None = None
        self._closed = False
        self._good_in_pass = 0

    def read(self) -> Frame | None:
        if self._closed:
            raise SourceError(f"{self.name}: read after close")
        if self._i >= len(self.files):
            if self._good_in_pass == 0:
                raise SourceError(f"{self.name}: none of its {len(self.files)} images is readable")
            if not self.loop:
                return None
            self._i, self._good_in_pass = 0, 0
        if self.realtime:
            now = time.monotonic()
            if self._pace_t0 is None or now - (self._pace_t0 + self._n / self.fps) > 0.5:
                self._pace_t0, self._n0 = now, self._n
            due = self._pace_t0 + (self._n - self._n0) / self.fps
            if due > now:
                time.sleep(due - now)
        index, n = self._i, self._n
        self._i += 1
        self._n += 1
        fname = os.path.join(self.path, self.files[index])
        t0 = time.monotonic()
        img = self._cv2.imread(fname, self._cv2.IMREAD_COLOR)
        if img is None or img.ndim != 3:
            raise FrameError(f"frame {index}: {fname}: not a readable image, skipped")
        self._good_in_pass += 1
        return Frame(img, index, self._clock(), n / self.fps, (time.monotonic() - t0) * 1e3)

    def close(self) -> None:
        self._closed = True


def open_frame_source(spec: SourceSpec, *, realtime: bool = True, loop: bool = False,
                      images_fps: float = 30.0, camera_width: int = 0, camera_height: int = 0,
                      camera_fps: float = 0.0, clock: Clock = time.time, playback_rate: float = 1.0):
    """Open the source a :class:`SourceSpec` names (camera, video, images or bag).

    playback_rate: recordings only (see the module docstring); a camera runs at its own rate, so a
    rate other than 1.0 with a camera is a ValueError.

    Returns a FrameSource (bag: a :class:`hand_tracking.replay.BagLandmarkSource`, whose frames
    carry landmarks instead of images). Raises SourceError; ValueError for ``topic`` (the node
    subscribes to topics itself).
    """
    rate = check_playback_rate(playback_rate)
    if spec.kind == "camera":
        if rate != 1.0:
            raise ValueError(f"{spec}: playback_rate {rate:g} applies to recordings (video, images, bag); "
                             "a camera delivers at its own rate (camera_rate_hz)")
        dev: int | str = int(spec.target) if spec.target.isdigit() else spec.target
        return CameraSource(dev, width=camera_width, height=camera_height, fps=camera_fps, clock=clock)
    if spec.kind == "video":
        return VideoFileSource(spec.target, realtime=realtime, loop=loop, clock=clock, playback_rate=rate)
    if spec.kind == "images":
        return ImageFolderSource(spec.target, fps=images_fps, realtime=realtime, loop=loop, clock=clock,
                                 playback_rate=rate)
    if spec.kind == "bag":
        from hand_tracking.replay import BagLandmarkSource

        return BagLandmarkSource(spec.target, realtime=realtime, loop=loop, clock=clock, playback_rate=rate)
    raise ValueError(f"{spec}: not a frame source (topics are subscribed by the node)")


# --- background reading ---------------------------------------------------------------------------

_END = object()


class PrefetchSource:
    """Reads a source in a background thread so decoding overlaps the consumer's inference.

    depth: queue length. drop_old: when the queue is full, drop the oldest frame (live-camera
    semantics: the consumer always gets the freshest frames, latency stays bounded) instead of
    blocking the reader (every frame of a file is processed).
    reopen: called to reopen the source after a SourceError (e.g. a camera unplugged and plugged
    back), every ``retry_period`` s until it succeeds or the prefetcher is closed; without it a
    SourceError ends the stream.

    ``read(timeout)`` returns the next item, None at the end of the stream, raises the source's
    FrameError/SourceError in order, and raises TimeoutError when nothing came within ``timeout``.
    """

    def __init__(self, source, *, depth: int = 2, drop_old: bool = False,
                 reopen: Callable[[], object] | None = None, retry_period: float = 1.0):
        self.source = source
        self.name = source.name
        self.fps = source.fps
        self.dropped = 0
        self._q: queue.Queue = queue.Queue(maxsize=max(1, depth))
        #: May be changed while running (the node follows its ``realtime`` parameter).
        self.drop_old = drop_old
        self._reopen = reopen
        self._retry = retry_period
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"reader {self.name}", daemon=True)
        self._thread.start()

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            if self.drop_old and not isinstance(item, Exception) and item is not _END:
                with self._lock:
                    if self._q.full():
                        try:
                            self._q.get_nowait()
                            self.dropped += 1
                        except queue.Empty:
                            pass
                    self._q.put_nowait(item)
                return True
            try:
                self._q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                item = self.source.read()
            except FrameError as exc:
                if not self._put(exc):
                    return
                continue
            except SourceError as exc:
                if not self._put(exc):
                    return
                if self._reopen is None:
                    self._put(_END)
                    return
                self._close_source()
                while not self._stop.wait(self._retry):
                    try:
                        self.source = self._reopen()
                        break
                    except SourceError as again:
                        self._put(again)
                continue
            except Exception as exc:  # noqa: BLE001 - an unexpected bug must reach the consumer
                self._put(SourceError(f"{self.name}: {type(exc).__name__}: {exc}"))
                self._put(_END)
                return
            if item is None:
                self._put(_END)
                return
            if not self._put(item):
                return

    def read(self, timeout: float | None = None):
        try:
            item = self._q.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"{self.name}: no frame within {timeout} s") from None
        if item is _END:
            self._q.put(_END)  # stay at the end for further reads
            return None
        if isinstance(item, Exception):
            raise item
        return item

    def _close_source(self) -> None:
        try:
            self.source.close()
        except Exception:  # noqa: BLE001
            pass

    def close(self, timeout: float = 2.0, *, close_source: bool = True) -> None:
        """Stop the reader thread; close the source too unless ``close_source`` is False (then
        :attr:`source` can be wrapped again later, e.g. after a lifecycle deactivate/activate)."""
        self._stop.set()
        while True:  # unblock a reader waiting on a full queue
            try:
                self._q.get_nowait()
            except queue.Empty:
                break
        self._thread.join(timeout)
        if close_source:
            self._close_source()

    def set_option(self, name: str, value: object) -> bool:
        """Set ``realtime``/``loop`` on the wrapped source if it has it; True if set."""
        if hasattr(self.source, name):
            setattr(self.source, name, value)
            return True
        return False

