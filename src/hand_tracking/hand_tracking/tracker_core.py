"""The tracker's per-frame pipeline, without ROS: hands → angles → filter → flexions.

For each processed frame :meth:`TrackerCore.update` takes the hands a backend (or a recording)
saw and the frame's time (s; the node passes the capture stamp carried in the message, so a
replay of recorded landmarks computes the same outputs bit for bit), and returns a
:class:`TrackOutput`:

1. pick the hand to follow (``hand_preference``: any/right/left; the most confident one);
2. build one skeleton (``landmark_mode``): the two MediaPipe heads fused (default,
   :func:`hand_tracking.fusion.fused_points`), world landmarks alone, or image landmarks in pixels;
3. the frame-quality gate (:class:`QualityGate`), judged in the image relative to the hand's own
   image size (never on the world head's scale): a degenerate skeleton
   (:func:`hand_tracking.geometry.check_skeleton`), landmarks largely outside the image, a digit
   too long for the hand, a joint folded back, an image shape the recent motion does not predict,
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
Only a *consistent* pose is held (an accepted frame whose curls agree with a neighbouring accepted
frame's, ``hold_max_step``/``hold_max_speed``): after a reading that jumped away from its
predecessor and was not confirmed, the hold falls back to the last consistent pose and its filter
state. Holds are counted per cause in :attr:`TrackerCore.holds`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace

import numpy as np

from hand_common.contract import FINGER_NAMES, JOINT_NAMES
from hand_common.filters import OneEuroFilter, OneEuroParams
from hand_tracking import interface as iface
from hand_tracking.fusion import fused_points
from hand_tracking.geometry import (
    BONE_FULL_S,
    BONES,
    LANDMARK_MODES,
    Windows,
    check_skeleton,
    finger_curls,
    image_points,
    joint_angles,
    most_open_angles,
)
from hand_tracking.landmarks import HandObservation

#: Default windows, radians (interior angles), for the default ``landmark_mode='fused'`` at
#: model_complexity 1. Chosen from measured evidence: over the shared video and its robustness set
#: (:mod:`hand_tracking.robustness`, 10 variants, every 6th frame plus the oracle frames) the open
#: hand's lowest curl per finger (O) and the fist's highest (F) were, before the view-aware depth
#: (issue 22), index..pinky O = 2.78 2.83 2.88 2.92, F = 2.02 1.97 1.78 1.77 rad; each finger window
#: maps O to flexion 0.1 and F to 0.9 (``straight = O + 0.1 D``, ``D = (O - F) / 0.8``). The windows
#: are kept with the view-aware depth (test_tracker_robustness: open <= 0.2, fist >= 0.8 on every
#: variant).
#: Thumb (issue 22): a relaxed open thumb on other people's recordings curls 2.63-2.68 rad, the
#: shared video's open thumb >= 2.80, its fist thumb (over the fingers) 2.43-2.51, its thumb tucked
#: into the palm (frames 15-29) 2.34-2.36, its thumbs in pinches 2.60-2.85. straight 2.69 reads the
#: relaxed thumb <= 0.19 (2.63) and 0.03 (2.68); curled 2.38 reads the tucked thumb 1.0 and the fist
#: thumb 0.58-0.84; the window (0.31 rad) is the calibration's minimum joint window (0.3), so
#: landmark noise is not amplified beyond what calibration allows. Calibrate for real use.
DEFAULT_FINGER_STRAIGHT = (2.69, 2.87, 2.94, 3.02, 3.07)
DEFAULT_FINGER_CURLED = (2.38, 1.93, 1.86, 1.65, 1.62)
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
#: Keys of :attr:`TrackerCore.rejections` (why the gate refused a frame) and of
#: :attr:`TrackerCore.holds` (why a pose was held): defined with the node's interface.
REJECT_REASONS, HOLD_CAUSES = iface.REJECT_REASONS, iface.HOLD_CAUSES
#: Landmarks whose centroid the image shape is taken relative to (wrist and the four MCPs).
_PALM = (0, 5, 9, 13, 17)


def hand_image_size(image: np.ndarray, width: int, height: int) -> float:
    """The hand's own size in the picture, px: the larger of the palm's width |index MCP - pinky
    MCP| and length |wrist - middle MCP| in the image plane (x scaled by ``width``, y by
    ``height``). Whatever the view, a palm seen edge-on keeps one of the two (>= ~0.6 of its
    length), so digits measured in this unit keep a bounded length. image: (21, 3) normalised."""
    px = np.asarray(image, dtype=float)[:, :2] * (float(width), float(height))
    return float(max(np.linalg.norm(px[5] - px[17]), np.linalg.norm(px[0] - px[9])))


def bone_image_lengths(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """(20,) the bones' (BONES order) lengths in the picture, in hand image sizes
    (:func:`hand_image_size`). image: (21, 3) normalised."""
    px = np.asarray(image, dtype=float)[:, :2] * (float(width), float(height))
    with np.errstate(all="ignore"):
        return np.linalg.norm(px[BONES[:, 1]] - px[BONES[:, 0]], axis=1) / hand_image_size(image, width, height)


#: A bone's longest-seen picture length is taken as its full length (instead of
#: :data:`hand_tracking.geometry.BONE_FULL_S`) once it reaches this fraction of the prior: a hand
#: seen only with its fingers folded or foreshortened keeps the prior, which refuses fewer folds.
LEARNED_MIN_FRACTION = 0.7


def hand_shape(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """(21, 2) image landmarks in px relative to the palm centroid (wrist + MCPs), in hand image
    sizes (:func:`hand_image_size`): the hand's shape in the picture, free of where the hand is
    and how large it appears (the gate's temporal check compares these)."""
    px = np.asarray(image, dtype=float)[:, :2] * (float(width), float(height))
    size = hand_image_size(image, width, height)
    with np.errstate(all="ignore"):
        return (px - px[list(_PALM)].mean(axis=0)) / size


@dataclass(frozen=True)
class QualityGate:
    """Thresholds of the frame-quality gate; validated (ValueError). Every size is judged in the
    IMAGE, relative to the hand's own image size ``S`` (:func:`hand_image_size`, px): MediaPipe's
    world head is not metric on close-ups and backs of hands (a palm of 0.5-2.6 cm measured on
    real recordings), so its scale is never judged — a clear hand is never refused for its size
    or its view.

    max_outside_fraction: largest fraction of the 21 image landmarks allowed outside the image
    (x or y outside [0, 1]). max_finger_length: largest image path length of a digit (thumb:
    CMC to tip; finger: MCP to tip), in ``S`` (the shared video measures 0.25-1.30; a digit
    pointing at a close camera is magnified by perspective, hence 2.5). min_joint_angle: smallest
    plausible interior angle of the skeleton's 15 joints, rad (a bone folded back onto its
    neighbour; the shared video's smallest is 0.86 rad, a PIP in the fist). A skeleton folded below
    it is refused only when the PICTURE cannot be read otherwise (issue 22): a fist seen from the
    back whose depth MediaPipe flattened shows folds too, but its bones are foreshortened, and the
    depth their foreshortening allows opens the joint. So the fold is refused only when even the
    most open depth (:func:`hand_tracking.geometry.most_open_angles`, bones at most
    ``full_length_tolerance`` x their full length) leaves the joint below ``min_open_joint_angle``
    (no finger or thumb joint flexes that far). A bone's full length, in hand image sizes ``S``,
    is the longest this hand has shown it since its track began (``lengths``, learned by
    :class:`TrackerCore`), or :data:`hand_tracking.geometry.BONE_FULL_S` (the shared video's) until
    it has shown it at >= ``LEARNED_MIN_FRACTION`` of that (never seen extended: the permissive
    prior).
    Temporal consistency: the hand's shape in the picture (:func:`hand_shape`) must lie within
    ``motion_tolerance + motion_rate * dt`` hand sizes of its PREDICTION from the last two accepted
    frames (``dt`` s of capture time since the last accepted frame; damped constant velocity,
    ``motion_gain`` of the last velocity, extrapolated over at most 0.1 s). On the shared video
    (real one-frame finger flicks) the largest miss of the prediction is 0.92 S at 30 fps and 1.22
    / 1.24 S with every 2nd / 3rd frame dropped (tolerance 1.27 / 1.53 / 1.80 S). The tolerance
    grows with the time since the last accepted frame, and a frame consistent with the previous
    frame that was refused for motion is accepted, so a real fast motion re-anchors the
    prediction at once instead of being refused against a stale reference.
    min_score: lowest handedness-classifier confidence ``max(score, 1 - score)`` (label-agnostic:
    a hand relabelled by the two-hand identity layer keeps its classifier's certainty; the shared
    video's lowest is 0.62 at complexity 0). enabled=False turns the gate off (only degenerate
    skeletons are refused).
    """

    enabled: bool = True
    max_outside_fraction: float = 0.25
    max_finger_length: float = 2.5
    min_joint_angle: float = 0.35
    full_length_tolerance: float = 1.15
    min_open_joint_angle: float = 0.75
    motion_tolerance: float = 1.0
    motion_rate: float = 8.0
    motion_gain: float = 0.5
    min_score: float = 0.55

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_outside_fraction <= 1.0:
            raise ValueError(f"max_outside_fraction must be in [0, 1], got {self.max_outside_fraction}")
        if not self.max_finger_length > 0.0:
            raise ValueError(f"max_finger_length must be > 0, got {self.max_finger_length}")
        if not 0.0 <= self.min_joint_angle < np.pi:
            raise ValueError(f"min_joint_angle must be in [0, pi), got {self.min_joint_angle}")
        if not self.full_length_tolerance >= 1.0:
            raise ValueError(f"full_length_tolerance must be >= 1, got {self.full_length_tolerance}")
        if not 0.0 <= self.min_open_joint_angle < np.pi:
            raise ValueError(f"min_open_joint_angle must be in [0, pi), got {self.min_open_joint_angle}")
        if not self.motion_tolerance > 0.0:
            raise ValueError(f"motion_tolerance must be > 0, got {self.motion_tolerance}")
        if not self.motion_rate >= 0.0:
            raise ValueError(f"motion_rate must be >= 0, got {self.motion_rate}")
        if not 0.0 <= self.motion_gain <= 1.0:
            raise ValueError(f"motion_gain must be in [0, 1], got {self.motion_gain}")
        if not 0.0 <= self.min_score <= 1.0:
            raise ValueError(f"min_score must be in [0, 1], got {self.min_score}")

    def full_lengths(self, lengths: np.ndarray | None = None) -> np.ndarray:
        """(20,) the longest each bone may be in 3-D, hand image sizes: the hand's own longest-seen
        lengths where it has shown the bone near full length, else the prior, x the tolerance."""
        full = BONE_FULL_S
        if lengths is not None:
            full = np.where(lengths >= LEARNED_MIN_FRACTION * BONE_FULL_S, lengths, BONE_FULL_S)
        return self.full_length_tolerance * full

    def tolerance(self, dt: float) -> float:
        """Allowed miss of the motion prediction ``dt`` s after the reference frame, hand sizes."""
        return self.motion_tolerance + self.motion_rate * max(float(dt), 0.0)

    def check(self, hand: HandObservation, pts: np.ndarray, width: int = 1, height: int = 1,
              motion: MotionReference | None = None, t: float = 0.0, *,
              metric: bool = True, angles: np.ndarray | None = None,
              shape: np.ndarray | None = None, lengths: np.ndarray | None = None
              ) -> tuple[str, str, float]:
        """(reason key or '', explanation, quality in [0, 1]) of one frame.

        hand: the observation; pts: (21, 3) skeleton the angles come from (any unit); width,
        height: image size, px; motion: the temporal reference (None: no check); t: the frame's
        capture time, s; metric: pts is the fused/world skeleton (a degenerate one then names the
        broken head); angles, shape: ``joint_angles(pts)`` and ``hand_shape(hand.image, width,
        height)`` when the caller has them (computed here otherwise); lengths: (20,) the longest
        each bone has been seen in the picture, hand image sizes (None: the prior). Quality is the
        classifier confidence times the fraction of image landmarks inside the image.
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
        size = hand_image_size(img, width, height)
        if not size > 0.0:
            return "degenerate", "the hand has no size in the image", 0.0
        bones = bone_image_lengths(img, width, height).reshape(5, 4)
        digits = bones[:, 1:].sum(axis=1)
        k = int(np.argmax(digits))
        if digits[k] > self.max_finger_length:
            return ("finger_length", f"{FINGER_NAMES[k]} {digits[k]:.2f} hand sizes long in the image "
                    f"(> {self.max_finger_length})", quality)
        ang = joint_angles(pts) if angles is None else angles
        folded = np.flatnonzero(ang < self.min_joint_angle)
        if folded.size:
            opened = most_open_angles(hand_shape(img, width, height) if shape is None else shape,
                                      self.full_lengths(lengths))
            k = int(folded[np.argmin(opened[folded])])
            if opened[k] < self.min_open_joint_angle:
                return ("joint_angle", f"{JOINT_NAMES[k]} bent to {ang[k]:.2f} rad (< "
                        f"{self.min_joint_angle} rad) and no depth opens it past {opened[k]:.2f} rad "
                        f"(< {self.min_open_joint_angle}): a bone folded back", quality)
        if motion is not None:
            shape = hand_shape(img, width, height) if shape is None else shape
            miss, dt = motion.miss(shape, t, self.motion_gain)
            tol = self.tolerance(dt)
            if miss > tol:
                return ("motion", f"the hand's shape moved {miss:.2f} hand sizes from its predicted "
                        f"motion in {dt * 1000:.0f} ms (> {tol:.2f})", quality)
        conf = max(hand.score, 1.0 - hand.score)
        if conf < self.min_score:
            return "low_score", f"handedness confidence {conf:.2f} < {self.min_score:.2f}", quality
        return "", "", quality


def _snapshot(f: OneEuroFilter) -> OneEuroFilter:
    """An independent copy of a filter's state (its arrays copied; ~10x cheaper than deepcopy)."""
    g = copy.copy(f)
    g.__dict__.update({k: v.copy() for k, v in f.__dict__.items() if isinstance(v, np.ndarray)})
    return g


#: The motion prediction extrapolates the last velocity over at most this long, s.
MAX_EXTRAPOLATION_S = 0.1


@dataclass
class MotionReference:
    """The gate's temporal reference: the hand's image shape (:func:`hand_shape`, (21, 2)) at the
    last two accepted frames, and at the last frame refused for motion (capture times, s)."""

    shapes: list[tuple[float, np.ndarray]] = field(default_factory=list)
    refused: tuple[float, np.ndarray] | None = None

    #: the last :meth:`miss` measured against the frame refused for motion (a re-anchoring)
    via_refused: bool = False
    #: (20,) the longest each bone has been seen in the picture in accepted frames of this track,
    #: hand image sizes (:func:`bone_image_lengths`); None before the first accepted frame
    lengths: np.ndarray | None = None

    def learn(self, lengths: np.ndarray) -> None:
        """An accepted frame's bone lengths (:func:`bone_image_lengths`) extend the longest seen."""
        ok = np.where(np.isfinite(lengths), lengths, 0.0)
        self.lengths = ok.copy() if self.lengths is None else np.fmax(self.lengths, ok)

    def accept(self, t: float, shape: np.ndarray) -> None:
        """An accepted frame becomes the newest reference (after a re-anchoring the refused frame
        becomes the older one, so the velocity is the new motion's)."""
        older = self.refused if self.via_refused and self.refused is not None else (
            self.shapes[-1] if self.shapes else None)
        self.shapes = [*([older] if older is not None else []), (t, shape)]
        self.refused = None
        self.via_refused = False

    def refuse(self, t: float, shape: np.ndarray) -> None:
        """A frame refused for motion: the next frame may agree with it (a real fast motion)."""
        self.refused = (t, shape)

    def predict(self, t: float, gain: float) -> tuple[np.ndarray, float]:
        """(predicted (21, 2) shape at ``t``, s since the last accepted frame)."""
        t1, q1 = self.shapes[-1]
        dt = t - t1
        if len(self.shapes) < 2 or gain == 0.0:
            return q1, dt
        t0, q0 = self.shapes[0]
        if not t1 > t0:
            return q1, dt
        horizon = min(max(dt, 0.0), MAX_EXTRAPOLATION_S)
        return q1 + gain * (q1 - q0) * (horizon / (t1 - t0)), dt

    def miss(self, shape: np.ndarray, t: float, gain: float) -> tuple[float, float]:
        """(largest landmark distance from the prediction, hand sizes; s since the reference).

        A frame that agrees with the previous frame refused for motion (the new pose is real and
        steady) is measured against that one instead."""
        self.via_refused = False
        if not self.shapes:
            return 0.0, 0.0
        pred, dt = self.predict(t, gain)
        miss = float(np.max(np.linalg.norm(shape - pred, axis=1)))
        if self.refused is not None:
            tr, qr = self.refused
            alt = float(np.max(np.linalg.norm(shape - qr, axis=1)))
            if alt < miss:
                self.via_refused = True
                return alt, t - tr
        return miss, dt


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
    #: Largest change of a digit's raw curl between two neighbouring accepted frames for the later
    #: one to count as consistent (its pose may then be held): ``max(hold_max_step rad,
    #: hold_max_speed rad/s x their capture-time gap)``. The shared video's per-frame change is
    #: <= 0.10 rad on 90 % of frames at 30 fps (0.33 with every 3rd frame: 10 fps); a one-frame
    #: misreading of ring 0.50 in an open hand is ~0.7 rad.
    hold_max_step: float = 0.3
    hold_max_speed: float = 9.0

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
        if not self.hold_max_step > 0.0:
            raise ValueError(f"hold_max_step must be > 0, got {self.hold_max_step}")
        if not self.hold_max_speed >= 0.0:
            raise ValueError(f"hold_max_speed must be >= 0, got {self.hold_max_speed}")

    def hold_step(self, dt: float) -> float:
        """Largest curl change (rad) between accepted frames ``dt`` s apart that is consistent."""
        return max(self.hold_max_step, self.hold_max_speed * max(float(dt), 0.0))

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
    hold_cause: when held, why (:data:`HOLD_CAUSES`), else ''. confirmed: an accepted frame whose
    raw curls agree with a neighbouring accepted frame (``hold_max_step``): only such poses are
    held; a frame that disagrees with its predecessor is published but becomes holdable only
    when the next accepted frame agrees with it.
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
    hold_cause: str = ""
    confirmed: bool = False

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
        self._motion = MotionReference()
        self._shape: np.ndarray | None = None  # the last measured hand's image shape
        self._last_curls: tuple[float, np.ndarray] | None = None  # (t, raw curls) of the last accepted frame
        # (filtered angles, raw angles, filter state, t) of the last confirmed frame
        self._confirmed: tuple[np.ndarray, np.ndarray, OneEuroFilter, float] | None = None
        self._confirmed_pending = False  # the last accepted frame is not (yet) confirmed
        self.missed = 0
        #: Frames refused by the gate, per reason (:data:`REJECT_REASONS`), since construction.
        self.rejections: dict[str, int] = dict.fromkeys(REJECT_REASONS, 0)
        #: Held frames per cause (:data:`HOLD_CAUSES`), since construction.
        self.holds: dict[str, int] = dict.fromkeys(HOLD_CAUSES, 0)
        #: Holds that fell back to an older, confirmed pose because the last accepted frame
        #: disagreed with its predecessor (a possible one-frame misreading), since construction.
        self.holds_skipped_unconfirmed = 0

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
        """Forget the pose, the filter state and the gate's temporal reference."""
        self._filter.reset()
        self._angles = None
        self._motion = MotionReference()
        self._last_curls = None
        self._confirmed = None
        self._confirmed_pending = False
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

    def measure(self, hands: list[HandObservation], width: int = 1, height: int = 1, t: float | None = None
                ) -> tuple[HandObservation | None, np.ndarray | None, str, str, float]:
        """(hand, raw 15 angles or None, reason, gate reason key, quality): one frame, unfiltered.

        ``t``: the frame's capture time (s) for the gate's temporal check (None: not checked).
        Does not count rejections nor move the temporal reference (see :meth:`update`)."""
        hand = self.select(hands)
        if hand is None:
            pref = self._config.hand_preference
            return None, None, "no hand" if not hands or pref == "any" else f"no {pref} hand", "", 0.0
        w, h = max(width, 1), max(height, 1)
        pts = self.points(hand, w, h)
        motion = self._motion if t is not None else None
        angles = joint_angles(pts)
        with np.errstate(all="ignore"):
            self._shape = hand_shape(hand.image, w, h)
        key, why, quality = self._config.gate.check(hand, pts, w, h, motion, t or 0.0,
                                                    metric=self._config.landmark_mode != "image",
                                                    angles=angles, shape=self._shape,
                                                    lengths=self._motion.lengths)
        if key:
            what = "implausible skeleton" if key == "degenerate" else f"rejected ({key})"
            return hand, None, f"{what}: {why}", key, quality
        return hand, angles, "", "", quality

    def update(self, hands: list[HandObservation], t: float, width: int = 1, height: int = 1) -> TrackOutput:
        """Process one frame's hands at time ``t`` (s, the capture stamp); ``width``/``height``: image
        size (px). Deterministic: the same frames at the same ``t`` give the same floats."""
        cfg = self._config
        w, h = max(width, 1), max(height, 1)
        hand, raw, reason, key, quality = self.measure(hands, w, h, t)
        if key:
            self.rejections[key] += 1
            if key == "motion":
                self._motion.refuse(t, self._shape)
        if raw is not None:
            self._motion.accept(t, self._shape)
            self._motion.learn(bone_image_lengths(hand.image, w, h))
            curls = finger_curls(raw)
            prev = self._last_curls
            near_prev = prev is not None and float(np.max(np.abs(curls - prev[1]))) <= cfg.hold_step(t - prev[0])
            near_confirmed = (self._confirmed is not None and float(np.max(np.abs(
                curls - finger_curls(self._confirmed[1])))) <= cfg.hold_step(t - self._confirmed[3]))
            self._last_curls = (t, curls)
            self.missed = 0
            self._angles = self._filter(raw, t) if cfg.filter_enabled else raw
            # consistent with a neighbour (the previous accepted frame, or the last confirmed one
            # when a misreading came between), or the first frame of a track
            confirmed = near_prev or near_confirmed or prev is None
            if confirmed:
                self._confirmed = (self._angles.copy(), raw.copy(), _snapshot(self._filter), t)
            self._confirmed_pending = not confirmed
            angles = self._angles
            status, cause = "tracked", ""
        else:
            self.missed += 1
            cause = key or "no_hand"
            if self._angles is not None and self.missed <= cfg.max_missed_frames:
                status = "held"
                self.holds[cause] += 1
                if self._confirmed_pending:
                    # the last reading disagreed with its predecessor and nothing confirmed it:
                    # hold the last confirmed pose, and filter on from there
                    self.holds_skipped_unconfirmed += 1
                    self._confirmed_pending = False
                    if self._confirmed is not None:
                        angles_c, raw_c, filt, t_c = self._confirmed
                        self._angles = angles_c.copy()
                        self._filter = _snapshot(filt)
                        self._last_curls = (t_c, finger_curls(raw_c))
                angles = self._angles
            else:
                if self._angles is not None:
                    self._filter.reset()
                    self._angles = None
                # a new hand is judged on its own, not against the old one
                self._motion = MotionReference()
                self._last_curls = None
                self._confirmed = None
                self._confirmed_pending = False
                return TrackOutput("lost", hand, None, None, None, None, self.missed, reason, key, quality)
            confirmed = False
        return TrackOutput(
            status, hand, raw, angles.copy(),
            cfg.finger_windows.flexions(finger_curls(angles)),
            cfg.joint_windows.flexions(angles),
            self.missed, reason, key, quality, cause if status == "held" else "", confirmed,
        )
