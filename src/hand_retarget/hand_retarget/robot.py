"""A robot hand to retarget onto, described by a dex-retargeting configuration + its URDF (no rclpy).

:func:`load_robot` resolves a robot by **name** (``leap_hand_right``: dex-retargeting's own
``configs/teleop/<name>_dexpilot.yml`` for ``dexpilot``, ``<name>.yml`` for ``vector``,
``configs/offline/<name>.yml`` for ``position``) or by **path** to such a YAML file. The URDF the
configuration names (``urdf_path``, relative) is looked up under ``robot_dir`` (default: the
environment variable ``HAND_ROBOTS_DIR``, else ``../shared/robots`` from the working directory or
from ``HAND_TELEOP_ROOT``).

Every link and joint name comes from the configuration and the URDF: the digits are the
configuration's fingertip links (DexPilot: thumb first, then the fingers radial to ulnar, as
dex-retargeting assumes; vector/position: identified by their human landmark 4, 8, 12, 16, 20);
each digit's chain is the URDF path from the wrist link to its tip. A missing link or joint is a
:class:`RobotError` naming it and the file it was expected in.

Digits come as the URDF gives them: 1 to 4 independent joints a digit, any number of ``<mimic>``
joints (underactuated hands: Inspire, Ability: two joints a finger, one a mimic). A mimic joint
follows its equation ``q = multiplier * q_source + offset`` everywhere (:meth:`RobotHand.couple`:
the rest pose, the safety filter's commands, forward kinematics of measured angles); chains of
mimics are resolved. The digit's four MediaPipe landmarks are its last three distinct joint
origins and its tip; a digit with fewer distinct joint origins gets the missing ones on its last
link, evenly between its last joint and its tip (Ability finger: q1, q2, half way to the tip, tip).

:class:`RobotHand` provides what the pipeline needs, in the URDF's own frame (pinocchio's world =
the URDF root, m):

- ``joint_names`` (all movable joints, pinocchio order; mimic joints included), ``lower``/``upper``
  (rad, from the URDF; continuous joints get +-pi), ``rest`` (independent joints at q = 0 clipped
  into the limits: the flat hand of most URDF hands; a limit where 0 is outside, e.g. Allegro's
  ``joint_12.0``, Ability's thumb rotator; mimic joints from their equation: Ability's fingers
  rest at q2 = 0.7235 rad, not flat), ``independent`` (the joints that are not mimics);
- :attr:`RobotHand.opposition_joints`: the thumb's independent joints that swing it across the
  palm (axis within 45 degrees of the palm's long axis, wrist -> middle MCP: Inspire's thumb yaw,
  Ability's rotator, Allegro's ``joint_12.0``), not flexions;
- :meth:`RobotHand.landmarks` (21, 3): MediaPipe-ordered points from forward kinematics
  (each digit's last three distinct joint origins + its tip); a digit the hand lacks (no little
  finger) is extrapolated from its neighbours for the palm frame and flagged in ``missing``;
- :attr:`RobotHand.kapandji_sites` (the per-robot site table: per Kapandji level, a tuple of
  (link, offset (3,) m in that link, weight) or None where the hand cannot express the site);
- the crossing clamp's abduction table (:meth:`RobotHand.finger_geometry`): per finger the joint
  whose axis is (nearly) the palm normal, radial to ulnar.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import pathlib
import warnings
from dataclasses import dataclass, field

import numpy as np

from hand_common.contract import FINGER_NAMES

DIGITS = FINGER_NAMES  # the contract's digit names, thumb first
TIP_LANDMARK = {4: "thumb", 8: "index", 12: "middle", 16: "ring", 20: "pinky"}
DIGIT_LANDMARKS = {"thumb": (1, 2, 3, 4), "index": (5, 6, 7, 8), "middle": (9, 10, 11, 12),
                   "ring": (13, 14, 15, 16), "pinky": (17, 18, 19, 20)}
CONFIG_SUFFIX = {"dexpilot": ("teleop", "_dexpilot"), "vector": ("teleop", ""), "position": ("offline", "")}
DEX_HAND = "dex_hand"


class RobotError(ValueError):
    """A robot configuration or URDF does not provide what retargeting needs (names it and the file)."""


def dex_retargeting_config_dir() -> pathlib.Path:
    import dex_retargeting

    return pathlib.Path(dex_retargeting.__file__).parent / "configs"


def default_robot_dir() -> pathlib.Path:
    """``$HAND_ROBOTS_DIR``, else ``<root>/../shared/robots`` for root = ``$HAND_TELEOP_ROOT`` or the cwd."""
    env = os.environ.get("HAND_ROBOTS_DIR")
    if env:
        return pathlib.Path(env)
    root = pathlib.Path(os.environ.get("HAND_TELEOP_ROOT", "."))
    return (root.resolve().parent / "shared" / "robots")


def config_path(robot: str, method: str = "dexpilot") -> pathlib.Path:
    """The dex-retargeting YAML for ``robot`` (a name or a path to a .yml/.yaml file) and ``method``."""
    if robot.endswith((".yml", ".yaml")) or os.sep in robot:
        p = pathlib.Path(robot)
        if not p.is_file():
            raise RobotError(f"robot configuration {p} does not exist")
        return p
    if method not in CONFIG_SUFFIX:
        raise RobotError(f"method must be one of {tuple(CONFIG_SUFFIX)}, got {method!r}")
    sub, suffix = CONFIG_SUFFIX[method]
    p = dex_retargeting_config_dir() / sub / f"{robot}{suffix}.yml"
    if not p.is_file():
        known = sorted(q.stem.replace("_dexpilot", "") for q in (dex_retargeting_config_dir() / "teleop").glob("*.yml"))
        raise RobotError(f"no dex-retargeting configuration {p.name} for robot '{robot}' ({method}) in {p.parent}; "
                         f"known robots: {', '.join(sorted(set(known)))}, or give a path to a .yml file")
    return p


def read_config(path: pathlib.Path) -> dict:
    import yaml

    with open(path) as f:
        data = yaml.safe_load(f)
    if not isinstance(data, dict) or not isinstance(data.get("retargeting"), dict):
        raise RobotError(f"{path}: not a dex-retargeting configuration (no 'retargeting' mapping)")
    return dict(data["retargeting"])


@dataclass(frozen=True)
class Digit:
    """One digit: ``tip`` link, ``joints`` (movable, wrist -> tip, URDF names), landmark points as
    (link, offset (3,) m) for its 4 MediaPipe landmarks (proximal -> tip)."""

    name: str
    tip: str
    joints: tuple[str, ...]
    points: tuple[tuple[str, tuple[float, float, float]], ...]


@dataclass
class RobotHand:
    """See the module docstring. Build it with :func:`load_robot`."""

    name: str
    config_file: str
    urdf_path: str
    retargeting: dict           # the configuration's 'retargeting' mapping, urdf_path resolved
    wrist: str
    digits: dict[str, Digit]
    joint_names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    mimic: dict[str, tuple[str, float, float]] = field(default_factory=dict)  # joint -> (parent, mult, offset)
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        import pinocchio as pin

        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            self._model = pin.buildModelFromUrdf(self.urdf_path)
        self._data = self._model.createData()
        self._pin_names = [self._model.names[i] for i in range(1, self._model.njoints)]
        self._q_index = [self._model.joints[self._model.getJointId(n)].idx_q for n in self.joint_names]
        self._nq_cont = {n: self._model.joints[self._model.getJointId(n)].nq for n in self.joint_names}
        self._plan = None
        self._mimic_index: list[int] = []
        self._mimic_plan()

    @property
    def side(self) -> str:
        """'right' or 'left': the side whose dex-retargeting operator -> MANO rotation
        (:func:`hand_retarget.preprocess.mano_frame`) maps the hand's own rest landmarks (wrist at
        the origin) closest onto themselves in the URDF root frame, i.e. the side of human hand
        the dex-urdf configuration expects (LEAP, Allegro, Inspire, Ability right: 0-27 mm off on
        the right rotation, 220-352 mm on the left one; their left URDFs the other way round). From
        the geometry, not the name, so a hand named anyhow is fed the right chirality."""
        if getattr(self, "_side", None) is None:
            from .preprocess import mano_frame

            q = self.landmarks(self.rest)
            q = q - q[0]
            err = {s: float(np.linalg.norm(q @ mano_frame(q, s) - q, axis=1).max()) for s in ("right", "left")}
            self._side = min(err, key=err.get)
        return self._side

    @property
    def scaling(self) -> float:
        """The configuration's ``scaling_factor`` (human -> robot size; dex-retargeting default 1.0)."""
        return float(self.retargeting.get("scaling_factor", 1.0))

    # ---- kinematics -------------------------------------------------------------------------
    @property
    def independent(self) -> tuple[str, ...]:
        """The joints that are not ``<mimic>`` joints (what the retargeting optimizer solves for)."""
        return tuple(n for n in self.joint_names if n not in self.mimic)

    def couple(self, q: np.ndarray) -> np.ndarray:
        """(n,) rad: ``q`` with every mimic joint set from its source by the URDF's equation
        (``multiplier * q_source + offset``, chains resolved, clipped into the mimic's limits).
        RobotError if a mimic names a joint the hand does not move, or mimics form a cycle."""
        out = np.array(q, dtype=float)
        for i, src_i, mult, off in self._mimic_plan():
            out[i] = mult * out[src_i] + off
        if self._mimic_index:
            idx = np.array(self._mimic_index)
            out[idx] = np.clip(out[idx], self.lower[idx], self.upper[idx])
        return out

    def _mimic_plan(self) -> list[tuple[int, int, float, float]]:
        """[(mimic index, independent source index, multiplier, offset)] (chains folded)."""
        if getattr(self, "_plan", None) is None:
            plan = []
            for n in self.joint_names:
                if n not in self.mimic:
                    continue
                src, mult, off = self.mimic[n]
                seen = [n]
                while src in self.mimic:
                    if src in seen:
                        raise RobotError(f"{self.urdf_path}: <mimic> chain {' -> '.join(seen + [src])} is a cycle")
                    seen.append(src)
                    s2, m2, o2 = self.mimic[src]
                    src, mult, off = s2, mult * m2, mult * o2 + off
                if src not in self.joint_names:
                    raise RobotError(f"{self.urdf_path}: mimic joint '{n}' follows '{src}', which is not a movable joint")
                plan.append((self.joint_names.index(n), self.joint_names.index(src), mult, off))
            self._plan = plan
            self._mimic_index = [i for i, _, _, _ in plan]
        return self._plan

    @property
    def rest(self) -> np.ndarray:
        """(n,) rad: independent joints at q = 0 clipped into the limits, mimic joints by their equation."""
        return self.couple(np.clip(np.zeros(len(self.joint_names)), self.lower, self.upper))

    def mimic_error(self, q: np.ndarray) -> float:
        """Largest |q_mimic - equation(q)| (rad) over the mimic joints (0.0 without any)."""
        q = np.asarray(q, dtype=float)
        return float(np.max(np.abs(self.couple(q) - q))) if self.mimic else 0.0

    def _pin_q(self, q: np.ndarray) -> np.ndarray:
        import pinocchio as pin

        x = pin.neutral(self._model)
        for i, n in enumerate(self.joint_names):
            k = self._q_index[i]
            if self._nq_cont[n] == 2:   # continuous: cos, sin
                x[k], x[k + 1] = math.cos(q[i]), math.sin(q[i])
            else:
                x[k] = q[i]
        return x

    def link_poses(self, q: np.ndarray | None = None, links=None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """{link: (position (3,) m, rotation (3, 3))} in the URDF root frame at ``q`` (n,) rad, for
        every link or only ``links`` (an iterable of link names)."""
        import pinocchio as pin

        q = self.rest if q is None else np.asarray(q, dtype=float)
        if getattr(self, "_body_frames", None) is None:
            self._body_frames = {f.name: i for i, f in enumerate(self._model.frames) if f.type == pin.FrameType.BODY}
        pin.forwardKinematics(self._model, self._data, self._pin_q(q))
        out = {}
        for name in (self._body_frames if links is None else links):
            m = pin.updateFramePlacement(self._model, self._data, self._body_frames[name])
            out[name] = (m.translation.copy(), m.rotation.copy())
        return out

    def point(self, poses: dict, link: str, offset) -> np.ndarray:
        p, r = poses[link]
        return p + r @ np.asarray(offset, dtype=float)

    def fk_points(self, q: np.ndarray, points: tuple) -> np.ndarray:
        """(k, 3) m: the points ``points`` (a tuple of (link, offset (3,) m in that link)) in the URDF
        root frame at ``q`` (n,) rad, from one forward-kinematics pass (every link once, the points
        vectorised; the plan per ``points`` tuple is cached)."""
        import pinocchio as pin

        plans = self.__dict__.setdefault("_point_plans", {})
        plan = plans.get(points)
        if plan is None:
            if getattr(self, "_body_frames", None) is None:
                self._body_frames = {f.name: i for i, f in enumerate(self._model.frames)
                                     if f.type == pin.FrameType.BODY}
            links = sorted({link for link, _ in points})
            where = {link: i for i, link in enumerate(links)}
            plan = ([self._body_frames[link] for link in links], np.array([where[link] for link, _ in points]),
                    np.array([off for _, off in points], dtype=float).reshape(len(points), 3))
            plans[points] = plan
        frames, idx, off = plan
        pin.forwardKinematics(self._model, self._data, self._pin_q(np.asarray(q, dtype=float)))
        pos = np.empty((len(frames), 3))
        rot = np.empty((len(frames), 3, 3))
        for i, f in enumerate(frames):
            m = pin.updateFramePlacement(self._model, self._data, f)
            pos[i], rot[i] = m.translation, m.rotation
        return pos[idx] + np.einsum("kij,kj->ki", rot[idx], off)

    def _landmark_points(self) -> tuple:
        """((link, offset), ...) of the wrist and every digit's 4 points, and their landmark indices."""
        if getattr(self, "_lm_points", None) is None:
            pts, index = [(self.wrist, (0.0, 0.0, 0.0))], [0]
            for d, dig in self.digits.items():
                for i, (link, off) in zip(DIGIT_LANDMARKS[d], dig.points):
                    pts.append((link, tuple(float(x) for x in off)))
                    index.append(i)
            self._lm_points = (tuple(pts), np.array(index))
        return self._lm_points

    def _site_plan(self) -> tuple:
        """(points, (10, k) weights, finite rows): the Kapandji site table as weights over points."""
        if getattr(self, "_sites", None) is None:
            table = self.kapandji_sites
            pts = sorted({(link, tuple(float(x) for x in off)) for site in table if site is not None
                          for link, off, _ in site})
            where = {pt: i for i, pt in enumerate(pts)}
            w = np.zeros((len(table), len(pts)))
            for k, site in enumerate(table):
                for link, off, weight in site or ():
                    w[k, where[(link, tuple(float(x) for x in off))]] += weight
            self._sites = (tuple(pts), w, np.array([site is not None for site in table]))
        return self._sites

    def landmarks_and_sites(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """((21, 3) landmarks as :meth:`landmarks`, (10, 3) Kapandji sites as
        :func:`hand_retarget.kapandji.robot_sites`, NaN rows where the hand has no site) at ``q``
        (n,) rad as given (mimic joints are not coupled here), from one forward-kinematics pass."""
        lm_pts, lm_idx = self._landmark_points()
        site_pts, w, has = self._site_plan()
        pts = self.fk_points(q, lm_pts + site_pts)
        lm = self._complete_landmarks(lm_idx, pts[:len(lm_pts)])
        sites = np.full((w.shape[0], 3), np.nan)
        sites[has] = w[has] @ pts[len(lm_pts):]
        return lm, sites

    @property
    def missing(self) -> tuple[str, ...]:
        """Digits (of thumb, index, middle, ring, pinky) the hand does not have."""
        return tuple(d for d in DIGITS if d not in self.digits)

    def landmarks(self, q: np.ndarray | None = None) -> np.ndarray:
        """(21, 3) m MediaPipe-ordered landmarks at ``q`` (default rest), URDF root frame. A missing
        finger is extrapolated (pinky = ring + (ring - middle), etc.)."""
        lm_pts, lm_idx = self._landmark_points()
        return self._complete_landmarks(lm_idx, self.fk_points(self.rest if q is None else q, lm_pts))

    def _complete_landmarks(self, lm_idx: np.ndarray, pts: np.ndarray) -> np.ndarray:
        """(21, 3): the FK points at their landmark indices, a missing finger extrapolated."""
        out = np.full((21, 3), np.nan)
        out[lm_idx] = pts
        fingers = DIGITS[1:]
        for k, d in enumerate(fingers):
            if d in self.digits:
                continue
            idx = list(DIGIT_LANDMARKS[d])
            if k >= 2 and fingers[k - 1] in self.digits or k >= 2 and not np.isnan(out[DIGIT_LANDMARKS[fingers[k - 1]][0]]).any():
                a, b = DIGIT_LANDMARKS[fingers[k - 1]], DIGIT_LANDMARKS[fingers[k - 2]]
                out[idx] = 2 * out[list(a)] - out[list(b)]
            else:
                raise RobotError(f"{self.config_file}: the hand needs index and middle fingers (has "
                                 f"{', '.join(self.digits)})")
        return out

    # ---- Kapandji site table ---------------------------------------------------------------
    @property
    def kapandji_sites(self) -> tuple:
        """Per Kapandji level 1-10: tuple of (link, offset, weight), or None (the hand cannot express it)."""
        def lm(d: str, k: int):
            return self.digits[d].points[k]

        def has(*ds):
            return all(d in self.digits for d in ds)

        sites = [
            ((*lm("index", 0), 0.5), (*lm("index", 1), 0.5)) if has("index") else None,
            ((*lm("index", 1), 0.5), (*lm("index", 2), 0.5)) if has("index") else None,
            ((*lm("index", 3), 1.0),) if has("index") else None,
            ((*lm("middle", 3), 1.0),) if has("middle") else None,
            ((*lm("ring", 3), 1.0),) if has("ring") else None,
            ((*lm("pinky", 3), 1.0),) if has("pinky") else None,
            ((*lm("pinky", 2), 1.0),) if has("pinky") else None,
            ((*lm("pinky", 1), 1.0),) if has("pinky") else None,
            ((*lm("pinky", 0), 1.0),) if has("pinky") else None,
            ((self.wrist, (0.0, 0.0, 0.0), 0.2), (*lm("index", 0), 0.3), (*lm("pinky", 0), 0.5))
            if has("index", "pinky") else None,
        ]
        return tuple(sites)

    @property
    def opposition_joints(self) -> tuple[str, ...]:
        """The thumb's independent joints whose axis lies within 45 degrees of the palm's long axis
        (wrist -> middle MCP, else index MCP): they rotate the thumb across the palm (opposition:
        Inspire ``thumb_proximal_yaw_joint``, Ability ``thumb_q1``), they do not flex it."""
        if "thumb" not in self.digits:
            return ()
        lm = self.landmarks()
        along = lm[9 if "middle" in self.digits else 5] - lm[0]
        along = along / np.linalg.norm(along)
        return tuple(j for j in self.digits["thumb"].joints if j not in self.mimic
                     and abs(float(self.joint_axis(j) @ along)) > math.cos(math.radians(45)))

    # ---- crossing clamp ---------------------------------------------------------------------
    def abduction_joints(self) -> dict[str, str]:
        """{finger: abduction joint}: the chain joint whose axis is closest to the palm normal (|cos| >
        0.7), for index, middle, ring, pinky; fingers without one are left out."""
        lm = self.landmarks()
        normal = np.cross(lm[5] - lm[0], lm[17] - lm[0])
        normal /= np.linalg.norm(normal)
        out = {}
        for d in DIGITS[1:]:
            if d not in self.digits:
                continue
            best, score = None, 0.7
            for j in self.digits[d].joints:
                axis = self.joint_axis(j)
                c = abs(float(axis @ normal))
                if c > score:
                    best, score = j, c
            if best is not None:
                out[d] = best
        return out

    def joint_axis(self, joint: str) -> np.ndarray:
        """Unit axis (3,) of ``joint`` in the root frame at rest (numerically, from forward kinematics)."""
        import pinocchio as pin

        jid = self._model.getJointId(joint)
        i = self.joint_names.index(joint)
        q = self.rest.copy()
        pin.forwardKinematics(self._model, self._data, self._pin_q(q))
        r0 = self._data.oMi[jid].rotation.copy()
        q[i] += 1e-4
        pin.forwardKinematics(self._model, self._data, self._pin_q(q))
        w = pin.log3(self._data.oMi[jid].rotation @ r0.T)
        return w / np.linalg.norm(w)

    def finger_geometry(self, radius: float = 0.008) -> list:
        """:class:`hand_retarget.safety.FingerGeometry` per finger with an abduction joint and a flexion
        joint, radial to ulnar (palm plane: across = towards the index side, along = wrist
        -> MCPs; ``sign`` = +1 when a positive abduction angle moves the finger radially)."""
        from .safety import FingerGeometry

        lm = self.landmarks()
        along = 0.5 * (lm[5] + lm[17]) - lm[0]
        across = lm[5] - lm[17]
        along /= np.linalg.norm(along)
        across -= (across @ along) * along
        across /= np.linalg.norm(across)
        out = []
        for d, j in self.abduction_joints().items():
            others = [c for c in self.digits[d].joints if c != j and c not in self.mimic]
            if not others:
                continue
            flex = others[0]            # the MCP flexion: the first other joint of the chain (LEAP: before it)
            # the finger's direction MCP -> tip; its length to the DIP (proximal + middle phalanx: a URDF's
            # MCP landmark may sit at the abduction axis, short of the real knuckle)
            base, nxt = lm[DIGIT_LANDMARKS[d][0]], lm[DIGIT_LANDMARKS[d][1]]
            v = lm[DIGIT_LANDMARKS[d][3]] - base
            length = float(np.linalg.norm(lm[DIGIT_LANDMARKS[d][2]] - base))
            q = self.rest.copy()
            q[self.joint_names.index(j)] += 0.05
            moved = self.landmarks(q)[DIGIT_LANDMARKS[d][1]] - nxt
            sign = 1.0 if float(moved @ across) >= 0 else -1.0
            out.append(FingerGeometry(d, float(base @ across), math.atan2(float(v @ across), float(v @ along)),
                                      length, radius, self.joint_names.index(j),
                                      self.joint_names.index(flex), sign))
        return out


def _chain(model, wrist_frame: int, tip_frame: int, path: str, tip: str) -> list[str]:
    """Movable joint names from the wrist frame's joint to the tip (pinocchio model)."""
    jid = model.frames[tip_frame].parentJoint
    stop = model.frames[wrist_frame].parentJoint
    out = []
    while jid != stop:
        if jid == 0:
            raise RobotError(f"{path}: link '{tip}' is not below the wrist link '{model.frames[wrist_frame].name}'")
        out.append(model.names[jid])
        jid = model.parents[jid]
    return out[::-1]


def _repair_and_check_urdf(urdf: pathlib.Path) -> tuple[dict[str, tuple[str, float, float]], list[str]]:
    """Mimic table and warnings (known defects such as a duplicate <inertial>) of the URDF."""
    import xml.etree.ElementTree as ET

    root = ET.parse(urdf).getroot()
    notes = []
    for link in root.iter("link"):
        if len(link.findall("inertial")) > 1:
            notes.append(f"{urdf}: link '{link.get('name')}' has {len(link.findall('inertial'))} <inertial> elements; "
                         "the first is used")
    mimic = {}
    for j in root.iter("joint"):
        m = j.find("mimic")
        if m is not None:
            mimic[j.get("name")] = (m.get("joint"), float(m.get("multiplier", 1.0)), float(m.get("offset", 0.0)))
    return mimic, notes


def robot_urdf_path(robot: str, method: str = "dexpilot", robot_dir: str | os.PathLike | None = None,
                    urdf: str | os.PathLike | None = None) -> pathlib.Path:
    """The URDF a robot is built from: ``urdf`` when given (it replaces the configuration's
    ``urdf_path``), else the configuration's ``urdf_path`` (relative: under ``robot_dir``, default
    :func:`default_robot_dir`). RobotError when the file does not exist."""
    cfg_file = config_path(robot, method)
    if urdf:
        path = pathlib.Path(urdf)
        if not path.is_file():
            raise RobotError(f"robot URDF {path} does not exist")
        return path
    rel = read_config(cfg_file).get("urdf_path")
    if not rel:
        raise RobotError(f"{cfg_file}: no 'urdf_path' (give the URDF with robot_urdf)")
    path = pathlib.Path(rel)
    if not path.is_absolute():
        base = pathlib.Path(robot_dir) if robot_dir else default_robot_dir()
        path = base / rel
    if not path.is_file():
        raise RobotError(f"URDF {path} (urdf_path '{rel}' of {cfg_file}) does not exist; set robot_dir "
                         "(or HAND_ROBOTS_DIR) to the folder holding it, or give the URDF with robot_urdf")
    return path


def state_publisher_description(robot: str = "", robot_dir: str | os.PathLike | None = None,
                                urdf: str | os.PathLike | None = None, method: str = "dexpilot") -> tuple[str, str]:
    """(URDF text, root link) for robot_state_publisher and RViz: the URDF the retarget node and the
    twin drive (``robot``: a dex-retargeting name or .yml, empty = hand_description's dex_hand;
    ``urdf`` replaces the configuration's urdf_path, as :func:`load_robot`), with every relative
    mesh filename made an absolute ``file://`` URI (RViz resolves meshes by URI, not relative to the
    URDF's folder). RobotError when a file is missing or the URDF is not XML."""
    import xml.etree.ElementTree as ET

    if robot:
        path = robot_urdf_path(robot, method, robot_dir, urdf)
    else:
        from hand_description import paths

        path = pathlib.Path(urdf) if urdf else paths.dex_urdf_path()
        if not path.is_file():
            raise RobotError(f"robot URDF {path} does not exist")
    try:
        tree = ET.parse(path)
    except ET.ParseError as exc:
        raise RobotError(f"URDF {path} is not valid XML: {exc}") from exc
    root = tree.getroot()
    for mesh in root.iter("mesh"):
        name = mesh.get("filename", "")
        if name and "://" not in name:
            full = pathlib.Path(name) if os.path.isabs(name) else (path.parent / name)
            mesh.set("filename", full.resolve().as_uri())
    children = {c.get("link") for j in root.findall("joint") for c in j.findall("child")}
    roots = [lk.get("name") for lk in root.findall("link") if lk.get("name") not in children]
    if len(roots) != 1:
        raise RobotError(f"URDF {path}: expected one root link, found {roots}")
    return ET.tostring(root, encoding="unicode"), roots[0]


def load_robot(robot: str, method: str = "dexpilot", robot_dir: str | os.PathLike | None = None,
               urdf_path: str | os.PathLike | None = None) -> RobotHand:
    """A :class:`RobotHand` from a robot name or configuration path (see the module docstring);
    ``urdf_path``: the robot's URDF, replacing the configuration's ``urdf_path`` (a hand kept
    anywhere: its dex-retargeting YAML and its URDF given as two files).

    RobotError names the missing file, link or joint and the file it was expected in."""
    import pinocchio as pin

    cfg_file = config_path(robot, method)
    cfg = read_config(cfg_file)
    urdf = robot_urdf_path(robot, method, robot_dir, urdf_path)
    kind = str(cfg.get("type", "")).lower()
    if kind == "dexpilot":
        wrist = cfg.get("wrist_link_name")
        tips = list(cfg.get("finger_tip_link_names") or [])
        names = dict(zip(DIGITS, tips))
    elif kind in ("vector", "position"):
        key = "target_task_link_names" if kind == "vector" else "target_link_names"
        links = list(cfg.get(key) or [])
        human = np.asarray(cfg.get("target_link_human_indices"))
        task_h = human[1] if kind == "vector" else human
        names = {TIP_LANDMARK[int(h)]: link for h, link in zip(task_h, links) if int(h) in TIP_LANDMARK}
        wrist = (cfg.get("target_origin_link_names") or [None])[0] if kind == "vector" else None
        if wrist is None:
            wrist = cfg.get("wrist_link_name")
    else:
        raise RobotError(f"{cfg_file}: retargeting type '{cfg.get('type')}' is not one of DexPilot, vector, position")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        model = pin.buildModelFromUrdf(str(urdf))
    frames = {f.name: i for i, f in enumerate(model.frames) if f.type == pin.FrameType.BODY}
    if wrist is None:
        wrist = model.frames[next(i for i, f in enumerate(model.frames) if f.type == pin.FrameType.BODY)].name
    for what, link in [("wrist link", wrist)] + [(f"{d} tip link", t) for d, t in names.items()]:
        if link not in frames:
            raise RobotError(f"{what} '{link}' (from {cfg_file}) does not appear in the URDF {urdf}")
    if "thumb" not in names or "index" not in names:
        raise RobotError(f"{cfg_file}: needs at least a thumb and an index fingertip link")
    mimic, notes = _repair_and_check_urdf(urdf)
    data = model.createData()
    pin.framesForwardKinematics(model, data, pin.neutral(model))
    joint_names = tuple(model.names[i] for i in range(1, model.njoints))
    for j in cfg.get("target_joint_names") or []:
        if j not in joint_names:
            raise RobotError(f"joint '{j}' (target_joint_names of {cfg_file}) does not appear in the URDF {urdf}")
    lower, upper = [], []
    for n in joint_names:
        jid = model.getJointId(n)
        lo, hi = float(model.lowerPositionLimit[model.joints[jid].idx_q]), float(model.upperPositionLimit[model.joints[jid].idx_q])
        if model.joints[jid].nq == 2 or not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo > 1e6:
            lo, hi = -math.pi, math.pi
            notes.append(f"{urdf}: joint '{n}' has no finite limits (continuous): using [-pi, pi]")
        lower.append(lo)
        upper.append(hi)
    digits = {}
    for d, tip in names.items():
        chain = _chain(model, frames[wrist], frames[tip], str(urdf), tip)
        # distinct joint origins along the chain (child link frames), then the tip
        pts: list[tuple[str, tuple[float, float, float]]] = []
        last = None
        for j in chain:
            jid = model.getJointId(j)
            link = next(f.name for f in model.frames if f.type == pin.FrameType.BODY and f.parentJoint == jid
                        and f.placement.translation.dot(f.placement.translation) < 1e-12)
            p = data.oMi[jid].translation
            if last is not None and np.linalg.norm(p - last) < 0.005:
                pts[-1] = (link, (0.0, 0.0, 0.0))
                last = p.copy()
                continue
            pts.append((link, (0.0, 0.0, 0.0)))
            last = p.copy()
        pts = pts[-3:]
        if not chain or not any(j not in mimic for j in chain):
            raise RobotError(f"{urdf}: the {d} chain to '{tip}' has no independent joint (needs 1 to 4)")
        if len(pts) < 3:
            # too few distinct joint origins (an underactuated finger: two joints): the missing
            # landmarks go on the last link, evenly between its joint and the tip (rigidly attached)
            link = pts[-1][0]
            lid = frames[link]
            rel = data.oMf[lid].rotation.T @ (data.oMf[frames[tip]].translation - data.oMf[lid].translation)
            k = 3 - len(pts)
            pts += [(link, tuple(float(x) for x in rel * (i + 1) / (k + 1))) for i in range(k)]
        pts.append((tip, (0.0, 0.0, 0.0)))
        digits[d] = Digit(d, tip, tuple(chain), tuple(pts))
    resolved = dict(cfg)
    resolved["urdf_path"] = str(urdf)
    name = cfg_file.stem.replace("_dexpilot", "")
    hand = RobotHand(name, str(cfg_file), str(urdf), resolved, wrist, digits, joint_names, np.array(lower),
                     np.array(upper), mimic, notes)
    for n in notes:
        warnings.warn(n, stacklevel=2)
    return hand
