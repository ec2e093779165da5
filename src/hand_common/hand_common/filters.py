"""The 1€ filter (Casiez, Roussel, Vogel, CHI 2012), vectorised over channels. Pure numpy.

An adaptive first-order low-pass filter: at rest it smooths strongly (cutoff ``min_cutoff``),
and the faster the signal moves the higher its cutoff (``min_cutoff + beta * |speed|``), so fast
motions lag little. It is *time-based*: every step uses the real time between samples, so the
same motion is filtered the same at 15, 30 or 60 frames/s and across dropped frames.

Units, for a signal measured in ``u`` (here: joint angles, u = rad):
- ``min_cutoff``: Hz, cutoff frequency at rest (lower = smoother, more lag when slow);
- ``beta``: Hz per (u/s), i.e. 1/u, how much the cutoff rises with speed (higher = less lag
  on fast motion, more jitter);
- ``d_cutoff``: Hz, cutoff of the low-pass on the speed estimate itself.

Same equations as the reference implementation (https://gery.casiez.net/1euro/):
``alpha = 1 / (1 + tau / dt)`` with ``tau = 1 / (2 pi f_c)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class OneEuroParams:
    """1€ parameters (see module docstring for units). Raises ValueError if out of domain."""

    min_cutoff: float = 1.0
    beta: float = 0.0
    d_cutoff: float = 1.0

    def __post_init__(self) -> None:
        for name in ("min_cutoff", "d_cutoff"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive frequency in Hz, got {v}")
        if not (math.isfinite(self.beta) and self.beta >= 0):
            raise ValueError(f"beta must be >= 0, got {self.beta}")


def smoothing_factor(dt: float | np.ndarray, cutoff: float | np.ndarray) -> np.ndarray:
    """Exponential smoothing factor of a first-order low-pass at ``cutoff`` Hz for a step ``dt`` s."""
    tau = 1.0 / (2.0 * math.pi * np.asarray(cutoff, dtype=float))
    return 1.0 / (1.0 + tau / dt)


class OneEuroFilter:
    """1€ filter over a vector of ``n`` channels.

    ``f(x, t)``: x is (n,) (or a scalar for n = 1), t the sample time in seconds: the time
    carried with the data (the tracker passes each frame's capture stamp as published), never the
    time of processing, so a replay of the same samples gives the same floats. Returns the
    filtered (n,) array. Deterministic: no clock is read.

    - The first sample (or the first after :meth:`reset`) passes through unchanged.
    - A non-finite channel in ``x`` is ignored for that step (the channel keeps its previous
      output), so one bad sample never poisons the state with NaN.
    - ``t`` equal to the previous time returns the previous output; ``t`` going backwards
      (a looped video, a restarted bag) resets the filter and passes ``x`` through.

    ``params`` may be replaced between calls (live tuning) without resetting the state.
    """

    def __init__(self, params: OneEuroParams | None = None):
        self.params = params or OneEuroParams()
        self.reset()

    def reset(self) -> None:
        """Forget the state: the next sample passes through unchanged."""
        self._x: np.ndarray | None = None
        self._dx: np.ndarray | None = None
        self._t: float | None = None

    @property
    def value(self) -> np.ndarray | None:
        """Last filtered output, or None before the first sample."""
        return None if self._x is None else self._x.copy()

    def __call__(self, x: ArrayLike, t: float) -> np.ndarray:
        x = np.atleast_1d(np.asarray(x, dtype=float))
        t = float(t)
        if not math.isfinite(t):
            raise ValueError(f"sample time must be finite, got {t}")
        restart = self._x is None or self._t is None or x.shape != self._x.shape or t < self._t
        if restart:
            prev = self._x if self._x is not None and self._x.shape == x.shape else np.zeros_like(x)
            self._x = np.where(np.isfinite(x), x, prev)
            self._dx = np.zeros_like(x)
            self._t = t
            return self._x.copy()
        dt = t - self._t
        if dt <= 0.0:
            return self._x.copy()
        p = self.params
        good = np.isfinite(x)
        xin = np.where(good, x, self._x)
        dx = (xin - self._x) / dt
        a_d = smoothing_factor(dt, p.d_cutoff)
        dx_hat = self._dx + a_d * (dx - self._dx)
        cutoff = p.min_cutoff + p.beta * np.abs(dx_hat)
        a = smoothing_factor(dt, cutoff)
        x_hat = self._x + a * (xin - self._x)
        self._x = np.where(good, x_hat, self._x)
        self._dx = np.where(good, dx_hat, self._dx)
        self._t = t
        return self._x.copy()
