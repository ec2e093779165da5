"""Landmark preprocessing for retargeting (pure numpy, no rclpy).

Input: one hand's 21 MediaPipe *world* landmarks (metres, any rigid frame, e.g. MediaPipe's
camera-aligned hand frame) and its physical handedness. Output: the same 21 points expressed in
the robot hand's palm frame (:mod:`hand_description.dex`: origin at the wrist, +x palmar, +y
radial, +z distal), chirality made to match the robot hand, bone lengths calibrated, filtered, and
scaled to the robot's size — or a *miss* with the reason.

Steps (:class:`Preprocessor.process`):

1. **Validation / rejection** (:func:`check_skeleton`): non-finite values, a degenerate palm, a
   palm width (index MCP - little MCP) or palm length (wrist - middle of those MCPs) outside
   plausible ranges, or a digit (CMC/MCP -> tip, sum of its 3 bones) shorter or longer than
   plausible (absolute range before calibration; 0.55-1.5x its calibrated length after) ->
   the frame is a miss (collapsed or occluded skeleton).
2. **Canonical palm frame** (:func:`palm_frame`): x across the palm from index MCP (5) to little
   MCP (17), y from the wrist (0) to the middle of those MCPs, z = x × y (normal of the palm),
   x re-orthogonalised = y × z. For a right hand z points dorsal, for a left hand palmar.
   (``frame="mano"``: dex-retargeting's own wrist frame and operator -> MANO rotation instead,
   :func:`mano_frame`: what the dex-urdf hands' configurations, e.g. LEAP and Allegro, expect;
   the rotation of the side the hand has once mirrored, as dex-retargeting's detector applies
   its ``hand_type``'s.)
3. **Chirality** (``mirror``): ``auto`` mirrors a hand whose handedness differs from the robot's
   side (z -> -z in the canonical frame: a left hand becomes a right hand), ``on`` always,
   ``off`` never. Either operator hand then drives the same robot hand.
4. Canonical -> robot palm frame by the fixed rotation that maps the robot's own landmarks'
   canonical frame onto its palm frame (``alignment``), so a skeleton built from the robot's FK
   comes back exactly.
5. **Filtering** (1€ filter per coordinate, :class:`hand_common.filters.OneEuroFilter`), then
   **bone-length calibration** (:class:`BoneCalibrator`): median length per bone over the first
   ``calibration_time`` s (running median until then); the skeleton is rebuilt from the wrist
   outwards with the filtered *directions* and the calibrated *lengths* — of the four fingers;
   the thumb's four bones keep this frame's (filtered) lengths. MediaPipe's world head changes
   the thumb's bone lengths with its pose, not at random (model_complexity 1 on the shared video:
   thumb IP-tip 30-31 mm open, 35-36 mm folded across the palm), and the thumb tip's place against
   the fingers and the palm is what opposition (DexPilot's thumb-finger vectors, the Kapandji
   score taken on the raw landmarks) is about: re-imposing the open hand's lengths moved the
   folded thumb's tip 0.15 palm widths off the little finger's base it was touching.
   With ``open_pose`` the operator's *open* hand is calibrated too: the mean direction of every
   bone over the same window (the operator holds the hand open, relaxed, while calibrating) is
   turned onto the direction of the same bone in the robot's rest pose, and every later frame's
   bone directions get the same fixed rotation (:func:`open_rotations`): a relaxed open hand then
   drives the robot to its rest pose (a flat URDF hand at q = 0) and flexions count from there.
6. **Scaling** to the robot: ``scale`` > 0 fixed, 0 = automatic (robot hand size / calibrated
   human hand size, sizes = sum of the 20 bone lengths).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hand_common.filters import OneEuroFilter, OneEuroParams

N_LANDMARKS = 21
WRIST, INDEX_MCP, MIDDLE_MCP, LITTLE_MCP = 0, 5, 9, 17
THUMB_TIP = 4
#: Parent of landmark i (i = 1..20) in the wrist-rooted tree used to rebuild the skeleton.
PARENT = (-1, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11, 0, 13, 14, 15, 0, 17, 18, 19)
#: Landmarks of each digit, proximal -> tip (thumb CMC MCP IP TIP; fingers MCP PIP DIP TIP).
DIGIT_LANDMARKS = {"thumb": (1, 2, 3, 4), "index": (5, 6, 7, 8), "middle": (9, 10, 11, 12),
                   "ring": (13, 14, 15, 16), "pinky": (17, 18, 19, 20)}
MIRROR_CHOICES = ("auto", "on", "off")


def bone_lengths(points: np.ndarray) -> np.ndarray:
    """(20,) m: length of the bone ending at landmark i = 1..20 (see :data:`PARENT`)."""
    p = np.asarray(points, dtype=float)
    return np.linalg.norm(p[1:] - p[list(PARENT[1:])], axis=1)


def digit_lengths(bones: np.ndarray) -> dict[str, float]:
    """Sum of each digit's 3 bones after its first landmark (CMC/MCP -> tip), m."""
    return {d: float(sum(bones[i - 1] for i in idx[1:])) for d, idx in DIGIT_LANDMARKS.items()}


