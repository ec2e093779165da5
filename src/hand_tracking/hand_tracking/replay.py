"""Replay of recorded landmarks (rosbag2 files read with ``rosbags``). No rclpy.

A session recorded as ``/hand/landmarks`` (hand_msgs/msg/HandLandmarksArray) can be fed through
the tracker's geometry, filter and calibration again instead of MediaPipe, e.g. to re-map it with
a new calibration. :class:`BagLandmarkSource` has the same ``read()/close()`` interface as the
frame sources of :mod:`hand_tracking.sources`, but its items are :class:`LandmarkFrame` s.

The hand_msgs definitions are registered with rosbags' typesys from the installed
``share/hand_msgs/msg/*.msg`` (:func:`hand_common.bag.typestore`). Bags in MCAP or sqlite3
storage, as written by ``ros2 bag record`` or :class:`hand_common.bag.BagWriter`, are read.

:func:`observations_from_msg` converts a HandLandmarksArray message to observations; it reads
fields by name, so it works on rosbags' and on rclpy's message objects alike.
"""

from __future__ import annotations

import math
import os
import pathlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hand_common.contract import TOPIC_LANDMARKS
from hand_tracking.landmarks import HandObservation
from hand_tracking.source_errors import Clock, FrameError, SourceError, check_playback_rate

LANDMARKS_TYPE = "hand_msgs/msg/HandLandmarksArray"


@dataclass
class LandmarkFrame:
    """One recorded frame's hands, in place of an image.

    hands: observations (may be empty: a frame without a hand).
    index: source frame index (the recorded HandLandmarks.frame_index; counted on for empty frames).
    stamp: time of this replay read on the replay clock (s).
    media_time: seconds since the first recorded capture, plus the loop offset, divided by the
    source's playback rate: the stream's own timeline as played.
    recorded_stamp: the recorded capture time (s), :func:`stamp_seconds` of the recorded header
    stamp (exactly the float a live tracker ran its filter on).
    recorded_ns: the recorded header stamp in integer nanoseconds (sec * 1e9 + nanosec).
    width, height: recorded image size in pixels (0 if unknown).
    frame_id: recorded header frame_id.
    decode_ms: time to read and deserialize the message.
    problems: what was wrong in the recorded message (kept, reported by the tracker).
    capture_time: the capture time (s) the tracker filters on: ``recorded_stamp`` exactly at
    playback rate 1 (a replay reproduces the live run); at another rate the recording's timeline
    as played: first recorded capture + ``media_time`` (2.0: frames 1/60 s apart for a 30 fps
    recording, as a 60 fps camera). None: ``recorded_stamp``.
    """

    hands: list[HandObservation]
    index: int
    stamp: float
    media_time: float
    recorded_stamp: float
    recorded_ns: int = 0
    width: int = 0
    height: int = 0
    frame_id: str = ""
    decode_ms: float = 0.0
    problems: list[str] = field(default_factory=list)
    capture_time: float | None = None

    @property
    def filter_time(self) -> float:
        """The capture time (s) to filter on: ``capture_time``, else ``recorded_stamp``."""
        return self.recorded_stamp if self.capture_time is None else self.capture_time


def stamp_seconds(stamp: Any) -> float:
    """builtin_interfaces/Time (sec, nanosec) → float seconds."""
    return float(stamp.sec) + 1e-9 * float(stamp.nanosec)


def _points(points: Any) -> np.ndarray:
    return np.array([(p.x, p.y, p.z) for p in points], dtype=float)


def observations_from_msg(msg: Any) -> tuple[list[HandObservation], list[str]]:
    """HandLandmarksArray (rosbags or rclpy object) → (observations, problems).

    A hand with a wrong landmark count or an unknown handedness is left out and named in
    ``problems``; non-finite coordinates are kept (the tracker rejects such skeletons itself).
    """
    hands: list[HandObservation] = []
    problems: list[str] = []
    for i, h in enumerate(msg.hands):
        try:
            hands.append(HandObservation(
                image=_points(h.image_landmarks),
                world=_points(h.world_landmarks),
                handedness=str(h.handedness).strip().lower(),
                score=float(h.handedness_score),
                hand_id=int(h.hand_id),
            ))
        except ValueError as exc:
            problems.append(f"hand {i} (frame {h.frame_index}): {exc}")
    return hands, problems


