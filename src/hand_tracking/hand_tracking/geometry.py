"""Hand geometry on MediaPipe's 21 landmarks: joint angles, finger curls, flexion windows.

Pure numpy, no rclpy. Every function accepts one hand ``(21, 3)`` or a batch ``(..., 21, 3)``.

Landmark order (MediaPipe hand topology): 0 wrist; 1-4 thumb CMC, MCP, IP, tip; 5-8 index MCP,
PIP, DIP, tip; 9-12 middle; 13-16 ring; 17-20 pinky. Works in any Cartesian frame with equal
units on its three axes: MediaPipe world landmarks (metres) or image landmarks scaled to pixels
(see :func:`image_points`).

Angles
------
The *interior angle* at a joint is the angle between the two bones that meet there: pi rad
(180 deg) when the digit is straight, smaller as it flexes. The wrist stands in for each finger's
metacarpal base, so the MCP angle of a finger is the angle wrist-MCP-PIP; the thumb's CMC angle is
wrist-CMC-MCP. The 15 joints are :data:`hand_common.contract.JOINT_NAMES`, in that order.

A finger's *curl* is the mean interior angle of its three joints (the robot finger is
underactuated: one tendon closes all three joints together, so one number per finger).

Flexion windows
---------------
A window maps an angle to a flexion in [0, 1]: ``(straight - angle) / (straight - curled)``,
clipped. ``straight`` is the angle read as fully open (flexion 0), ``curled`` the angle read as
fully closed (flexion 1); ``straight > curled``. Windows are per finger (thumb has its own) for
``/hand/target_flexions`` and per joint for ``/hand/joint_flexions``.

Robustness
----------
Zero-length bones (duplicate landmarks) and non-finite coordinates have no defined angle; the
angle functions then return pi (straight, the neutral value) for the affected joints instead of
NaN, and :func:`check_skeleton` names the problem so that callers can treat the frame as a miss.
Angles use ``atan2(|u x v|, u . v)``, which needs no arccos domain clamp and stays accurate near
0 and pi.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from hand_common.contract import FINGER_JOINTS, FINGER_NAMES, JOINT_NAMES

N_LANDMARKS = 21

#: Landmark names in MediaPipe order.
LANDMARK_NAMES: tuple[str, ...] = ("wrist",) + tuple(
    f"{f}_{p}" for f, parts in (
        ("thumb", ("cmc", "mcp", "ip", "tip")),
        ("index", ("mcp", "pip", "dip", "tip")),
        ("middle", ("mcp", "pip", "dip", "tip")),
        ("ring", ("mcp", "pip", "dip", "tip")),
        ("pinky", ("mcp", "pip", "dip", "tip")),
    ) for p in parts
)

WRIST = 0
#: First landmark (CMC for the thumb, MCP for the fingers) of each digit, FINGER_NAMES order.
DIGIT_BASE: tuple[int, ...] = (1, 5, 9, 13, 17)

#: (proximal, joint, distal) landmark indices of the 15 joints, in JOINT_NAMES order.
JOINT_TRIPLETS: np.ndarray = np.array(
    [t for b in DIGIT_BASE for t in ((WRIST, b, b + 1), (b, b + 1, b + 2), (b + 1, b + 2, b + 3))],
    dtype=int,
)

#: The 20 bones as (parent, child) landmark indices.
BONES: np.ndarray = np.array(
    [bone for b in DIGIT_BASE for bone in ((WRIST, b), (b, b + 1), (b + 1, b + 2), (b + 2, b + 3))],
    dtype=int,
)

#: Below this length (in the coordinates' units) a vector counts as zero-length.
_EPS = 1e-12

# Sanity checks at import: the joint table follows the contract's naming.
assert len(JOINT_TRIPLETS) == len(JOINT_NAMES) == 3 * len(FINGER_NAMES)
assert tuple(j for f in FINGER_NAMES for j in FINGER_JOINTS[f]) == JOINT_NAMES


def _as_points(points: ArrayLike) -> np.ndarray:
    p = np.asarray(points, dtype=float)
    if p.ndim < 2 or p.shape[-2:] != (N_LANDMARKS, 3):
        raise ValueError(f"expected landmarks of shape (..., 21, 3), got {p.shape}")
    return p


def image_points(image_landmarks: ArrayLike, width: int, height: int) -> np.ndarray:
    """Normalised MediaPipe image landmarks → pixel-proportional 3-D points.

    x is scaled by ``width``, y by ``height`` and z by ``width`` (MediaPipe's z uses roughly the
    scale of x), so that angles are not distorted by the image's aspect ratio. Shape is kept.
    """
    p = _as_points(image_landmarks)
    if width <= 0 or height <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    return p * np.array([width, height, width], dtype=float)


#: How the tracker builds the skeleton its angles come from (``landmark_mode``): MediaPipe's
#: world head alone, its image head alone (in pixels), or the two fused
#: (:func:`hand_tracking.fusion.fused_points`).
LANDMARK_MODES = ("fused", "world", "image")


#: Longest in-picture length of each bone (BONES order) relative to the hand's own image size
#: ``S`` (``tracker_core.hand_image_size``: the larger of the palm's image width and length): the
#: 98th percentile over the 621 frames of the shared video (its medians are 10-40 % shorter). A
#: bone seen at this length lies in the picture plane; a bone seen shorter rises out of it.
BONE_FULL_S: np.ndarray = np.array([
    0.50, 0.53, 0.43, 0.32,   # wrist-thumb CMC, thumb CMC-MCP, MCP-IP, IP-tip
    1.07, 0.47, 0.31, 0.25,   # wrist-index MCP, proximal, middle, distal phalanx
    1.00, 0.53, 0.35, 0.28,   # middle
    1.01, 0.49, 0.37, 0.26,   # ring
    1.01, 0.35, 0.26, 0.22,   # pinky
])

#: For each of the 15 joints (JOINT_TRIPLETS order), its incoming and outgoing bone (BONES rows).
JOINT_BONES: np.ndarray = np.array(
    [[next(i for i, (a, b) in enumerate(BONES) if a == p and b == q),
      next(i for i, (a, b) in enumerate(BONES) if a == q and b == r)] for p, q, r in JOINT_TRIPLETS],
    dtype=int,
)


def most_open_angles(shape: ArrayLike, full_lengths: ArrayLike) -> np.ndarray:
    """The most open interior angle (rad, 15 joints) that any depth gives the picture's joints.

    shape: (21, 2) image landmarks (any unit, e.g. px or hand image sizes); full_lengths: (20,)
    the longest each bone (BONES order) can be in 3-D, same unit. A bone seen ``l`` long in the
    picture and at most ``L`` long in 3-D rises out of the picture plane by at most
    ``z = sqrt(L^2 - l^2)`` (0 when ``l >= L``: the bone is then taken as ``l`` long). With the
    in-picture bones ``a`` (into the joint) and ``b`` (out of it), the interior angle is most open
    when both rise by their most, the same way: ``cos = (-a.b - za zb) / (|a3| |b3|)``. A joint
    folded in the picture whose bones are both at full length cannot be opened by any depth (a
    bone folded back); one whose bones are foreshortened can (a view: a fist seen from the back,
    its depth flattened). Non-finite input gives pi (no evidence of a fold).
    """
    xy = np.asarray(shape, dtype=float)
    full = np.asarray(full_lengths, dtype=float)
    if xy.shape != (N_LANDMARKS, 2) or full.shape != (len(BONES),):
        raise ValueError(f"expected (21, 2) landmarks and (20,) lengths, got {xy.shape}, {full.shape}")
    with np.errstate(all="ignore"):
        bone = xy[BONES[:, 1]] - xy[BONES[:, 0]]
        ell = np.linalg.norm(bone, axis=1)
        length = np.fmax(full, ell)
        rise = np.sqrt(np.maximum(length ** 2 - ell ** 2, 0.0))
        a, b = JOINT_BONES[:, 0], JOINT_BONES[:, 1]
        cos = (-np.einsum("ij,ij->i", bone[a], bone[b]) - rise[a] * rise[b]) / (length[a] * length[b])
        ang = np.arccos(np.clip(cos, -1.0, 1.0))
    return np.where(np.isfinite(ang), ang, math.pi)
def cross3(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Cross product of 3-vectors along the last axis: ``u``, ``v`` (..., 3) float arrays
    (broadcast against each other) -> (..., 3). The same float operations in the same order as
    ``np.cross`` (``u1 v2 - u2 v1``, ``u2 v0 - u0 v2``, ``u0 v1 - u1 v0``), so the result is
    bit-identical, without np.cross's axis handling (~25 us a call; the tracker's geometry makes
    ~90 calls a frame on one hand's few vectors)."""
    u0, u1, u2 = u[..., 0], u[..., 1], u[..., 2]
    v0, v1, v2 = v[..., 0], v[..., 1], v[..., 2]
    out = np.empty(np.broadcast_shapes(u.shape, v.shape), dtype=np.result_type(u, v))
    np.subtract(u1 * v2, u2 * v1, out=out[..., 0])
    np.subtract(u2 * v0, u0 * v2, out=out[..., 1])
    np.subtract(u0 * v1, u1 * v0, out=out[..., 2])
    return out


