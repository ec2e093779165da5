"""MediaPipe over the shared video ONCE per test session (our 2 cores are shared).

Imported by the tracker tests (``sys.path`` insert of this folder); the module-level cache makes
every test module in one pytest process reuse the same landmarks. ``model_complexity`` defaults to
the tracker's own landmark model (:class:`hand_tracking.landmarks.MediaPipeConfig`'s default, 1, the
tracker node's parameter default): every consumer (tracker, dexterous and arm paths) is tested
on the landmarks the tracker gives (issue 15). Video mode, one hand, mirror=False (the video's
camera is not mirrored), through the package's own VideoFileSource and MediaPipeHands backend.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np

#: Frame ranges named by ../shared/media/README.md (checked against the landmarks: open hand,
#: thumb extended, in 0-11, 127-151, 282-309, 569-603; fist plateaus 258-277 and 608-620).
OPEN_FRAMES = (*range(0, 12), *range(130, 141), *range(295, 306), *range(580, 591))
FIST_FRAMES = tuple(range(262, 275))
#: Calibration captures: ~1 s of the open hand near frame 585 and the final fist (610-620).
CAL_OPEN = range(570, 600)
CAL_FIST = range(608, 621)


@dataclass(frozen=True)
class VideoLandmarks:
    world: np.ndarray        # (N, 21, 3) m, NaN where no hand
    image: np.ndarray        # (N, 21, 3) normalised, NaN where no hand
    handedness: tuple        # per frame: 'left'/'right'/'' (none)
    scores: np.ndarray       # (N,)
    indices: np.ndarray      # (N,) Frame.index
    media_time: np.ndarray   # (N,) s
    width: int
    height: int
    fps: float

    def hands(self, i: int) -> list:
        from hand_tracking.landmarks import HandObservation

        if not self.handedness[i]:
            return []
        return [HandObservation(self.image[i], self.world[i], self.handedness[i], float(self.scores[i]))]


def video_landmarks(video: str | os.PathLike, model_complexity: int | None = None) -> VideoLandmarks:
    """Landmarks of every frame of ``video`` (the root conftest's ``video_path``), cached;
    ``model_complexity`` None = the tracker's default."""
    if model_complexity is None:
        from hand_tracking.landmarks import MediaPipeConfig

        model_complexity = MediaPipeConfig().model_complexity
    return _landmarks(os.path.realpath(video), int(model_complexity))


@functools.lru_cache(maxsize=4)
def _landmarks(video: str, model_complexity: int) -> VideoLandmarks:
    from hand_tracking.landmarks import MediaPipeConfig, MediaPipeHands
    from hand_tracking.sources import VideoFileSource

    src = VideoFileSource(video, realtime=False, loop=False)
    backend = MediaPipeHands(MediaPipeConfig(max_num_hands=1, model_complexity=model_complexity), mirror=False)
    world, image, labels, scores, idx, mt = [], [], [], [], [], []
    size = (0, 0)
    try:
        while (f := src.read()) is not None:
            hands = backend.detect(f.image)
            size = (f.width, f.height)
            idx.append(f.index)
            mt.append(f.media_time)
            if hands:
                h = hands[0]
                world.append(h.world)
                image.append(h.image)
                labels.append(h.handedness)
                scores.append(h.score)
            else:
                world.append(np.full((21, 3), np.nan))
                image.append(np.full((21, 3), np.nan))
                labels.append("")
                scores.append(0.0)
    finally:
        backend.close()
        src.close()
    return VideoLandmarks(np.array(world), np.array(image), tuple(labels), np.array(scores),
                          np.array(idx), np.array(mt), size[0], size[1], src.fps)
