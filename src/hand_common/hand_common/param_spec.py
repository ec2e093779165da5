"""One parameter-spec type for every node (no rclpy): the nodes' parameter tables are tuples of
:class:`ParamSpec`, declared with :func:`hand_common.node_tools.declare_spec` /
:func:`~hand_common.node_tools.declare_specs` (a ParameterDescriptor with the range).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ParamSpec:
    """One ROS parameter as data.

    name: parameter name. default: bool, int, float, str, or a list (then ``array_type`` gives the
    element type). description: text of the descriptor (units in it). range: inclusive
    (min, max) for int/float parameters; rclpy refuses out-of-range sets with a reason.
    live: may change while configured (else it applies at the next configure). choices: allowed
    strings (validated by the node's config conversion, listed in the description by it).
    step, read_only: descriptor fields.
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