def joint_angles(points: ArrayLike) -> np.ndarray:
    """Interior angles of the 15 joints, radians in [0, pi] (pi = straight).

    points: (..., 21, 3) landmarks. Returns (..., 15) in JOINT_NAMES order. A joint whose
    adjacent bones are zero-length or non-finite gets pi (never NaN).
    """
    p = _as_points(points)
    a = p[..., JOINT_TRIPLETS[:, 0], :]
    b = p[..., JOINT_TRIPLETS[:, 1], :]
    c = p[..., JOINT_TRIPLETS[:, 2], :]
    with np.errstate(all="ignore"):  # non-finite/degenerate input is masked below
        u = a - b
        v = c - b
        cross = np.linalg.norm(cross3(u, v), axis=-1)
        dot = np.einsum("...i,...i->...", u, v)
        nu = np.linalg.norm(u, axis=-1)
        nv = np.linalg.norm(v, axis=-1)
        ang = np.arctan2(cross, dot)
    ok = np.isfinite(ang) & np.isfinite(nu) & np.isfinite(nv) & (nu > _EPS) & (nv > _EPS)
    return np.where(ok, ang, math.pi)


def finger_curls(angles: ArrayLike) -> np.ndarray:
    """Per-digit curl: mean interior angle of each digit's 3 joints, radians.

    angles: (..., 15) joint angles in JOINT_NAMES order. Returns (..., 5) in FINGER_NAMES order.
    """
    a = np.asarray(angles, dtype=float)
    if a.shape[-1:] != (len(JOINT_NAMES),):
        raise ValueError(f"expected (..., 15) joint angles, got {a.shape}")
    return a.reshape(a.shape[:-1] + (len(FINGER_NAMES), 3)).mean(axis=-1)


