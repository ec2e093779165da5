"""Open hand -> the robot's rest pose: a flexion-aware blend of the retargeting input (pure numpy).

Why. A relaxed open human hand is not flat: in MediaPipe world landmarks its fingers' interior
angles are about 2.7-2.9 rad, not pi, and its thumb rests in front of the index. DexPilot reproduces
fingertip vectors faithfully, so a robot whose rest pose is flat (LEAP, Allegro: q = 0, thumb
splayed in the palm plane) is driven 40-120 mm away from its rest by an open hand.

What. Per digit d, a weight ``w_d`` in [0, 1] moves that digit's 4 retargeting landmarks towards
the robot's own rest landmarks (in the same frame and units as the retargeting input):
``X'_d = X_d + w_d (R_d - X_d)``. ``w_d = 1`` puts the digit exactly at the robot's rest (an open
hand drives the robot to rest), ``w_d = 0`` leaves the operator's geometry untouched.

- Flexion: ``w_d = clip((release - f_d) / (release - open), 0, 1)``, ``f_d`` the digit's flexion
  under the hand tracker's finger windows (its curl mapped to [0, 1] by ``straight``/``curled``:
  the tracker's evidence-based defaults, :func:`hand_tracking.tracker_core.default_finger_windows`,
  or an operator's open/fist calibration, :func:`hand_tracking.calibration.windows_from_poses`).
  Read on the tracker's fused skeleton (image + world heads) when the image landmarks are given,
  where the defaults were measured; else on the world landmarks. Up to ``open`` (0.2: the open
  hands of the tracker's measurement set read <= 0.1, its window puts the lowest open curl at 0.1)
  the digit is at rest; from ``release`` (0.5: the tracker's calibration check reads a digit above
  0.5 as closed) on, the blend is gone, so a fist or a curled finger is retargeted as it is.
- Contact: a thumb touching a finger or the palm is opposition (a pinch, a Kapandji level), and
  opposition must reach the robot as the operator makes it, whatever the flexions read (thumb and
  index barely flex in a tip pinch). The contact measure is the human Kapandji score's own, not a
  3-D fingertip distance (on the shared video a thumb that touches a site is up to 79 mm from the
  nearest fingertip): the thumb tip's in-plane distance to the nearest of the 10 Kapandji sites,
  ``k`` palm widths (:func:`hand_retarget.kapandji.kapandji` on the operator's geometry, which the
  pipeline computes anyway). Every weight is multiplied by ``c = clip((k - touch) / (free -
  touch), 0, 1)``: ``touch`` = the Kapandji touch radius (0.25), ``free`` = ``contact_free`` (0.5,
  twice that radius). At a touch nothing is blended (DexPilot's pinch prior and the Kapandji
  sites see the operator's real geometry; blending the other fingers would pull on the thumb
  through DexPilot's tip-to-tip vectors); a free thumb lets the digits go to rest. On the shared
  video the open hand keeps the thumb >= 0.91 palm widths from every site (model_complexity 1;
  1.01 at 0).

Default (``enabled=None``): on for every hand. It was off for our own dex_hand until issue 24,
whose acceptance asks every hand's open frames to put every fingertip within 10 mm of its rest:
without the blend dex_hand's open frames left a fingertip 73.9 mm from rest (make dex-acceptance),
with it 0.0 mm. Its price, measured then: dex_hand's rest is farther from opposition than the
operator's relaxed hand, so the twin reaches three pinch onsets one frame later (the targets reach
every level on the same frame, the twin starts its travel from the rest pose): twin within +-1
of the human's Kapandji 86.5 -> 82.9 % of 111 frames (>= 80 % asked), pinches unchanged (index
1.5, middle 0.7 -> 0.9, ring 1.8 mm).

When every weight is 1 the target *is* the rest pose; :class:`~hand_retarget.pipeline.DexPipeline`
then skips the optimizer and re-seeds its warm start there (the optimizer cannot stay caught in a
local minimum across an open hand).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hand_tracking.fusion import fused_points
from hand_tracking.geometry import Windows, finger_curls, joint_angles

#: The 4 landmarks of each digit (thumb CMC MCP IP TIP; fingers MCP PIP DIP TIP), FINGER_NAMES order.
DIGITS = ((1, 2, 3, 4), (5, 6, 7, 8), (9, 10, 11, 12), (13, 14, 15, 16), (17, 18, 19, 20))


def default_windows() -> Windows:
    """The hand tracker's default finger windows (fused skeleton, model_complexity 1)."""
    from hand_tracking.tracker_core import default_finger_windows

    return default_finger_windows()


