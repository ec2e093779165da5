"""Human joint flexions → URDF joint angles, within the URDF's limits (pure: no rclpy).

Three steps, each a plain function or class tested on its own:

1. :func:`parse_urdf` reads every ``<joint>`` of a URDF (type, ``<limit>`` lower/upper,
   ``<mimic>``) with ``xml.etree`` — no meshes are loaded, so a robot_description string from
   any robot works.
2. :func:`load_table` / :func:`parse_table` read the mapping table (YAML, see
   ``config/joint_map_hand.yaml``)::

       limit_tolerance: 0.001          # rad (m for prismatic) allowed between URDF and `limits`
       joints:
         - joint: index_pip            # URDF joint name
           human: index_pip            # anatomical joint driving it (contract.JOINT_NAMES)
           open: lower                 # the open end: lower | upper | a value (e.g. 0.0: a flat
                                       # URDF hand's rest pose, not a limit)
           closed: upper               # with a numeric open only: the closed end (default: the
                                       # limit farther from open)
           scale: 1.0                  # optional, flexion units: s = scale * flexion + offset
           offset: 0.0                 # optional
           limits: [0.0, 1.75]         # optional: the URDF limits this row was written for
           bounds: [0.0, 1.6]          # optional: narrower range; REQUIRED for continuous joints

3. :class:`JointMapper` checks the table against the URDF joints (raising
   :class:`MappingError` naming the joint for every mistake) and then maps flexions:
   ``angle = open + s * (closed - open)``, clamped to ``[lo, hi]`` (the joint's bounds, else
   its URDF limits). ``s`` is in flexion units, so scale/offset mean the same thing whichever
   direction a CAD export made the joint bend. Mimic joints (``<mimic joint= multiplier=
   offset=>``) follow their source (``m * source + o``, clamped to their own limits), also
   when the source itself is unmapped (then from its rest value); chains of mimics are resolved.
   ``joint: 3`` (YAML integer) names URDF joint ``"3"``; a float such as ``joint: 1.0`` is refused
   with "quote the URDF joint name". Movable joints nothing drives are published at their rest
   position (0 clamped into their limits) and listed in :attr:`JointMapper.warnings`.

Units: revolute/continuous angles in radians, prismatic positions in metres, flexions unitless
(0 open … 1 closed, see :mod:`hand_common.contract`).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hand_common.contract import JOINT_NAMES

#: URDF joint types that carry one position value in a JointState.
SINGLE_DOF_TYPES = ("revolute", "continuous", "prismatic")
#: Every URDF joint type (``floating`` and ``planar`` have several DOF and no JointState entry here).
URDF_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
OPEN_ENDS = ("lower", "upper")
ROW_KEYS = {"joint", "human", "open", "closed", "scale", "offset", "limits", "bounds"}
TABLE_KEYS = {"joints", "limit_tolerance"}


class MappingError(ValueError):
    """The URDF or the mapping table cannot be used. ``joint`` names the joint at fault (or None)."""

    def __init__(self, message: str, joint: str | None = None):
        super().__init__(message)
        self.joint = joint


# --- URDF -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mimic:
    """``<mimic joint= multiplier= offset=>``: this joint's value = multiplier * joint + offset."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class UrdfJoint:
    """One URDF ``<joint>``. ``lower``/``upper`` are None when the URDF gives no position limit
    (no ``<limit>`` element, or a continuous joint, whose limits the URDF spec ignores)."""

    name: str
    type: str
    lower: float | None = None
    upper: float | None = None
    has_limit_element: bool = False
    mimic: Mimic | None = None

    @property
    def single_dof(self) -> bool:
        """True for revolute, continuous and prismatic joints (one JointState entry each)."""
        return self.type in SINGLE_DOF_TYPES

    @property
    def limits(self) -> tuple[float, float] | None:
        """(lower, upper) position limits, or None when the joint has none."""
        if self.lower is None or self.upper is None:
            return None
        return (self.lower, self.upper)


def _float_attr(el: ET.Element, attr: str, default: float | None, joint: str) -> float | None:
    text = el.get(attr)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        raise MappingError(f"joint '{joint}': <{el.tag} {attr}=\"{text}\"> is not a number", joint) from None
    if not math.isfinite(value):
        raise MappingError(f"joint '{joint}': <{el.tag} {attr}=\"{text}\"> is not finite", joint)
    return value