@dataclass(frozen=True)
class Windows:
    """Flexion windows for named angles: ``straight`` (flexion 0) and ``curled`` (flexion 1), rad.

    Raises ValueError naming the entry if a value is non-finite, outside [0, pi], or if
    ``straight - curled`` is below :data:`MIN_WINDOW_RAD`.
    """

    names: tuple[str, ...]
    straight: tuple[float, ...]
    curled: tuple[float, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(self.names))
        object.__setattr__(self, "straight", tuple(float(x) for x in self.straight))
        object.__setattr__(self, "curled", tuple(float(x) for x in self.curled))
        n = len(self.names)
        if len(self.straight) != n or len(self.curled) != n:
            raise ValueError(f"windows need {n} straight and {n} curled angles "
                             f"({', '.join(self.names)}), got {len(self.straight)} and {len(self.curled)}")
        for name, s, c in zip(self.names, self.straight, self.curled):
            problem = window_problem(s, c)
            if problem:
                raise ValueError(f"{name}: {problem}")

    def flexions(self, angles: ArrayLike) -> np.ndarray:
        """Angles (..., n) in radians → flexions (..., n) in [0, 1]; non-finite angles read 0."""
        return flexion(angles, np.array(self.straight), np.array(self.curled))

    def replace(self, name: str, *, straight: float | None = None, curled: float | None = None) -> Windows:
        """A copy with one entry changed (validated)."""
        i = self.names.index(name)
        s, c = list(self.straight), list(self.curled)
        if straight is not None:
            s[i] = straight
        if curled is not None:
            c[i] = curled
        return Windows(self.names, tuple(s), tuple(c))


