"""Rate limiter and deadband for servo targets (vectors, one entry per servo). No rclpy.

Units are the caller's; the driver works in pulse microseconds (degrees × µs-per-degree).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class RateLimiter:
    """Moves an output toward a target at no more than ``rates[i]`` units per second.

    rates: per-channel limit (> 0, or ``inf`` for no limit). max_dt: the longest time step
    honoured (s); a late call (a stalled process) moves at most ``rates · max_dt``, so a hiccup
    never turns into a jump.
    """

    def __init__(self, rates: Sequence[float], initial: Sequence[float], max_dt: float = 0.1):
        r = np.asarray(rates, dtype=float)
        if r.ndim != 1 or np.any(~(r > 0)):
            raise ValueError(f"rates must be a vector of positive values, got {list(rates)}")
        if max_dt <= 0:
            raise ValueError(f"max_dt must be > 0, got {max_dt}")
        self.rates = r
        self.max_dt = float(max_dt)
        self.value = np.array(initial, dtype=float)
        if self.value.shape != r.shape:
            raise ValueError(f"initial has shape {self.value.shape}, rates {r.shape}")

    def reset(self, value: Sequence[float]) -> None:
        """Jump to ``value`` (the output is known to be there, e.g. after a safe pose)."""
        self.value = np.array(value, dtype=float)

    def set_rates(self, rates: Sequence[float]) -> None:
        r = np.asarray(rates, dtype=float)
        if r.shape != self.rates.shape or np.any(~(r > 0)):
            raise ValueError(f"rates must be {self.rates.shape[0]} positive values, got {list(rates)}")
        self.rates = r

    def step(self, target: Sequence[float], dt: float, rates: np.ndarray | None = None) -> np.ndarray:
        """Advance by ``dt`` seconds toward ``target`` at ``rates`` (default: :attr:`rates`; one
        per channel, > 0); returns (a copy of) the new output."""
        dt = min(max(float(dt), 0.0), self.max_dt)
        t = np.asarray(target, dtype=float)
        lim = (self.rates if rates is None else np.asarray(rates, dtype=float)) * dt
        self.value = self.value + np.clip(t - self.value, -lim, lim)
        return self.value.copy()


class Deadband:
    """Latches a target and only follows a new one that differs by at least ``widths[i]``.

    Hobby servos jitter when fed a noisy target; a deadband on the *target* (not the rate-limited
    output) keeps the servo still and the serial bus quiet while the hand is still, and never
    stalls a slow ramp. The first target is always taken.
    """

    def __init__(self, widths: Sequence[float]):
        w = np.asarray(widths, dtype=float)
        if w.ndim != 1 or np.any(~(w >= 0)):
            raise ValueError(f"widths must be a vector of values >= 0, got {list(widths)}")
        self.widths = w
        self.value: np.ndarray | None = None

    def reset(self) -> None:
        self.value = None

    def update(self, target: Sequence[float]) -> np.ndarray:
        """Offer a new target; returns the latched target (per channel: the new value where it
        moved by >= width, else the previous one)."""
        t = np.asarray(target, dtype=float)
        if self.value is None or self.value.shape != t.shape:
            self.value = t.copy()
        else:
            move = np.abs(t - self.value) >= self.widths
            self.value = np.where(move, t, self.value)
        return self.value.copy()