def parse_urdf(xml_text: str) -> tuple[str, dict[str, UrdfJoint]]:
    """Parse a URDF string → (robot name, {joint name: UrdfJoint} in document order).

    Follows the URDF spec: a missing ``lower``/``upper`` attribute of ``<limit>`` is 0; a
    continuous joint has no position limits even if its ``<limit>`` gives some.
    Raises MappingError for malformed XML, a root that is not ``<robot>``, a joint without a
    name, duplicate joint names, unknown joint types or non-numeric attributes.
    """
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise MappingError(f"URDF is not well-formed XML: {exc}") from None
    if root.tag != "robot":
        raise MappingError(f"URDF root element is <{root.tag}>, expected <robot>")
    joints: dict[str, UrdfJoint] = {}
    for el in root.findall("joint"):
        name = el.get("name")
        if not name:
            raise MappingError("URDF has a <joint> without a name")
        if name in joints:
            raise MappingError(f"URDF defines joint '{name}' twice", name)
        jtype = el.get("type", "")
        if jtype not in URDF_JOINT_TYPES:
            raise MappingError(f"joint '{name}': unknown URDF joint type '{jtype}'", name)
        lim = el.find("limit")
        lower = upper = None
        if lim is not None and jtype in ("revolute", "prismatic"):
            lower = _float_attr(lim, "lower", 0.0, name)
            upper = _float_attr(lim, "upper", 0.0, name)
        mimic = None
        mel = el.find("mimic")
        if mel is not None:
            src = mel.get("joint")
            if not src:
                raise MappingError(f"joint '{name}': <mimic> without a joint attribute", name)
            mimic = Mimic(src, _float_attr(mel, "multiplier", 1.0, name), _float_attr(mel, "offset", 0.0, name))
        joints[name] = UrdfJoint(name, jtype, lower, upper, lim is not None, mimic)
    return root.get("name", ""), joints


def load_urdf_file(path: str | Path) -> str:
    """The text of a URDF file; MappingError naming the path if it cannot be read."""
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise MappingError(f"cannot read URDF file '{path}': {exc.strerror or exc}") from None


# --- mapping table --------------------------------------------------------------------------------
@dataclass(frozen=True)
class JointRow:
    """One row of the mapping table (see the module docstring for the meaning of each field)."""

    joint: str
    human: str
    open: str | float = "lower"     # lower | upper | a value inside the limits (rad or m)
    closed: str | None = None       # with a numeric open: lower | upper (default: the farther limit)
    scale: float = 1.0
    offset: float = 0.0
    limits: tuple[float, float] | None = None
    bounds: tuple[float, float] | None = None


@dataclass(frozen=True)
class MappingTable:
    rows: tuple[JointRow, ...]
    limit_tolerance: float = 1e-3
    source: str = "<table>"