#: Narrowest accepted window (straight - curled), radians: narrower ones turn landmark noise
#: into full-scale flexion jumps.
MIN_WINDOW_RAD = 0.05


def window_problem(straight: float, curled: float) -> str | None:
    """Why (straight, curled) is not a usable window, or None if it is."""
    if not (math.isfinite(straight) and math.isfinite(curled)):
        return f"non-finite window ({straight}, {curled})"
    for what, v in (("straight", straight), ("curled", curled)):
        if not 0.0 <= v <= math.pi:
            return f"{what} angle {v:.3f} rad outside [0, pi]"
    if straight - curled < MIN_WINDOW_RAD:
        return (f"straight angle {straight:.3f} rad must exceed curled angle {curled:.3f} rad by at "
                f"least {MIN_WINDOW_RAD} rad")
    return None


def flexion(angles: ArrayLike, straight: ArrayLike, curled: ArrayLike) -> np.ndarray:
    """Map interior angles to flexions: ``clip((straight - angle) / (straight - curled), 0, 1)``.

    Broadcasts. Non-finite angles give 0 (open); a degenerate window (straight <= curled) gives 0
    rather than NaN/inf (windows are validated by :class:`Windows` before they get here).
    """
    a = np.asarray(angles, dtype=float)
    s = np.asarray(straight, dtype=float)
    c = np.asarray(curled, dtype=float)
    span = s - c
    with np.errstate(all="ignore"):
        f = (s - a) / span
    f = np.where(np.isfinite(f) & (span > 0), f, 0.0)
    return np.clip(f, 0.0, 1.0)


def check_skeleton(points: ArrayLike, *, min_bone_fraction: float = 1e-3,
                   min_palm_fraction: float = 0.1) -> str | None:
    """Plausibility check of one hand; returns the problem as text, or None if plausible.

    points: (21, 3). Scale-free checks, relative to the palm length |wrist - middle MCP|:
    - every coordinate finite;
    - palm not collapsed: palm length > 0 and palm width |index MCP - pinky MCP| at least
      ``min_palm_fraction`` of the palm length (MediaPipe's real hands measure above 0.5);
    - no zero-length bone: every bone at least ``min_bone_fraction`` of the palm length
      (duplicate landmarks; real foreshortened image bones measure above 0.01).
    """
    p = np.asarray(points, dtype=float)
    if p.shape != (N_LANDMARKS, 3):
        return f"expected 21x3 landmarks, got shape {p.shape}"
    bad = ~np.isfinite(p).all(axis=1)
    if bad.any():
        names = [LANDMARK_NAMES[i] for i in np.flatnonzero(bad)]
        return f"non-finite landmark(s): {', '.join(names)}"
    with np.errstate(all="ignore"):
        palm = float(np.linalg.norm(p[WRIST] - p[9]))
        if not math.isfinite(palm) or palm <= _EPS:
            return "collapsed palm: wrist and middle MCP coincide"
        width = float(np.linalg.norm(p[5] - p[17]))
        if not width >= min_palm_fraction * palm:
            return (f"collapsed palm: index-pinky MCP width is {width / palm:.3f} of the palm length "
                    f"(< {min_palm_fraction})")
        lengths = np.linalg.norm(p[BONES[:, 1]] - p[BONES[:, 0]], axis=1)
        short = np.flatnonzero(~(lengths >= min_bone_fraction * palm))
    if short.size:
        names = [f"{LANDMARK_NAMES[BONES[i, 0]]}-{LANDMARK_NAMES[BONES[i, 1]]}" for i in short]
        return f"zero-length bone(s): {', '.join(names)}"
    return None