class BagLandmarkSource:
    """Recorded ``/hand/landmarks`` from a rosbag2 directory (or its .mcap/.db3 file's folder).

    realtime: pace reads as recorded (capture-stamp differences / playback_rate); else as fast as read.
    loop: restart at the end (media_time keeps increasing).
    playback_rate: > 0, 1.0 = the recording's pace; 2.0 plays a 30 fps recording as a 60 fps
    stream (``fps`` doubles, media time and ``capture_time`` advance half as fast as recorded).
    ValueError if not positive.
    Raises SourceError if the bag cannot be opened or holds no HandLandmarksArray on ``topic``.
    """

    def __init__(self, path: str | os.PathLike, *, topic: str = TOPIC_LANDMARKS, realtime: bool = True,
                 loop: bool = False, clock: Clock = time.time, playback_rate: float = 1.0):
        from hand_common import bag

        self.playback_rate = check_playback_rate(playback_rate)
        p = pathlib.Path(path)
        if p.is_file():  # a storage file given: use its bag directory
            p = p.parent
        self.path = p
        self.topic = topic
        self.name = f"bag:{p}"
        self.realtime = realtime
        self.loop = loop
        self._clock = clock
        if not (p / "metadata.yaml").is_file():
            raise SourceError(f"bag {str(p)!r}: not a rosbag2 directory (no metadata.yaml)")
        try:
            self._store = bag.typestore()
        except Exception as exc:  # noqa: BLE001 - ament index lookup or .msg parse
            raise SourceError(f"bag replay needs the hand_msgs definitions: {exc}") from exc
        from rosbags.rosbag2 import Reader

        self._reader_cls = Reader
        try:
            with Reader(p) as reader:
                conns = [c for c in reader.connections if c.topic == topic]
                topics = sorted({f"{c.topic} ({c.msgtype})" for c in reader.connections})
                count = sum(c.msgcount for c in conns)
        except Exception as exc:  # noqa: BLE001 - rosbags raises several types
            raise SourceError(f"bag {str(p)!r}: cannot read it: {exc}") from exc
        if not conns:
            raise SourceError(f"bag {str(p)!r} has no topic {topic}; it holds: {', '.join(topics) or 'nothing'}")
        bad = [c.msgtype for c in conns if c.msgtype != LANDMARKS_TYPE]
        if bad:
            raise SourceError(f"bag {str(p)!r}: {topic} has type {bad[0]}, expected {LANDMARKS_TYPE}")
        if count == 0:
            raise SourceError(f"bag {str(p)!r}: {topic} holds no message")
        self.message_count = count
        #: The recording's frame rate (Hz), refined from the recorded stamps as they come.
        self.native_fps = 30.0
        self._origin: float | None = None  # the first recorded capture time of the first pass
        self._iter: Iterator | None = None
        self._reader = None
        self._offset = 0.0
        self._first: float | None = None
        self._last: float | None = None
        self._index = -1
        self._pace_t0: float | None = None
        self._pace_r0 = 0.0
        self._closed = False

    def _messages(self) -> Iterator:
        reader = self._reader_cls(self.path)
        reader.open()
        self._reader = reader
        conns = [c for c in reader.connections if c.topic == self.topic]
        try:
            for conn, t_ns, raw in reader.messages(connections=conns):
                yield t_ns, raw, conn.msgtype
        finally:
            reader.close()
            self._reader = None

    def _deserialize(self, raw: bytes, msgtype: str, t_ns: int) -> Any:
        """CDR → message: rosbags first; if it refuses (its size check is stricter than rmw's about
        trailing alignment padding in some recordings), rmw's own deserializer via rclpy."""
        try:
            return self._store.deserialize_cdr(raw, msgtype)
        except Exception as first:  # noqa: BLE001 - rosbags raises several types
            try:
                from hand_msgs.msg import HandLandmarksArray
                from rclpy.serialization import deserialize_message

                return deserialize_message(bytes(raw), HandLandmarksArray)
            except Exception:  # noqa: BLE001
                raise FrameError(f"{self.name}: undecodable message at {t_ns} ns: {first}") from first

    def read(self) -> LandmarkFrame | None:
        if self._closed:
            raise SourceError(f"{self.name}: read after close")
        t0 = time.monotonic()
        if self._iter is None:
            self._iter = self._messages()
        item = next(self._iter, None)
        if item is None:
            if not self.loop or self._first is None or self._last is None:
                return None
            self._offset += ((self._last - self._first) + 1.0 / self.native_fps) / self.playback_rate
            self._first = self._last = None
            self._iter = self._messages()
            item = next(self._iter, None)
            if item is None:
                return None
        t_ns, raw, msgtype = item
        msg = self._deserialize(raw, msgtype, t_ns)
        recorded = stamp_seconds(msg.header.stamp)
        recorded_ns = int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)
        if recorded <= 0.0 or not math.isfinite(recorded):
            recorded, recorded_ns = t_ns * 1e-9, int(t_ns)
        if self._first is None:
            self._first = recorded
            if self._origin is None:
                self._origin = recorded
        elif self._last is not None and recorded > self._last:
            dt = recorded - self._last
            self.native_fps = 0.9 * self.native_fps + 0.1 * (1.0 / dt) if dt > 1e-4 else self.native_fps
        self._last = recorded
        hands, problems = observations_from_msg(msg)
        self._index = int(msg.hands[0].frame_index) if len(msg.hands) else self._index + 1
        width = int(msg.hands[0].image_width) if len(msg.hands) else 0
        height = int(msg.hands[0].image_height) if len(msg.hands) else 0
        media = self._offset + (recorded - self._first) / self.playback_rate
        decode_ms = (time.monotonic() - t0) * 1e3
        if self.realtime:
            now = time.monotonic()
            if self._pace_t0 is None or now - (self._pace_t0 + media - self._pace_r0) > 0.5:
                self._pace_t0, self._pace_r0 = now, media
            due = self._pace_t0 + (media - self._pace_r0)
            if due > now:
                time.sleep(due - now)
        else:
            self._pace_t0 = None
        capture = None if self.playback_rate == 1.0 else self._origin + media
        return LandmarkFrame(hands, self._index, self._clock(), media, recorded, recorded_ns, width, height,
                             str(msg.header.frame_id), decode_ms, problems, capture)

    @property
    def fps(self) -> float:
        """The rate frames are served at (Hz): the recording's (``native_fps``) x playback_rate."""
        return self.native_fps * self.playback_rate

    def close(self) -> None:
        self._closed = True
        if self._iter is not None:
            self._iter.close()
            self._iter = None


