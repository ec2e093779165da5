"""Hand signals → arm targets in the two control modes. No rclpy.

Signals (:func:`hand_signals`) from one hand:

- ``u``: the wrist's horizontal position in the **mirrored** image (what the user sees in a
  mirror), 0 = left … 1 = right. A camera that does not mirror (``image_mirrored`` false, like
  the shared video) is mirrored here: ``u = 1 − x``.
- ``v``: the wrist's vertical image position, 0 = top … 1 = bottom.
- ``size``: apparent hand size = image palm length (wrist–middle MCP) / image height; grows as
  the hand comes closer to the camera (MediaPipe's world landmarks are hand-centred and carry no
  absolute depth, so apparent size is the depth cue).
- ``roll``: in-plane rotation of the hand (wrist → middle MCP against image-up, mirrored), rad,
  positive = tilted to the user's right.
- ``pitch``: tilt of the palm towards the camera (world landmarks), rad.

**Cartesian mode**: ``u`` → x, ``v`` → y (top of the image = far from the base), ``size`` → z,
each through an input window onto the soft workspace (x ±0.20 m, y −0.32…−0.06 m,
z 0.05…0.30 m; the arm reaches towards −y, so the robot's right is −x and the user's right
maps to −x), clamped, then exponentially smoothed with time constant ``smoothing_time_s``;
IK then turns the point into joint angles. Wrist roll follows ``roll``.
**Joint mode**: each arm joint = its centre (the `ready` pose) + gain × a signal: shoulder_pan ←
``u``, shoulder_lift ← ``v``, elbow_flex ← ``size``, wrist_flex ← ``pitch``, wrist_roll ← ``roll``,
clamped to the joint limits and smoothed the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

WRIST, MIDDLE_MCP = 0, 9


@dataclass(frozen=True)
class HandSignals:
    u: float
    v: float
    size: float
    roll: float
    pitch: float


def hand_signals(image: np.ndarray, world: np.ndarray, width: int, height: int,
                 image_mirrored: bool = False) -> HandSignals:
    """Signals of one hand (see module docstring). image: (21, 3) normalised landmarks; world:
    (21, 3) m. ValueError for non-finite landmarks or an empty image size."""
    image = np.asarray(image, dtype=float)
    world = np.asarray(world, dtype=float)
    if width <= 0 or height <= 0:
        raise ValueError(f"image size {width}x{height} must be positive")
    if not (np.all(np.isfinite(image[:, :2])) and np.all(np.isfinite(world))):
        raise ValueError("non-finite landmarks")
    x = image[:, 0] if image_mirrored else 1.0 - image[:, 0]
    px = np.stack([x * width / height, image[:, 1]], axis=1)  # mirrored, in image heights
    up = px[MIDDLE_MCP] - px[WRIST]
    size = float(np.linalg.norm(up))
    roll = math.atan2(up[0], -up[1]) if size > 0 else 0.0
    d = world[MIDDLE_MCP] - world[WRIST]
    pitch = math.atan2(-d[2], math.hypot(d[0], d[1])) if np.linalg.norm(d) > 0 else 0.0
    return HandSignals(float(x[WRIST]), float(image[WRIST, 1]), size, roll, pitch)


def _unit(value: float, lo: float, hi: float) -> float:
    """value's position in [lo, hi] as 0..1, clamped."""
    return float(np.clip((value - lo) / (hi - lo), 0.0, 1.0))


@dataclass(frozen=True)
class CartesianConfig:
    u_window: tuple[float, float] = (0.2, 0.8)
    v_window: tuple[float, float] = (0.2, 0.8)
    size_window: tuple[float, float] = (0.12, 0.30)
    x_bounds: tuple[float, float] = (-0.20, 0.20)
    y_bounds: tuple[float, float] = (-0.32, -0.06)
    z_bounds: tuple[float, float] = (0.05, 0.30)
    roll_gain: float = 1.0

    def problem(self) -> str | None:
        for name in ("u_window", "v_window", "size_window", "x_bounds", "y_bounds", "z_bounds"):
            lo, hi = getattr(self, name)
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                return f"{name} = [{lo}, {hi}] must be finite and increasing"
        return None


