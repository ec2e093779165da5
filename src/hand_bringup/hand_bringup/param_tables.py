"""Every node's declared parameters, read from the nodes themselves (their descriptors), and the
check of a parameter YAML against them.

:func:`node_class` finds the node class behind a :class:`~hand_bringup.bringup.NodeSpec` (its
console script's module, the ``rclpy`` node class defined there); :func:`parameter_table`
constructs it in a private context (nothing spun, nothing configured) and returns one
:class:`Row` per declared parameter: name, type, default, description, ranges, read-only, plus
the node's renamed parameters (``{old: new}``, refused at start and at set). Used by
``tools/param_tables.py`` (print / diff the tables) and the YAML test.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from hand_bringup.bringup import NODES, NodeSpec
from hand_common.param_spec import did_you_mean, value_type

#: rcl_interfaces ParameterType → name
TYPE_NAMES = {1: "bool", 2: "integer", 3: "double", 4: "string", 5: "byte_array", 6: "bool_array",
              7: "integer_array", 8: "double_array", 9: "string_array"}


@dataclass(frozen=True)
class Row:
    """One declared parameter as its descriptor shows it (``ros2 param describe``)."""

    node: str
    name: str
    type: str
    default: Any
    description: str
    range: str
    read_only: bool

    def line(self) -> str:
        """Tab-separated, one line: what ``tools/param_tables.py`` prints and diffs."""
        return "\t".join((self.node, self.name, self.type, repr(self.default), self.range,
                          "read_only" if self.read_only else "-", self.description))


def node_class(spec: NodeSpec) -> type:
    """The node class run by ``spec``'s console script: the ``rclpy.node.Node`` subclass defined
    in the script's module. LookupError when there is none or more than one."""
    from rclpy.node import Node

    eps = [e for e in entry_points(group="console_scripts")
           if e.name == spec.executable and e.dist is not None and e.dist.name == spec.package]
    if not eps:
        raise LookupError(f"{spec.package}/{spec.executable}: no console script (colcon build?)")
    module = importlib.import_module(eps[0].value.split(":")[0])
    classes = [c for _, c in inspect.getmembers(module, inspect.isclass)
               if issubclass(c, Node) and c.__module__ == module.__name__]
    if len(classes) != 1:
        raise LookupError(f"{module.__name__}: expected one node class, found {[c.__name__ for c in classes]}")
    return classes[0]


def _range(d) -> str:
    if d.floating_point_range:
        r = d.floating_point_range[0]
        return f"[{r.from_value!r}, {r.to_value!r}] step {r.step!r}"
    if d.integer_range:
        r = d.integer_range[0]
        return f"[{r.from_value}, {r.to_value}] step {r.step}"
    return "-"


def parameter_table(spec: NodeSpec, context=None) -> tuple[list[Row], dict[str, str]]:
    """(rows sorted by name, ``{old name: new name}``) of ``spec``'s node, constructed in
    ``context`` (an initialised rclpy Context; None = a private one made and shut down here)."""
    import rclpy

    own = context is None
    if own:
        context = rclpy.Context()
        rclpy.init(context=context)
    try:
        node = node_class(spec)(context=context)
        try:
            names = sorted(node.list_parameters([], 0).names)
            rows = []
            for name, d, value in zip(names, node.describe_parameters(names), node.get_parameters(names)):
                v = value.value
                rows.append(Row(spec.name, name, TYPE_NAMES.get(d.type, str(d.type)),
                                list(v) if hasattr(v, "tolist") or isinstance(v, (list, tuple)) else v,
                                d.description, _range(d), d.read_only))
            return rows, dict(getattr(node, "_renamed", {}))
        finally:
            node.destroy_node()
    finally:
        if own:
            rclpy.shutdown(context=context)


def all_tables(specs: Iterable[NodeSpec] | None = None) -> dict[str, tuple[list[Row], dict[str, str]]]:
    """:func:`parameter_table` of every node of :data:`~hand_bringup.bringup.NODES` (or ``specs``),
    keyed by node name, in one private context."""
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        return {s.name: parameter_table(s, context) for s in (specs or NODES.values())}
    finally:
        rclpy.shutdown(context=context)


def flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A ``ros__parameters`` mapping with nested namespaces → ``{"a.b": value}`` (as rcl reads it)."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        if isinstance(v, Mapping):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def yaml_problems(params: Mapping[str, Any], rows: Iterable[Row], renamed: Mapping[str, str]) -> list[str]:
    """What is wrong in one node's ``ros__parameters`` (nested allowed) against its declared table:
    a name the node does not declare (an old name says its new one, a misspelt one the close
    names), a value whose YAML type is not the declared type (strict: the workspace's own files
    say what they mean, though a node takes an integer for a double parameter as that double)."""
    declared = {r.name: r for r in rows}
    problems = []
    for name, value in flatten(params).items():
        if name in renamed:
            problems.append(f"'{name}' is now '{renamed[name]}'")
        elif name not in declared:
            problems.append(f"{name}: not declared by the node{did_you_mean(name, declared)}")
        elif (t := value_type(value)) != declared[name].type and not (value == [] and declared[name].type.endswith("_array")):
            problems.append(f"{name}: YAML gives {t} {value!r}, the node declares {declared[name].type}")
    return problems
