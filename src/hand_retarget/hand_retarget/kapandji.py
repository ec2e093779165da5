"""Kapandji opposition score from 21 hand landmarks (pure numpy, no rclpy).

The clinical test (Kapandji 1986) grades thumb opposition 0-10 by the farthest site the thumb
tip reaches, in order: 1 radial side of the index proximal phalanx, 2 of its middle phalanx,
3 index tip, 4 middle tip, 5 ring tip, 6 little tip, 7 little DIP crease, 8 little PIP crease,
9 little MCP crease, 10 distal palmar crease.

Here the sites are landmark combinations (MediaPipe indices; the same for the human's landmarks
and the robot's FK landmarks, :meth:`hand_description.dex.DexHandDescription.landmarks`):
phalanx sides = midpoints of their two joint landmarks (1: 5-6, 2: 6-7), tips at 8/12/16/20,
creases at the little finger's joints (7: 19, 8: 18, 9: 17), the distal palmar crease as a
weighted blend of wrist, index MCP and little MCP (default 0.2 / 0.3 / 0.5: across the palm,
towards the ulnar side, a fifth of the way to the wrist). A site is *touched* when the thumb tip's
distance to it **in the palm plane** (the component along the palm normal, from wrist, index MCP
and little MCP, removed) is at most ``touch`` palm widths (default 0.25; palm width = index MCP -
little MCP). The score is the highest site touched (0: none).

A robot hand (:func:`robot_kapandji`) gives its sites by its own table
(:attr:`hand_retarget.robot.RobotHand.kapandji_sites`: links + offsets, through its forward
kinematics); a level the hand cannot express (no little finger: levels 6-10) has no site, a NaN
distance, and is listed in ``unreachable``: the score is then the highest *reachable* site touched.

A robot's fingers have a thickness its landmarks (joint axes, tip centres) do not show: when its
thumb pad rests on a fingertip the two tip points stay the sum of the two phalanges' radii apart
(the dexterous twin in MuJoCo: thumb_distal touching the middle distal, radii 8.8 + 7.4 mm, tips
14.8 mm = 0.26 palm widths apart, more than ``touch``). ``contact`` (10,) m gives, per site, that
centre distance at which the robot's thumb tip and the site are in contact
(:func:`contact_distances` from a description's collision radii): a site is then also touched when
the thumb tip is within it, in the palm plane. The human's landmarks get none (0): the ``touch``
radius was set on them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SITE_NAMES: tuple[str, ...] = (
    "index proximal phalanx", "index middle phalanx", "index tip", "middle tip", "ring tip",
    "little tip", "little DIP crease", "little PIP crease", "little MCP crease", "distal palmar crease",
)
WRIST, THUMB_TIP, INDEX_MCP, LITTLE_MCP = 0, 4, 5, 17


@dataclass(frozen=True)
class KapandjiConfig:
    touch: float = 0.25                                          # palm widths
    palmar_crease_weights: tuple[float, float, float] = (0.2, 0.3, 0.5)   # wrist, index MCP, little MCP

    def __post_init__(self) -> None:
        if not (np.isfinite(self.touch) and self.touch > 0):
            raise ValueError(f"touch must be a positive number of palm widths, got {self.touch}")
        w = np.asarray(self.palmar_crease_weights, dtype=float)
        if w.shape != (3,) or not np.all(np.isfinite(w)) or np.any(w < 0) or abs(w.sum() - 1.0) > 1e-6:
            raise ValueError(f"palmar_crease_weights must be 3 weights >= 0 summing to 1, got {self.palmar_crease_weights}")

    def site_weights(self) -> tuple[dict[int, float], ...]:
        """Per site {landmark index: weight}."""
        w0, w5, w17 = self.palmar_crease_weights
        return ({5: 0.5, 6: 0.5}, {6: 0.5, 7: 0.5}, {8: 1.0}, {12: 1.0}, {16: 1.0}, {20: 1.0},
                {19: 1.0}, {18: 1.0}, {17: 1.0}, {0: w0, 5: w5, 17: w17})


@dataclass(frozen=True)
class KapandjiResult:
    """score: 0-10 (-1 if the landmarks are unusable); distances: (10,) in-plane thumb tip - site
    distances in palm widths (NaN if unusable); palm_width in the landmarks' unit."""

    score: int
    distances: np.ndarray
    palm_width: float
    unreachable: tuple[int, ...] = ()    # levels (1-10) the hand has no site for


def site_matrix(config: KapandjiConfig = KapandjiConfig()) -> np.ndarray:
    """(10, 21) weights: ``site_matrix() @ landmarks`` gives the 10 sites."""
    m = np.zeros((len(SITE_NAMES), 21))
    for k, weights in enumerate(config.site_weights()):
        for i, w in weights.items():
            m[k, i] = w
    return m


_DEFAULT_SITES = site_matrix()


