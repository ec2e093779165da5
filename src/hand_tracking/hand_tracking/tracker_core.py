"""The tracker's per-frame pipeline, without ROS: hands → angles → filter → flexions.

For each processed frame :meth:`TrackerCore.update` takes the hands a backend (or a recording)
saw and the frame's time (s; the node passes the capture stamp carried in the message, so a
replay of recorded landmarks computes the same outputs bit for bit), and returns a
:class:`TrackOutput`:

1. pick the hand to follow (``hand_preference``: any/right/left; the most confident one);
2. build one skeleton (``landmark_mode``): the two MediaPipe heads fused (default,
   :func:`hand_tracking.geometry.fused_points`), world landmarks alone, or image landmarks in pixels;
3. the frame-quality gate (:class:`QualityGate`): a degenerate skeleton
   (:func:`hand_tracking.geometry.check_skeleton`), landmarks largely outside the image, a palm
   width or finger lengths no hand has, a sudden bone-length jump against the last accepted frame,
   or a low handedness score make the frame a *rejected* miss; each reason is counted in
   :attr:`TrackerCore.rejections`. Then the 15 joint angles;
4. a 1€ filter on the 15 *angles* (rad). Filtering angles rather than flexions keeps the filter
   independent of the windows: a live window change (``ros2 param set``, a calibration) acts on
   the very next frame with no filter transient, and the filter's ``beta`` has one physical unit
   (1/rad) for every joint whatever its window;
5. per-finger curls (mean of 3 angles) through the finger windows → 5 flexions; the 15 angles
   through the joint windows → 15 per-joint flexions.

Misses (no hand, rejected skeleton): the last filtered pose is *held* (status ``held``, output on
every frame) for up to ``max_missed_frames`` consecutive frames; after that the filter is reset
and nothing is output (status ``lost``) until a hand returns, so no stale pose is presented as live.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from hand_common.contract import FINGER_NAMES, JOINT_NAMES
from hand_common.filters import OneEuroFilter, OneEuroParams
from hand_tracking.geometry import (
    BONES,
    LANDMARK_MODES,
    LANDMARK_NAMES,
    Windows,
    check_skeleton,
    finger_curls,
    fused_points,
    image_points,
    joint_angles,
)
from hand_tracking.landmarks import HandObservation

#: Default windows, radians (interior angles), for the default ``landmark_mode='fused'`` at
#: model_complexity 1. Chosen from measured evidence: over the shared video and its robustness set
#: (:mod:`hand_tracking.robustness`, 10 variants, every 6th frame plus the oracle frames) the open
#: hand's lowest curl per finger (O) and the fist's highest (F) were thumb..pinky
#: O = 2.80 2.78 2.83 2.88 2.92, F = 2.51 2.02 1.97 1.78 1.77 rad; each finger window maps O to
#: flexion 0.1 and F to 0.9 (``straight = O + 0.1 D``, ``D = (O - F) / 0.8``). The thumb barely
#: curls in a fist (F 2.51), so its window only keeps the open thumb at <= 0.12 (straight O + 0.05)
#: and reads the fist's thumb ~0.8. Calibrate for real use.
DEFAULT_FINGER_STRAIGHT = (2.85, 2.87, 2.94, 3.02, 3.07)
DEFAULT_FINGER_CURLED = (2.40, 1.93, 1.86, 1.65, 1.62)
#: Per joint (JOINT_NAMES order: thumb CMC/MCP/IP, then MCP/PIP/DIP of each finger), by the same
#: rule per joint where O - F >= 0.4 rad; a joint that moves less than that between open hand and
#: fist (thumb CMC/MCP/IP, the fingers' MCPs, index DIP, ring DIP) gets ``straight = O + 0.05``
#: and the minimum calibration window (0.3 rad), so the open hand reads <= 0.17 on every joint.
DEFAULT_JOINT_STRAIGHT = (2.70, 2.91, 2.69,
                          2.82, 3.00, 2.64,
                          2.80, 2.88, 3.06,
                          2.93, 2.96, 3.00,
                          3.09, 3.02, 2.95)
DEFAULT_JOINT_CURLED = (2.40, 2.61, 2.39,
                        2.52, 0.98, 2.34,
                        2.20, 1.25, 2.20,
                        1.92, 1.08, 2.28,
                        1.67, 1.34, 1.96)

HAND_PREFERENCES = ("any", "right", "left")
STATUSES = ("tracked", "held", "lost")
#: Keys of :attr:`TrackerCore.rejections` (why the gate refused a frame).
REJECT_REASONS = ("degenerate", "outside_image", "palm_width", "finger_length", "bone_jump", "low_score")


@dataclass(frozen=True)
class QualityGate:
    """Thresholds of the frame-quality gate (see module docstring); validated (ValueError).

    max_outside_fraction: largest fraction of the 21 image landmarks allowed outside the image
    (x or y outside [0, 1]). palm_width_m: allowed |index MCP - pinky MCP| of the skeleton, m.
    finger_length_palms: allowed length of each digit (finger: MCP to tip; thumb: MCP to tip)
    in palm widths (upper bound 3.0, not 2.2: the world head narrows the palm in a side view; the
    two-hand clip's mirrored side view measured 2.38 in one run and 2.64 in another, MediaPipe's
    output varies slightly between processes). max_bone_jump: largest change of any bone of the world skeleton against the
    last accepted frame, in palm widths (the shared video's largest frame-to-frame change is
    0.23 at complexity 0, 0.20 at 1). min_score: lowest handedness-classifier
    confidence ``max(score, 1 - score)`` (label-agnostic: a hand relabelled by the two-hand identity
    layer keeps its classifier's certainty; the shared video's lowest is 0.62 at complexity 0).
    enabled=False turns the gate off (only degenerate skeletons are refused).
    """

    enabled: bool = True
    max_outside_fraction: float = 0.25
    palm_width_m: tuple[float, float] = (0.02, 0.20)
    finger_length_palms: tuple[float, float] = (0.25, 3.0)
    max_bone_jump: float = 0.5
    min_score: float = 0.55

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_outside_fraction <= 1.0:
            raise ValueError(f"max_outside_fraction must be in [0, 1], got {self.max_outside_fraction}")
        for name in ("palm_width_m", "finger_length_palms"):
            lo, hi = getattr(self, name)
            if not 0.0 < lo < hi:
                raise ValueError(f"{name} must be 0 < low < high, got ({lo}, {hi})")
        if not self.max_bone_jump > 0.0:
            raise ValueError(f"max_bone_jump must be > 0, got {self.max_bone_jump}")
        if not 0.0 <= self.min_score <= 1.0:
            raise ValueError(f"min_score must be in [0, 1], got {self.min_score}")

    def check(self, hand: HandObservation, pts: np.ndarray, last_bones: np.ndarray | None,
              metric: bool = True) -> tuple[str, str, float]:
        """(reason key or '', explanation, quality in [0, 1]) of one frame.

        hand: the observation; pts: (21, 3) skeleton the angles come from; metric: pts is in
        metres (world and fused modes); otherwise (image mode, pixels) the palm and finger checks
        use ``hand.world`` when it is a plausible skeleton, else the finger-length ratios run on the
        pixels and the palm width is not checked;
        last_bones: (20,) world bone lengths (m) of the last accepted frame, or None. Quality is
        the classifier confidence times the fraction of image landmarks inside the image.
        """
        problem = check_skeleton(pts)
        if problem and pts is not hand.world and metric:  # fused: name the head that is broken
            problem = check_skeleton(hand.world) or check_skeleton(hand.image) or problem
        if problem:
            return "degenerate", problem, 0.0
        img = hand.image
        inside = np.all((img[:, :2] >= 0.0) & (img[:, :2] <= 1.0), axis=1)
        quality = float(np.clip(max(hand.score, 1.0 - hand.score), 0.0, 1.0) * inside.mean())
        if not self.enabled:
            return "", "", quality
        outside = 1.0 - float(inside.mean())
        if outside > self.max_outside_fraction:
            return ("outside_image", f"{int(round(outside * 21))} of 21 landmarks outside the image "
                    f"(> {self.max_outside_fraction:.0%})", quality)
        # size checks on the world head (MediaPipe's metric estimate; the shared video's fingers
        # measure 0.66-1.91 palm widths there) when usable, else on the skeleton itself
        skel = hand.world if check_skeleton(hand.world) is None else pts
        in_metres = metric or skel is hand.world
        palm = float(np.linalg.norm(skel[5] - skel[17]))
        lo, hi = self.palm_width_m
        if in_metres and not lo <= palm <= hi:
            return "palm_width", f"palm width {palm * 100:.1f} cm outside {lo * 100:.0f}-{hi * 100:.0f} cm", quality
        bones = np.linalg.norm(skel[BONES[:, 1]] - skel[BONES[:, 0]], axis=1)
        digits = bones.reshape(5, 4)[:, 1:].sum(axis=1)
        digits[0] -= bones[1]  # the thumb from its MCP (its CMC-MCP bone is a metacarpal)
        ratio = digits / palm
        flo, fhi = self.finger_length_palms
        bad = np.flatnonzero((ratio < flo) | (ratio > fhi))
        if bad.size:
            d = int(bad[0])
            return ("finger_length", f"{FINGER_NAMES[d]} length {ratio[d]:.2f} palm widths outside "
                    f"{flo}-{fhi}", quality)
        wb = np.linalg.norm(hand.world[BONES[:, 1]] - hand.world[BONES[:, 0]], axis=1)
        if last_bones is not None and np.isfinite(wb).all():
            ref = max(float(np.linalg.norm(skel[5] - skel[17])), 1e-6)
            rel = np.abs(wb - last_bones) / ref
            k = int(np.argmax(rel))
            if rel[k] > self.max_bone_jump:
                bone = f"{LANDMARK_NAMES[BONES[k, 0]]}-{LANDMARK_NAMES[BONES[k, 1]]}"
                return ("bone_jump", f"bone {bone} changed by {rel[k]:.2f} palm widths in one frame "
                        f"(> {self.max_bone_jump})", quality)
        conf = max(hand.score, 1.0 - hand.score)
        if conf < self.min_score:
            return "low_score", f"handedness confidence {conf:.2f} < {self.min_score:.2f}", quality
        return "", "", quality


def default_finger_windows() -> Windows:
    return Windows(FINGER_NAMES, DEFAULT_FINGER_STRAIGHT, DEFAULT_FINGER_CURLED)


def default_joint_windows() -> Windows:
    return Windows(JOINT_NAMES, DEFAULT_JOINT_STRAIGHT, DEFAULT_JOINT_CURLED)


@dataclass(frozen=True)
class TrackerConfig:
    """Everything :class:`TrackerCore` needs; validated on construction (ValueError)."""

    finger_windows: Windows = field(default_factory=default_finger_windows)
    joint_windows: Windows = field(default_factory=default_joint_windows)
    landmark_mode: str = "fused"
    gate: QualityGate = field(default_factory=QualityGate)
    hand_preference: str = "any"
    filter_enabled: bool = True
    filter: OneEuroParams = field(default_factory=lambda: OneEuroParams(1.5, 2.0, 1.0))
    max_missed_frames: int = 10

    def __post_init__(self) -> None:
        if self.finger_windows.names != FINGER_NAMES:
            raise ValueError(f"finger windows must be for {FINGER_NAMES}")
        if self.joint_windows.names != JOINT_NAMES:
            raise ValueError("joint windows must be for contract.JOINT_NAMES")
        if self.landmark_mode not in LANDMARK_MODES:
            raise ValueError(f"landmark_mode must be one of {LANDMARK_MODES}, got {self.landmark_mode!r}")
        if self.hand_preference not in HAND_PREFERENCES:
            raise ValueError(f"hand_preference must be one of {HAND_PREFERENCES}, got {self.hand_preference!r}")
        if self.max_missed_frames < 0:
            raise ValueError(f"max_missed_frames must be >= 0, got {self.max_missed_frames}")

    def with_changes(self, **changes) -> TrackerConfig:
        return replace(self, **changes)


@dataclass
class TrackOutput:
    """Result of one frame.

    status: 'tracked' (a hand measured this frame), 'held' (missed, last pose held) or 'lost'
    (no pose: nothing to publish).
    hand: the followed hand, if any this frame. raw_angles: its unfiltered 15 angles (rad).
    angles: filtered (or held) 15 angles; finger_flexions (5) and joint_flexions (15) in [0, 1];
    all None when lost. missed: consecutive misses so far. reason: why this frame was a miss.
    rejected: the gate's reason key (:data:`REJECT_REASONS`) when a hand was seen but refused,
    else ''. quality: the frame's quality figure in [0, 1] (0 without a hand).
    """

    status: str
    hand: HandObservation | None = None
    raw_angles: np.ndarray | None = None
    angles: np.ndarray | None = None
    finger_flexions: np.ndarray | None = None
    joint_flexions: np.ndarray | None = None
    missed: int = 0
    reason: str = ""
    rejected: str = ""
    quality: float = 0.0

    @property
    def accepted(self) -> bool:
        """A hand was seen and passed the gate: this frame's measurement drives the output."""
        return self.raw_angles is not None

    @property
    def publishable(self) -> bool:
        return self.finger_flexions is not None