def palm_frame(points: np.ndarray) -> np.ndarray:
    """(3, 3) rotation whose columns are the canonical x, y, z axes (see the module docstring), in
    the frame of ``points``. ValueError for a degenerate palm (MCPs on the wrist, collinear)."""
    p = np.asarray(points, dtype=float)
    x = p[LITTLE_MCP] - p[INDEX_MCP]
    y = 0.5 * (p[INDEX_MCP] + p[LITTLE_MCP]) - p[WRIST]
    nx, ny = np.linalg.norm(x), np.linalg.norm(y)
    if nx < 1e-6 or ny < 1e-6:
        raise ValueError("degenerate palm: index/little MCP coincide or sit on the wrist")
    y = y / ny
    z = np.cross(x / nx, y)
    nz = np.linalg.norm(z)
    if nz < 0.1:  # the MCP line is within ~6 degrees of the wrist direction
        raise ValueError("degenerate palm: wrist and MCPs are (nearly) collinear")
    z /= nz
    return np.column_stack([np.cross(y, z), y, z])


def should_mirror(handedness: str, robot_side: str, mirror: str) -> bool:
    """Whether to mirror a ``handedness`` hand onto a ``robot_side`` robot hand for choice ``mirror``."""
    if mirror not in MIRROR_CHOICES:
        raise ValueError(f"mirror must be one of {MIRROR_CHOICES}, got {mirror!r}")
    if mirror == "on":
        return True
    if mirror == "off":
        return False
    if handedness not in ("left", "right"):
        raise ValueError(f"handedness must be 'left' or 'right', got {handedness!r}")
    return handedness != robot_side


def to_palm_frame(points: np.ndarray, mirrored: bool, alignment: np.ndarray) -> np.ndarray:
    """(21, 3) points in the robot palm frame: wrist at the origin, canonical frame (mirrored if
    asked), then ``alignment`` (3, 3) = the robot's canonical axes expressed in its palm frame."""
    p = np.asarray(points, dtype=float)
    canon = (p - p[WRIST]) @ palm_frame(p)
    if mirrored:
        canon[:, 2] = -canon[:, 2]
    return canon @ alignment.T


def bone_directions(points: np.ndarray) -> np.ndarray:
    """(20, 3) unit vectors of the bones ending at landmarks 1..20 (zero for a zero-length bone)."""
    p = np.asarray(points, dtype=float)
    d = p[1:] - p[list(PARENT[1:])]
    n = np.linalg.norm(d, axis=1, keepdims=True)
    return np.where(n > 1e-9, d / np.maximum(n, 1e-12), 0.0)


def open_rotations(human: np.ndarray, robot: np.ndarray) -> np.ndarray:
    """(20, 3, 3): per bone the smallest rotation turning direction ``human[i]`` onto ``robot[i]``
    ((20, 3) each, need not be unit; identity where either is zero or they are opposite)."""
    out = np.tile(np.eye(3), (len(human), 1, 1))
    for i, (a, b) in enumerate(zip(np.asarray(human, float), np.asarray(robot, float))):
        na, nb = np.linalg.norm(a), np.linalg.norm(b)
        if na < 1e-9 or nb < 1e-9:
            continue
        a, b = a / na, b / nb
        v, c = np.cross(a, b), float(a @ b)
        if c < -0.999:
            continue
        k = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
        out[i] = np.eye(3) + k + k @ k / (1.0 + c)
    return out


