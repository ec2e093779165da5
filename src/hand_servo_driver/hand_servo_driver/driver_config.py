"""The servo driver's configuration: servos, timing and the safe pose, validated. No rclpy, no I/O.

:class:`DriverConfig` is what :class:`~hand_servo_driver.core.DriverCore` runs on (the node builds it
from its parameters, :func:`~hand_servo_driver.parameters.build_config`); every invalid value raises
:class:`DriverConfigError` naming the parameter. The safe pose is bounded to the open side
(:data:`SAFE_FLEXION_MAX`) whatever is asked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hand_servo_driver.calibration import (
    SG90_US_PER_DEGREE,
    CalibrationError,
    ServoCalibration,
    check_channels,
)

SAFE_MODES = ("pose", "detach")
#: The safe pose is on the open side whatever a parameter says: ``safe_flexion`` above this is refused.
SAFE_FLEXION_MAX = 0.3
#: An SG90's no-load horn speed (°/s, 0.1 s/60° at 4.8 V): the fastest the ramp to the safe pose may
#: go. Pulses moving faster than the horn can follow are a jump in disguise (the horn slams at full
#: torque behind them), so ``safe_speed_dps`` is bounded by it.
SG90_HORN_DPS = 600.0


class DriverConfigError(ValueError):
    """An invalid driver configuration; the message names the parameter."""


@dataclass(frozen=True)
class ServoSettings:
    """One servo: calibration, speed limit (degrees of horn per second) and deadband (degrees)."""

    calibration: ServoCalibration
    max_speed_dps: float = 300.0
    deadband_deg: float = 1.0

    def __post_init__(self) -> None:
        n = self.calibration.name
        if not (math.isfinite(self.max_speed_dps) and self.max_speed_dps > 0):
            raise DriverConfigError(f"{n}.max_speed_dps must be > 0, got {self.max_speed_dps}")
        if not (math.isfinite(self.deadband_deg) and self.deadband_deg >= 0):
            raise DriverConfigError(f"{n}.deadband_deg must be >= 0, got {self.deadband_deg}")


@dataclass(frozen=True)
class DriverConfig:
    """Everything :class:`DriverCore` needs (the node builds it from its parameters).

    servos: the enabled servos (each has a distinct board channel). us_per_degree: horn degrees
    → pulse µs (SG90 ≈ 11.1). command_timeout_s: age after which the newest command is stale.
    heartbeat_period_s: longest silence on the wire (must be below the board's watchdog).
    safe_mode: ``pose`` (SET_PULSES of each servo's pulse at ``safe_flexion``) or ``detach``
    (SAFE frame: the board stops the pulses). ack_timeout_s: a frame not acknowledged within this
    is counted lost. max_step_s: the longest time step the rate limiter honours.
    min_frame_interval_s: least time between frames (1/rate_hz; 0 = none). safe_flexion: at most
    :data:`SAFE_FLEXION_MAX` (the open side). safe_speed_dps: the speed of a ramp to the safe
    pose (°/s of horn, at most :data:`SG90_HORN_DPS`); a servo whose ``max_speed_dps`` is higher
    ramps to it at that instead (never slower than it tracks).
    """

    servos: tuple[ServoSettings, ...]
    us_per_degree: float = SG90_US_PER_DEGREE
    command_timeout_s: float = 0.15
    heartbeat_period_s: float = 0.1
    safe_mode: str = "pose"
    safe_flexion: float = 0.0
    ack_timeout_s: float = 0.5
    max_step_s: float = 0.1
    min_frame_interval_s: float = 0.0
    safe_speed_dps: float = SG90_HORN_DPS

    def __post_init__(self) -> None:
        if not self.servos:
            raise DriverConfigError("no servo enabled")
        try:
            check_channels([s.calibration for s in self.servos])
        except CalibrationError as exc:
            raise DriverConfigError(str(exc)) from exc
        for name, v, lo in (("us_per_degree", self.us_per_degree, 0.0), ("command_timeout_s", self.command_timeout_s, 0.0),
                            ("heartbeat_period_s", self.heartbeat_period_s, 0.0), ("ack_timeout_s", self.ack_timeout_s, 0.0),
                            ("max_step_s", self.max_step_s, 0.0)):
            if not (math.isfinite(v) and v > lo):
                raise DriverConfigError(f"{name} must be > {lo}, got {v}")
        if self.safe_mode not in SAFE_MODES:
            raise DriverConfigError(f"safe_mode '{self.safe_mode}' is not one of {SAFE_MODES}")
        if not (math.isfinite(self.safe_flexion) and 0.0 <= self.safe_flexion <= SAFE_FLEXION_MAX):
            raise DriverConfigError(f"safe_flexion {self.safe_flexion} outside [0, {SAFE_FLEXION_MAX}]: the safe pose "
                                    "stays on the open side")
        if not (math.isfinite(self.safe_speed_dps) and 0.0 < self.safe_speed_dps <= SG90_HORN_DPS):
            raise DriverConfigError(f"safe_speed_dps must be in (0, {SG90_HORN_DPS:g}] (an SG90 horn's speed: faster "
                                    f"pulses are a jump), got {self.safe_speed_dps}")
        if not (math.isfinite(self.min_frame_interval_s) and self.min_frame_interval_s >= 0):
            raise DriverConfigError(f"min_frame_interval_s must be >= 0, got {self.min_frame_interval_s}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.calibration.name for s in self.servos)

    @property
    def channels(self) -> tuple[int, ...]:
        return tuple(s.calibration.channel for s in self.servos)

    def safe_pulses(self) -> np.ndarray:
        """Each servo's pulse (µs, float) at ``safe_flexion``."""
        return np.array([s.calibration.pulse_us(self.safe_flexion) for s in self.servos])

    def pulses(self, flexions: Mapping[str, float]) -> np.ndarray:
        """Each servo's pulse (µs, float) for ``{name: flexion}`` (names of every servo)."""
        return np.array([s.calibration.pulse_us(flexions[s.calibration.name]) for s in self.servos])

    def rates_us(self) -> np.ndarray:
        return np.array([s.max_speed_dps * self.us_per_degree for s in self.servos])

    def safe_rates_us(self) -> np.ndarray:
        """Each servo's rate (µs/s) on a ramp to the safe pose: ``safe_speed_dps``, or its own
        ``max_speed_dps`` if higher."""
        return np.maximum(self.rates_us(), self.safe_speed_dps * self.us_per_degree)

    def deadbands_us(self) -> np.ndarray:
        return np.array([s.deadband_deg * self.us_per_degree for s in self.servos])

    def safe_ramp_bound_s(self) -> float:
        """The longest ramp to the safe pose (s): from the pulse farthest from the safe one that a
        servo can be commanded (either end of its range), at its safe rate. With ``safe_mode`` pose,
        the safe pose is reached at most this long after the stale decision (+ one control tick);
        ``detach`` stops the pulses at the decision (0)."""
        if self.safe_mode == "detach":
            return 0.0
        far = [max(abs(s.calibration.min_us - safe), abs(s.calibration.max_us - safe))
               for s, safe in zip(self.servos, self.safe_pulses())]
        return float(max(np.array(far) / self.safe_rates_us()))



def round_us(values: Sequence[float]) -> tuple[int, ...]:
    """Pulse widths to whole microseconds (half away from zero, deterministic)."""
    return tuple(int(math.floor(v + 0.5)) for v in values)



#: Timing settings that may only be lowered while the output is enabled (a shorter value is safer).
LOWER_IS_SAFER = ("command_timeout_s", "max_step_s", "heartbeat_period_s")


def safety_problems(old: DriverConfig, new: DriverConfig) -> list[str]:
    """Why ``new`` may not replace ``old`` while the servos are driven (active, or ramping to the
    safe pose): every change must be toward safety. Refused: another ``safe_mode``; a servo's safe
    pulse (at ``safe_flexion``) moved away from its open end (its pulse at flexion 0 under the
    *old* calibration: so neither ``safe_flexion`` nor a calibration change — ``min_pulse_us``,
    ``inverted``, the map — can move the safe pose toward a fist); a servo's rate limit in µs/s
    raised (``max_speed_dps``, ``us_per_degree``, or the safe ramp's ``safe_speed_dps``); a
    :data:`LOWER_IS_SAFER` timing raised.
    Returns one reason per problem, each naming the parameter(s) (empty: acceptable). Servo sets
    must match (they change only at configure)."""
    problems: list[str] = []
    if new.safe_mode != old.safe_mode:
        problems.append(f"safe_mode {old.safe_mode!r} -> {new.safe_mode!r}")
    old_safe, new_safe = old.safe_pulses(), new.safe_pulses()
    old_rates, new_rates = old.rates_us(), new.rates_us()
    for i, (so, sn) in enumerate(zip(old.servos, new.servos)):
        name = so.calibration.name
        open_us = so.calibration.pulse_us(0.0)
        if abs(new_safe[i] - open_us) > abs(old_safe[i] - open_us) + 0.5:
            problems.append(f"{name}: the safe pulse would move from {old_safe[i]:.0f} to {new_safe[i]:.0f} µs, away "
                            f"from the open end ({open_us:.0f} µs) (safe_flexion or {name}'s calibration)")
        if new_rates[i] > old_rates[i] + 1e-9:
            problems.append(f"{name}: the rate limit would rise from {old_rates[i]:.0f} to {new_rates[i]:.0f} µs/s "
                            f"({name}.max_speed_dps {so.max_speed_dps:g} -> {sn.max_speed_dps:g}, us_per_degree)")
        elif new.safe_rates_us()[i] > old.safe_rates_us()[i] + 1e-9:
            problems.append(f"{name}: the safe ramp's rate would rise from {old.safe_rates_us()[i]:.0f} to "
                            f"{new.safe_rates_us()[i]:.0f} µs/s (safe_speed_dps {old.safe_speed_dps:g} -> "
                            f"{new.safe_speed_dps:g}, us_per_degree)")
    for name in LOWER_IS_SAFER:
        a, b = getattr(old, name), getattr(new, name)
        if b > a:
            problems.append(f"{name} {a:g} -> {b:g} (only lower is safer)")
    return problems