def cartesian_target(s: HandSignals, cfg: CartesianConfig) -> np.ndarray:
    """The TCP target (3,) m in the base frame, inside the soft workspace."""
    tu = _unit(s.u, *cfg.u_window)
    tv = _unit(s.v, *cfg.v_window)
    ts = _unit(s.size, *cfg.size_window)
    x = cfg.x_bounds[1] - tu * (cfg.x_bounds[1] - cfg.x_bounds[0])  # user's right → robot's right (−x)
    y = cfg.y_bounds[0] + tv * (cfg.y_bounds[1] - cfg.y_bounds[0])  # top of the image → far (−y)
    z = cfg.z_bounds[0] + ts * (cfg.z_bounds[1] - cfg.z_bounds[0])  # closer hand → higher
    return clamp_workspace(np.array([x, y, z]), cfg)


def clamp_workspace(p: np.ndarray, cfg: CartesianConfig) -> np.ndarray:
    lo = np.array([cfg.x_bounds[0], cfg.y_bounds[0], cfg.z_bounds[0]])
    hi = np.array([cfg.x_bounds[1], cfg.y_bounds[1], cfg.z_bounds[1]])
    return np.clip(p, lo, hi)


@dataclass(frozen=True)
class JointModeConfig:
    """Gains (rad per unit signal): pan/lift/elbow take signals scaled to −1…1 over the same
    windows as the Cartesian mode; wrist_flex/roll take angles (rad/rad)."""

    u_window: tuple[float, float] = (0.2, 0.8)
    v_window: tuple[float, float] = (0.2, 0.8)
    size_window: tuple[float, float] = (0.12, 0.30)
    pan_gain: float = -1.2  # user's right → the arm turns to its right
    lift_gain: float = -0.8  # hand higher in the image → upper arm forward
    elbow_gain: float = -0.8  # hand closer → forearm stretches out
    wrist_flex_gain: float = 1.0
    roll_gain: float = 1.0


def joint_targets(s: HandSignals, centre: np.ndarray, cfg: JointModeConfig) -> np.ndarray:
    """(5,) arm joint targets, rad (not yet clamped: the caller clamps to the model's limits)."""
    su = 2 * _unit(s.u, *cfg.u_window) - 1
    sv = 2 * _unit(s.v, *cfg.v_window) - 1
    ss = 2 * _unit(s.size, *cfg.size_window) - 1
    c = np.asarray(centre, dtype=float)[:5]
    return c + np.array([cfg.pan_gain * su, -cfg.lift_gain * sv, cfg.elbow_gain * ss,
                         cfg.wrist_flex_gain * s.pitch, cfg.roll_gain * s.roll])


class Smoother:
    """Exponential smoothing with a time constant: x += (1 − exp(−dt/τ)) (target − x).
    τ = 0 passes targets through. The first sample (or after :meth:`reset`) is taken as is."""

    def __init__(self, tau: float):
        if not (math.isfinite(tau) and tau >= 0):
            raise ValueError(f"smoothing time {tau} must be ≥ 0")
        self.tau = tau
        self.value: np.ndarray | None = None
        self.t: float | None = None

    def reset(self, value: np.ndarray | None = None, t: float | None = None) -> None:
        self.value = None if value is None else np.array(value, dtype=float)
        self.t = t

    def update(self, t: float, target: np.ndarray) -> np.ndarray:
        target = np.asarray(target, dtype=float)
        if self.value is None or self.t is None or self.tau == 0:
            self.value = target.copy()
        else:
            dt = max(0.0, t - self.t)
            a = 1.0 - math.exp(-dt / self.tau)
            self.value = self.value + a * (target - self.value)
        self.t = t
        return self.value.copy()


def rate_limit(current: np.ndarray, target: np.ndarray, max_step: np.ndarray | float) -> np.ndarray:
    """Move ``current`` towards ``target`` by at most ``max_step`` per component."""
    current = np.asarray(current, dtype=float)
    return current + np.clip(np.asarray(target, dtype=float) - current, -max_step, max_step)