class TrackerCore:
    """Stateful per-frame pipeline (see module docstring). Not thread-safe: callers serialise
    :meth:`update` and :attr:`config` changes (the node holds a lock)."""

    def __init__(self, config: TrackerConfig | None = None):
        self._config = config or TrackerConfig()
        self._filter = OneEuroFilter(self._config.filter)
        self._angles: np.ndarray | None = None
        self._bones: np.ndarray | None = None
        self.missed = 0
        #: Frames refused by the gate, per reason (:data:`REJECT_REASONS`), since construction.
        self.rejections: dict[str, int] = dict.fromkeys(REJECT_REASONS, 0)

    @property
    def config(self) -> TrackerConfig:
        return self._config

    @config.setter
    def config(self, cfg: TrackerConfig) -> None:
        """Apply a new config from the next frame on; the filter state is kept."""
        old = self._config
        self._config = cfg
        self._filter.params = cfg.filter
        if cfg.landmark_mode != old.landmark_mode:
            self.reset()  # angles from the other landmark set are not comparable

    def reset(self) -> None:
        """Forget the pose and the filter state."""
        self._filter.reset()
        self._angles = None
        self._bones = None
        self.missed = 0

    def select(self, hands: list[HandObservation]) -> HandObservation | None:
        """The hand to follow: best score among those matching ``hand_preference``."""
        pref = self._config.hand_preference
        cands = [h for h in hands if pref == "any" or h.handedness == pref]
        if not cands:
            return None
        return max(cands, key=lambda h: h.score)

    def points(self, hand: HandObservation, width: int, height: int) -> np.ndarray:
        """The (21, 3) skeleton geometry runs on (``landmark_mode``): fused heads (m), world (m) or
        image landmarks in pixels."""
        mode = self._config.landmark_mode
        if mode == "world":
            return hand.world
        if mode == "image":
            return image_points(hand.image, max(width, 1), max(height, 1))
        return fused_points(hand.image, hand.world, max(width, 1), max(height, 1))

    def measure(self, hands: list[HandObservation], width: int = 1, height: int = 1
                ) -> tuple[HandObservation | None, np.ndarray | None, str, str, float]:
        """(hand, raw 15 angles or None, reason, gate reason key, quality): one frame, unfiltered.

        Does not count rejections nor move the bone-jump reference (see :meth:`update`)."""
        hand = self.select(hands)
        if hand is None:
            pref = self._config.hand_preference
            return None, None, "no hand" if not hands or pref == "any" else f"no {pref} hand", "", 0.0
        pts = self.points(hand, width, height)
        key, why, quality = self._config.gate.check(hand, pts, self._bones,
                                                    metric=self._config.landmark_mode != "image")
        if key:
            what = "implausible skeleton" if key == "degenerate" else f"rejected ({key})"
            return hand, None, f"{what}: {why}", key, quality
        return hand, joint_angles(pts), "", "", quality

    def update(self, hands: list[HandObservation], t: float, width: int = 1, height: int = 1) -> TrackOutput:
        """Process one frame's hands at time ``t`` (s, the capture stamp); ``width``/``height``: image
        size (px). Deterministic: the same frames at the same ``t`` give the same floats."""
        cfg = self._config
        hand, raw, reason, key, quality = self.measure(hands, width, height)
        if key:
            self.rejections[key] += 1
        if raw is not None:
            self._bones = np.linalg.norm(hand.world[BONES[:, 1]] - hand.world[BONES[:, 0]], axis=1)
            if not np.isfinite(self._bones).all():
                self._bones = None
            self.missed = 0
            self._angles = self._filter(raw, t) if cfg.filter_enabled else raw
            status = "tracked"
        else:
            self.missed += 1
            if self._angles is not None and self.missed <= cfg.max_missed_frames:
                status = "held"
            else:
                if self._angles is not None:
                    self._filter.reset()
                    self._angles = None
                self._bones = None  # a new hand is judged on its own, not against the old one
                return TrackOutput("lost", hand, None, None, None, None, self.missed, reason, key, quality)
        angles = self._angles
        return TrackOutput(
            status, hand, raw, angles.copy(),
            cfg.finger_windows.flexions(finger_curls(angles)),
            cfg.joint_windows.flexions(angles),
            self.missed, reason, key, quality,
        )
