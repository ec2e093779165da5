"""The parametric hand description: load ``config/hand.yaml``, validate it, mirror it, derive physics.

Pure Python + numpy (no rclpy, no MuJoCo). :func:`load` returns a :class:`HandDescription`
whose numbers are in SI units (m, kg, rad, N); the generator turns it into URDF and MJCF.

Frames (right hand; the left hand is the mirror image ``y -> -y``, see :meth:`HandDescription.mirrored`):

- ``palm`` (root): origin at the wrist joint centre, +x palmar, +y radial (thumb side), +z distal.
- every joint frame: +z along the bone (distal), +x palmar (the direction the digit flexes to),
  hinge axis +y. Positive joint angle = flexion; range ``0`` (open) .. ``upper`` (closed).
- a link's frame is its joint's frame (URDF convention); the capsule runs from the origin to
  ``(0, 0, length)``.

Errors: :class:`DescriptionError` names the offending key (missing joint, non-positive length,
range not starting at 0, a joint stiffness that would come out negative, ...).
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import yaml

from hand_common.contract import FINGER_NAMES

#: Mirror matrix between the right and the left hand (palm frame y -> -y).
MIRROR = np.diag([1.0, -1.0, 1.0])

#: Digits, thumb first: the contract's names (hand_common.contract.FINGER_NAMES, one home).
DIGITS: tuple[str, ...] = FINGER_NAMES


class DescriptionError(ValueError):
    """The description is incomplete or inconsistent; the message names the key."""


# --- small rotation helpers ----------------------------------------------------------------------

def rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rpy_to_matrix(rpy: Sequence[float]) -> np.ndarray:
    """URDF convention: R = Rz(yaw) @ Ry(pitch) @ Rx(roll) (fixed axes x, y, z)."""
    r, p, y = rpy
    return rot_z(y) @ rot_y(p) @ rot_x(r)


def matrix_to_rpy(rot: np.ndarray) -> np.ndarray:
    """Inverse of :func:`rpy_to_matrix` (pitch in [-pi/2, pi/2])."""
    pitch = math.asin(max(-1.0, min(1.0, -rot[2, 0])))
    if abs(rot[2, 0]) < 1.0 - 1e-12:
        roll = math.atan2(rot[2, 1], rot[2, 2])
        yaw = math.atan2(rot[1, 0], rot[0, 0])
    else:  # gimbal lock: put everything in yaw
        roll = 0.0
        yaw = math.atan2(-rot[0, 1], rot[1, 1])
    return np.array([roll, pitch, yaw])


def matrix_to_quat(rot: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z), w >= 0, of a rotation matrix."""
    m = rot
    t = np.trace(m)
    if t > 0.0:
        s = math.sqrt(t + 1.0) * 2.0
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2.0
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2.0
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2.0
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    q = np.array(q)
    q /= np.linalg.norm(q)
    return -q if q[0] < 0 else q


def axis_angle(axis: Sequence[float], angle: float) -> np.ndarray:
    """Rotation matrix of ``angle`` (rad) about the unit vector ``axis`` (Rodrigues)."""
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    k = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


def frame_from_directions(direction: Sequence[float], palmar: Sequence[float]) -> np.ndarray:
    """Rotation whose z is ``direction`` and x the part of ``palmar`` orthogonal to it (y = z x x)."""
    z = np.asarray(direction, float)
    if np.linalg.norm(z) < 1e-9:
        raise DescriptionError("base.direction is a zero vector")
    z = z / np.linalg.norm(z)
    x = np.asarray(palmar, float)
    x = x - np.dot(x, z) * z
    if np.linalg.norm(x) < 1e-6:
        raise DescriptionError("base.palmar is parallel to base.direction")
    x = x / np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


# --- shapes and inertia --------------------------------------------------------------------------

