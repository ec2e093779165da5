"""MediaPipe's two heads fused into one metric skeleton, with view-aware depth (issue 22).

Pure numpy, no rclpy. :func:`fused_points` takes the in-plane geometry from the image head (the
picture) and the depth from both heads; :func:`view_aware_depth` then reconciles each digit's depth
with what the picture shows: a bone seen at full length lies in the picture plane whatever depth
the heads give it, a bone seen short (foreshortened) rises out of it by as much as its shortening
implies, with the sign that makes the finger flex towards the palm where the heads' depth is
flattened (backs of hands, fingers folded towards or away from the camera).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from hand_tracking.geometry import _EPS, DIGIT_BASE, WRIST, _as_points, cross3, image_points


def fused_points(image_landmarks: ArrayLike, world_landmarks: ArrayLike, width: int, height: int,
                 *, depth_weight: float = 0.5, view_aware: bool = True) -> np.ndarray:
    """Fuse MediaPipe's two heads into one metric skeleton, metres, camera axes.

    image_landmarks: (..., 21, 3) normalised image landmarks; world_landmarks: (..., 21, 3)
    world landmarks (m, hand-centred, camera axes); width/height: image size in pixels.
    Returns (..., 21, 3) points in metres, centred on the world landmarks' centroid.

    In-plane coordinates (x, y) come from the image head, which follows the picture closely
    (its fingers are straight when the picture's are): the landmarks are scaled by the frame
    (:func:`hand_tracking.geometry.image_points`, so that the aspect ratio does not bend angles) and fitted onto the
    world head's picture plane by the least-squares scale ``s`` that maps the centred image x/y
    onto the centred world x/y (both heads use the camera's axes, so no rotation is fitted).
    Depth is the same for the whole hand: ``z = w * s * z_image + (1 - w) * z_world`` (both
    centred), ``w = depth_weight`` in [0, 1]: the image head's relative depth brought to metres
    by the same ``s``, blended with the world head's metric depth. With ``view_aware`` (default)
    that blended depth is then reconciled, digit by digit, with what the picture shows
    (:func:`view_aware_depth`): a digit lying in the image plane takes its angles from the
    picture, a foreshortened one gets the depth its foreshortening implies. The centroid is kept.
    Non-finite input gives non-finite output (rejected downstream by :func:`hand_tracking.geometry.check_skeleton`).
    ValueError for a bad size or weight.
    """
    if not 0.0 <= depth_weight <= 1.0:
        raise ValueError(f"depth_weight must be in [0, 1], got {depth_weight}")
    img = image_points(image_landmarks, width, height)
    wld = _as_points(world_landmarks)
    with np.errstate(all="ignore"):
        ic = img - img.mean(axis=-2, keepdims=True)
        wc = wld.mean(axis=-2, keepdims=True)
        w0 = wld - wc
        num = np.einsum("...ij,...ij->...", ic[..., :2], w0[..., :2])
        den = np.einsum("...ij,...ij->...", ic[..., :2], ic[..., :2])
        s = np.where(den > _EPS, num / den, np.nan)[..., None, None]
        out = np.empty_like(img)
        out[..., :2] = s * ic[..., :2]
        out[..., 2:] = depth_weight * s * ic[..., 2:] + (1.0 - depth_weight) * w0[..., 2:]
        if view_aware:
            shift = out.mean(axis=-2, keepdims=True)
            out = view_aware_depth(out, img, wld)
            out = out - out.mean(axis=-2, keepdims=True) + shift
    return out + wc


#: Expected length of each digit's three bones (thumb CMC-MCP, MCP-IP, IP-tip; fingers MCP-PIP,
#: PIP-DIP, DIP-tip), in palm lengths |wrist - middle MCP|: the medians of MediaPipe's world head
#: over the 621 frames of the shared video (its bone proportions vary 5-15 % from frame to frame).
#: A floor for :func:`view_aware_depth` when both heads shorten a bone (flattened depth; on a
#: motion-blurred fist of the robustness set the world head's middle distal phalanx measured 0.10
#: palm lengths), counted at :data:`PRIOR_FLOOR` of its value.
DIGIT_BONE_PRIOR = np.array([
    [0.35, 0.37, 0.31],
    [0.30, 0.21, 0.31],
    [0.40, 0.27, 0.29],
    [0.33, 0.25, 0.26],
    [0.23, 0.23, 0.21],
])
#: Fraction of :data:`DIGIT_BONE_PRIOR` used as the floor: hands differ (the synthetic hand's
#: distal phalanges measure 0.23-0.27 palm lengths against MediaPipe's 0.21-0.31), and a floor
#: above a hand's true bone would bend its straight bones.
PRIOR_FLOOR = 0.9
#: True length of a bone relative to its expected length that :func:`view_aware_depth` allows
#: (the image and world heads disagree on single bones by up to ~15 % on the shared video's open
#: frames once the distal phalanges are left out).
BONE_LENGTH_RANGE = (0.85, 1.15)
#: Mean in-plane interior angle (rad) of a digit's two inner joints (thumb MCP/IP, finger
#: PIP/DIP) from which (full weight at the second number) a digit that is straight in the
#: picture is read straight: the shared video's open fingers measure 3.04-3.11 rad in 2-D, its
#: fists 1.6-2.0.
STRAIGHT_2D_RAD = (2.6, 2.9)
#: In-plane fraction ``length in the picture / expected length`` of a digit's most foreshortened
#: bone below which (zero weight at the first number) the straight-in-2-D rule does not apply:
#: a bone pointing at the camera (a finger folded towards or away from it) projects short and
#: its picture says nothing about the bend.
IN_PLANE_FRACTION = (0.35, 0.55)
#: Smallest bend (sine of the angle between the two bones before a thumb bone, ~17 deg) whose
#: sense :func:`view_aware_depth` continues when the heads' depth sign is noise.
_MIN_BEND_SIN = 0.3
#: Mean in-plane interior angle (rad) of a digit's three joints (the MCP or CMC with the palm
#: bone) below which the picture shows the digit bent, so that a bone whose heads' depth is weak
#: (flattened) gets the full depth its foreshortening implies (weight 0 at the second number, 1
#: at the first): the shared video's open fingers measure 3.04-3.11 rad in 2-D, its fists 1.6-2.0.
BENT_2D_RAD = (2.3, 2.9)
#: Smallest difference of the two depth signs' alignment with the flexion axis (cosines) for
#: :func:`_flexion_signs` to choose between them (below it both bend alike: the heads' sign stays).
_MIN_AXIS_GAP = 0.2
#: How much straighter (rad, mean of the two inner joints) the image head's own 3-D digit must be
#: than the heads' blended depth makes it for the straight-in-2-D rule to apply in full.
_DISAGREE_RAD = 0.15
#: A bone shorter than this fraction of its head's palm length counts as collapsed.
_MIN_BONE = 1e-3


def _inner_angles(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Angles (rad) between vectors ``u`` and ``v`` (..., 3), ``atan2(|u x v|, u . v)``."""
    return np.arctan2(np.linalg.norm(cross3(u, v), axis=-1), np.einsum("...i,...i->...", u, v))


def _continued_signs(base: np.ndarray, v: np.ndarray, mag: np.ndarray, sign: np.ndarray) -> np.ndarray:
    """Depth signs (..., 3) of the thumb's bones (base: (..., 3) wrist to CMC; v: (..., 3, 3) the
    bones; mag: (..., 3) their depth magnitudes; sign: (..., 3) the heads' signs): a bone whose
    heads' depth is under half its magnitude, after a visible bend, continues the rotation of the
    two bones before it (a bent digit keeps bending the same way)."""
    sign = sign.copy()
    grand = base
    parent = v[..., 0, :].copy()
    parent[..., 2] = sign[..., 0] * mag[..., 0]
    for k in (1, 2):
        sense = cross3(grand, parent)
        bend = np.linalg.norm(sense, axis=-1) / (np.linalg.norm(grand, axis=-1) * np.linalg.norm(parent, axis=-1))
        child = v[..., k, :].copy()
        child[..., 2] = mag[..., k]
        turn = np.einsum("...i,...i->...", cross3(parent, child), sense)
        child[..., 2] = -mag[..., k]
        turn_neg = np.einsum("...i,...i->...", cross3(parent, child), sense)
        weak = (np.abs(v[..., k, 2]) < 0.5 * mag[..., k]) & (bend > _MIN_BEND_SIN)
        sign[..., k] = np.where(weak, np.where(turn >= turn_neg, 1.0, -1.0), sign[..., k])
        grand = parent
        parent = child
        parent[..., 2] = sign[..., k] * mag[..., k]
    return sign


def _flexion_axis(pts: np.ndarray) -> np.ndarray:
    """(..., 3) unit axis about which the four fingers' joints flex (right-hand rule), from the
    skeleton (..., 21, 3): the palm's transverse axis (pinky MCP -> index MCP), signed by the heads'
    own bends summed over the 12 finger joints (a flattened depth keeps its sign; a mirror-image
    hand flexes the other way, so the sense is measured, not assumed)."""
    t = pts[..., 5, :] - pts[..., 17, :]
    t = t / np.linalg.norm(t, axis=-1, keepdims=True)
    vote = np.zeros(pts.shape[:-2])
    for b in DIGIT_BASE[1:]:
        chain = [pts[..., b, :] - pts[..., WRIST, :]] + [pts[..., b + k + 1, :] - pts[..., b + k, :]
                                                         for k in range(3)]
        for k in range(3):
            vote = vote + np.einsum("...i,...i->...", cross3(chain[k], chain[k + 1]), t)
    return np.where((vote >= 0.0)[..., None], t, -t)


def _flexion_signs(base: np.ndarray, v: np.ndarray, mag: np.ndarray, sign: np.ndarray,
                   axis: np.ndarray) -> np.ndarray:
    """Depth signs (..., 3) of a finger's bones, base to tip (arguments as :func:`_continued_signs`;
    axis: :func:`_flexion_axis`): the sign with which the bone's joint (with the bone before it; the
    palm bone for the MCP) bends about the hand's flexion axis: a finger flexes in one plane,
    towards the palm. The bend's direction, not its size, decides, so a sharper fold is never
    preferred. Where both signs bend alike the heads' sign stays."""
    sign = sign.copy()
    prev = base
    for k in range(3):
        score = []
        for sg in (1.0, -1.0):
            child = v[..., k, :].copy()
            child[..., 2] = sg * mag[..., k]
            c = cross3(prev, child)
            score.append(np.einsum("...i,...i->...", c, axis) / np.linalg.norm(c, axis=-1))
        decided = np.abs(score[0] - score[1]) > _MIN_AXIS_GAP
        sign[..., k] = np.where(decided, np.where(score[0] >= score[1], 1.0, -1.0), sign[..., k])
        prev = v[..., k, :].copy()
        prev[..., 2] = sign[..., k] * mag[..., k]
    return sign


#: Each digit's four landmarks, base to tip (5, 4), FINGER_NAMES order.
_DIGIT_CHAIN = np.array([[b, b + 1, b + 2, b + 3] for b in DIGIT_BASE])

#: Interior angle (rad) below which no finger or thumb joint flexes (a PIP reaches ~1.2): a joint
#: the view-aware depth would fold further than this, where the heads' own depth does not, keeps
#: the heads' depth (:func:`_no_new_folds`).
MIN_INTERIOR_RAD = 1.0


def _no_new_folds(base: np.ndarray, v: np.ndarray, dz: np.ndarray) -> np.ndarray:
    """Depth changes (..., 3) of a digit's bones, base to tip: ``dz`` (the view-aware depth), except
    a bone whose joint it folds below :data:`MIN_INTERIOR_RAD` while the heads' depth (``v``'s z)
    leaves that joint more open: that bone keeps the heads' depth. The view-aware depth never adds
    a fold the heads did not show. base: (..., 3) the bone into the first joint; v: (..., 3, 3)."""
    out = dz.copy()
    prev = base
    for k in range(3):
        mine = v[..., k, :].copy()
        mine[..., 2] = out[..., k]
        a_mine = _inner_angles(-prev, mine)
        a_heads = _inner_angles(-prev, v[..., k, :])
        keep = (a_mine < MIN_INTERIOR_RAD) & (a_heads > a_mine)
        out[..., k] = np.where(keep, v[..., k, 2], out[..., k])
        prev = v[..., k, :].copy()
        prev[..., 2] = out[..., k]
    return out


def view_aware_depth(points: ArrayLike, image_px: ArrayLike, world: ArrayLike, *,
                     length_range: tuple[float, float] = BONE_LENGTH_RANGE,
                     straight_2d: tuple[float, float] = STRAIGHT_2D_RAD,
                     in_plane: tuple[float, float] = IN_PLANE_FRACTION) -> np.ndarray:
    """Reconcile the depth of each digit with what the picture shows (issue 22).

    points: (..., 21, 3) skeleton whose x/y come from the picture and z from the heads' depth
    (:func:`fused_points` before this step), any unit; image_px: (..., 21, 3) image landmarks in
    pixels (:func:`image_points`); world: (..., 21, 3) world landmarks (m). Returns a copy of
    ``points`` with the z of each digit's 2nd, 3rd and tip landmarks changed (the wrist, the
    palm and each digit's base keep theirs); x/y unchanged. Non-finite input stays non-finite.

    Per digit bone (``l`` = its length in the picture plane, ``L`` = its expected 3-D length =
    the longest of: the world head's bone, the image head's 3-D bone, :data:`PRIOR_FLOOR` x
    :data:`DIGIT_BONE_PRIOR` times the palm length, all brought to the skeleton's scale by the
    palm length):

    1. foreshortening bounds the depth: a bone of true length in ``[lo L, hi L]``
       (``length_range``) whose picture is ``l`` long rises out of the picture plane by between
       ``sqrt((lo L)^2 - l^2)`` and ``sqrt((hi L)^2 - l^2)``. The heads' depth difference keeps
       its sign and is clipped into that range: a bone the picture shows at full length gets no
       depth however bent the heads say it is, and a finger folded towards or away from the
       camera whose depth the heads flattened gets back the depth its short picture implies
       (the lower bound is not applied to the thumb, whose proportions vary most). Where the
       heads' depth is under half the depth so given back, its sign is noise: a finger's bone
       then takes the sign with which its joint flexes about the hand's flexion axis
       (:func:`_flexion_axis`, :func:`_flexion_signs`), a thumb bone the sign that continues the
       bend before it. Continuously: with ``c = |heads' depth| / (half the magnitude)`` (at most
       1) and ``beta`` the picture's bend of the digit (mean in-plane angle of its three joints,
       0 at ``BENT_2D_RAD[1]`` rising to 1 at ``BENT_2D_RAD[0]``), the depth is
       ``magnitude x (c x heads' sign + beta x (1 - c) x that sign)``: a straight digit whose
       heads' depth is weak keeps a proportionally small depth (no sign flip from noise from
       one frame to the next), a bent one gets the depth its picture implies;
    2. generic viewpoint: a 3-D bend looks straight in a picture only when the camera looks
       along its plane, and then the bones foreshorten. A digit whose two inner joints are
       straight in the picture (mean in-plane angle, weight 0 at ``straight_2d[0]`` rising to 1
       at ``straight_2d[1]``), whose image head's own 3-D landmarks are straighter than the
       blended depth makes it (the world head alone bends it; full weight at 0.15 rad more) and
       none of whose bones is strongly foreshortened (``l / L`` of
       the shortest, weight 0 at ``in_plane[0]`` rising to 1 at ``in_plane[1]``) is read
       straight: its depth becomes one uniform slope along the digit (the mean slope of step
       1), blended by the product of the two weights.
    """
    pts = _as_points(points)
    img = _as_points(image_px)
    wld = _as_points(world)
    lo, hi = length_range
    s0, s1 = straight_2d
    g0, g1 = in_plane
    if not (0.0 < lo <= 1.0 <= hi and s0 < s1 and 0.0 <= g0 < g1):
        raise ValueError(f"bad view-aware ranges: length {length_range}, straight {straight_2d}, "
                         f"in-plane {in_plane}")
    out = pts.copy()
    with np.errstate(all="ignore"):  # degenerate/non-finite input stays non-finite, never raises
        palm = np.linalg.norm(pts[..., 9, :] - pts[..., WRIST, :], axis=-1)
        ipalm = np.linalg.norm(img[..., 9, :] - img[..., WRIST, :], axis=-1)
        wpalm = np.linalg.norm(wld[..., 9, :] - wld[..., WRIST, :], axis=-1)
        to_pts = palm / ipalm
        flex_axis = _flexion_axis(pts)
        # the five digits at once (..., 5, ...): the same float operations per digit as one digit
        # at a time, a fifth of the numpy calls (the tracker runs this on every frame)
        v = pts[..., _DIGIT_CHAIN[:, 1:], :] - pts[..., _DIGIT_CHAIN[:, :-1], :]  # (..., 5, 3, 3) bones
        ell = np.linalg.norm(v[..., :2], axis=-1)  # (..., 5, 3) in-plane lengths
        wb = np.linalg.norm(wld[..., _DIGIT_CHAIN[:, 1:], :] - wld[..., _DIGIT_CHAIN[:, :-1], :], axis=-1)
        ib = np.linalg.norm(img[..., _DIGIT_CHAIN[:, 1:], :] - img[..., _DIGIT_CHAIN[:, :-1], :], axis=-1)
        big = np.fmax(wb, ib * to_pts[..., None, None])
        L = np.fmax(big, PRIOR_FLOOR * DIGIT_BONE_PRIOR * palm[..., None, None])
        m_lo = np.sqrt(np.maximum((lo * L) ** 2 - ell ** 2, 0.0))
        m_lo[..., 0, :] = 0.0  # no lower bound for the thumb
        m_hi = np.sqrt(np.maximum((hi * L) ** 2 - ell ** 2, 0.0))
        mag = np.clip(np.abs(v[..., 2]), m_lo, m_hi)
        heads = np.where(v[..., 2] < 0.0, -1.0, 1.0)
        base = pts[..., DIGIT_BASE, :] - pts[..., [WRIST], :]  # (..., 5, 3)
        sign = np.concatenate([
            _continued_signs(base[..., 0, :], v[..., 0, :, :], mag[..., 0, :], heads[..., 0, :])[..., None, :],
            _flexion_signs(base[..., 1:, :], v[..., 1:, :, :], mag[..., 1:, :], heads[..., 1:, :],
                           flex_axis[..., None, :])], axis=-2)
        c = np.clip(np.abs(v[..., 2]) / (0.5 * mag), 0.0, 1.0)
        c = np.where(np.isfinite(c), c, 1.0)
        chain = np.concatenate([base[..., None, :], v], axis=-2)
        chain[..., 2] = 0.0
        bent = _inner_angles(-chain[..., :-1, :], chain[..., 1:, :]).mean(axis=-1)
        beta = np.clip((BENT_2D_RAD[1] - bent) / (BENT_2D_RAD[1] - BENT_2D_RAD[0]), 0.0, 1.0)[..., None]
        dz = mag * (c * heads + beta * (1.0 - c) * sign)
        flat = v.copy()
        flat[..., 2] = 0.0
        ang = _inner_angles(-flat[..., :-1, :], flat[..., 1:, :])
        # ... where the image head's own 3-D landmarks are straighter than the blended depth
        # makes the digit (the world head alone bends it; where both heads show the bend,
        # e.g. a relaxed thumb seen edge-on, the bend is real)
        vi = img[..., _DIGIT_CHAIN[:, 1:], :] - img[..., _DIGIT_CHAIN[:, :-1], :]
        ang_img = _inner_angles(-vi[..., :-1, :], vi[..., 1:, :])
        ang_heads = _inner_angles(-v[..., :-1, :], v[..., 1:, :])
        w_straight = (np.clip((ang.mean(axis=-1) - s0) / (s1 - s0), 0.0, 1.0)
                      * np.clip((ang_img - ang_heads).mean(axis=-1) / _DISAGREE_RAD, 0.0, 1.0))
        w_plane = np.clip(((ell / L).min(axis=-1) - g0) / (g1 - g0), 0.0, 1.0)
        w = np.where(np.isfinite(w_straight * w_plane), w_straight * w_plane, 0.0)[..., None]
        total = ell.sum(axis=-1, keepdims=True)
        slope = np.where(total > _EPS, dz.sum(axis=-1, keepdims=True) / total, 0.0)
        dz = (1.0 - w) * dz + w * slope * ell
        dz = _no_new_folds(base, v, dz)
        # a bone one of the heads collapsed (duplicate landmarks) is left as it is: no length
        # is invented for it (check_skeleton refuses such frames)
        whole = ((wb > _MIN_BONE * wpalm[..., None, None]) & (ib > _MIN_BONE * ipalm[..., None, None])).all(axis=-1)
        dz = np.where(whole[..., None], dz, v[..., 2])
        out[..., _DIGIT_CHAIN[:, 1:], 2] = pts[..., DIGIT_BASE, 2][..., None] + np.cumsum(dz, axis=-1)
    return out


