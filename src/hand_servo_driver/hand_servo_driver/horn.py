"""The SG90 horn behind each board output: where it is and when it reaches its target. No rclpy.

An SG90 turns at about 600 °/s unloaded (0.1 s / 60° at 4.8 V, its datasheet); 500..2500 µs
spans 180°, so 1° = 11.1 µs and the horn moves :data:`SG90_SPEED_DPS` x 11.1 = 6667 µs of pulse
width a second. Its controller ignores a change of the pulse width within its dead band
(:data:`SG90_DEADBAND_US`, about 10 µs wide: ±5 µs) — a horn already within it of a new target
does not move. A detached output (None: no pulses) leaves the horn where it is, limp.

:class:`HornModel` integrates the horns analytically (no time step): :meth:`HornModel.advance`
returns, for each horn that reached its target since the last call, the exact arrival time.
Times in s (any monotonic clock); pulse widths in µs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: SG90 no-load speed, °/s (datasheet: 0.1 s / 60° at 4.8 V).
SG90_SPEED_DPS = 600.0
#: Half the SG90's dead band, µs: a new target within this of the horn does not move it.
SG90_DEADBAND_US = 5.0
#: Pulse width per degree, µs (500..2500 µs = 0..180°).
US_PER_DEG = 2000.0 / 180.0


@dataclass(frozen=True)
class Arrival:
    """A horn reached its target: output ``channel`` at time ``t`` (s), at ``pulse_us``, moved
    by the target set at ``set_t`` (s) with tag ``tag`` (e.g. the frame's sequence number)."""

    channel: int
    t: float
    pulse_us: float
    set_t: float
    tag: int


class HornModel:
    """``n`` SG90 horns. speed_dps > 0; deadband_us >= 0. Horns start at ``start_us`` (None:
    unknown until the first pulse — the first target is then reached at once)."""

    def __init__(self, n: int, *, speed_dps: float = SG90_SPEED_DPS, deadband_us: float = SG90_DEADBAND_US,
                 start_us: float | None = None):
        if not speed_dps > 0 or not deadband_us >= 0 or n < 1:
            raise ValueError(f"need n >= 1, speed_dps > 0, deadband_us >= 0; got {n}, {speed_dps}, {deadband_us}")
        self.speed_us_s = speed_dps * US_PER_DEG
        self.deadband_us = float(deadband_us)
        self.position: list[float | None] = [start_us] * n
        self.target: list[float | None] = [None] * n  # None: not moving (arrived, or detached)
        self._set: list[tuple[float, int]] = [(0.0, -1)] * n
        self._t: float | None = None

    def advance(self, t: float) -> list[Arrival]:
        """Move every horn to time ``t`` (s, not before the last call); the arrivals on the way."""
        out: list[Arrival] = []
        if self._t is None:
            self._t = t
            return out
        dt = max(0.0, t - self._t)
        for ch, (pos, tgt) in enumerate(zip(self.position, self.target)):
            if tgt is None or pos is None:
                continue
            dist = abs(tgt - pos)
            if dist <= self.speed_us_s * dt:
                self.position[ch], self.target[ch] = tgt, None
                set_t, tag = self._set[ch]
                out.append(Arrival(ch, self._t + dist / self.speed_us_s, tgt, set_t, tag))
            else:
                self.position[ch] = pos + (self.speed_us_s * dt if tgt > pos else -self.speed_us_s * dt)
        self._t = t
        return out

    def command(self, t: float, outputs: Sequence[int | None], tag: int = -1) -> list[Arrival]:
        """New output pulses at time ``t`` (None: detached). Returns the arrivals up to ``t`` and
        those at ``t`` itself (a target within the dead band: the horn is already there)."""
        out = self.advance(t)
        for ch, pulse in enumerate(outputs[:len(self.position)]):
            pos = self.position[ch]
            if pulse is None:  # no pulses: the horn stays where it is, limp
                self.target[ch] = None
                continue
            if pos is None:  # position unknown before the first pulse: there at once
                self.position[ch] = float(pulse)
                out.append(Arrival(ch, t, float(pulse), t, tag))
                continue
            if self.target[ch] is not None and float(pulse) == self.target[ch]:
                continue  # the same target again: the move goes on, its arrival keeps its origin
            if abs(float(pulse) - pos) <= self.deadband_us:
                if self.target[ch] is not None:  # was moving: it stops within the dead band
                    out.append(Arrival(ch, t, pos, t, tag))
                self.target[ch] = None
                continue
            self.target[ch] = float(pulse)
            self._set[ch] = (t, tag)
        return out
