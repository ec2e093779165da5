"""Pictures the console shows, drawn with OpenCV on numpy arrays (no rclpy, no viser).

- :func:`draw_landmarks`: the 21 landmarks and the hand's bones over the camera frame, green for
  the detection the gate accepted, orange for a refused one, with its handedness, and a banner
  with the gate's verdict.
- :func:`blank_frame`: a dark frame of the camera's size (a replay without the video, a camera
  whose preview has not arrived yet).
All images are RGB uint8 (H, W, 3), as the browser shows them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hand_console.state import GateView, HandInfo

#: MediaPipe's hand topology: (from, to) landmark indices of the bones drawn.
HAND_BONES: tuple[tuple[int, int], ...] = (
    (0, 1), (1, 2), (2, 3), (3, 4),
    (0, 5), (5, 6), (6, 7), (7, 8),
    (5, 9), (9, 10), (10, 11), (11, 12),
    (9, 13), (13, 14), (14, 15), (15, 16),
    (13, 17), (0, 17), (17, 18), (18, 19), (19, 20),
)
ACCEPTED_RGB = (60, 220, 90)
REFUSED_RGB = (255, 150, 40)
STATE_RGB = {"tracked": (40, 160, 70), "held": (200, 130, 20), "lost": (190, 50, 50)}


def blank_frame(width: int = 320, height: int = 240) -> np.ndarray:
    """A dark grey RGB frame of the given size (px)."""
    return np.full((int(height), int(width), 3), 32, np.uint8)


def draw_landmarks(rgb: np.ndarray, hands: Sequence[HandInfo], gate: GateView | None = None) -> np.ndarray:
    """A copy of ``rgb`` (H, W, 3 uint8) with each hand's bones and 21 landmarks (normalised image
    coordinates scaled to the frame) and, with ``gate``, a banner line at the top."""
    import cv2

    out = np.ascontiguousarray(rgb.copy())
    h, w = out.shape[:2]
    scale = max(1, int(round(w / 320)))
    for hand in hands:
        pts = np.asarray(hand.image, float)[:, :2]
        if pts.shape[0] != 21 or not np.isfinite(pts).all():
            continue
        px = np.round(pts * [w, h]).astype(int)
        color = ACCEPTED_RGB if hand.accepted else REFUSED_RGB
        for a, b in HAND_BONES:
            cv2.line(out, tuple(px[a]), tuple(px[b]), color, scale, cv2.LINE_AA)
        for p in px:
            cv2.circle(out, tuple(p), 2 * scale, (255, 255, 255), -1, cv2.LINE_AA)
            cv2.circle(out, tuple(p), 2 * scale, color, 1, cv2.LINE_AA)
        label = f"{hand.handedness} {hand.score:.2f}" if hand.handedness else f"{hand.score:.2f}"
        org = (int(px[0][0]) + 4, int(px[0][1]) + 14 * scale)
        cv2.putText(out, label, org, cv2.FONT_HERSHEY_SIMPLEX, 0.4 * scale, color, scale, cv2.LINE_AA)
    if gate is not None:
        bar = STATE_RGB.get(gate.state, (90, 90, 90))
        cv2.rectangle(out, (0, 0), (w, 16 * scale), bar, -1)
        cv2.putText(out, gate.text()[:80], (4, 12 * scale), cv2.FONT_HERSHEY_SIMPLEX, 0.38 * scale,
                    (255, 255, 255), 1, cv2.LINE_AA)
    return out


def decode_jpeg_rgb(data: bytes) -> np.ndarray:
    """RGB uint8 image of JPEG bytes; ValueError if they are not a decodable image."""
    import cv2

    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if img is None:
        raise ValueError(f"not a decodable image ({len(data)} bytes)")
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)


#: Plot colours of the five digits (RGB), thumb .. pinky.
DIGIT_RGB = ((230, 80, 80), (240, 170, 40), (70, 180, 90), (60, 140, 230), (170, 90, 210))


def plot_history(t: np.ndarray, v: np.ndarray, window_s: float, width: int = 320, height: int = 140,
                 names: Sequence[str] = ("thumb", "index", "middle", "ring", "pinky")) -> np.ndarray:
    """RGB plot of flexion history: t (N,) s relative to now (<= 0), v (N, D) flexions 0..1 (one
    line per digit, colours :data:`DIGIT_RGB`), x from -window_s to 0, y from 0 (open) to 1 (closed)."""
    import cv2

    img = np.full((height, width, 3), 250, np.uint8)
    left, right, top, bottom = 26, width - 6, 6, height - 18
    cv2.rectangle(img, (left, top), (right, bottom), (200, 200, 200), 1)
    for y in (0.0, 0.5, 1.0):
        py = int(round(bottom - y * (bottom - top)))
        cv2.line(img, (left, py), (right, py), (225, 225, 225), 1)
        cv2.putText(img, f"{y:.1f}", (2, py + 4), cv2.FONT_HERSHEY_SIMPLEX, 0.3, (90, 90, 90), 1, cv2.LINE_AA)
    for s in range(int(window_s) + 1):
        px = int(round(right - s / window_s * (right - left)))
        if s % 2 == 0:
            cv2.putText(img, f"-{s}s" if s else "0", (px - 10, height - 5), cv2.FONT_HERSHEY_SIMPLEX, 0.3,
                        (90, 90, 90), 1, cv2.LINE_AA)
    if len(t) >= 2:
        xs = right + np.clip(np.asarray(t), -window_s, 0.0) / window_s * (right - left)
        for d in range(min(v.shape[1], len(DIGIT_RGB))):
            ys = bottom - np.clip(v[:, d], 0.0, 1.0) * (bottom - top)
            pts = np.stack([xs, ys], axis=1).round().astype(np.int32).reshape(-1, 1, 2)
            cv2.polylines(img, [pts], False, DIGIT_RGB[d], 1, cv2.LINE_AA)
    for d, name in enumerate(names[:len(DIGIT_RGB)]):
        cv2.putText(img, name, (left + 4 + d * 54, top + 10), cv2.FONT_HERSHEY_SIMPLEX, 0.32, DIGIT_RGB[d], 1,
                    cv2.LINE_AA)
    return img
