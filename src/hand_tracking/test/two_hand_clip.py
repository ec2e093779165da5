"""A recorded two-hand sequence made from the shared video, and MediaPipe over it ONCE per session.

The clip (2560x720, 30 fps, 621 frames, written with OpenCV into a temporary directory): the left
half is the original video (a physical RIGHT hand, palm to the camera), the right half a
horizontally mirrored copy (a physical LEFT hand), played ``OFFSET`` frames ahead (wrapping) so
that the two hands do different things at the same time (the right hand's fist near frame 270
meets an open left hand). The layout is what a non-mirrored camera facing the operator sees: the
operator's right hand on the image's left. Ground truth for identity: a hand whose wrist lies in
the left half of the image is the physical right hand.

MediaPipe runs at full resolution (about 10 ms per frame here, model_complexity 0, two hands,
video mode, mirror=False) through the package's own VideoFileSource and MediaPipeHands backend.
Imported by the tests (``sys.path`` insert of this folder); the module-level cache makes every
test module in one pytest process reuse the clip and its landmarks.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from dataclasses import dataclass

import numpy as np

OFFSET = 310
WIDTH, HEIGHT = 2560, 720


def physical_side(hand) -> str:
    """Ground truth of the clip: wrist in the image's left half → the physical right hand."""
    return "right" if float(hand.image[0, 0]) < 0.5 else "left"


def write_two_hand_clip(video: str | os.PathLike, out: str | os.PathLike, *, first: int = 0,
                        count: int | None = None, offset: int = OFFSET) -> int:
    """Write the side-by-side clip (frames ``first`` … ``first + count − 1`` of the original on the
    left, the mirrored copy ``offset`` frames ahead on the right) to ``out`` (mp4); returns frames."""
    import cv2

    cap = cv2.VideoCapture(str(video))
    frames = []
    while True:
        ok, f = cap.read()
        if not ok:
            break
        frames.append(f)
    fps = cap.get(cv2.CAP_PROP_FPS) or 30.0
    cap.release()
    if not frames:
        raise FileNotFoundError(f"no frames in {video}")
    n = len(frames)
    count = n - first if count is None else count
    h, w = frames[0].shape[:2]
    writer = cv2.VideoWriter(str(out), cv2.VideoWriter_fourcc(*"mp4v"), fps, (2 * w, h))
    if not writer.isOpened():
        raise RuntimeError(f"OpenCV cannot write {out}")
    try:
        for i in range(first, first + count):
            writer.write(np.hstack([frames[i % n], cv2.flip(frames[(i + offset) % n], 1)]))
    finally:
        writer.release()
    return count


@functools.lru_cache(maxsize=1)
def _tmpdir() -> str:
    d = tempfile.mkdtemp(prefix="two_hand_clip_")
    atexit.register(shutil.rmtree, d, True)
    return d


def two_hand_clip(video: str | os.PathLike, first: int = 0, count: int | None = None) -> str:
    """Path of the clip (made once per session in a temporary directory)."""
    return _clip(os.path.realpath(video), first, count)


@functools.lru_cache(maxsize=4)
def _clip(video: str, first: int, count: int | None) -> str:
    path = os.path.join(_tmpdir(), f"two_hands_{first}_{count}.mp4")
    write_two_hand_clip(video, path, first=first, count=count)
    return path


@dataclass(frozen=True)
class ClipLandmarks:
    hands: tuple          # per frame: tuple of HandObservation (MediaPipe's order and labels)
    media_time: np.ndarray
    width: int
    height: int
    fps: float


def two_hand_landmarks(video: str | os.PathLike) -> ClipLandmarks:
    """MediaPipe (two hands) over every frame of the whole clip, cached for the session."""
    return _landmarks(two_hand_clip(video))


@functools.lru_cache(maxsize=1)
def _landmarks(clip: str) -> ClipLandmarks:
    from hand_tracking.landmarks import MediaPipeConfig, MediaPipeHands
    from hand_tracking.sources import VideoFileSource

    src = VideoFileSource(clip, realtime=False, loop=False)
    backend = MediaPipeHands(MediaPipeConfig(max_num_hands=2, model_complexity=0), mirror=False)
    hands, mt = [], []
    size = (0, 0)
    try:
        while (f := src.read()) is not None:
            hands.append(tuple(backend.detect(f.image)))
            mt.append(f.media_time)
            size = (f.width, f.height)
    finally:
        backend.close()
        src.close()
    return ClipLandmarks(tuple(hands), np.array(mt), size[0], size[1], src.fps)
