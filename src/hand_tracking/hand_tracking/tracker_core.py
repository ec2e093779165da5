"""The tracker's per-frame pipeline, without ROS: hands → angles → filter → flexions.

For each processed frame :meth:`TrackerCore.update` takes the hands a backend (or a recording)
saw and the frame's time (s; the node passes the capture stamp carried in the message, so a
replay of recorded landmarks computes the same outputs bit for bit), and returns a
:class:`TrackOutput`:

1. pick the hand to follow (``hand_preference``: any/right/left; the most confident one);
2. reject an implausible skeleton (non-finite values, collapsed palm, zero-length bones,
   :func:`hand_tracking.geometry.check_skeleton`) as a miss;
3. the 15 joint angles, on world landmarks (default) or on image landmarks in pixels;
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
from hand_tracking.geometry import Windows, check_skeleton, finger_curls, image_points, joint_angles
from hand_tracking.landmarks import HandObservation

#: Default windows, radians (interior angles). Measured on MediaPipe *world* landmarks of the
#: shared video (a relaxed open hand reads 2.7-2.95 rad per finger, a fist 1.5-1.75, the thumb
#: 2.45 in a fist): an uncalibrated hand reads roughly right; calibrate for real use.
DEFAULT_FINGER_STRAIGHT = (2.90, 2.75, 2.75, 2.75, 2.75)
DEFAULT_FINGER_CURLED = (2.45, 1.60, 1.60, 1.60, 1.55)
#: Per joint (JOINT_NAMES order: thumb CMC/MCP/IP, then MCP/PIP/DIP of each finger); the thumb
#: MCP barely moves in a fist and gets the minimum calibration window (0.3 rad).
DEFAULT_JOINT_STRAIGHT = (3.05, 3.00, 2.75,
                          2.85, 2.70, 2.70,
                          2.95, 2.60, 2.65,
                          2.95, 2.60, 2.80,
                          3.00, 2.65, 2.70)
DEFAULT_JOINT_CURLED = (2.50, 2.70, 2.15,
                        1.80, 1.65, 1.80,
                        1.60, 1.70, 1.55,
                        1.25, 1.80, 1.75,
                        1.40, 1.80, 1.40)

HAND_PREFERENCES = ("any", "right", "left")
STATUSES = ("tracked", "held", "lost")


def default_finger_windows() -> Windows:
    return Windows(FINGER_NAMES, DEFAULT_FINGER_STRAIGHT, DEFAULT_FINGER_CURLED)


def default_joint_windows() -> Windows:
    return Windows(JOINT_NAMES, DEFAULT_JOINT_STRAIGHT, DEFAULT_JOINT_CURLED)


@dataclass(frozen=True)
class TrackerConfig:
    """Everything :class:`TrackerCore` needs; validated on construction (ValueError)."""

    finger_windows: Windows = field(default_factory=default_finger_windows)
    joint_windows: Windows = field(default_factory=default_joint_windows)
    use_world_landmarks: bool = True
    hand_preference: str = "any"
    filter_enabled: bool = True
    filter: OneEuroParams = field(default_factory=lambda: OneEuroParams(1.5, 2.0, 1.0))
    max_missed_frames: int = 10

    def __post_init__(self) -> None:
        if self.finger_windows.names != FINGER_NAMES:
            raise ValueError(f"finger windows must be for {FINGER_NAMES}")
        if self.joint_windows.names != JOINT_NAMES:
            raise ValueError("joint windows must be for contract.JOINT_NAMES")
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
    """

    status: str
    hand: HandObservation | None = None
    raw_angles: np.ndarray | None = None
    angles: np.ndarray | None = None
    finger_flexions: np.ndarray | None = None
    joint_flexions: np.ndarray | None = None
    missed: int = 0
    reason: str = ""

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
        self.missed = 0

    @property
    def config(self) -> TrackerConfig:
        return self._config

    @config.setter
    def config(self, cfg: TrackerConfig) -> None:
        """Apply a new config from the next frame on; the filter state is kept."""
        old = self._config
        self._config = cfg
        self._filter.params = cfg.filter
        if cfg.use_world_landmarks != old.use_world_landmarks:
            self.reset()  # angles from the other landmark set are not comparable

    def reset(self) -> None:
        """Forget the pose and the filter state."""
        self._filter.reset()
        self._angles = None
        self.missed = 0

    def select(self, hands: list[HandObservation]) -> HandObservation | None:
        """The hand to follow: best score among those matching ``hand_preference``."""
        pref = self._config.hand_preference
        cands = [h for h in hands if pref == "any" or h.handedness == pref]
        if not cands:
            return None
        return max(cands, key=lambda h: h.score)

    def points(self, hand: HandObservation, width: int, height: int) -> np.ndarray:
        """The landmarks geometry runs on: world (m) or image landmarks in pixels."""
        if self._config.use_world_landmarks:
            return hand.world
        return image_points(hand.image, max(width, 1), max(height, 1))

    def measure(self, hands: list[HandObservation], width: int = 1, height: int = 1
                ) -> tuple[HandObservation | None, np.ndarray | None, str]:
        """(hand, raw 15 angles, reason): the unfiltered measurement of one frame."""
        hand = self.select(hands)
        if hand is None:
            pref = self._config.hand_preference
            return None, None, "no hand" if not hands or pref == "any" else f"no {pref} hand"
        pts = self.points(hand, width, height)
        problem = check_skeleton(pts)
        if problem:
            return hand, None, f"implausible skeleton: {problem}"
        return hand, joint_angles(pts), ""

    def update(self, hands: list[HandObservation], t: float, width: int = 1, height: int = 1) -> TrackOutput:
        """Process one frame's hands at time ``t`` (s, the capture stamp); ``width``/``height``: image
        size (px). Deterministic: the same frames at the same ``t`` give the same floats."""
        cfg = self._config
        hand, raw, reason = self.measure(hands, width, height)
        if raw is not None:
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
                return TrackOutput("lost", hand, None, None, None, None, self.missed, reason)
        angles = self._angles
        return TrackOutput(
            status, hand, raw, angles.copy(),
            cfg.finger_windows.flexions(finger_curls(angles)),
            cfg.joint_windows.flexions(angles),
            self.missed, reason,
        )