# --- synthetic hands (ground truth for tests and demos) -------------------------------------------

def _rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues rotation matrix about a unit ``axis``."""
    x, y, z = axis
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


#: Bone lengths (m) of a typical adult hand, per digit: wrist→base, base→2nd, 2nd→3rd, 3rd→tip.
_BONE_M = np.array([
    [0.035, 0.040, 0.032, 0.028],   # thumb: wrist-CMC, CMC-MCP, MCP-IP, IP-tip
    [0.090, 0.045, 0.025, 0.022],   # index: wrist-MCP (metacarpal), proximal, middle, distal
    [0.088, 0.050, 0.030, 0.024],
    [0.082, 0.047, 0.029, 0.023],
    [0.075, 0.037, 0.021, 0.020],
])
#: Direction of each digit's wrist→base vector in the palm plane (x right, y down = fingers up
#: is -y), radians from -y towards +x (right hand seen from the palm side).
_BASE_DIR = np.array([-1.05, -0.30, -0.05, 0.17, 0.38])


def synthetic_hand(angles: ArrayLike, *, rng: np.random.Generator | None = None,
                   rotation: np.ndarray | None = None, translation: ArrayLike = (0.0, 0.0, 0.0),
                   scale: float = 1.0) -> np.ndarray:
    """Landmarks (21, 3) of a hand posed with the given 15 interior joint angles (radians).

    Each joint bends its digit by ``pi - angle`` about an axis perpendicular to the incoming
    bone: the digit's flexion axis (in the palm plane), or, with ``rng``, a random perpendicular
    axis per joint (out-of-plane poses). The whole hand is then scaled, rotated (3x3 matrix) and
    translated. :func:`joint_angles` of the result returns ``angles`` (the ground truth).
    """
    ang = np.asarray(angles, dtype=float)
    if ang.shape != (len(JOINT_NAMES),):
        raise ValueError(f"expected 15 joint angles, got shape {ang.shape}")
    pts = np.zeros((N_LANDMARKS, 3))
    for d, base in enumerate(DIGIT_BASE):
        direction = np.array([math.sin(_BASE_DIR[d]), -math.cos(_BASE_DIR[d]), 0.0])
        # flexion axis: in the palm plane, perpendicular to the digit (fingers curl towards +z)
        axis = np.cross(direction, [0.0, 0.0, 1.0])
        axis /= np.linalg.norm(axis)
        pos = direction * _BONE_M[d, 0]
        pts[base] = pos
        for k in range(3):
            if rng is not None:
                r = rng.normal(size=3)
                r -= r.dot(direction) * direction
                axis = r / np.linalg.norm(r)
            direction = _rotation(axis, math.pi - ang[3 * d + k]) @ direction
            pos = pos + direction * _BONE_M[d, k + 1]
            pts[base + k + 1] = pos
    rot = np.eye(3) if rotation is None else np.asarray(rotation, dtype=float)
    return (scale * pts) @ rot.T + np.asarray(translation, dtype=float)


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random 3x3 rotation matrix."""
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q

