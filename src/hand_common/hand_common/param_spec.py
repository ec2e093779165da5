"""One parameter-spec type for every node (no rclpy): every node's parameters are a module-level
tuple of :class:`ParamSpec`, declared with :func:`hand_common.node_tools.declare_specs` (a
ParameterDescriptor with the type, description, range and read-only flag). :meth:`ParamSpec.problem`
is the one range/choices check a node's validation uses.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ParamSpec:
    """One ROS parameter as data.

    name: parameter name. default: bool, int, float, str, or a list (then ``array_type`` gives the
    element type). description: text of the descriptor (units in it). range: inclusive
    (min, max) for int/float parameters; rclpy refuses out-of-range sets with a reason.
    live: may change while configured (else it applies at the next configure). choices: allowed
    strings (checked by :meth:`problem`; ``declare_specs(..., annotate=True)`` lists them in the
    description). step, read_only: descriptor fields.
    """

    name: str
    default: Any
    description: str
    range: tuple[float, float] | None = None
    live: bool = field(default=False, kw_only=True)
    choices: tuple[str, ...] | None = field(default=None, kw_only=True)
    array_type: type | None = field(default=None, kw_only=True)
    step: float = field(default=0.0, kw_only=True)
    read_only: bool = field(default=False, kw_only=True)

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not valid for this parameter (outside ``range``, not one of
        ``choices``), or None."""
        if self.range is not None:
            lo, hi = self.range
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                    and lo <= value <= hi):
                return f"{self.name} must be in [{lo:g}, {hi:g}], got {value!r}"
        if self.choices is not None and value not in self.choices:
            allowed = " or ".join((", ".join(self.choices[:-1]), self.choices[-1])) if len(self.choices) > 1 \
                else self.choices[0]
            return f"{self.name} must be one of {allowed}, got {value!r}"
        return None

    def full_description(self, annotate: bool) -> str:
        """The descriptor text: ``description``; with ``annotate``, followed by the choices in
        parentheses and " Read at configure." for a parameter that is not live."""
        if not annotate:
            return self.description
        extra = f" ({'/'.join(self.choices)})" if self.choices else ""
        return self.description + extra + ("" if self.live else " Read at configure.")


#: The unit-suffix rule: a parameter measured in time, frequency, pulse width, angular speed or
#: image size ends with its unit. SI lengths and angles (m, rad, rad/s: REP 103) and ratios carry none.
UNIT_SUFFIXES = ("_s", "_ms", "_us", "_hz", "_dps", "_px")
#: Name words that mean such a quantity (split on "_" and "."); their parameter needs a suffix.
UNIT_WORDS = frozenset({"timeout", "period", "rate", "time", "lag", "width", "height", "cutoff", "duration",
                        "interval", "delay", "fps"})


def unit_suffix_problem(name: str) -> str | None:
    """Why ``name`` breaks the unit-suffix rule (:data:`UNIT_WORDS` without one of
    :data:`UNIT_SUFFIXES` at the end), or None."""
    words = set(name.replace(".", "_").split("_"))
    if words & UNIT_WORDS and not name.endswith(UNIT_SUFFIXES):
        return f"{name}: a {'/'.join(sorted(words & UNIT_WORDS))} needs its unit at the end ({', '.join(UNIT_SUFFIXES)})"
    return None


def renamed_message(old: str, new: str) -> str:
    """The one wording of a refused old parameter name."""
    return f"'{old}' is now '{new}'"


def field_defaults(config_cls: type) -> dict[str, Any]:
    """``{field: default}`` of a config dataclass (fields without a default left out; a
    ``default_factory`` is called): the one place a node's defaults live, which its
    ``ParamSpec`` table reads."""
    out = {}
    for f in dataclasses.fields(config_cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            out[f.name] = f.default_factory()  # type: ignore[misc]
    return out