def kapandji(landmarks: np.ndarray, config: KapandjiConfig | None = None,
             sites: np.ndarray | None = None, contact: np.ndarray | None = None) -> KapandjiResult:
    """Kapandji score of a hand given as (21, 3) landmarks (any rigid frame, any unit).

    ``sites`` (10, 3), same frame: the sites themselves instead of landmark combinations; a NaN
    row is a level the hand cannot express (see :func:`robot_kapandji`). ``contact`` (10,), same
    unit: per site the thumb-tip distance at which a robot's thumb and the site are in contact
    (module docstring); a site within it counts as touched whatever ``touch`` says."""
    p = np.asarray(landmarks, dtype=float)
    unreachable: tuple[int, ...] = ()
    if sites is not None:
        sites = np.asarray(sites, dtype=float)
        unreachable = tuple(int(k) + 1 for k in np.nonzero(~np.all(np.isfinite(sites), axis=1))[0])
    bad = KapandjiResult(-1, np.full(len(SITE_NAMES), np.nan), float("nan"), unreachable)
    if p.shape != (21, 3) or not np.all(np.isfinite(p)):
        return bad
    if sites is None:
        sites = (_DEFAULT_SITES if config is None else site_matrix(config)) @ p
    touch = 0.25 if config is None else config.touch
    width = float(np.linalg.norm(p[INDEX_MCP] - p[LITTLE_MCP]))
    normal = np.cross(p[INDEX_MCP] - p[WRIST], p[LITTLE_MCP] - p[WRIST])
    nn = float(np.linalg.norm(normal))
    if width < 1e-9 or nn < 1e-12:
        return bad
    normal /= nn
    d = p[THUMB_TIP] - sites
    d -= np.outer(d @ normal, normal)
    dist = np.linalg.norm(d, axis=1) / width
    limit = np.full(len(SITE_NAMES), touch)
    if contact is not None:
        limit = np.maximum(limit, np.asarray(contact, dtype=float) / width)
    touched = np.nonzero(dist <= limit)[0]      # NaN (unreachable) never compares true
    score = int(touched[-1] + 1) if touched.size else 0
    return KapandjiResult(score, dist, width, unreachable)


def robot_sites(robot, q: np.ndarray) -> np.ndarray:
    """(10, 3) m: the robot's Kapandji sites at joint angles ``q`` from its site table (NaN rows:
    unreachable levels). ``robot``: :class:`hand_retarget.robot.RobotHand`; its ``<mimic>`` joints
    are set from their sources first (:meth:`~hand_retarget.robot.RobotHand.couple`)."""
    poses = robot.link_poses(robot.couple(q))
    out = np.full((len(SITE_NAMES), 3), np.nan)
    for k, site in enumerate(robot.kapandji_sites):
        if site is not None:
            out[k] = sum(w * robot.point(poses, link, off) for link, off, w in site)
    return out


def robot_kapandji(robot, q: np.ndarray, config: KapandjiConfig | None = None) -> KapandjiResult:
    """Kapandji score of a :class:`hand_retarget.robot.RobotHand` at joint angles ``q`` (n,) rad
    (mimic joints from their equation: :meth:`~hand_retarget.robot.RobotHand.couple`)."""
    q = robot.couple(q)
    return kapandji(robot.landmarks(q), config, robot_sites(robot, q))


#: Per site, the landmarks whose phalanges carry it (a joint landmark sits on two; the palmar
#: crease on none: the in-plane distance already ignores the palm's thickness along its normal).
_SITE_LANDMARKS: tuple[tuple[int, ...], ...] = ((5, 6), (6, 7), (8,), (12,), (16,), (20,), (19,), (18,), (17,), ())


def contact_distances(desc) -> np.ndarray:
    """(10,) m: per Kapandji site, the distance between the thumb tip point and the site at which
    the dexterous hand's thumb distal phalanx and the site's phalanx touch (sum of the two capsule
    radii; the largest radius where two phalanges meet at the site). ``desc``:
    :class:`hand_description.dex.DexHandDescription` (capsule phalanges); the site's phalanx is
    every capsule whose axis passes within 1 mm of the site at the open pose."""
    frames = desc.fk()
    lm = desc.landmarks()
    caps = []
    for j in desc.joints:
        for shape in desc.link_shapes(j.link):
            if shape.kind == "capsule":
                pos, rot = frames[j.link]
                caps.append((pos + rot @ shape.a, pos + rot @ shape.b, float(shape.radius)))

    def radius(point: np.ndarray) -> float:
        best = 0.0
        for a, b, r in caps:
            ab = b - a
            u = float(np.clip((point - a) @ ab / max(float(ab @ ab), 1e-12), 0.0, 1.0))
            if np.linalg.norm(a + u * ab - point) <= 1e-3:
                best = max(best, r)
        return best

    thumb = radius(lm[THUMB_TIP])
    out = np.zeros(len(SITE_NAMES))
    for k, idx in enumerate(_SITE_LANDMARKS):
        if idx:
            out[k] = thumb + radius(lm[list(idx)].mean(axis=0))
    return out
