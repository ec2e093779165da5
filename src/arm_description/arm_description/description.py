"""The SO-101 description (``config/so101.yaml``): loading, validation and frame maths. No rclpy.

:func:`load` returns an :class:`ArmDescription`; every problem raises :class:`DescriptionError`
naming the key. Angles in the YAML may be numbers or the expressions ``pi``, ``-pi``, ``pi/2``,
``-pi/2`` (exact values, see the file's source notes). SI units throughout.
"""

from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass, field

import numpy as np
import yaml

SHAPE_KINDS = ("box", "capsule", "cylinder")
_PI_WORDS = {"pi": math.pi, "-pi": -math.pi, "pi/2": math.pi / 2, "-pi/2": -math.pi / 2}


class DescriptionError(ValueError):
    """The description file is malformed; the message names the key."""


@dataclass(frozen=True)
class Shape:
    """A primitive in its link's frame. box: ``pos``, ``rpy``, ``half`` (half sizes); capsule:
    ``a``→``b`` segment + ``radius``; cylinder: ``pos``, ``rpy`` (axis = rotated +z), ``radius``,
    ``half_length``. ``color``: key of :attr:`ArmDescription.colors`."""

    kind: str
    color: str
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rpy: np.ndarray = field(default_factory=lambda: np.zeros(3))
    half: np.ndarray = field(default_factory=lambda: np.zeros(3))
    a: np.ndarray = field(default_factory=lambda: np.zeros(3))
    b: np.ndarray = field(default_factory=lambda: np.zeros(3))
    radius: float = 0.0
    half_length: float = 0.0


@dataclass(frozen=True)
class Link:
    name: str
    mass: float  # kg; 0 = massless frame
    com: np.ndarray  # (3,) m, link frame
    inertia: np.ndarray  # (3, 3) kg m² about the com
    shapes: tuple[Shape, ...]


@dataclass(frozen=True)
class Joint:
    name: str
    type: str  # revolute | fixed
    parent: str
    child: str
    xyz: np.ndarray  # (3,) m, parent frame
    rpy: np.ndarray  # (3,) rad, fixed-axis roll-pitch-yaw (URDF convention)
    lower: float = 0.0
    upper: float = 0.0
    servo_id: int = 0


@dataclass(frozen=True)
class Actuation:
    kp: float
    force_limit: float
    damping: float
    armature: float
    velocity_limit: float
    gripper_kp: float
    gripper_force_limit: float


@dataclass(frozen=True)
class ArmDescription:
    name: str
    links: dict[str, Link]
    joints: tuple[Joint, ...]
    gripper_joint: str
    gripper_closed_end: str  # "lower" | "upper"
    actuation: Actuation
    contact_exclusions: tuple[tuple[str, str], ...]
    keyframes: dict[str, tuple[float, ...]]
    colors: dict[str, tuple[float, ...]]

    @property
    def movable(self) -> tuple[Joint, ...]:
        """Revolute joints, base → tip (the 5 arm joints, then the gripper)."""
        return tuple(j for j in self.joints if j.type == "revolute")

    @property
    def arm_joints(self) -> tuple[Joint, ...]:
        return tuple(j for j in self.movable if j.name != self.gripper_joint)

    def children(self, link: str) -> list[Joint]:
        return [j for j in self.joints if j.parent == link]

    @property
    def root(self) -> str:
        return next(iter(self.links))


