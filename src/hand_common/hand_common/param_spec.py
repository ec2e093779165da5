"""One parameter-spec type for every node (no rclpy): every node's parameters are a module-level
tuple of :class:`ParamSpec`, declared with :func:`hand_common.node_tools.declare_specs` (a
ParameterDescriptor with the type, description, range and read-only flag). :meth:`ParamSpec.problem`
is the one range/choices check a node's validation uses.
"""

from __future__ import annotations

import array
import dataclasses
import difflib
import math
from collections.abc import Iterable
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


#: rcl_interfaces ParameterType value → the type name ``ros2 param describe`` shows
TYPE_NAMES = {1: "bool", 2: "integer", 3: "double", 4: "string", 5: "byte_array", 6: "bool_array",
              7: "integer_array", 8: "double_array", 9: "string_array"}


def value_type(value: Any) -> str:
    """The :data:`TYPE_NAMES` name of a Python parameter value (a list takes its elements' type;
    ``"array"`` for an empty one, ``"mixed_array"`` for mixed elements)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (bytes, bytearray)):
        return "byte_array"
    if isinstance(value, (list, tuple, array.array)) or hasattr(value, "tolist"):
        kinds = {value_type(v) for v in (value.tolist() if hasattr(value, "tolist") else value)}
        return "array" if not kinds else f"{kinds.pop()}_array" if len(kinds) == 1 else "mixed_array"
    return type(value).__name__


def coerce_value(name: str, value: Any, declared: str) -> Any:
    """``value`` for a parameter of the ``declared`` type (a :data:`TYPE_NAMES` name): an
    integer for a double parameter becomes that double (``2`` → ``2.0``, elementwise in a double
    array: ``-p x:=2`` and ``ros2 param set /n x 2`` mean 2.0), an empty list fits any array;
    otherwise the value must have the declared type and is returned as it is. ValueError names the
    parameter, its declared type and the value given (a double for an integer parameter is refused:
    it is not rounded)."""
    given = value_type(value)
    if given == declared or (given == "array" and declared.endswith("_array")):
        return value
    if declared == "double" and given == "integer":
        return float(value)
    if declared == "double_array" and given == "integer_array":
        return [float(v) for v in value]
    if declared == "double_array" and given == "mixed_array" and all(
            value_type(v) in ("integer", "double") for v in value):
        return [float(v) for v in value]
    article = "an" if declared[0] in "aeiou" else "a"
    hint = f" (a whole number, e.g. {round(value)})" if declared == "integer" and given == "double" \
        and math.isfinite(value) else ""
    raise ValueError(f"{name} is {article} {declared} parameter: got {given} {value!r}{hint}")


def did_you_mean(name: str, known: Iterable[str], n: int = 3) -> str:
    """`` (did you mean 'a' or 'b'?)`` for the up to ``n`` names of ``known`` closest to ``name``
    (difflib ratio ≥ 0.6, and within 0.1 of the closest: one obvious fix is named alone), or ""
    when none is close."""
    scored = []
    for candidate in sorted(set(known)):
        matcher = difflib.SequenceMatcher(None, name, candidate)
        if matcher.real_quick_ratio() >= 0.6 and matcher.quick_ratio() >= 0.6 and matcher.ratio() >= 0.6:
            scored.append((matcher.ratio(), candidate))
    if not scored:
        return ""
    scored.sort(key=lambda sc: -sc[0])
    best = scored[0][0]
    quoted = [f"'{c}'" for score, c in scored[:n] if score >= best - 0.1]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f" (did you mean {listed}?)"


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