def _pair(value: Any, what: str, joint: str) -> tuple[float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise MappingError(f"mapping row '{joint}': {what} must be [lower, upper], got {value!r}", joint)
    lo, hi = (_number(v, what, joint) for v in value)
    if not lo < hi:
        raise MappingError(f"mapping row '{joint}': {what} [{lo}, {hi}] needs lower < upper", joint)
    return lo, hi


def _number(value: Any, what: str, joint: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MappingError(f"mapping row '{joint}': {what} must be a finite number, got {value!r}", joint)
    return float(value)


def parse_table(data: Any, source: str = "<table>") -> MappingTable:
    """Validate a mapping table already loaded from YAML (a dict) and return it.

    Raises MappingError (naming the joint where there is one) for: a missing or empty ``joints``
    list, unknown keys (typos are not ignored), a row without ``joint``, a ``human`` joint that is
    not in contract.JOINT_NAMES, ``open`` not lower/upper, non-finite scale/offset, malformed
    limits/bounds, the same URDF joint in two rows.
    """
    if not isinstance(data, dict):
        raise MappingError(f"{source}: a mapping table is a YAML mapping with a 'joints' list")
    unknown = set(data) - TABLE_KEYS
    if unknown:
        raise MappingError(f"{source}: unknown top-level keys {sorted(unknown)}; allowed {sorted(TABLE_KEYS)}")
    rows_in = data.get("joints")
    if not isinstance(rows_in, list) or not rows_in:
        raise MappingError(f"{source}: 'joints' must be a non-empty list of rows")
    tol = data.get("limit_tolerance", 1e-3)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not (tol >= 0 and math.isfinite(tol)):
        raise MappingError(f"{source}: limit_tolerance must be a finite number >= 0, got {tol!r}")
    rows: list[JointRow] = []
    seen: set[str] = set()
    for i, r in enumerate(rows_in):
        if isinstance(r, dict) and isinstance(r.get("joint"), int) and not isinstance(r.get("joint"), bool):
            r = {**r, "joint": str(r["joint"])}     # LEAP-style numeric joint names: joint: 3 is joint "3"
        elif isinstance(r, dict) and isinstance(r.get("joint"), float):
            raise MappingError(f"{source}: row {i}: joint {r['joint']!r} was read as a number; quote the URDF "
                               f"joint name (joint: \"{r['joint']}\")")
        if not isinstance(r, dict) or not isinstance(r.get("joint"), str) or not r["joint"]:
            raise MappingError(f"{source}: row {i} needs a 'joint' (URDF joint name), got {r!r}")
        joint = r["joint"]
        bad = set(r) - ROW_KEYS
        if bad:
            raise MappingError(f"mapping row '{joint}': unknown keys {sorted(bad)}; allowed {sorted(ROW_KEYS)}",
                               joint)
        if joint in seen:
            raise MappingError(f"mapping row '{joint}': the joint appears in two rows", joint)
        seen.add(joint)
        human = r.get("human")
        if human not in JOINT_NAMES:
            raise MappingError(f"mapping row '{joint}': human joint {human!r} is not one of {list(JOINT_NAMES)}",
                               joint)
        open_end = r.get("open", "lower")
        closed = r.get("closed")
        if isinstance(open_end, (int, float)) and not isinstance(open_end, bool):
            open_end = _number(open_end, "open", joint)
            if closed is not None and closed not in OPEN_ENDS:
                raise MappingError(f"mapping row '{joint}': closed must be 'lower' or 'upper', got {closed!r}", joint)
        elif open_end not in OPEN_ENDS:
            raise MappingError(f"mapping row '{joint}': open must be 'lower', 'upper' or a value, got {open_end!r}",
                               joint)
        elif closed is not None:
            raise MappingError(f"mapping row '{joint}': closed is only for a numeric open value", joint)
        rows.append(JointRow(
            joint=joint, human=human, open=open_end, closed=closed,
            scale=_number(r.get("scale", 1.0), "scale", joint),
            offset=_number(r.get("offset", 0.0), "offset", joint),
            limits=_pair(r["limits"], "limits", joint) if "limits" in r else None,
            bounds=_pair(r["bounds"], "bounds", joint) if "bounds" in r else None,
        ))
    return MappingTable(tuple(rows), float(tol), source)


def load_table(path: str | Path) -> MappingTable:
    """Read and validate a mapping table YAML file (see :func:`parse_table`)."""
    import yaml

    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise MappingError(f"cannot read mapping table '{path}': {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise MappingError(f"mapping table '{path}' is not valid YAML: {exc}") from None
    return parse_table(data, str(path))


# --- the mapper -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class MappedJoint:
    """A URDF joint driven by a human joint: flexion 0 → ``open_pos``, 1 → ``closed_pos``,
    result clamped to [lower, upper]."""

    name: str
    human: str
    open_pos: float
    closed_pos: float
    scale: float
    offset: float
    lower: float
    upper: float


@dataclass(frozen=True)
class MimicJoint:
    """A URDF joint following a mapped joint: ``multiplier * source + offset``, clamped to
    [lower, upper] when the joint has limits."""

    name: str
    source: str
    multiplier: float
    offset: float
    lower: float | None
    upper: float | None


@dataclass(frozen=True)
class MapResult:
    """Positions in :attr:`JointMapper.names` order; ``clamped`` names joints that hit a limit."""

    positions: list[float]
    clamped: tuple[str, ...] = ()


@dataclass
class JointMapper:
    """Checked mapping from the 15 human joint flexions onto one URDF's joints.

    Build it with :meth:`from_urdf`; it raises MappingError naming the joint when a row names a
    joint the URDF lacks, maps a fixed/multi-DOF/mimic joint, maps a revolute or prismatic joint
    without ``<limit>`` (or with lower >= upper), maps a continuous joint without ``bounds``,
    when the URDF limit differs from the row's ``limits`` by more than ``limit_tolerance``, when
    ``bounds`` leave the URDF limits, or when mimic joints form a cycle.
    """

    robot_name: str
    mapped: tuple[MappedJoint, ...]
    mimics: tuple[MimicJoint, ...]
    rest: dict[str, float]
    names: tuple[str, ...]
    warnings: list[str] = field(default_factory=list)
    source_rest: dict[str, float] = field(default_factory=dict)   # unmapped mimic sources at rest

    @classmethod
    def from_urdf(cls, urdf_xml: str, table: MappingTable, publish_unmapped: bool = True) -> JointMapper:
        robot, joints = parse_urdf(urdf_xml)
        return cls.from_joints(joints, table, robot, publish_unmapped)

    @classmethod
    def from_joints(cls, joints: Mapping[str, UrdfJoint], table: MappingTable, robot_name: str = "",
                    publish_unmapped: bool = True) -> JointMapper:
        tol = table.limit_tolerance
        mapped: dict[str, MappedJoint] = {}
        for row in table.rows:
            j = joints.get(row.joint)
            if j is None:
                movable = [n for n, u in joints.items() if u.single_dof]
                raise MappingError(
                    f"mapping row '{row.joint}' (human {row.human}): the URDF has no joint named "
                    f"'{row.joint}'; its movable joints are {movable}", row.joint)
            if not j.single_dof:
                raise MappingError(f"joint '{row.joint}' is a {j.type} joint; only revolute, continuous and "
                                   f"prismatic joints can be mapped", row.joint)
            if j.mimic is not None:
                raise MappingError(f"joint '{row.joint}' is a <mimic> of '{j.mimic.joint}' in the URDF; map "
                                   f"'{j.mimic.joint}' instead", row.joint)
            if j.type == "continuous":
                if row.bounds is None:
                    raise MappingError(f"joint '{row.joint}' is continuous (no position limits) and its mapping "
                                       f"row has no explicit bounds: add bounds: [lower, upper]", row.joint)
                if row.limits is not None:
                    raise MappingError(f"mapping row '{row.joint}': limits {list(row.limits)} given but the joint "
                                       f"is continuous and has none; use bounds", row.joint)
                lo, hi = row.bounds
            else:
                if not j.has_limit_element or j.limits is None:
                    raise MappingError(f"joint '{row.joint}' ({j.type}) has no <limit> in the URDF, so the "
                                       f"mapping cannot know its range", row.joint)
                ulo, uhi = j.limits
                if not ulo < uhi:
                    raise MappingError(f"joint '{row.joint}': URDF limit lower={ulo} upper={uhi} is empty "
                                       f"(needs lower < upper)", row.joint)
                if row.limits is not None and (abs(ulo - row.limits[0]) > tol or abs(uhi - row.limits[1]) > tol):
                    raise MappingError(
                        f"joint '{row.joint}': URDF limit [{ulo:g}, {uhi:g}] differs from the mapping's expected "
                        f"[{row.limits[0]:g}, {row.limits[1]:g}] (tolerance {tol:g}); the table was written "
                        f"for another model: check the row's open end and limits", row.joint)
                lo, hi = ulo, uhi
                if row.bounds is not None:
                    if row.bounds[0] < ulo - tol or row.bounds[1] > uhi + tol:
                        raise MappingError(f"mapping row '{row.joint}': bounds {list(row.bounds)} leave the URDF "
                                           f"limit [{ulo:g}, {uhi:g}]", row.joint)
                    lo, hi = max(row.bounds[0], ulo), min(row.bounds[1], uhi)
            if isinstance(row.open, float):
                if not lo - tol <= row.open <= hi + tol:
                    raise MappingError(f"mapping row '{row.joint}': open {row.open:g} is outside the joint's range "
                                       f"[{lo:g}, {hi:g}]", row.joint)
                open_pos = min(max(row.open, lo), hi)
                closed = row.closed or ("upper" if hi - open_pos >= open_pos - lo else "lower")
                closed_pos = hi if closed == "upper" else lo
                if closed_pos == open_pos:
                    raise MappingError(f"mapping row '{row.joint}': open {open_pos:g} is the {closed} limit itself: "
                                       "the joint would never move", row.joint)
            else:
                open_pos, closed_pos = (lo, hi) if row.open == "lower" else (hi, lo)
            mapped[row.joint] = MappedJoint(row.joint, row.human, open_pos, closed_pos, row.scale, row.offset, lo, hi)

        mimics: dict[str, MimicJoint] = {}
        for name, j in joints.items():
            if j.mimic is None or not j.single_dof:
                continue
            # follow the chain to its root, composing m*x+o
            mult, off, src, seen = 1.0, 0.0, name, [name]
            while joints.get(src) is not None and joints[src].mimic is not None:
                m = joints[src].mimic
                # value(name) = mult * value(src) + off and value(src) = m.multiplier * value(m.joint) + m.offset
                mult, off = mult * m.multiplier, mult * m.offset + off
                src = m.joint
                if src in seen:
                    raise MappingError(f"joint '{name}': <mimic> chain {' -> '.join(seen + [src])} is a cycle", name)
                seen.append(src)
            if src not in joints:
                raise MappingError(f"joint '{name}': <mimic joint='{src}'> names a joint the URDF lacks", name)
            # a mimic of an unmapped joint follows its equation from that joint's rest value (below)
            if j.type in ("revolute", "prismatic"):
                if not j.has_limit_element or j.limits is None or not j.limits[0] < j.limits[1]:
                    raise MappingError(f"joint '{name}' ({j.type}, mimic of '{src}') has no usable <limit> in "
                                       f"the URDF", name)
                lo_m, hi_m = j.limits
            else:
                lo_m = hi_m = None
            mimics[name] = MimicJoint(name, src, mult, off, lo_m, hi_m)

        rest: dict[str, float] = {}
        unmapped: list[str] = []
        for name, j in joints.items():
            if not j.single_dof or name in mapped or name in mimics:
                continue
            unmapped.append(name)
            lim = j.limits
            rest[name] = min(max(0.0, lim[0]), lim[1]) if lim and lim[0] <= lim[1] else 0.0
        source_rest = {m.source: rest[m.source] for m in mimics.values() if m.source in rest}
        warnings = []
        if unmapped:
            what = "published at their rest position" if publish_unmapped else "not published"
            warnings.append(f"URDF joints not driven by the mapping table ({what}): "
                            + ", ".join(f"{n}={rest[n]:g}" for n in unmapped))
        multi = [n for n, j in joints.items() if j.type in ("floating", "planar")]
        if multi:
            warnings.append(f"multi-DOF URDF joints are not published: {multi}")
        if not publish_unmapped:
            rest = {}
        published = set(mapped) | set(mimics) | set(rest)
        names = tuple(n for n in joints if n in published)
        return cls(robot_name, tuple(mapped[n] for n in names if n in mapped),
                   tuple(mimics[n] for n in names if n in mimics), rest, names, warnings, source_rest)

    @property
    def limits(self) -> dict[str, tuple[float, float] | None]:
        """The range every published joint is kept in (None: continuous mimic, unbounded)."""
        out: dict[str, tuple[float, float] | None] = {m.name: (m.lower, m.upper) for m in self.mapped}
        for m in self.mimics:
            out[m.name] = None if m.lower is None else (m.lower, m.upper)
        for n, v in self.rest.items():
            out[n] = (v, v)
        return out

    def map(self, flexions: Mapping[str, float]) -> MapResult:
        """Flexions {human joint: 0..1} → URDF positions in :attr:`names` order (rad or m).

        Every human joint a row uses must be present; ValueError names a missing or non-finite
        one (no NaN ever leaves this function). Values pushed past a limit by scale/offset (or by
        a flexion outside 0..1) are clamped and listed in ``clamped``.
        """
        values: dict[str, float] = {}
        clamped: list[str] = []
        for m in self.mapped:
            f = flexions.get(m.human)
            if f is None:
                raise ValueError(f"flexion of human joint '{m.human}' (drives '{m.name}') is missing")
            f = float(f)
            if not math.isfinite(f):
                raise ValueError(f"flexion of human joint '{m.human}' (drives '{m.name}') is {f}")
            s = m.scale * f + m.offset
            v = m.open_pos + s * (m.closed_pos - m.open_pos)
            c = min(max(v, m.lower), m.upper)
            if c != v and abs(c - v) > 1e-12:
                clamped.append(m.name)
            values[m.name] = c
        for m in self.mimics:
            src = values[m.source] if m.source in values else self.source_rest[m.source]
            v = m.multiplier * src + m.offset
            if m.lower is not None:
                c = min(max(v, m.lower), m.upper)
                if abs(c - v) > 1e-12:
                    clamped.append(m.name)
                v = c
            values[m.name] = v
        values.update(self.rest)
        return MapResult([values[n] for n in self.names], tuple(clamped))

    def map_sequence(self, flexions: Sequence[float], names: Sequence[str] = JOINT_NAMES) -> MapResult:
        """Like :meth:`map` for parallel ``names``/``flexions`` arrays (a JointState's name/position)."""
        if len(names) != len(flexions):
            raise ValueError(f"{len(names)} names but {len(flexions)} flexions")
        return self.map(dict(zip(names, flexions)))
