"""Safety filter between retargeting and the dexterous hand (pure numpy, no rclpy).

:class:`SafetyFilter` turns target joint angles (whatever the retargeting produced: NaN, out of
range, jumping) into commands that are always

- within the joint limits;
- within a per-tick step cap ``|q_k - q_(k-1)| <= max_step``;
- within a velocity cap ``|v_k| <= max_velocity`` and an acceleration cap
  ``|v_k - v_(k-1)| <= max_acceleration * dt`` (``v_k = (q_k - q_(k-1)) / dt``);
- free of crossed fingers (:class:`CrossingClamp`), whenever that is reachable within the caps;
- mimic-consistent when a ``coupling`` is given (an underactuated hand's ``<mimic>`` joints:
  :meth:`hand_retarget.robot.RobotHand.couple`): goal and command have every mimic joint set from
  its source by the URDF's equation after the caps, so a mimic joint moves as its source does
  (its speed is the source's times the multiplier), never on its own.

The caps assume a constant tick ``dt`` (the node's timer); a larger ``dt`` is fine, a smaller
one after a larger one may need a tick to get back within the step cap.

A target with a non-finite value (or the wrong length, or None) is rejected as a whole: the goal
becomes the **last safe command** (the previous output) and the filter brakes to it within the
caps (at rest: the output stays exactly there). Approaching a goal or a joint limit, the velocity
is limited to what the acceleration cap can still stop in time (discrete braking distance), so
neither the goal nor a limit is overshot.

:class:`CrossingClamp` limits only the **abductions** of adjacent fingers (index-middle,
middle-ring, ring-pinky) when their proximal phalanges, projected on the palm plane, would come
closer than ``clearance`` across the palm (at either end: the gap varies linearly in between); it
never changes a flexion. The projection uses the MCP flexion (a flexed proximal phalanx is
shorter in the palm plane), so curling fingers may converge as much as real ones do.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hand_common.contract import FINGER_NAMES

ADJACENT = (("index", "middle"), ("middle", "ring"), ("ring", "pinky"))


@dataclass(frozen=True)
class FingerGeometry:
    """A finger's proximal phalanx in the palm plane (coordinates: across = radial m, along = distal m).

    base_across: MCP position across the palm; base_angle: rad, direction of the phalanx at zero
    abduction (positive = radial); length: proximal phalanx (m); radius (m); abd/mcp: indices of
    the abduction and MCP flexion joints in the joint vector; sign: +1 when a positive abduction
    angle moves the finger radially (dex_hand), -1 when it moves it ulnarly (a robot's convention).
    """

    name: str
    base_across: float
    base_angle: float
    length: float
    radius: float
    abd: int
    mcp: int
    sign: float = 1.0


def finger_geometry(desc) -> list[FingerGeometry]:
    """:class:`FingerGeometry` of index, middle, ring and pinky of a
    :class:`hand_description.dex.DexHandDescription` (palm plane = its y (radial) / z (distal))."""
    names = desc.joint_names
    frames = desc.fk()
    out = []
    for f in FINGER_NAMES[1:]:
        d = desc.digit(f)
        prox = next(j for j in d.joints if j.length > 0.0)
        pos, rot = frames[prox.link]
        direction = rot[:, 2]
        out.append(FingerGeometry(f, float(pos[1]), math.atan2(direction[1], direction[2]), prox.length, prox.radius,
                                  names.index(f"{f}_mcp_abd"), names.index(f"{f}_mcp")))
    return out


class CrossingClamp:
    """Keeps adjacent proximal phalanges apart by limiting abductions only (see the module docstring).

    fingers: radial to ulnar (index, middle, ring, pinky). clearance: m across the palm between
    the phalanx axes (default: the sum of their radii).
    """

    def __init__(self, fingers: Sequence[FingerGeometry], clearance: float | None = None, passes: int = 12):
        self.fingers = {f.name: f for f in fingers}
        self.pairs = [(self.fingers[a], self.fingers[b]) for a, b in ADJACENT if a in self.fingers and b in self.fingers]
        self.clearance = clearance
        self.passes = passes

    def _min_gap(self, r: FingerGeometry, u: FingerGeometry) -> float:
        return (r.radius + u.radius) if self.clearance is None else self.clearance

    @staticmethod
    def tip_across(f: FingerGeometry, q: np.ndarray) -> float:
        proj = f.length * max(0.0, math.cos(q[f.mcp]))
        return f.base_across + proj * math.sin(f.base_angle + f.sign * q[f.abd])

    def gaps(self, q: np.ndarray) -> np.ndarray:
        """(3,) m: smallest across-palm gap (base or projected end) of each adjacent pair."""
        return np.array([min(r.base_across - u.base_across, self.tip_across(r, q) - self.tip_across(u, q))
                         for r, u in self.pairs])

    def _pair_gap(self, q: np.ndarray, r: FingerGeometry, u: FingerGeometry, a_r: float, a_u: float) -> float:
        qq = q.copy()
        qq[r.abd], qq[u.abd] = a_r, a_u
        return self.tip_across(r, qq) - self.tip_across(u, qq)

    def violations(self, q: np.ndarray, tol: float = 1e-6) -> list[str]:
        """Names of the pairs closer than their clearance."""
        return [f"{r.name}-{u.name}" for (r, u), g in zip(self.pairs, self.gaps(q))
                if g < self._min_gap(r, u) - tol]

    def clamp(self, q: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        """``q`` with the abductions of converging pairs moved apart, each abduction staying within
        [lower, upper] (its own bounds: joint limits, or what the rate caps allow this tick).
        Flexions are never changed. Best effort when the bounds do not allow enough separation."""
        q = np.array(q, dtype=float)
        for _ in range(self.passes):
            changed = False
            for r, u in self.pairs:
                need = self._min_gap(r, u)
                if self.tip_across(r, q) - self.tip_across(u, q) >= need:
                    continue
                a_r, a_u = q[r.abd], q[u.abd]
                # the radial finger opens radially, the ulnar one ulnarly (in each joint's own sign)
                end_r = max(upper[r.abd], a_r) if r.sign > 0 else min(lower[r.abd], a_r)
                end_u = min(lower[u.abd], a_u) if u.sign > 0 else max(upper[u.abd], a_u)
                lo_l, hi_l = 0.0, 1.0
                if self._pair_gap(q, r, u, end_r, end_u) >= need:
                    for _ in range(30):
                        mid = 0.5 * (lo_l + hi_l)
                        if self._pair_gap(q, r, u, a_r + mid * (end_r - a_r), a_u + mid * (end_u - a_u)) >= need:
                            hi_l = mid
                        else:
                            lo_l = mid
                q[r.abd] = a_r + hi_l * (end_r - a_r)
                q[u.abd] = a_u + hi_l * (end_u - a_u)
                changed = True
            if not changed:
                break
        return q


@dataclass(frozen=True)
class SafetyLimits:
    """Joint limits (rad, (n,)), caps: max_velocity rad/s, max_acceleration rad/s², max_step rad per tick."""

    lower: np.ndarray
    upper: np.ndarray
    max_velocity: float = 8.0
    max_acceleration: float = 200.0
    max_step: float = 0.1

    def __post_init__(self) -> None:
        lo, hi = np.asarray(self.lower, float), np.asarray(self.upper, float)
        if lo.shape != hi.shape or lo.ndim != 1 or not np.all(np.isfinite(lo)) or not np.all(lo < hi):
            raise ValueError("joint limits must be finite (n,) arrays with lower < upper")
        for name in ("max_velocity", "max_acceleration", "max_step"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive finite number, got {v}")
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)


def _brake_speed(distance: np.ndarray, accel: float, dt: float) -> np.ndarray:
    """Largest speed from which a stop within ``distance`` (>= 0) is guaranteed when the speed falls by
    ``accel * dt`` per tick and the position advances by speed * dt each tick: the discrete stopping
    distance is at most v^2 / (2 accel) + v dt, so v <= accel dt (sqrt(1 + 2 d / (accel dt^2)) - 1)."""
    adt = accel * dt
    d = np.maximum(distance, 0.0)
    return adt * (np.sqrt(1.0 + 2.0 * d / (accel * dt * dt)) - 1.0)


class SafetyFilter:
    """Stateful filter (see the module docstring). ``step(target, dt)`` once per control tick."""

    def __init__(self, limits: SafetyLimits, initial: np.ndarray | None = None, crossing: CrossingClamp | None = None,
                 coupling: Callable[[np.ndarray], np.ndarray] | None = None):
        """``coupling``: (n,) -> (n,) rad, sets the mimic joints from their sources (None: no mimic)."""
        self.limits = limits
        self.crossing = crossing
        self.coupling = coupling
        n = limits.lower.size
        q0 = np.zeros(n) if initial is None else np.asarray(initial, dtype=float)
        self.reset(q0)
        self.rejected = 0

    @property
    def n(self) -> int:
        return self.limits.lower.size

    def reset(self, q: np.ndarray) -> None:
        """Restart at rest at ``q`` (clipped to the limits); NaN entries become the limits' middle."""
        q = np.asarray(q, dtype=float)
        if q.shape != (self.n,):
            raise ValueError(f"expected {self.n} joint values, got shape {q.shape}")
        mid = 0.5 * (self.limits.lower + self.limits.upper)
        q = np.where(np.isfinite(q), q, mid)
        self.q = np.clip(q, self.limits.lower, self.limits.upper)
        if self.coupling is not None:
            self.q = self.coupling(self.q)
        self.v = np.zeros(self.n)
        self.goal = self.q.copy()
        self.held = False
        self.held_goal_set = False

    def accept(self, target) -> np.ndarray | None:
        """The target as a clipped, crossing-free goal, or None if it must be rejected."""
        if target is None:
            return None
        t = np.asarray(target, dtype=float)
        if t.shape != (self.n,) or not np.all(np.isfinite(t)):
            return None
        goal = np.clip(t, self.limits.lower, self.limits.upper)
        if self.crossing is not None:
            goal = self.crossing.clamp(goal, self.limits.lower, self.limits.upper)
        if self.coupling is not None:
            goal = self.coupling(goal)
        return goal

    def step(self, target, dt: float) -> np.ndarray:
        """Advance one tick of ``dt`` s towards ``target`` ((n,) rad; None/NaN = hold). Returns the command."""
        if not (math.isfinite(dt) and dt > 0):
            raise ValueError(f"dt must be a positive number of seconds, got {dt}")
        lim = self.limits
        goal = self.accept(target)
        if goal is None:
            self.rejected += 1
            self.held = True
            # hold the last safe command: the goal stays where the output was when the bad input came
            if not self.held_goal_set:
                self.goal = self.q.copy()
                self.held_goal_set = True
        else:
            self.held = False
            self.held_goal_set = False
            self.goal = goal
        q, v = self.q, self.v
        a, vmax = lim.max_acceleration, min(lim.max_velocity, lim.max_step / dt)
        d = self.goal - q
        v_des = np.sign(d) * np.minimum(np.abs(d) / dt, _brake_speed(np.abs(d), a, dt))
        # always able to stop before a joint limit
        v_hi = np.minimum(vmax, _brake_speed(lim.upper - q, a, dt))
        v_lo = np.maximum(-vmax, -_brake_speed(q - lim.lower, a, dt))
        # the acceleration window wins over everything (the previous v was feasible)
        acc_lo, acc_hi = v - a * dt, v + a * dt
        lo = np.clip(v_lo, acc_lo, acc_hi)
        hi = np.clip(v_hi, acc_lo, acc_hi)
        lo = np.maximum(lo, np.maximum(acc_lo, -vmax))
        hi = np.minimum(hi, np.minimum(acc_hi, vmax))
        hi = np.maximum(hi, lo)
        v_new = np.clip(v_des, lo, hi)
        q_new = np.clip(q + v_new * dt, lim.lower, lim.upper)
        if self.crossing is not None:
            q_lo = np.clip(q + lo * dt, lim.lower, lim.upper)
            q_hi = np.clip(q + hi * dt, lim.lower, lim.upper)
            q_new = self.crossing.clamp(q_new, q_lo, q_hi)
        if self.coupling is not None:
            q_new = self.coupling(q_new)
        self.v = (q_new - q) / dt
        self.q = q_new
        return q_new.copy()
