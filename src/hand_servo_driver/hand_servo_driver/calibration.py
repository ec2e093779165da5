"""Flexion → servo pulse width maps (per servo calibration). No rclpy.

A tendon servo turns its horn to pull a finger closed. The driver maps a flexion (0 open … 1
closed, see ``hand_common.contract``) to a pulse width in microseconds:

    fraction = piecewise-linear(flexion; map_flexion → map_fraction)      (0 → 0, 1 → 1 by default)
    pulse_us = min_us + fraction · (max_us − min_us)        (inverted: max_us − fraction · (…))

``map_flexion``/``map_fraction`` correct a non-linear tendon (e.g. a spool whose radius changes,
or a finger that only starts to move after some slack): breakpoints measured by commanding a
pulse and reading the finger. SG90 pulse widths: ~500 µs … ~2500 µs for ~180° (varies by unit);
the conservative default 1000 … 2000 µs (~90°) stays clear of the mechanical stops.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hand_servo_driver.protocol import MAX_CHANNELS, PULSE_MAX_US, PULSE_MIN_US

#: SG90: about 2000 µs of pulse width for 180° of horn travel.
SG90_US_PER_DEGREE = 2000.0 / 180.0
#: Conservative SG90 range (µs) used as the default for every servo.
SG90_SAFE_MIN_US = 1000
SG90_SAFE_MAX_US = 2000
#: The nominal full SG90 range (µs); check each unit by hand before using it.
SG90_FULL_MIN_US = 500
SG90_FULL_MAX_US = 2500


class CalibrationError(ValueError):
    """A servo calibration that cannot be used (message names the servo and the field)."""


@dataclass(frozen=True)
class ServoCalibration:
    """One servo: output channel on the board and the flexion → pulse map.

    channel: board output 0..15. min_us < max_us within 500..2500 µs. inverted: flexion 1 at
    ``min_us`` instead of ``max_us`` (a servo mounted the other way round). map_flexion: strictly
    increasing breakpoints from 0.0 to 1.0; map_fraction: same length, non-decreasing, in [0, 1]
    (monotone: more flexion never opens the finger).
    """

    name: str
    channel: int
    min_us: int = SG90_SAFE_MIN_US
    max_us: int = SG90_SAFE_MAX_US
    inverted: bool = False
    map_flexion: tuple[float, ...] = (0.0, 1.0)
    map_fraction: tuple[float, ...] = (0.0, 1.0)

    def __post_init__(self) -> None:
        n = self.name
        if not 0 <= self.channel < MAX_CHANNELS:
            raise CalibrationError(f"{n}: channel {self.channel} outside 0..{MAX_CHANNELS - 1}")
        if not PULSE_MIN_US <= self.min_us < self.max_us <= PULSE_MAX_US:
            raise CalibrationError(f"{n}: need {PULSE_MIN_US} <= min_us ({self.min_us}) < max_us ({self.max_us}) "
                                   f"<= {PULSE_MAX_US} µs")
        fx = tuple(float(v) for v in self.map_flexion)
        fr = tuple(float(v) for v in self.map_fraction)
        object.__setattr__(self, "map_flexion", fx)
        object.__setattr__(self, "map_fraction", fr)
        if len(fx) < 2 or len(fx) != len(fr):
            raise CalibrationError(f"{n}: map_flexion ({len(fx)}) and map_fraction ({len(fr)}) need the same "
                                   f"length >= 2")
        if not all(math.isfinite(v) for v in fx + fr):
            raise CalibrationError(f"{n}: non-finite value in the flexion map")
        if fx[0] != 0.0 or fx[-1] != 1.0 or any(b <= a for a, b in zip(fx, fx[1:])):
            raise CalibrationError(f"{n}: map_flexion must rise strictly from 0.0 to 1.0, got {list(fx)}")
        if any(not 0.0 <= v <= 1.0 for v in fr) or any(b < a for a, b in zip(fr, fr[1:])):
            raise CalibrationError(f"{n}: map_fraction must be non-decreasing within [0, 1], got {list(fr)}")

    def fraction(self, flexion: float) -> float:
        """Fraction of the pulse range (0 … 1) for a flexion in [0, 1]; ValueError otherwise."""
        f = float(flexion)
        if not (math.isfinite(f) and 0.0 <= f <= 1.0):
            raise ValueError(f"{self.name}: flexion {f} outside [0, 1]")
        return float(np.interp(f, self.map_flexion, self.map_fraction))

    def pulse_us(self, flexion: float) -> float:
        """Pulse width (µs, float, within [min_us, max_us]) for a flexion in [0, 1]."""
        frac = self.fraction(flexion)
        span = self.max_us - self.min_us
        return self.max_us - frac * span if self.inverted else self.min_us + frac * span

    def flexion(self, pulse_us: float) -> float:
        """Inverse map (for logs and tests): the flexion whose pulse is ``pulse_us``; where the
        map is flat the smallest such flexion. Clipped to [0, 1]."""
        span = self.max_us - self.min_us
        frac = (self.max_us - pulse_us) / span if self.inverted else (pulse_us - self.min_us) / span
        frac = min(max(frac, 0.0), 1.0)
        fr = np.asarray(self.map_fraction)
        i = int(np.searchsorted(fr, frac, side="left"))
        if i == 0:
            return self.map_flexion[0]
        if i >= len(fr):
            return 1.0
        a, b = fr[i - 1], fr[i]
        t = 0.0 if b == a else (frac - a) / (b - a)
        return float(self.map_flexion[i - 1] + t * (self.map_flexion[i] - self.map_flexion[i - 1]))


def check_channels(calibrations: Sequence[ServoCalibration]) -> None:
    """CalibrationError if two servos share a board channel."""
    seen: dict[int, str] = {}
    for c in calibrations:
        if c.channel in seen:
            raise CalibrationError(f"{c.name} and {seen[c.channel]} both use channel {c.channel}")
        seen[c.channel] = c.name