def rpy_to_matrix(rpy) -> np.ndarray:
    """URDF rpy (fixed axes x, then y, then z): R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """Rotation matrix → unit quaternion (w, x, y, z), w ≥ 0 (MuJoCo convention)."""
    m = np.asarray(m, float)
    t = np.trace(m)
    if t > 0:
        s = math.sqrt(t + 1.0) * 2
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    q = np.array(q)
    q /= np.linalg.norm(q)
    return -q if q[0] < 0 else q


# --- loading --------------------------------------------------------------------------------------

def _num(v, key: str) -> float:
    if isinstance(v, str) and v.strip() in _PI_WORDS:
        return _PI_WORDS[v.strip()]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise DescriptionError(f"{key}: expected a number, got {v!r}")
    x = float(v)
    if not math.isfinite(x):
        raise DescriptionError(f"{key}: non-finite value {v!r}")
    return x


def _vec(v, key: str, n: int = 3) -> np.ndarray:
    if not isinstance(v, (list, tuple)) or len(v) != n:
        raise DescriptionError(f"{key}: expected a list of {n} numbers, got {v!r}")
    return np.array([_num(x, f"{key}[{i}]") for i, x in enumerate(v)])


def _req(d: dict, k: str, where: str):
    if not isinstance(d, dict) or k not in d:
        raise DescriptionError(f"{where}: missing key '{k}'")
    return d[k]


def _shape(s: dict, key: str, colors: dict) -> Shape:
    kind = _req(s, "kind", key)
    if kind not in SHAPE_KINDS:
        raise DescriptionError(f"{key}.kind: '{kind}' is not one of {SHAPE_KINDS}")
    color = _req(s, "color", key)
    if color not in colors:
        raise DescriptionError(f"{key}.color: unknown colour '{color}' (colors: {sorted(colors)})")
    if kind == "box":
        half = _vec(_req(s, "half", key), f"{key}.half")
        if np.any(half <= 0):
            raise DescriptionError(f"{key}.half: sizes must be > 0")
        return Shape(kind, color, pos=_vec(_req(s, "pos", key), f"{key}.pos"),
                     rpy=_vec(s.get("rpy", [0, 0, 0]), f"{key}.rpy"), half=half)
    radius = _num(_req(s, "radius", key), f"{key}.radius")
    if radius <= 0:
        raise DescriptionError(f"{key}.radius: must be > 0")
    if kind == "capsule":
        a, b = _vec(_req(s, "from", key), f"{key}.from"), _vec(_req(s, "to", key), f"{key}.to")
        if np.linalg.norm(b - a) < 1e-6:
            raise DescriptionError(f"{key}: zero-length capsule")
        return Shape(kind, color, a=a, b=b, radius=radius)
    hl = _num(_req(s, "half_length", key), f"{key}.half_length")
    if hl <= 0:
        raise DescriptionError(f"{key}.half_length: must be > 0")
    return Shape(kind, color, pos=_vec(_req(s, "pos", key), f"{key}.pos"),
                 rpy=_vec(s.get("rpy", [0, 0, 0]), f"{key}.rpy"), radius=radius, half_length=hl)


def _inertia(v, key: str) -> np.ndarray:
    ixx, iyy, izz, ixy, ixz, iyz = _vec(v, key, 6)
    m = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    ev = np.linalg.eigvalsh(m)
    if ev[0] <= 0 or ev[0] + ev[1] < ev[2] * (1 - 1e-9):
        raise DescriptionError(f"{key}: not a physical inertia tensor (eigenvalues {ev})")
    return m


def parse(doc: dict) -> ArmDescription:
    """Validate a parsed YAML document and build the description."""
    colors = {k: tuple(_vec(v, f"colors.{k}", 4)) for k, v in _req(doc, "colors", "top level").items()}
    links: dict[str, Link] = {}
    for name, ld in _req(doc, "links", "top level").items():
        key = f"links.{name}"
        ld = ld or {}
        if not ld:
            links[name] = Link(name, 0.0, np.zeros(3), np.zeros((3, 3)), ())
            continue
        mass = _num(_req(ld, "mass", key), f"{key}.mass")
        if mass <= 0:
            raise DescriptionError(f"{key}.mass: must be > 0")
        shapes = tuple(_shape(s, f"{key}.shapes[{i}]", colors) for i, s in enumerate(ld.get("shapes", [])))
        links[name] = Link(name, mass, _vec(_req(ld, "com", key), f"{key}.com"),
                           _inertia(_req(ld, "inertia", key), f"{key}.inertia"), shapes)
    joints = []
    seen_children: set[str] = set()
    known = {next(iter(links))} if links else set()
    for i, jd in enumerate(_req(doc, "joints", "top level")):
        key = f"joints[{i}]"
        name = _req(jd, "name", key)
        key = f"joints.{name}"
        jtype = _req(jd, "type", key)
        if jtype not in ("revolute", "fixed"):
            raise DescriptionError(f"{key}.type: '{jtype}' must be revolute or fixed")
        parent, child = _req(jd, "parent", key), _req(jd, "child", key)
        for role, link in (("parent", parent), ("child", child)):
            if link not in links:
                raise DescriptionError(f"{key}.{role}: unknown link '{link}'")
        if parent not in known:
            raise DescriptionError(f"{key}.parent: '{parent}' is not attached yet (joints must go base → tip)")
        if child in seen_children or child == next(iter(links)):
            raise DescriptionError(f"{key}.child: '{child}' already has a parent")
        seen_children.add(child)
        known.add(child)
        kw = {}
        if jtype == "revolute":
            lo, hi = _num(_req(jd, "lower", key), f"{key}.lower"), _num(_req(jd, "upper", key), f"{key}.upper")
            if not lo < hi:
                raise DescriptionError(f"{key}: lower {lo} must be below upper {hi}")
            sid = _req(jd, "servo_id", key)
            if not isinstance(sid, int) or not 0 < sid < 253:
                raise DescriptionError(f"{key}.servo_id: {sid!r} is not a bus ID 1..252")
            kw = {"lower": lo, "upper": hi, "servo_id": sid}
        joints.append(Joint(name, jtype, parent, child, _vec(_req(jd, "xyz", key), f"{key}.xyz"),
                            _vec(_req(jd, "rpy", key), f"{key}.rpy"), **kw))
    orphans = set(links) - known
    if orphans:
        raise DescriptionError(f"links {sorted(orphans)} are not attached by any joint")
    names = [j.name for j in joints]
    if len(set(names)) != len(names):
        raise DescriptionError(f"duplicate joint names in {names}")
    gd = _req(doc, "gripper", "top level")
    gj = _req(gd, "joint", "gripper")
    if gj not in [j.name for j in joints if j.type == "revolute"]:
        raise DescriptionError(f"gripper.joint: '{gj}' is not a revolute joint")
    closed_end = _req(gd, "closed_end", "gripper")
    if closed_end not in ("lower", "upper"):
        raise DescriptionError("gripper.closed_end: must be 'lower' or 'upper'")
    ad = _req(doc, "actuators", "top level")
    act = Actuation(**{k: _num(_req(ad, k, "actuators"), f"actuators.{k}") for k in Actuation.__dataclass_fields__})
    for k, v in vars(act).items():
        if v <= 0:
            raise DescriptionError(f"actuators.{k}: must be > 0")
    excl = []
    for i, pair in enumerate(doc.get("contact_exclusions", []) or []):
        if not isinstance(pair, list) or len(pair) != 2 or any(p not in links for p in pair):
            raise DescriptionError(f"contact_exclusions[{i}]: {pair!r} is not a pair of link names")
        excl.append((pair[0], pair[1]))
    n_mov = sum(1 for j in joints if j.type == "revolute")
    keyframes = {}
    for k, v in (_req(doc, "keyframes", "top level") or {}).items():
        q = _vec(v, f"keyframes.{k}", n_mov)
        for j, x in zip((j for j in joints if j.type == "revolute"), q):
            if not j.lower - 1e-9 <= x <= j.upper + 1e-9:
                raise DescriptionError(f"keyframes.{k}: {j.name} = {x} outside [{j.lower}, {j.upper}]")
        keyframes[k] = tuple(float(x) for x in q)
    return ArmDescription(str(_req(doc, "name", "top level")), links, tuple(joints), gj, closed_end, act,
                          tuple(excl), keyframes, colors)


def load(path: str | pathlib.Path) -> ArmDescription:
    """Read and validate the description YAML. DescriptionError names the problem."""
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except OSError as exc:
        raise DescriptionError(f"cannot read {path}: {exc}") from exc
    if not isinstance(doc, dict):
        raise DescriptionError(f"{path}: not a YAML mapping")
    return parse(doc)
