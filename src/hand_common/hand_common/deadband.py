"""Per-finger deadband in front of an actuator interface (flexion units). No rclpy.

A new value within ``tolerance[i]`` of the value last *sent* on channel ``i`` is not re-sent: the
last sent value is kept instead. Comparing with the last sent value (not the last offered one)
means a slow drift is followed in steps of at most the tolerance and never stalls, and the output
is always within the tolerance of the input. The ends of the flexion range are exact: a value
of exactly 0.0 (open, the safe pose) or 1.0 (closed) is always sent when it differs from the last
sent one, so the actuator really reaches its open end.

Used by the MuJoCo twin (``command_deadband``) and the Gazebo commander (``deadband``); the servo
driver has its own deadband on the pulse target (``<finger>.deadband_deg``,
hand_servo_driver/motion.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hand_common.contract import FLEXION_CLOSED, FLEXION_OPEN


class FlexionDeadband:
    """Deadband on a vector of flexions (see module docstring).

    tolerance: one value per channel (≥ 0, finite; 0 = every change is sent), flexion units.
    ValueError names a bad tolerance.
    """

    def __init__(self, tolerance: Sequence[float]):
        self.tolerance = self.check(tolerance)
        self.sent: np.ndarray | None = None
        self.suppressed = 0  # channel values not re-sent so far

    @staticmethod
    def check(tolerance: Sequence[float]) -> np.ndarray:
        t = np.asarray(tolerance, dtype=float)
        if t.ndim != 1 or t.size == 0 or not all(math.isfinite(v) and 0.0 <= v < 1.0 for v in t):
            raise ValueError(f"deadband tolerances must be finite values in [0, 1), got {list(tolerance)}")
        return t

    def reset(self) -> None:
        """Forget the last sent values: the next offer is sent as it is."""
        self.sent = None

    def offer(self, values: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        """Offer new values; returns (values to apply, per-channel bool: changed since the last
        send). Unchanged channels carry the last sent value. ValueError on a length mismatch."""
        v = np.asarray(values, dtype=float)
        if v.shape != self.tolerance.shape:
            raise ValueError(f"expected {self.tolerance.size} values, got shape {v.shape}")
        if self.sent is None:
            self.sent = v.copy()
            return v.copy(), np.ones(v.shape, bool)
        end = ((v == FLEXION_OPEN) | (v == FLEXION_CLOSED)) & (v != self.sent)
        move = (np.abs(v - self.sent) > self.tolerance) | end
        self.suppressed += int(np.count_nonzero(~move & (v != self.sent)))
        self.sent = np.where(move, v, self.sent)
        return self.sent.copy(), move