def read_landmark_frames(path: str | os.PathLike, topic: str = TOPIC_LANDMARKS) -> list[LandmarkFrame]:
    """All recorded frames of a bag at once (no pacing, no loop)."""
    src = BagLandmarkSource(path, topic=topic, realtime=False, loop=False)
    out = []
    try:
        while True:
            try:
                f = src.read()
            except FrameError:
                continue
            if f is None:
                return out
            out.append(f)
    finally:
        src.close()


def landmark_array(store: Any, hands: list[HandObservation], *, stamp: float, frame_index: int,
                   width: int, height: int, frame_id: str = "camera_optical") -> Any:
    """A rosbags HandLandmarksArray message object (for writing bags without rclpy)."""
    T = store.types
    Time = T["builtin_interfaces/msg/Time"]
    Header = T["std_msgs/msg/Header"]
    Point = T["geometry_msgs/msg/Point"]
    HL = T["hand_msgs/msg/HandLandmarks"]
    HLA = T["hand_msgs/msg/HandLandmarksArray"]
    sec = int(math.floor(stamp))
    t = Time(sec=sec, nanosec=int(round((stamp - sec) * 1e9)) % 1_000_000_000)
    header = Header(stamp=t, frame_id=frame_id)

    def pts(a: np.ndarray) -> list:
        return [Point(x=float(x), y=float(y), z=float(z)) for x, y, z in a]

    msgs = [HL(header=header, frame_index=frame_index, handedness=h.handedness,
               handedness_score=float(h.score), hand_id=int(h.hand_id), image_width=width,
               image_height=height, image_landmarks=pts(h.image), world_landmarks=pts(h.world),
               # the gate's verdict is not known here (raw detections); a replay re-judges them
               accepted=False, quality=0.0, rejection="")
            for h in hands]
    return HLA(header=header, hands=msgs)


def write_landmark_bag(path: str | os.PathLike, frames: list[tuple[float, int, list[HandObservation]]],
                       *, width: int, height: int, topic: str = TOPIC_LANDMARKS) -> int:
    """Write ``(stamp_s, frame_index, hands)`` tuples as HandLandmarksArray to a new MCAP bag.

    Returns the number of messages. The bag opens with ``ros2 bag play`` and with
    :class:`BagLandmarkSource`.
    """
    from hand_common.bag import BagWriter

    with BagWriter(path) as w:
        w.add(topic, LANDMARKS_TYPE)
        for stamp, index, hands in frames:
            msg = landmark_array(w.store, hands, stamp=stamp, frame_index=index, width=width, height=height)
            w.write(topic, int(stamp * 1e9), w.store.serialize_cdr(msg, LANDMARKS_TYPE))
        return w.counts[topic]
