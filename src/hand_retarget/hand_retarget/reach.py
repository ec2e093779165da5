"""What a robot hand can reach, by forward-kinematics search over its joint space (no rclpy).

A human gesture is only a fair test of a robot hand if the hand can make it at all: Inspire's thumb
tip never comes closer than 32 mm to its ring fingertip (12 mm to the middle one) wherever its
motors go, so a retargeting that leaves 32 mm in a ring pinch is at the robot's limit, not wrong.
:func:`reach` decides that for any :class:`~hand_retarget.robot.RobotHand`:

- **pinches**: per finger, the smallest 3-D distance between the thumb tip and that fingertip
  (the landmarks 4 and 8/12/16/20, as the acceptance measures them), m;
- **Kapandji levels**: per level 1-10, the smallest in-plane thumb tip - site distance in palm
  widths, the quantity :func:`~hand_retarget.kapandji.robot_kapandji` compares with its touch
  radius (NaN where the hand has no site: no little finger); a level is *expressible* when that
  minimum is within the touch radius, and *expressible by touch*
  (:meth:`Reach.expressible_touching`, what the acceptance judges by) when a fingertip level
  (3-6) has its pinch within reach in 3-D as well.

Search. Only the joints that move the two points take part: the thumb's independent joints and
those of the site's digit (a fingertip, a phalanx side or crease: that digit; the palmar crease:
the thumb alone); every other joint stays at rest and ``<mimic>`` joints follow their equation
(:meth:`~hand_retarget.robot.RobotHand.couple`). The distance is minimised within the URDF limits
by L-BFGS-B (scipy, numerical gradient) from the rest pose and ``starts`` seeded uniform random
poses (deterministic), the best kept; a level's search ends at the first start that touches it,
a pinch's at 0.5 mm. A local search cannot prove a global minimum; it can only miss a reachable
gesture, never invent one (every figure is a pose it found).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kapandji import SITE_NAMES, KapandjiConfig, kapandji

#: fingertip landmark of each finger
TIP = {"index": 8, "middle": 12, "ring": 16, "pinky": 20}
#: the digit whose joints move each Kapandji site (level 1..10; None: the palm)
SITE_DIGIT = ("index", "index", "index", "middle", "ring", "pinky", "pinky", "pinky", "pinky", None)


@dataclass(frozen=True)
class Reach:
    """pinch: {finger: smallest thumb tip - fingertip distance, m}; kapandji: (10,) smallest
    in-plane thumb tip - site distance per level, palm widths (NaN: no site); touch: the radius
    the levels were judged with (palm widths)."""

    pinch: dict[str, float]
    kapandji: np.ndarray
    touch: float

    def pinch_reachable(self, finger: str, within: float) -> bool:
        """Whether the thumb tip can come within ``within`` m of ``finger``'s tip."""
        return finger in self.pinch and self.pinch[finger] <= within

    @property
    def expressible(self) -> tuple[int, ...]:
        """Kapandji levels (1-10) the robot's thumb can touch (in-plane distance <= touch)."""
        return tuple(int(k) + 1 for k in np.nonzero(np.nan_to_num(self.kapandji, nan=np.inf) <= self.touch)[0])

    def expressible_touching(self, within: float) -> tuple[int, ...]:
        """:attr:`expressible` without the fingertip levels (3-6: index, middle, ring, little tip)
        whose pinch the thumb cannot make within ``within`` m (3-D tip distance). A fingertip level
        *is* that pinch: an in-plane touch the tips cannot make in 3-D is a thumb held over the
        fingertip, not on it (Inspire left: middle tip 0.24 palm widths in-plane at best, but its
        tip never closer than 18.6 mm in 3-D, its collision geometry 8.6 mm apart at the retargeted
        pinch; Inspire right 12.4 mm, 3.1 mm)."""
        tips = {3: "index", 4: "middle", 5: "ring", 6: "pinky"}
        return tuple(k for k in self.expressible if k not in tips or self.pinch_reachable(tips[k], within))


def _minimise(f, lo: np.ndarray, hi: np.ndarray, x0s: list[np.ndarray], stop: float) -> float:
    """Smallest f over the starts (L-BFGS-B within [lo, hi]); stops at the first one <= ``stop``."""
    from scipy.optimize import minimize

    best = float("inf")
    for x0 in x0s:
        res = minimize(f, np.clip(x0, lo, hi), method="L-BFGS-B", bounds=list(zip(lo, hi)),
                       options={"maxiter": 200})
        best = min(best, float(res.fun), float(f(res.x)))
        if best <= stop:
            break
    return best


def reach(robot, config: KapandjiConfig | None = None, starts: int = 16, seed: int = 0,
          pinch_stop: float = 5e-4) -> Reach:
    """FK search (module docstring) on ``robot`` (:class:`~hand_retarget.robot.RobotHand`).
    ``config``: the Kapandji touch radius and palmar crease weights the robot score uses. The
    search of a level stops at the first start that touches it (its figure is then a distance
    within the touch radius, not necessarily the smallest), of a pinch at ``pinch_stop`` m."""
    from .kapandji import robot_sites

    cfg = config or KapandjiConfig()
    rng = np.random.default_rng(seed)
    rest = robot.rest
    thumb = [j for j in robot.digits["thumb"].joints if j not in robot.mimic]

    def search(digit: str | None, value, stop: float) -> float:
        names = thumb + ([j for j in robot.digits[digit].joints if j not in robot.mimic] if digit else [])
        idx = np.array([robot.joint_names.index(j) for j in names])
        lo, hi = robot.lower[idx], robot.upper[idx]

        def f(x: np.ndarray) -> float:
            q = rest.copy()
            q[idx] = np.clip(x, lo, hi)
            return value(robot.couple(q))

        x0s = [rest[idx]] + [rng.uniform(lo, hi) for _ in range(starts)]
        return _minimise(f, lo, hi, x0s, stop)

    pinch = {}
    for finger, tip in TIP.items():
        if finger in robot.digits:
            pinch[finger] = search(finger, lambda q, t=tip: float(np.linalg.norm(
                (lm := robot.landmarks(q))[4] - lm[t])), pinch_stop)
    sites_at_rest = robot_sites(robot, rest)
    levels = np.full(len(SITE_NAMES), np.nan)
    for k, digit in enumerate(SITE_DIGIT):
        if not np.all(np.isfinite(sites_at_rest[k])):
            continue
        levels[k] = search(digit, lambda q, k=k: float(kapandji(robot.landmarks(q), cfg, robot_sites(robot, q)).distances[k]),
                           cfg.touch)
    return Reach(pinch, levels, cfg.touch)
