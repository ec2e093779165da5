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

**A curled finger hides its own base.** The in-plane distance ignores height above the palm, so a
finger curled into the palm brings its tip, DIP, PIP and MCP sites within ``touch`` of one another
in the plane: a thumb on the curled little fingertip also "touches" its MCP crease, and the highest
site wins (Ability on the shared video, frames 458-474: thumb tip on the curled little fingertip,
8.8-23 mm, scored 9 where the operator was at 7, DIP crease; the MCP crease lay under the curled
finger). Sites along one digit and on to the palm are a chain (``SITE_CHAINS``: index 1-3, middle
4, ring 5, little 6-9 and the palmar crease 10); with ``occlusion`` (the robot score: forward
kinematics gives true 3-D geometry) only the chain's site *nearest the thumb tip in 3-D* among those
touched in-plane counts, the others lie under it (``occluded`` lists them). An extended finger keeps
its sites apart in the plane, so this changes nothing there. The human score does not use it: the
world head's depth is the least reliable coordinate (see the picture, below).

**The picture, where world depth fails.** MediaPipe's world head estimates depth, and on some
views it gets a pinch wrong: thumb and index tips touch in the picture (19 px apart) while the
world tips are 41-70 mm apart (held-back recordings of other operators: human Kapandji 0-2 on 3 of
5 real pinches). The image head follows the picture. When the palm faces the camera, the palm plane
is (nearly) the picture plane and the in-plane distance the Kapandji score wants is (nearly) a
distance in the picture: :func:`image_site_distances` measures it on the image head's landmarks
(x, y in pixels, its relative depth z in the scale of x), in-plane as :func:`kapandji` does, in
palm widths measured on the same landmarks (so they are metric-like, as the world's). Facing the
camera, the image head's depth barely enters (the palm normal is the camera axis); tilted, it
separates a thumb held above the palm from one on it (projecting onto the palm plane instead put a
raised thumb on the little finger's PIP crease of a synthetic pinch turned 40 degrees). The palm
faces the camera when the palm normal's component along the camera axis is at least
``image_min_facing`` (0.7, 46 degrees; model_complexity 1 on the shared video: the palm-to-camera
frames measure 0.81-1.00, the side view 546-575 0.12-0.79; no score of the side view changes for
any limit down to 0.5, at 0.3 five of its frames touch the index's proximal phalanx, 557-563,
facing 0.29-0.45); a hand turned further away is judged on its world landmarks alone. :func:`kapandji` given those distances
(``image``) takes per site the smaller of the two: a site is touched when either head shows it
touched (``from_image`` lists the levels only the picture showed).

The retargeting input gets the same evidence (:func:`image_pinch`): when the picture shows the thumb
tip on a fingertip (tip sites 3-6, within ``touch``) and the world's thumb tip is more than
``image_disagree`` palm widths (0.5, 3-D) from it, the world thumb is turned about its CMC (bone
lengths kept; the small remaining radial error spread over the MCP, IP and tip) until its tip sits
where the picture shows it: the same in-plane offset from the fingertip (palm-frame coordinates,
palm widths) and no offset along the palm normal (touching tips are level). DexPilot then sees the
pinch the operator makes. On the shared video (model_complexity 1) the world's index pinch is
already a pinch (tips 24-35 mm, 0.36-0.53 palm widths apart); the thumb is moved on 18 frames (310,
and 364-380 where the world's middle pinch has its tips 0.50-0.66 palm widths apart).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hand_tracking.geometry import cross3

SITE_NAMES: tuple[str, ...] = (
    "index proximal phalanx", "index middle phalanx", "index tip", "middle tip", "ring tip",
    "little tip", "little DIP crease", "little PIP crease", "little MCP crease", "distal palmar crease",
)
WRIST, THUMB_TIP, INDEX_MCP, LITTLE_MCP = 0, 4, 5, 17
#: Sites (0-based) along one digit and on to the palm: index 1-3, middle 4, ring 5, little 6-9 +
#: palmar crease 10 (module docstring: with ``occlusion`` one site a chain counts).
SITE_CHAINS: tuple[tuple[int, ...], ...] = ((0, 1, 2), (3,), (4,), (5, 6, 7, 8, 9))


@dataclass(frozen=True)
class KapandjiConfig:
    """touch: palm widths (in-plane) within which a site is touched. palmar_crease_weights: wrist,
    index MCP, little MCP. image_min_facing: smallest |cos| of the angle between the palm normal and
    the camera axis at which the picture's in-plane distances count (> 1: never). image_disagree:
    3-D thumb tip - fingertip distance, palm widths, of the world landmarks beyond which a pinch the
    picture shows moves the world thumb (:func:`image_pinch`)."""

    touch: float = 0.25                                          # palm widths
    palmar_crease_weights: tuple[float, float, float] = (0.2, 0.3, 0.5)   # wrist, index MCP, little MCP
    image_min_facing: float = 0.7
    image_disagree: float = 0.5                                  # palm widths

    def __post_init__(self) -> None:
        if not (np.isfinite(self.touch) and self.touch > 0):
            raise ValueError(f"touch must be a positive number of palm widths, got {self.touch}")
        if not (np.isfinite(self.image_min_facing) and self.image_min_facing >= 0):
            raise ValueError(f"image_min_facing must be >= 0 (> 1 disables the picture), got {self.image_min_facing}")
        if not (np.isfinite(self.image_disagree) and self.image_disagree > 0):
            raise ValueError(f"image_disagree must be a positive number of palm widths, got {self.image_disagree}")
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
    distances in palm widths (NaN if unusable; with ``image``, per site the smaller of the two);
    palm_width in the landmarks' unit; from_image: levels touched in the picture only."""

    score: int
    distances: np.ndarray
    palm_width: float
    unreachable: tuple[int, ...] = ()    # levels (1-10) the hand has no site for
    from_image: tuple[int, ...] = ()     # levels (1-10) touched only by the picture's distances
    occluded: tuple[int, ...] = ()       # levels (1-10) touched in-plane but under a nearer site of their chain


def site_matrix(config: KapandjiConfig = KapandjiConfig()) -> np.ndarray:
    """(10, 21) weights: ``site_matrix() @ landmarks`` gives the 10 sites."""
    m = np.zeros((len(SITE_NAMES), 21))
    for k, weights in enumerate(config.site_weights()):
        for i, w in weights.items():
            m[k, i] = w
    return m


_DEFAULT_SITES = site_matrix()


def kapandji(landmarks: np.ndarray, config: KapandjiConfig | None = None,
             sites: np.ndarray | None = None, contact: np.ndarray | None = None,
             image: np.ndarray | None = None, occlusion: bool = False) -> KapandjiResult:
    """Kapandji score of a hand given as (21, 3) landmarks (any rigid frame, any unit).

    ``sites`` (10, 3), same frame: the sites themselves instead of landmark combinations; a NaN
    row is a level the hand cannot express (see :func:`robot_kapandji`). ``contact`` (10,), same
    unit: per site the thumb-tip distance at which a robot's thumb and the site are in contact
    (module docstring); a site within it counts as touched whatever ``touch`` says. ``image``
    (10,) palm widths: the same hand's in-plane distances measured in the picture
    (:func:`image_site_distances`, NaN: not measured); per site the smaller one counts.
    ``occlusion``: per site chain (``SITE_CHAINS``) only the touched site nearest the thumb tip in
    3-D counts (module docstring; for exact geometry: a robot's forward kinematics)."""
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
    normal = cross3(p[INDEX_MCP] - p[WRIST], p[LITTLE_MCP] - p[WRIST])
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
    from_image: tuple[int, ...] = ()
    if image is not None:
        img = np.asarray(image, dtype=float)
        if img.shape != dist.shape:
            raise ValueError(f"image distances must be ({len(SITE_NAMES)},), got {img.shape}")
        from_image = tuple(int(k) + 1 for k in np.nonzero((img <= limit) & ~(dist <= limit))[0])
        dist = np.where(img < dist, img, dist)       # NaN on either side: the other one
    hit = dist <= limit                          # NaN (unreachable) never compares true
    occluded: tuple[int, ...] = ()
    if occlusion:
        d3 = np.linalg.norm(p[THUMB_TIP] - sites, axis=1)
        under = []
        for chain in SITE_CHAINS:
            on = [k for k in chain if hit[k]]
            if len(on) > 1:
                near = min(on, key=lambda k: d3[k])
                under += [k for k in on if k != near]
        if under:
            hit[under] = False
            occluded = tuple(sorted(int(k) + 1 for k in under))
    touched = np.nonzero(hit)[0]
    score = int(touched[-1] + 1) if touched.size else 0
    return KapandjiResult(score, dist, width, unreachable, from_image, occluded)


def image_points(image: np.ndarray, size: tuple[int, int]) -> tuple[np.ndarray, float]:
    """(points (21, 3) px, facing): the image landmarks (21, 3) normalised (x / width, y / height,
    z in the scale of x) in pixels (x * width, y * height, z * width), and ``facing`` = |cos| of the
    angle between their palm's normal (wrist, index MCP, little MCP) and the camera axis (1: the palm
    faces the camera or turns its back to it; 0: edge-on). NaN points and facing 0 when the landmarks
    or the size are unusable."""
    bad = np.full((21, 3), np.nan), 0.0
    p = np.asarray(image, dtype=float)
    w, h = (int(size[0]), int(size[1])) if size is not None else (0, 0)
    if p.shape != (21, 3) or w <= 0 or h <= 0 or not np.all(np.isfinite(p)):
        return bad
    px = p * np.array([w, h, w], dtype=float)
    n = cross3(px[INDEX_MCP] - px[WRIST], px[LITTLE_MCP] - px[WRIST])
    nn = float(np.linalg.norm(n))
    if nn < 1e-9:
        return bad
    return px, abs(float(n[2])) / nn


def image_site_distances(image: np.ndarray, size: tuple[int, int],
                         config: KapandjiConfig | None = None) -> tuple[np.ndarray, float]:
    """((10,) thumb tip - site distances in the palm plane as the picture shows them, palm widths;
    facing): see the module docstring. All NaN when the palm faces the camera less than
    ``config.image_min_facing`` or the landmarks are unusable. ``image`` (21, 3) normalised image
    landmarks, ``size`` (width, height) px."""
    cfg = config or KapandjiConfig()
    q, facing = image_points(image, size)
    if facing < cfg.image_min_facing or not np.all(np.isfinite(q)):
        return np.full(len(SITE_NAMES), np.nan), facing
    return kapandji(q, cfg).distances, facing


@dataclass(frozen=True)
class ImagePinch:
    """Result of :func:`image_pinch`. world: (21, 3) the world landmarks, thumb moved when
    ``level`` > 0 (else the input, unchanged); level: the tip site (3-6) the picture shows the thumb
    on (0: none moved); image_distance / world_distance: palm widths (in-plane in the picture; 3-D in
    the world before the move); facing: as :func:`image_points`."""

    world: np.ndarray
    level: int = 0
    image_distance: float = float("nan")
    world_distance: float = float("nan")
    facing: float = 0.0


#: Kapandji levels whose site is a fingertip (a pinch): index, middle, ring, little.
TIP_LEVELS = (3, 4, 5, 6)


def image_pinch(world: np.ndarray, image: np.ndarray, size: tuple[int, int],
                config: KapandjiConfig | None = None) -> ImagePinch:
    """The world landmarks (21, 3) m with the thumb where the picture shows it pinching a fingertip
    (module docstring): when the palm faces the camera (``image_min_facing``), the picture's
    in-plane distance from the thumb tip to the nearest fingertip is within ``touch`` and the
    world's 3-D distance exceeds ``image_disagree`` (palm widths). ``image`` (21, 3) normalised,
    ``size`` (width, height) px. Unusable input: the world returned unchanged (level 0)."""
    cfg = config or KapandjiConfig()
    w = np.asarray(world, dtype=float)
    q, facing = image_points(image, size)
    if w.shape != (21, 3) or not np.all(np.isfinite(w)) or facing < cfg.image_min_facing \
            or not np.all(np.isfinite(q)):
        return ImagePinch(w, facing=facing)
    m = site_matrix(cfg)
    sites_img, sites_w = m @ q, m @ w
    pw_img = float(np.linalg.norm(q[INDEX_MCP] - q[LITTLE_MCP]))
    pw_w = float(np.linalg.norm(w[INDEX_MCP] - w[LITTLE_MCP]))
    if pw_img < 1e-9 or pw_w < 1e-9:
        return ImagePinch(w, facing=facing)
    tips = [k - 1 for k in TIP_LEVELS]
    d_img = kapandji(q, cfg).distances[tips]      # in the image head's palm plane, palm widths
    if not np.all(np.isfinite(d_img)):
        return ImagePinch(w, facing=facing)
    j = int(np.argmin(d_img))
    k = tips[j]
    d_world = float(np.linalg.norm(w[THUMB_TIP] - sites_w[k])) / pw_w
    if d_img[j] > cfg.touch or d_world <= cfg.image_disagree:
        return ImagePinch(w, 0, float(d_img[j]), d_world, facing)
    try:
        r_img, r_w = _palm_axes(q), _palm_axes(w)
    except ValueError:
        return ImagePinch(w, facing=facing)
    a, b = ((q[THUMB_TIP] - sites_img[k]) @ r_img[:, :2]) / pw_img   # in-plane, palm widths
    target = sites_w[k] + (a * r_w[:, 0] + b * r_w[:, 1]) * pw_w
    return ImagePinch(_move_thumb(w, target), TIP_LEVELS[j], float(d_img[j]), d_world, facing)


def _palm_axes(p: np.ndarray) -> np.ndarray:
    """(3, 3) columns: across the palm (index MCP -> little MCP), wrist -> MCPs (orthogonalised),
    normal. ValueError for a degenerate palm."""
    x = p[LITTLE_MCP] - p[INDEX_MCP]
    y = 0.5 * (p[INDEX_MCP] + p[LITTLE_MCP]) - p[WRIST]
    z = cross3(x, y)
    nz = float(np.linalg.norm(z))
    if nz < 1e-12 or float(np.linalg.norm(y)) < 1e-12:
        raise ValueError("degenerate palm")
    z /= nz
    y = y / np.linalg.norm(y)
    return np.column_stack([cross3(y, z), y, z])


#: Thumb landmarks CMC, MCP, IP, tip.
_THUMB = (1, 2, 3, 4)


def _move_thumb(world: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``world`` with the thumb chain turned about its CMC (smallest rotation) so the CMC -> tip
    direction points at ``target``, then the remaining radial difference spread over MCP, IP and
    tip (1/3, 2/3, 1): the tip lands on ``target``, each bone changes by at most a third of it."""
    out = np.array(world, dtype=float)
    cmc = out[_THUMB[0]]
    a, b = out[THUMB_TIP] - cmc, target - cmc
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na < 1e-9 or nb < 1e-9:
        return out
    ua, ub = a / na, b / nb
    v, c = cross3(ua, ub), float(ua @ ub)
    if c > -0.999:
        k = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
        rot = np.eye(3) + k + k @ k / (1.0 + c)
        idx = list(_THUMB[1:])
        out[idx] = cmc + (out[idx] - cmc) @ rot.T
    residual = target - out[THUMB_TIP]
    for frac, i in zip((1 / 3, 2 / 3, 1.0), _THUMB[1:]):
        out[i] += frac * residual
    return out


def robot_sites(robot, q: np.ndarray) -> np.ndarray:
    """(10, 3) m: the robot's Kapandji sites at joint angles ``q`` from its site table (NaN rows:
    unreachable levels). ``robot``: :class:`hand_retarget.robot.RobotHand`; its ``<mimic>`` joints
    are set from their sources first (:meth:`~hand_retarget.robot.RobotHand.couple`)."""
    return robot.landmarks_and_sites(robot.couple(q))[1]


def robot_kapandji(robot, q: np.ndarray, config: KapandjiConfig | None = None) -> KapandjiResult:
    """Kapandji score of a :class:`hand_retarget.robot.RobotHand` at joint angles ``q`` (n,) rad
    (mimic joints from their equation: :meth:`~hand_retarget.robot.RobotHand.couple`); a site
    under a nearer one of its chain does not count (``occlusion``, module docstring)."""
    lm, sites = robot.landmarks_and_sites(robot.couple(q))
    return kapandji(lm, config, sites, occlusion=True)


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