@dataclass(frozen=True)
class Shape:
    """A collision/visual primitive in its link's frame.

    kind ``capsule``: ``a``/``b`` segment end points, ``radius``. ``box``: ``pos``, ``rot``
    (3x3), ``half`` extents. ``sphere``: ``pos``, ``radius``.
    """

    kind: str
    a: np.ndarray = field(default_factory=lambda: np.zeros(3))
    b: np.ndarray = field(default_factory=lambda: np.zeros(3))
    radius: float = 0.0
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rot: np.ndarray = field(default_factory=lambda: np.eye(3))
    half: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def mirrored(self) -> Shape:
        return dataclasses.replace(self, a=MIRROR @ self.a, b=MIRROR @ self.b, pos=MIRROR @ self.pos,
                                   rot=MIRROR @ self.rot @ MIRROR)

    def mass_properties(self, density: float) -> tuple[float, np.ndarray, np.ndarray]:
        """(mass kg, centre of mass (3,), inertia tensor about the centre of mass (3, 3)) of a solid shape."""
        if self.kind == "capsule":
            axis = self.b - self.a
            h = float(np.linalg.norm(axis))
            r = self.radius
            mc = density * math.pi * r * r * h
            ms = density * 4.0 / 3.0 * math.pi * r ** 3
            i_ax = mc * r * r / 2.0 + ms * 2.0 * r * r / 5.0
            i_perp = mc * (h * h / 12.0 + r * r / 4.0) + ms * (2.0 * r * r / 5.0 + h * h / 4.0 + 3.0 * h * r / 8.0)
            u = axis / h if h > 0 else np.array([0.0, 0.0, 1.0])
            inertia = i_perp * np.eye(3) + (i_ax - i_perp) * np.outer(u, u)
            return mc + ms, (self.a + self.b) / 2.0, inertia
        if self.kind == "box":
            x, y, z = 2.0 * self.half
            m = density * x * y * z
            local = np.diag([m * (y * y + z * z) / 12.0, m * (x * x + z * z) / 12.0, m * (x * x + y * y) / 12.0])
            return m, self.pos.copy(), self.rot @ local @ self.rot.T
        if self.kind == "sphere":
            m = density * 4.0 / 3.0 * math.pi * self.radius ** 3
            return m, self.pos.copy(), np.eye(3) * 2.0 / 5.0 * m * self.radius ** 2
        raise DescriptionError(f"unknown shape type {self.kind!r}")


def combine_inertia(parts: Sequence[tuple[float, np.ndarray, np.ndarray]]) -> tuple[float, np.ndarray, np.ndarray]:
    """Sum of rigid parts (mass, com, inertia about com) -> (mass, com, inertia about the total com)."""
    mass = sum(p[0] for p in parts)
    com = sum(p[0] * p[1] for p in parts) / mass
    inertia = np.zeros((3, 3))
    for m, c, i in parts:
        d = c - com
        inertia += i + m * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
    return mass, com, inertia


