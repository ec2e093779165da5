"""Drawing for the demo video: landmark skeleton, HUD, side-by-side composition (pure OpenCV).

Frames are BGR uint8 arrays (OpenCV convention). Landmarks are MediaPipe image landmarks,
normalised to [0, 1] by image width/height (hand_msgs/HandLandmarks.image_landmarks).
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from hand_common.contract import FINGER_NAMES

#: MediaPipe hand topology: landmark index pairs joined by a bone.
HAND_CONNECTIONS: tuple[tuple[int, int], ...] = (
    (0, 1), (1, 2), (2, 3), (3, 4),
    (0, 5), (5, 6), (6, 7), (7, 8),
    (5, 9), (9, 10), (10, 11), (11, 12),
    (9, 13), (13, 14), (14, 15), (15, 16),
    (13, 17), (0, 17), (17, 18), (18, 19), (19, 20),
)
FINGER_COLOURS = ((255, 128, 0), (0, 200, 255), (0, 255, 0), (255, 0, 255), (0, 128, 255))  # BGR


def draw_skeleton(frame: np.ndarray, image_landmarks: np.ndarray) -> None:
    """Draw bones and joints in place. image_landmarks: (21, 2+) normalised x, y; non-finite
    points are skipped."""
    h, w = frame.shape[:2]
    pts = np.asarray(image_landmarks, dtype=float)[:, :2] * (w, h)
    ok = np.all(np.isfinite(pts), axis=1)
    thick = max(2, w // 400)
    for a, b in HAND_CONNECTIONS:
        if ok[a] and ok[b]:
            cv2.line(frame, tuple(int(v) for v in pts[a]), tuple(int(v) for v in pts[b]), (255, 255, 255),
                     thick, cv2.LINE_AA)
    for i, p in enumerate(pts):
        if ok[i]:
            colour = (0, 0, 255) if i == 0 else FINGER_COLOURS[(i - 1) // 4]
            cv2.circle(frame, (int(p[0]), int(p[1])), thick * 2, colour, -1, cv2.LINE_AA)


def draw_hud(frame: np.ndarray, flexions: Sequence[float] | None, fps: float | None, state: str,
             frame_index: int, note: str = "") -> None:
    """Draw the HUD in place: state and fps, frame index, and one bar per finger (0 open … 1 closed).
    ``flexions`` in FINGER_NAMES order, or None when there is none yet."""
    h, w = frame.shape[:2]
    s = h / 480.0
    font = cv2.FONT_HERSHEY_SIMPLEX
    colour = (0, 220, 0) if state == "TRACKING" else (0, 165, 255) if state.startswith("HOLD") else (0, 0, 255)
    cv2.rectangle(frame, (0, 0), (w, int(34 * s)), (0, 0, 0), -1)
    text = f"{state}   {fps:.1f} fps   frame {frame_index}" if fps else f"{state}   frame {frame_index}"
    cv2.putText(frame, text, (int(8 * s), int(24 * s)), font, 0.6 * s, colour, max(1, int(1.5 * s)), cv2.LINE_AA)
    if note:
        cv2.putText(frame, note, (int(8 * s), int(56 * s)), font, 0.55 * s, (0, 255, 255), max(1, int(1.5 * s)),
                    cv2.LINE_AA)
    bar_w, bar_h, x0 = int(150 * s), int(14 * s), int(8 * s)
    y0 = h - int(5 * 24 * s) - int(8 * s)
    for i, name in enumerate(FINGER_NAMES):
        y = y0 + int(i * 24 * s)
        cv2.rectangle(frame, (x0, y), (x0 + int(70 * s) + bar_w, y + bar_h + int(6 * s)), (0, 0, 0), -1)
        cv2.putText(frame, name, (x0 + 2, y + bar_h), font, 0.45 * s, (255, 255, 255), 1, cv2.LINE_AA)
        bx = x0 + int(66 * s)
        cv2.rectangle(frame, (bx, y + 2), (bx + bar_w, y + bar_h), (80, 80, 80), 1)
        if flexions is not None and np.isfinite(flexions[i]):
            v = float(np.clip(flexions[i], 0.0, 1.0))
            cv2.rectangle(frame, (bx, y + 2), (bx + int(v * bar_w), y + bar_h), FINGER_COLOURS[i], -1)
            cv2.putText(frame, f"{v:.2f}", (bx + bar_w + 4, y + bar_h), font, 0.4 * s, (255, 255, 255), 1,
                        cv2.LINE_AA)


def side_by_side(left: np.ndarray, right: np.ndarray, height: int = 480) -> np.ndarray:
    """Scale both frames to ``height`` (keeping aspect) and put them side by side."""
    def fit(img: np.ndarray) -> np.ndarray:
        h, w = img.shape[:2]
        return cv2.resize(img, (round(w * height / h), height), interpolation=cv2.INTER_AREA)

    out = np.hstack([fit(left), fit(right)])
    # H.264/MPEG-4 encoders want even sizes
    return out[:, : out.shape[1] - out.shape[1] % 2]


class VideoSink:
    """MPEG-4 file writer that opens on the first frame (its size sets the video's).

    ``write(frame)`` takes BGR uint8 frames of one size; ``close()`` returns the path, or None if no
    frame was written. OSError if OpenCV cannot open a writer for ``path``.
    """

    def __init__(self, path: str, fps: float):
        self.path, self.fps = str(path), float(fps)
        self._writer = None
        self.frames = 0

    def write(self, frame: np.ndarray) -> None:
        if self._writer is None:
            self._writer = cv2.VideoWriter(self.path, cv2.VideoWriter_fourcc(*"mp4v"), self.fps,
                                           (frame.shape[1], frame.shape[0]))
            if not self._writer.isOpened():
                raise OSError(f"cannot open a video writer for {self.path}")
        self._writer.write(frame)
        self.frames += 1

    def close(self) -> str | None:
        if self._writer is None:
            return None
        self._writer.release()
        self._writer = None
        return self.path
