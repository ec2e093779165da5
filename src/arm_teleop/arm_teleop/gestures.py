"""Hand gestures from the 21 MediaPipe landmarks: open palm, fist, pinch, other. No rclpy.

"Extended" is decided from **joint angles of the world landmarks** (metric 3-D, from
:func:`hand_tracking.geometry.joint_angles`): a digit is extended when the mean interior angle of
its three joints (π = straight) is above a threshold. Angles do not change when the hand turns,
tilts or moves away, unlike "tip above PIP in the image" rules (tested with rotated synthetic
hands). Thresholds were measured on the shared video's world landmarks: open fingers 2.6-2.9 rad,
a single curled finger 2.1-2.2 rad, fist 1.5-1.8 rad; thumb open 2.85-2.95, tucked or in a fist
2.35-2.5 rad.

Pinch: thumb tip–index tip distance divided by the palm length (wrist–middle MCP, ≈ 9-10 cm in
world landmarks) so it does not depend on the hand's size. **Hysteresis**: the pinch engages below
``pinch_close`` and releases only above ``pinch_open`` (> close): when thumb and index touch, the
landmarks of the occluded tips jitter by several mm, and one threshold would chatter. Measured on
the shared video with the tracker's landmark model (legacy MediaPipe, model_complexity 1, issue 15):
the thumb–index pinch (tips < 30 mm, frames 311-333) reads 0.255-0.325 (0.349 at 309 as the tips
meet); nothing else outside the fists reads below 0.435 (frame 32, a loosely cupped hand; the
middle/ring/little pinches read above 0.52). Defaults 0.34 (0.015 above the pinch's plateau,
0.095 below the cupped hand) / 0.45.
(Complexity 0 read the index pinch 0.23-0.27 but the middle pinch down to 0.315.) A pinch
engages only while at least ``pinch_min_other_extended`` of middle/ring/pinky are extended: a hand
closing into a fist passes through a thumb–index contact that is not a pinch (shared video,
frame 255). Priority: fist (no digit extended) > pinch > open palm (≥ ``open_min_extended``
digits extended) > other.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from hand_common.contract import FINGER_NAMES
from hand_tracking.geometry import check_skeleton, finger_curls, joint_angles

THUMB_TIP, INDEX_TIP, WRIST, MIDDLE_MCP = 4, 8, 0, 9


class Gesture(enum.StrEnum):
    NONE = "none"  # no (plausible) hand
    OPEN_PALM = "open_palm"
    FIST = "fist"
    PINCH = "pinch"
    OTHER = "other"


@dataclass(frozen=True)
class GestureConfig:
    """Thresholds. Angles in rad (mean interior angle of a digit's 3 joints, π = straight);
    pinch thresholds are thumb–index tip distance / palm length (unitless)."""

    finger_extended_angle: float = 2.40
    thumb_extended_angle: float = 2.65
    open_min_extended: int = 4
    pinch_close: float = 0.34
    pinch_open: float = 0.45
    pinch_min_other_extended: int = 2

    def problem(self) -> str | None:
        """Why this configuration is unusable, or None."""
        for name in ("finger_extended_angle", "thumb_extended_angle"):
            v = getattr(self, name)
            if not (math.isfinite(v) and 0.0 < v < math.pi):
                return f"{name} = {v} must be in (0, π)"
        if not 0.0 < self.pinch_close < self.pinch_open:
            return f"pinch_close ({self.pinch_close}) must be > 0 and below pinch_open ({self.pinch_open})"
        if not 1 <= self.open_min_extended <= 5:
            return f"open_min_extended = {self.open_min_extended} must be 1..5"
        if not 0 <= self.pinch_min_other_extended <= 3:
            return f"pinch_min_other_extended = {self.pinch_min_other_extended} must be 0..3"
        return None


@dataclass(frozen=True)
class HandFeatures:
    """What the classifier measured on one hand."""

    curls: tuple[float, ...]  # rad, FINGER_NAMES order
    extended: tuple[bool, ...]  # FINGER_NAMES order
    pinch_ratio: float  # thumb–index tip distance / palm length
    palm_length: float  # m (world) or image units

    @property
    def n_extended(self) -> int:
        return sum(self.extended)


def hand_features(world: ArrayLike, cfg: GestureConfig) -> HandFeatures:
    """Features of one hand. world: (21, 3) world landmarks (m). ValueError (naming the problem)
    for an implausible skeleton: non-finite points, collapsed palm, zero-length bones."""
    p = np.asarray(world, dtype=float)
    problem = check_skeleton(p)
    if problem:
        raise ValueError(problem)
    curls = finger_curls(joint_angles(p))
    limits = [cfg.thumb_extended_angle] + [cfg.finger_extended_angle] * 4
    extended = tuple(bool(c > t) for c, t in zip(curls, limits))
    palm = float(np.linalg.norm(p[MIDDLE_MCP] - p[WRIST]))
    ratio = float(np.linalg.norm(p[THUMB_TIP] - p[INDEX_TIP]) / palm)
    return HandFeatures(tuple(float(c) for c in curls), extended, ratio, palm)


class GestureClassifier:
    """Stateful only for the pinch hysteresis. ``update(world)`` per frame (None = no hand)."""

    def __init__(self, cfg: GestureConfig | None = None):
        self.cfg = cfg or GestureConfig()
        problem = self.cfg.problem()
        if problem:
            raise ValueError(problem)
        self.pinched = False
        self.last: HandFeatures | None = None
        self.last_error = ""

    def reset(self) -> None:
        self.pinched = False
        self.last = None

    def set_config(self, cfg: GestureConfig) -> None:
        problem = cfg.problem()
        if problem:
            raise ValueError(problem)
        self.cfg = cfg

    def update(self, world: ArrayLike | None) -> Gesture:
        """Classify one frame. A missing or implausible hand gives NONE and releases the pinch
        (``last_error`` says why it was implausible)."""
        if world is None:
            self.reset()
            return Gesture.NONE
        try:
            f = hand_features(world, self.cfg)
        except ValueError as exc:
            self.last_error = str(exc)
            self.reset()
            return Gesture.NONE
        self.last = f
        if self.pinched:
            self.pinched = f.pinch_ratio < self.cfg.pinch_open
        else:
            others = sum(f.extended[2:])
            self.pinched = f.pinch_ratio < self.cfg.pinch_close and others >= self.cfg.pinch_min_other_extended
        if f.n_extended == 0:
            self.pinched = False
            return Gesture.FIST
        if self.pinched:
            return Gesture.PINCH
        if f.n_extended >= self.cfg.open_min_extended:
            return Gesture.OPEN_PALM
        return Gesture.OTHER


__all__ = ["FINGER_NAMES", "Gesture", "GestureClassifier", "GestureConfig", "HandFeatures", "hand_features"]