@dataclass(frozen=True)
class RestBlendConfig:
    enabled: bool | None = None        # None: on for a URDF robot (RobotHand), off for dex_hand
    open_flexion: float = 0.2          # at or below: the digit goes to the robot's rest
    release_flexion: float = 0.5       # at or above: the operator's own geometry
    contact: bool = True               # a thumb touching a Kapandji site is never blended
    contact_free: float = 0.5          # palm widths (in-plane, thumb tip - nearest site): free from here
    windows: Windows | None = None     # finger windows (5); None = the tracker's defaults

    def __post_init__(self) -> None:
        lo, hi = self.open_flexion, self.release_flexion
        if not (math.isfinite(lo) and math.isfinite(hi) and 0.0 <= lo < hi <= 1.0):
            raise ValueError(f"need 0 <= open_flexion < release_flexion <= 1, got {lo}, {hi}")
        if not (math.isfinite(self.contact_free) and self.contact_free > 0.0):
            raise ValueError(f"contact_free must be > 0 palm widths, got {self.contact_free}")
        if self.windows is not None and len(self.windows.names) != 5:
            raise ValueError(f"windows must be the 5 finger windows, got {self.windows.names}")


def digit_flexions(world: np.ndarray, windows: Windows, image: np.ndarray | None = None,
                   size: tuple[int, int] | None = None) -> np.ndarray:
    """(5,) flexions thumb..pinky of one hand under ``windows``: on the fused skeleton when the image
    landmarks (21, 3, normalised) and the image size (width, height) are given, else on ``world``."""
    pts = np.asarray(world, dtype=float)
    if image is not None and size is not None and size[0] > 0 and size[1] > 0:
        fused = fused_points(np.asarray(image, dtype=float), pts, int(size[0]), int(size[1]))
        if np.all(np.isfinite(fused)):
            pts = fused
    return windows.flexions(finger_curls(joint_angles(pts)))


def blend_weights(flexions: np.ndarray, site_distances: np.ndarray, config: RestBlendConfig,
                  touch: float = 0.25) -> np.ndarray:
    """(5,) weights thumb..pinky (module docstring). site_distances: (10,) the human Kapandji
    result's in-plane thumb tip - site distances, palm widths (NaN: unusable -> nothing blended);
    touch: the Kapandji touch radius, palm widths."""
    f = np.asarray(flexions, dtype=float)
    lo, hi = config.open_flexion, config.release_flexion
    w = np.clip((hi - f) / (hi - lo), 0.0, 1.0)
    if config.contact:
        d = np.asarray(site_distances, dtype=float)
        k = float(np.nanmin(d)) if np.any(np.isfinite(d)) else touch
        free = max(config.contact_free, touch + 1e-6)
        w *= float(np.clip((k - touch) / (free - touch), 0.0, 1.0))
    return w


def blend(landmarks: np.ndarray, rest: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(21, 3): each digit's landmarks moved by its weight towards ``rest`` (21, 3, same frame)."""
    out = np.array(landmarks, dtype=float)
    r = np.asarray(rest, dtype=float)
    for k, idx in enumerate(DIGITS):
        idx = list(idx)
        out[idx] += weights[k] * (r[idx] - out[idx])
    return out