#: dex-retargeting's operator -> MANO rotations for a right and a left hand
#: (example/vector_retargeting/single_hand_detector.py: OPERATOR2MANO_RIGHT, OPERATOR2MANO_LEFT)
OPERATOR2MANO_RIGHT = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
OPERATOR2MANO_LEFT = np.array([[0.0, 0.0, -1.0], [1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
OPERATOR2MANO = {"right": OPERATOR2MANO_RIGHT, "left": OPERATOR2MANO_LEFT}


def mano_frame(points: np.ndarray, side: str = "right") -> np.ndarray:
    """(3, 3) the wrist frame dex-retargeting's examples estimate from wrist, index MCP and middle
    MCP (SVD plane normal; x from the middle MCP to the wrist), times its operator -> MANO rotation
    for a ``side`` ('right' or 'left') hand: ``(p - p[0]) @ mano_frame(p, side)`` is that hand in the
    frame the dex-urdf hands' configurations of the same side expect (a left hand needs
    OPERATOR2MANO_LEFT: with the right one its thumb lands on the ulnar side of a left robot).
    ValueError for a degenerate palm or an unknown side."""
    if side not in OPERATOR2MANO:
        raise ValueError(f"side must be 'right' or 'left', got {side!r}")
    p = np.asarray(points, dtype=float)
    pts = p[[WRIST, INDEX_MCP, MIDDLE_MCP]]
    xv = pts[0] - pts[2]
    c = pts - pts.mean(axis=0)
    _, sv, vt = np.linalg.svd(c)
    if sv[1] < 1e-6:
        raise ValueError("degenerate palm: wrist, index and middle MCP collinear")
    normal = vt[2]
    x = xv - (xv @ normal) * normal
    nx = np.linalg.norm(x)
    if nx < 1e-9:
        raise ValueError("degenerate palm: middle MCP on the wrist")
    x /= nx
    z = np.cross(x, normal)
    if float(z @ (pts[1] - pts[2])) < 0:
        normal, z = -normal, -z
    return np.stack([x, normal, z], axis=1) @ OPERATOR2MANO[side]


def rebuild(points: np.ndarray, lengths: np.ndarray, rotations: np.ndarray | None = None) -> np.ndarray:
    """The skeleton with each bone's direction from ``points`` (turned by ``rotations`` (20, 3, 3)
    if given) and its length from ``lengths`` (20,), rebuilt from the wrist outwards (wrist kept).
    A zero-length bone keeps its calibrated length along its parent bone's direction."""
    p = np.asarray(points, dtype=float)
    out = np.empty_like(p)
    out[WRIST] = p[WRIST]
    for i in range(1, N_LANDMARKS):
        par = PARENT[i]
        d = p[i] - p[par]
        n = np.linalg.norm(d)
        if n < 1e-9:
            d = out[par] - out[PARENT[par]] if PARENT[par] >= 0 else np.array([0.0, 0.0, 1.0])
            n = np.linalg.norm(d) or 1.0
        elif rotations is not None:
            d = rotations[i - 1] @ d
        out[i] = out[par] + lengths[i - 1] * d / n
    return out


@dataclass(frozen=True)
class Plausible:
    """Ranges outside which a skeleton is rejected as collapsed/occluded (m, or ratios)."""

    palm_width: tuple[float, float] = (0.04, 0.13)
    palm_length: tuple[float, float] = (0.05, 0.16)
    digit_length: tuple[float, float] = (0.025, 0.16)   # before calibration, each digit
    digit_ratio: tuple[float, float] = (0.55, 1.5)      # after calibration, measured / calibrated


def check_skeleton(points: np.ndarray, plausible: Plausible = Plausible(),
                   calibrated_digits: dict[str, float] | None = None) -> str | None:
    """None if ``points`` (21, 3) m is a plausible hand, else the reason it is rejected."""
    p = np.asarray(points, dtype=float)
    if p.shape != (N_LANDMARKS, 3):
        return f"expected 21x3 landmarks, got shape {p.shape}"
    if not np.all(np.isfinite(p)):
        return "non-finite landmark values"
    width = float(np.linalg.norm(p[INDEX_MCP] - p[LITTLE_MCP]))
    if not plausible.palm_width[0] <= width <= plausible.palm_width[1]:
        return f"palm width {width * 1e3:.1f} mm outside [{plausible.palm_width[0] * 1e3:.0f}, " \
               f"{plausible.palm_width[1] * 1e3:.0f}] mm (collapsed or occluded skeleton)"
    length = float(np.linalg.norm(0.5 * (p[INDEX_MCP] + p[LITTLE_MCP]) - p[WRIST]))
    if not plausible.palm_length[0] <= length <= plausible.palm_length[1]:
        return f"palm length {length * 1e3:.1f} mm outside [{plausible.palm_length[0] * 1e3:.0f}, " \
               f"{plausible.palm_length[1] * 1e3:.0f}] mm"
    try:
        palm_frame(p)
    except ValueError as exc:
        return str(exc)
    digits = digit_lengths(bone_lengths(p))
    for d, v in digits.items():
        if calibrated_digits is None:
            lo, hi = plausible.digit_length
            if not lo <= v <= hi:
                return f"{d} length {v * 1e3:.1f} mm outside [{lo * 1e3:.0f}, {hi * 1e3:.0f}] mm"
        else:
            r = v / calibrated_digits[d]
            lo, hi = plausible.digit_ratio
            if not lo <= r <= hi:
                return f"{d} length {v * 1e3:.1f} mm is {r:.2f}x its calibrated {calibrated_digits[d] * 1e3:.1f} mm " \
                       f"(outside [{lo}, {hi}])"
    return None


class BoneCalibrator:
    """Median length per bone over the first ``duration`` s of accepted frames.

    Before the window is over, :attr:`lengths` is the running median of what was seen (so
    retargeting can start at once); afterwards it is frozen. :meth:`reset` starts again.
    """

    def __init__(self, duration: float = 3.0, min_samples: int = 10):
        if not (math.isfinite(duration) and duration >= 0.0):
            raise ValueError(f"calibration duration must be >= 0 s, got {duration}")
        self.duration = float(duration)
        self.min_samples = max(1, int(min_samples))
        self.reset()

    def reset(self) -> None:
        self._samples: list[np.ndarray] = []
        self._t0: float | None = None
        self._lengths: np.ndarray | None = None
        self.done = False

    def add(self, points: np.ndarray, t: float) -> None:
        """Record the bone lengths of an accepted skeleton at time ``t`` (s)."""
        if self.done:
            return
        if self._t0 is None:
            self._t0 = t
        self._samples.append(bone_lengths(points))
        self._lengths = np.median(np.array(self._samples), axis=0)
        if t - self._t0 >= self.duration and len(self._samples) >= self.min_samples:
            self.done = True
            self._samples = []

    @property
    def lengths(self) -> np.ndarray | None:
        """(20,) m, or None before the first sample."""
        return None if self._lengths is None else self._lengths.copy()

    @property
    def samples(self) -> int:
        return len(self._samples)


@dataclass(frozen=True)
class PreprocessConfig:
    robot_side: str = "right"
    mirror: str = "auto"
    calibration_time: float = 3.0       # s
    filter_min_cutoff: float = 2.0      # Hz (1€); 0 disables filtering
    filter_beta: float = 5.0            # 1/m
    scale: float = 0.0                  # 0 = automatic (robot size / calibrated human size)
    open_pose: bool = False             # calibrate the open hand onto the robot's rest pose
    frame: str = "robot"                # robot: aligned on the robot's landmarks; mano: dex-retargeting's
    plausible: Plausible = field(default_factory=Plausible)

    def __post_init__(self) -> None:
        if self.robot_side not in ("left", "right"):
            raise ValueError(f"robot_side must be 'left' or 'right', got {self.robot_side!r}")
        should_mirror("right", "right", self.mirror)  # validates the choice
        if self.frame not in ("robot", "mano"):
            raise ValueError(f"frame must be 'robot' or 'mano', got {self.frame!r}")
        for name in ("calibration_time", "filter_min_cutoff", "filter_beta", "scale"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0.0):
                raise ValueError(f"{name} must be a finite number >= 0, got {v}")


@dataclass(frozen=True)
class Preprocessed:
    """Result of one frame. ``ok`` False = a miss (``reason`` says why; nothing else is set).

    landmarks: (21, 3) m in the robot palm frame, filtered, calibrated, scaled (retargeting input).
    raw: (21, 3) m in the robot palm frame before filtering/calibration/scaling (the human's own
    geometry, e.g. for the human Kapandji score).
    """

    ok: bool
    reason: str = ""
    landmarks: np.ndarray | None = None
    raw: np.ndarray | None = None
    mirrored: bool = False
    calibrated: bool = False
    scale: float = 1.0


class Preprocessor:
    """Stateful per-hand preprocessing (see the module docstring). Not thread-safe.

    robot_landmarks: (21, 3) the robot's own landmarks at its open pose in its palm frame
    (:meth:`hand_description.dex.DexHandDescription.landmarks`): they define the alignment of
    the canonical frame and the robot's size for automatic scaling.
    """

    def __init__(self, robot_landmarks: np.ndarray, config: PreprocessConfig = PreprocessConfig()):
        self.config = config
        robot = np.asarray(robot_landmarks, dtype=float)
        self.alignment = palm_frame(robot)
        self.robot_size = float(bone_lengths(robot).sum())
        self._robot_dirs = bone_directions(robot)
        self.calibrator = BoneCalibrator(config.calibration_time)
        self._filter = None
        if config.filter_min_cutoff > 0.0:
            self._filter = OneEuroFilter(OneEuroParams(min_cutoff=config.filter_min_cutoff, beta=config.filter_beta))
        self.misses = 0
        self.last_reason = ""
        self._open_sum = np.zeros((N_LANDMARKS - 1, 3))
        self._rotations: np.ndarray | None = None

    def reset(self) -> None:
        """Forget the calibration and the filter state (a new operator)."""
        self.calibrator.reset()
        self._open_sum = np.zeros((N_LANDMARKS - 1, 3))
        self._rotations = None
        if self._filter is not None:
            self._filter.reset()

    def process(self, world: np.ndarray, handedness: str, t: float) -> Preprocessed:
        """One hand's world landmarks (21, 3) m and handedness at time ``t`` (s, monotonic per stream)."""
        cfg = self.config
        p = np.asarray(world, dtype=float)
        cal = self.calibrator
        cal_digits = digit_lengths(cal.lengths) if cal.done else None
        reason = check_skeleton(p, cfg.plausible, cal_digits)
        mirrored = False
        if reason is None:
            try:
                mirrored = should_mirror(handedness, cfg.robot_side, cfg.mirror)
            except ValueError as exc:
                reason = str(exc)
        if reason is not None:
            self.misses += 1
            self.last_reason = reason
            return Preprocessed(False, reason)
        if cfg.frame == "mano":
            q = p - p[WRIST]
            # the side of the hand as fed: mirroring turns it into the other one
            side = handedness if handedness in ("left", "right") else cfg.robot_side
            if mirrored:
                q = q * np.array([1.0, 1.0, -1.0])
                side = "left" if side == "right" else "right"
            try:
                raw = q @ mano_frame(q, side)
            except ValueError as exc:
                self.misses += 1
                self.last_reason = str(exc)
                return Preprocessed(False, str(exc))
        else:
            raw = to_palm_frame(p, mirrored, self.alignment)
        calibrating = not cal.done
        cal.add(raw, t)
        filtered = raw
        if self._filter is not None:
            filtered = self._filter(raw.reshape(-1), t).reshape(N_LANDMARKS, 3)
        lengths = cal.lengths
        lengths[:4] = bone_lengths(filtered)[:4]     # the thumb keeps its own (see the module docstring)
        if cfg.open_pose and calibrating:   # running mean until the window closes, then frozen
            self._open_sum += bone_directions(raw)
            self._rotations = open_rotations(self._open_sum, self._robot_dirs)
            self._rotations[:4] = np.eye(3)     # the thumb keeps its own direction (opposition)
        rebuilt = rebuild(filtered, lengths, self._rotations if cfg.open_pose else None)
        scale = cfg.scale if cfg.scale > 0.0 else self.robot_size / float(cal.lengths.sum())
        return Preprocessed(True, "", rebuilt * scale, raw, mirrored, cal.done, scale)