@dataclass(frozen=True)
class Inertial:
    """Mass (kg), centre of mass (m, link frame) and inertia tensor about it (kg m^2, link axes)."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray


# --- the description -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Segment:
    """One hinge and the link it moves. Lengths in m, angles in rad."""

    joint: str
    link: str
    length: float
    radius: float
    upper: float
    flexor_arm: float
    extensor_arm: float
    lower: float = 0.0


@dataclass(frozen=True)
class Digit:
    """A digit: base frame of its proximal joint in the palm frame, and three segments."""

    name: str
    base_pos: np.ndarray
    base_rot: np.ndarray
    segments: tuple[Segment, Segment, Segment]

    @property
    def joints(self) -> tuple[str, ...]:
        return tuple(s.joint for s in self.segments)

    @property
    def tip_link(self) -> str:
        return f"{self.name}_tip"


@dataclass(frozen=True)
class Routing:
    site_offset: float
    anchor_wrap: float
    origin_z: float


@dataclass(frozen=True)
class Physics:
    density: float
    timestep: float
    integrator: str
    position_gain: float
    max_tension: float
    ctrl_margin: float
    closed_tension: float
    extensor_closed_tension: float
    open_preload: float
    max_omega_dt: float
    min_armature: float
    tendon_damping_ratio: float
    passive_damping_ratio: float
    joint_velocity_limit: float
    limit_solref: tuple[float, float]
    limit_solimp: tuple[float, float, float]
    self_collision: bool
    friction: tuple[float, float, float]


@dataclass(frozen=True)
class JointPhysics:
    """Derived per-joint numbers (see :func:`derive_physics`). SI units."""

    stiffness: float      # N m / rad, joint spring
    springref: float      # rad, spring rest angle (negative = preload into the open limit)
    armature: float       # kg m^2
    damping: float        # N m s / rad
    inertia: float        # kg m^2, distal chain about the joint axis at the open pose
    effort: float         # N m, URDF effort limit = max_tension * flexor_arm


@dataclass(frozen=True)
class DigitPhysics:
    """Derived per-digit numbers: extensor spring and actuator damping. SI units."""

    extensor_stiffness: float   # N / m
    extensor_stroke: float      # m, extensor lengthening open -> closed
    flexor_stroke: float        # m, flexor shortening open -> closed
    extensor_preload_length: float  # m, springlength = open length - this
    kv: float                   # N s / m, position actuator damping
    tendon_inertia: float       # kg, m_t


@dataclass(frozen=True)
class HandDescription:
    """The whole hand; see the module docstring for frames. ``side`` is ``right`` or ``left``."""

    name: str
    side: str
    palm_link: str
    palm_shapes: tuple[Shape, ...]
    palm_mass: float | None
    digits: tuple[Digit, ...]
    routing: Routing
    physics: Physics
    mount_pos: np.ndarray
    mount_rot: np.ndarray
    colors: Mapping[str, tuple[float, float, float, float]]

    # --- lookups
    def digit(self, name: str) -> Digit:
        for d in self.digits:
            if d.name == name:
                return d
        raise KeyError(name)

    @property
    def joint_names(self) -> tuple[str, ...]:
        return tuple(j for d in self.digits for j in d.joints)

    @property
    def segments(self) -> tuple[Segment, ...]:
        return tuple(s for d in self.digits for s in d.segments)

    def segment(self, joint: str) -> Segment:
        for s in self.segments:
            if s.joint == joint:
                return s
        raise KeyError(joint)

    # --- mirroring
    def mirrored(self) -> HandDescription:
        """The same hand for the other side: every position y -> -y, every rotation R -> M R M.

        Joint frames stay right-handed with +x palmar and +z distal, hinge axes stay +y, so
        positive angles are still flexion and limits are unchanged.
        """
        digits = tuple(dataclasses.replace(d, base_pos=MIRROR @ d.base_pos, base_rot=MIRROR @ d.base_rot @ MIRROR)
                       for d in self.digits)
        return dataclasses.replace(
            self, side="left" if self.side == "right" else "right",
            palm_shapes=tuple(s.mirrored() for s in self.palm_shapes), digits=digits,
            mount_pos=MIRROR @ self.mount_pos, mount_rot=MIRROR @ self.mount_rot @ MIRROR)

    def for_side(self, side: str) -> HandDescription:
        """This description if ``side`` matches, else its mirror image."""
        if side not in ("right", "left"):
            raise DescriptionError(f"side must be 'right' or 'left', got {side!r}")
        return self if side == self.side else self.mirrored()

    # --- geometry
    def link_shapes(self, link: str) -> tuple[Shape, ...]:
        if link == self.palm_link:
            return self.palm_shapes
        for s in self.segments:
            if s.link == link:
                return (Shape("capsule", a=np.zeros(3), b=np.array([0.0, 0.0, s.length]), radius=s.radius),)
        raise KeyError(link)

    def inertial(self, link: str) -> Inertial:
        """Mass properties of ``link`` from its shapes and the density (or the palm's given mass)."""
        parts = [sh.mass_properties(self.physics.density) for sh in self.link_shapes(link)]
        mass, com, inertia = combine_inertia(parts)
        if link == self.palm_link and self.palm_mass is not None:
            inertia = inertia * (self.palm_mass / mass)
            mass = self.palm_mass
        return Inertial(mass, com, inertia)

    def joint_origin(self, joint: str) -> tuple[np.ndarray, np.ndarray, str]:
        """(position, rotation, parent link) of ``joint``'s frame in its parent link's frame."""
        for d in self.digits:
            for i, s in enumerate(d.segments):
                if s.joint == joint:
                    if i == 0:
                        return d.base_pos.copy(), d.base_rot.copy(), self.palm_link
                    prev = d.segments[i - 1]
                    return np.array([0.0, 0.0, prev.length]), np.eye(3), prev.link
        raise KeyError(joint)

    def open_pose_frames(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Link name -> (position, rotation) in the palm frame with every joint at 0."""
        frames = {self.palm_link: (np.zeros(3), np.eye(3))}
        for d in self.digits:
            for s in d.segments:
                pos, rot, parent = self.joint_origin(s.joint)
                pp, pr = frames[parent]
                frames[s.link] = (pp + pr @ pos, pr @ rot)
        return frames


# --- derived physics -----------------------------------------------------------------------------

def chain_inertia(desc: HandDescription, digit: Digit, index: int) -> float:
    """Inertia (kg m^2) of the links distal to joint ``index`` of ``digit`` about its axis, open pose."""
    frames = desc.open_pose_frames()
    jpos, jrot = frames[digit.segments[index].link]
    axis = jrot[:, 1]
    total = 0.0
    for s in digit.segments[index:]:
        lpos, lrot = frames[s.link]
        ine = desc.inertial(s.link)
        c = lpos + lrot @ ine.com
        i_world = lrot @ ine.inertia @ lrot.T
        r = c - jpos
        r_perp = r - np.dot(r, axis) * axis
        total += float(axis @ i_world @ axis) + ine.mass * float(np.dot(r_perp, r_perp))
    return total


def derive_physics(desc: HandDescription) -> tuple[dict[str, JointPhysics], dict[str, DigitPhysics]]:
    """Joint springs, armature, damping and actuator damping from the description (formulas in hand.yaml).

    Returns ({joint: JointPhysics}, {digit: DigitPhysics}). Raises DescriptionError if a joint
    stiffness would be negative (extensor_closed_tension too large for that joint's moment arms).
    """
    p = desc.physics
    eps = p.open_preload
    n_ratio = (p.timestep / p.max_omega_dt) ** 2
    joints: dict[str, JointPhysics] = {}
    digits: dict[str, DigitPhysics] = {}
    for d in desc.digits:
        ext_stroke = sum(s.extensor_arm * s.upper for s in d.segments)
        flex_stroke = sum(s.flexor_arm * s.upper for s in d.segments)
        k_ext = p.extensor_closed_tension / ((1.0 + eps) * ext_stroke)
        inv_mt = 0.0
        for i, s in enumerate(d.segments):
            k = (p.closed_tension * s.flexor_arm - p.extensor_closed_tension * s.extensor_arm) / ((1.0 + eps) * s.upper)
            if k <= 0.0:
                raise DescriptionError(
                    f"{s.joint}: joint stiffness {k:.4g} N m/rad <= 0; lower physics.extensor_closed_tension "
                    f"or raise {s.joint}'s flexor_arm/extensor_arm ratio")
            inertia = chain_inertia(desc, d, i)
            arm = max(p.min_armature, len(d.segments) * p.position_gain * s.flexor_arm ** 2 * n_ratio - inertia)
            m_j = inertia + arm
            k_passive = k + k_ext * s.extensor_arm ** 2
            damping = 2.0 * p.passive_damping_ratio * math.sqrt(k_passive * m_j)
            inv_mt += s.flexor_arm ** 2 / m_j
            joints[s.joint] = JointPhysics(stiffness=k, springref=-eps * s.upper, armature=arm, damping=damping,
                                           inertia=inertia, effort=p.max_tension * s.flexor_arm)
        m_t = 1.0 / inv_mt
        kv = 2.0 * p.tendon_damping_ratio * math.sqrt(p.position_gain * m_t)
        digits[d.name] = DigitPhysics(extensor_stiffness=k_ext, extensor_stroke=ext_stroke, flexor_stroke=flex_stroke,
                                      extensor_preload_length=eps * ext_stroke, kv=kv, tendon_inertia=m_t)
    return joints, digits


# --- loading -------------------------------------------------------------------------------------

def _vec(value, key: str, n: int = 3) -> np.ndarray:
    try:
        v = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DescriptionError(f"{key}: expected {n} numbers, got {value!r}") from exc
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise DescriptionError(f"{key}: expected {n} finite numbers, got {value!r}")
    return v


def _pos(value, key: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise DescriptionError(f"{key}: expected a number, got {value!r}") from exc
    if not math.isfinite(v) or v <= 0.0:
        raise DescriptionError(f"{key}: must be a positive finite number, got {value!r}")
    return v


def _integrator(physics: Mapping) -> str:
    """``physics.integrator`` of a description: one of MuJoCo's integrators; DescriptionError else."""
    integrator = str(_req(physics, "integrator", "physics"))
    if integrator not in ("euler", "implicit", "implicitfast", "rk4"):
        raise DescriptionError(f"physics.integrator: unknown integrator {integrator!r}")
    return integrator


def _req(mapping: Mapping, key: str, where: str):
    if not isinstance(mapping, Mapping) or key not in mapping:
        raise DescriptionError(f"{where}: missing key '{key}'")
    return mapping[key]


def _shape(raw: Mapping, where: str) -> Shape:
    kind = _req(raw, "type", where)
    if kind == "capsule":
        return Shape("capsule", a=_vec(_req(raw, "from", where), f"{where}.from"),
                     b=_vec(_req(raw, "to", where), f"{where}.to"), radius=_pos(_req(raw, "radius", where), f"{where}.radius"))
    if kind == "box":
        rpy = np.radians(_vec(raw.get("rpy_deg", [0, 0, 0]), f"{where}.rpy_deg"))
        half = _vec(_req(raw, "size", where), f"{where}.size")
        if np.any(half <= 0):
            raise DescriptionError(f"{where}.size: half extents must be positive")
        return Shape("box", pos=_vec(_req(raw, "pos", where), f"{where}.pos"), rot=rpy_to_matrix(rpy), half=half)
    if kind == "sphere":
        return Shape("sphere", pos=_vec(_req(raw, "pos", where), f"{where}.pos"),
                     radius=_pos(_req(raw, "radius", where), f"{where}.radius"))
    raise DescriptionError(f"{where}.type: unknown shape {kind!r} (capsule, box, sphere)")


def from_dict(raw: Mapping) -> HandDescription:
    """Build and validate a description from the parsed YAML mapping."""
    side = raw.get("side", "right")
    if side not in ("right", "left"):
        raise DescriptionError(f"side: must be 'right' or 'left', got {side!r}")
    palm = _req(raw, "palm", "description")
    shapes = tuple(_shape(s, f"palm.shapes[{i}]") for i, s in enumerate(_req(palm, "shapes", "palm")))
    if not shapes:
        raise DescriptionError("palm.shapes: at least one shape is needed")
    digits_raw = _req(raw, "digits", "description")
    if set(digits_raw) != set(DIGITS):
        raise DescriptionError(f"digits: expected exactly {DIGITS}, got {tuple(digits_raw)}")
    digits = []
    for name in DIGITS:
        dr = digits_raw[name]
        base = _req(dr, "base", f"digits.{name}")
        segs_raw = _req(dr, "segments", f"digits.{name}")
        if len(segs_raw) != 3:
            raise DescriptionError(f"digits.{name}.segments: expected 3 segments, got {len(segs_raw)}")
        segs = []
        for i, sr in enumerate(segs_raw):
            w = f"digits.{name}.segments[{i}]"
            upper = math.radians(float(_req(sr, "upper_deg", w)))
            lower = math.radians(float(sr.get("lower_deg", 0.0)))
            if lower != 0.0:
                raise DescriptionError(f"{w}.lower_deg: every joint opens at 0 (got {math.degrees(lower)})")
            if not (0.0 < upper < math.pi):
                raise DescriptionError(f"{w}.upper_deg: must be in (0, 180), got {math.degrees(upper)}")
            segs.append(Segment(
                joint=str(_req(sr, "joint", w)), link=str(_req(sr, "link", w)),
                length=_pos(_req(sr, "length", w), f"{w}.length"), radius=_pos(_req(sr, "radius", w), f"{w}.radius"),
                upper=upper, flexor_arm=_pos(_req(sr, "flexor_arm", w), f"{w}.flexor_arm"),
                extensor_arm=_pos(_req(sr, "extensor_arm", w), f"{w}.extensor_arm")))
        digits.append(Digit(name=name, base_pos=_vec(_req(base, "pos", f"digits.{name}.base"), f"digits.{name}.base.pos"),
                            base_rot=frame_from_directions(_vec(_req(base, "direction", f"digits.{name}.base"), "direction"),
                                                           _vec(_req(base, "palmar", f"digits.{name}.base"), "palmar")),
                            segments=tuple(segs)))
    names = [s.joint for d in digits for s in d.segments] + [s.link for d in digits for s in d.segments]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise DescriptionError(f"duplicate joint/link names: {sorted(dup)}")
    ro = _req(raw, "routing", "description")
    routing = Routing(site_offset=_pos(_req(ro, "site_offset", "routing"), "routing.site_offset"),
                      anchor_wrap=math.radians(_pos(_req(ro, "anchor_wrap_deg", "routing"), "routing.anchor_wrap_deg")),
                      origin_z=_pos(_req(ro, "origin_z", "routing"), "routing.origin_z"))
    ph = _req(raw, "physics", "description")
    integrator = _integrator(ph)
    physics = Physics(
        density=_pos(_req(ph, "density", "physics"), "physics.density"),
        timestep=_pos(_req(ph, "timestep", "physics"), "physics.timestep"),
        integrator=integrator,
        position_gain=_pos(_req(ph, "position_gain", "physics"), "physics.position_gain"),
        max_tension=_pos(_req(ph, "max_tension", "physics"), "physics.max_tension"),
        ctrl_margin=_pos(_req(ph, "ctrl_margin", "physics"), "physics.ctrl_margin"),
        closed_tension=_pos(_req(ph, "closed_tension", "physics"), "physics.closed_tension"),
        extensor_closed_tension=_pos(_req(ph, "extensor_closed_tension", "physics"), "physics.extensor_closed_tension"),
        open_preload=float(_req(ph, "open_preload", "physics")),
        max_omega_dt=_pos(_req(ph, "max_omega_dt", "physics"), "physics.max_omega_dt"),
        min_armature=_pos(_req(ph, "min_armature", "physics"), "physics.min_armature"),
        tendon_damping_ratio=_pos(_req(ph, "tendon_damping_ratio", "physics"), "physics.tendon_damping_ratio"),
        passive_damping_ratio=_pos(_req(ph, "passive_damping_ratio", "physics"), "physics.passive_damping_ratio"),
        joint_velocity_limit=_pos(_req(ph, "joint_velocity_limit", "physics"), "physics.joint_velocity_limit"),
        limit_solref=tuple(_vec(_req(ph, "limit_solref", "physics"), "physics.limit_solref", 2)),
        limit_solimp=tuple(_vec(_req(ph, "limit_solimp", "physics"), "physics.limit_solimp", 3)),
        self_collision=bool(_req(ph, "self_collision", "physics")),
        friction=tuple(_vec(_req(ph, "friction", "physics"), "physics.friction", 3)),
    )
    if not (0.0 <= physics.open_preload < 1.0):
        raise DescriptionError(f"physics.open_preload: must be in [0, 1), got {physics.open_preload}")
    if physics.closed_tension >= physics.max_tension:
        raise DescriptionError("physics.closed_tension must be below physics.max_tension")
    mount = raw.get("mount", {})
    colors = {k: tuple(_vec(v, f"appearance.{k}", 4)) for k, v in raw.get("appearance", {}).items()}
    for k in ("skin", "palm", "flexor", "extensor"):
        colors.setdefault(k, (0.8, 0.8, 0.8, 1.0))
    palm_mass = palm.get("mass")
    desc = HandDescription(
        name=str(raw.get("name", "hand")), side=side, palm_link=str(palm.get("link", "palm")),
        palm_shapes=shapes, palm_mass=None if palm_mass is None else _pos(palm_mass, "palm.mass"),
        digits=tuple(digits), routing=routing, physics=physics,
        mount_pos=_vec(mount.get("pos", [0, 0, 0]), "mount.pos"),
        mount_rot=rpy_to_matrix(np.radians(_vec(mount.get("rpy_deg", [0, 0, 0]), "mount.rpy_deg"))),
        colors=colors)
    derive_physics(desc)  # raises on impossible springs
    return desc


def load(path: str | pathlib.Path | None = None, side: str | None = None) -> HandDescription:
    """Load the description YAML (default: the package's ``config/hand.yaml``), mirrored to ``side`` if given."""
    if path is None:
        from hand_description.paths import description_path
        path = description_path()
    path = pathlib.Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise DescriptionError(f"cannot read description {path}: {exc}") from exc
    desc = from_dict(raw)
    return desc if side is None else desc.for_side(side)
