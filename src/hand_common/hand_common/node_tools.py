"""Small rclpy helpers shared by every node of the workspace (the only rclpy code outside nodes).

- :class:`SafeLifecycleNode`: the base of every lifecycle node. (1) It survives a ``change_state``
  request for a transition id that is not valid from the current state: in Jazzy rclpy 7.1.6
  (ros2/rclpy#1209) such a request raises ``RCLError: Transition is not registered`` inside the
  service callback and kills the node; here it is answered ``success=False`` with a log line.
  (2) One release hook, as in ros2/demos lifecycle_py: what ``on_configure`` creates is released
  by :meth:`SafeLifecycleNode._release`, which the default ``on_cleanup``, ``on_shutdown`` and
  ``on_error`` call; a node overrides the hook (and ``on_shutdown`` only to send a safe pose
  first, then calling the base).
  (3) One parameter idiom (ros2/demos ``set_parameters_callback.py``, rclpy's three callbacks):
  :meth:`SafeLifecycleNode.declare_params` declares the node's table of
  :class:`~hand_common.param_spec.ParamSpec` and installs a pre-set callback that refuses a
  *renamed* parameter with the new name, a misspelt one with the close names, a value of another
  type naming the parameter, type and value (an integer for a double is taken as that double),
  an on-set callback that only validates (the live/configure-time rule from ``ParamSpec.live``,
  range and choices, then the node's :meth:`~SafeLifecycleNode.check_parameters`) and returns
  the reason, and a post-set callback that applies (the node's :meth:`~SafeLifecycleNode.apply_parameters`).
- :func:`declare_specs`: declare a node's table of :class:`~hand_common.param_spec.ParamSpec`
  with full ``ParameterDescriptor`` s (type from the default, description, numeric range,
  read-only), as ros/joint_state_publisher does. The only way the workspace declares parameters.
- :func:`run`: ``main()`` body for a node process: init, spin, and on Ctrl-C / SIGTERM take the
  node through the lifecycle ``shutdown`` transition *while the context is still valid* (so
  actuators can send their safe pose), then clean up. Exit code 0 on a clean stop.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import rclpy
from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)
from rclpy.exceptions import ParameterNotDeclaredException
from rclpy.executors import ExternalShutdownException
from rclpy.lifecycle import LifecycleNode, State, TransitionCallbackReturn
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions

from hand_common.param_spec import TYPE_NAMES, ParamSpec, coerce_value, did_you_mean, renamed_message
from hand_common.probe import make_executor

_TYPES = {
    bool: ParameterType.PARAMETER_BOOL,
    int: ParameterType.PARAMETER_INTEGER,
    float: ParameterType.PARAMETER_DOUBLE,
    str: ParameterType.PARAMETER_STRING,
}


class RefusedParameterError(ParameterNotDeclaredException):
    """A set refused before rclpy's own checks (a misspelt or old name, a value of the wrong
    type), with a reason that names the parameter. A ParameterNotDeclared subclass, so rclpy's
    parameter service answers it as ``successful=False`` with this reason."""

    def __init__(self, message: str):
        super().__init__([])
        self.message = message

    def __str__(self) -> str:
        return self.message


class RenamedParameterError(RefusedParameterError):
    """A set of a parameter's old name: the message names the new one."""


#: lifecycle states in which the node holds what on_configure made (a non-live parameter is refused)
_CONFIGURED_STATES = frozenset({"inactive", "active", "configuring", "activating", "deactivating"})


class SafeLifecycleNode(LifecycleNode):
    """LifecycleNode whose ``~/change_state`` service rejects unavailable transitions, and whose
    cleanup, shutdown and error transitions all release the node's resources through one hook,
    :meth:`_release`.

    A subclass creates its publishers, subscriptions, timers, threads and devices in
    ``on_configure`` (and ``on_activate``) and releases them in ``_release``; a publisher of data
    sent only while active is a ``create_lifecycle_publisher`` (rclpy's ``LifecycleNode.on_activate``
    / ``on_deactivate`` enable and disable it, so an override of those must call ``super()``).
    """

    def __init__(self, node_name: str, **kwargs: Any):
        super().__init__(node_name, **kwargs)
        original = self._service_change_state.callback

        def guarded(req, resp):
            tid = req.transition.id
            if req.transition.label:
                allowed = {t[1] for t in self._state_machine.available_transitions}
                ok = req.transition.label in allowed
                what = f"label '{req.transition.label}'"
            else:
                allowed = {t[0] for t in self._state_machine.available_transitions}
                ok = tid in allowed
                what = f"id {tid}"
            if not ok:
                state = self._state_machine.current_state[1]
                self.get_logger().warning(
                    f"rejected lifecycle transition {what}: not available from state '{state}'")
                resp.success = False
                return resp
            return original(req, resp)

        self._service_change_state.callback = guarded
        self._param_specs: dict[str, ParamSpec] = {}
        self._renamed: dict[str, str] = {}

    # --- the parameter idiom -------------------------------------------------------------------
    def declare_params(self, specs: Iterable[ParamSpec], *, annotate: bool = False,
                       renamed: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Declare the node's parameter table and install the one parameter idiom; returns
        ``{name: current value}``.

        renamed: ``{old name: new name}``; an old name given at start (params file, ``-p``, launch)
        raises ValueError ("'command_timeout' is now 'command_timeout_s'") so the node does not
        start with a setting silently ignored, and a later set is refused with the same reason.

        Then, for every set of the node's parameters (rclpy's callbacks, in this order):
        pre-set refuses an old name, a name the node does not declare (naming the close ones: "did
        you mean ...") and a value of another type (naming the parameter, its type and the value),
        and turns an integer for a double parameter into that double (``ros2 param set /n x 2``
        means 2.0); on-set refuses a parameter that is not ``live`` while the node
        is configured (it is read at configure: cleanup, set, configure), a value outside the
        spec's range or choices, and whatever :meth:`check_parameters` finds, with the reason;
        post-set calls :meth:`apply_parameters` with the accepted changes. Call it once, in
        ``__init__``.
        """
        specs = tuple(specs)
        self._param_specs = {s.name: s for s in specs}
        self._renamed = dict(renamed or {})
        values = declare_specs(self, specs, annotate=annotate, renamed=self._renamed)
        self.add_pre_set_parameters_callback(self._pre_set)
        self.add_on_set_parameters_callback(self._validate_set)
        self.add_post_set_parameters_callback(self._apply_set)
        return values

    @property
    def param_specs(self) -> dict[str, ParamSpec]:
        """``{name: ParamSpec}`` of what :meth:`declare_params` declared."""
        return dict(self._param_specs)

    @property
    def configured(self) -> bool:
        """The node holds what ``on_configure`` made (inactive, active, or between them): a
        parameter that is not live is refused."""
        return self.lifecycle_state in _CONFIGURED_STATES

    def param_values(self, changes: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``{name: value}`` of every declared spec (arrays as lists), ``changes`` applied on top."""
        values = {n: self.get_parameter(n).value for n in self._param_specs}
        values.update(changes or {})
        return {k: (list(v) if isinstance(v, (list, tuple)) or hasattr(v, "tolist") else v) for k, v in values.items()}

    def check_parameters(self, changes: dict[str, Any], values: dict[str, Any]) -> str | None:
        """Node hook (on-set, validation only, no side effect): the reason to refuse ``changes``
        (``{name: new value}``, the node's own parameters, each already within its spec and
        allowed in this state), or None. ``values``: every parameter with the changes applied."""
        return None

    def apply_parameters(self, changes: dict[str, Any]) -> None:
        """Node hook (post-set): act on accepted ``changes`` (``{name: new value}``). Called for
        sets in any state; a configure-time parameter is read by ``on_configure`` instead."""

    def _pre_set(self, params: list[Parameter]) -> list[Parameter]:
        out = []
        for p in params:
            if p.name in self._renamed:
                raise RenamedParameterError(renamed_message(p.name, self._renamed[p.name]))
            if not self.has_parameter(p.name):
                known = [n for n in self._parameters if not n.startswith("qos_overrides.")]
                raise RefusedParameterError(
                    f"/{self.get_name()} has no parameter '{p.name}'{did_you_mean(p.name, known)}")
            descriptor = self.describe_parameter(p.name)
            if descriptor.dynamic_typing or p.type_ == Parameter.Type.NOT_SET or descriptor.type not in TYPE_NAMES:
                out.append(p)
                continue
            try:
                value = coerce_value(p.name, p.value, TYPE_NAMES[descriptor.type])
            except ValueError as exc:
                raise RefusedParameterError(str(exc)) from None
            out.append(p if value is p.value else Parameter(p.name, value=value))
        return out

    def _validate_set(self, params: list[Parameter]) -> SetParametersResult:
        changes = {p.name: p.value for p in params if p.name in self._param_specs}
        if not changes:
            return SetParametersResult(successful=True)
        values = self.param_values(changes)
        changes = {n: values[n] for n in changes}
        for name, value in changes.items():
            spec = self._param_specs[name]
            if not spec.live and self.configured:
                return SetParametersResult(successful=False, reason=(
                    f"{name} is read at configure time (state {self.lifecycle_state}): cleanup, set it, then "
                    "configure again"))
            if why := spec.problem(value):
                return SetParametersResult(successful=False, reason=why)
        why = self.check_parameters(changes, values)
        return SetParametersResult(successful=why is None, reason=why or "")

    def _apply_set(self, params: list[Parameter]) -> None:
        changes = {n: v for n, v in self.param_values().items() if n in {p.name for p in params}}
        if changes:
            self.apply_parameters(changes)

    @property
    def lifecycle_state(self) -> str:
        """Current state label: unconfigured, inactive, active or finalized; inside a transition
        callback, the transition state (configuring, cleaningup, shuttingdown, ...): the state the
        transition started from is the callback's ``state.label``."""
        return self._state_machine.current_state[1]

    # --- the release hook ----------------------------------------------------------------------
    def _release(self) -> None:
        """Release everything ``on_configure``/``on_activate`` created (and, for an actuator,
        leave the hardware safe). Called from cleanup, from shutdown in any state, from error
        processing, and by a node's own failed ``on_configure``: it must work on a partly
        configured or already released node. The default releases nothing."""

    def on_cleanup(self, state: State) -> TransitionCallbackReturn:
        """inactive -> unconfigured: :meth:`_release`, then rclpy's managed entities."""
        self._release()
        return super().on_cleanup(state)

    def on_shutdown(self, state: State) -> TransitionCallbackReturn:
        """any primary state -> finalized: :meth:`_release`, then rclpy's managed entities. An
        actuator node overrides it to send its safe pose first (``state.label`` is the state the
        shutdown started from), then returns ``super().on_shutdown(state)``."""
        self._release()
        return super().on_shutdown(state)

    def on_error(self, state: State) -> TransitionCallbackReturn:
        """A transition callback raised or returned ERROR: :meth:`_release` and go back to
        unconfigured (SUCCESS); a node can then be configured again."""
        self.get_logger().error(f"error processing (from {state.label}): releasing the node's resources")
        self._release()
        return super().on_error(state)


def _declare(
    node: Node,
    name: str,
    default: Any,
    description: str,
    *,
    range: tuple[float, float] | None = None,  # noqa: A002 - mirrors the descriptor field name
    step: float = 0.0,
    read_only: bool = False,
    array_type: type | None = None,
) -> Any:
    """Declare ``name`` with a ParameterDescriptor and return its current value.

    default: bool, int, float or str; or a list with ``array_type`` giving the element type
    (``float`` → double array, ``str`` → string array, ``int`` → integer array).
    range: inclusive (min, max) for int/float parameters; out-of-range ``set_parameters`` calls
    are then refused by rclpy with a reason, before any on-set callback runs.
    """
    if array_type is not None:
        ptype = {float: ParameterType.PARAMETER_DOUBLE_ARRAY, str: ParameterType.PARAMETER_STRING_ARRAY,
                 int: ParameterType.PARAMETER_INTEGER_ARRAY, bool: ParameterType.PARAMETER_BOOL_ARRAY}[array_type]
    else:
        ptype = _TYPES[type(default)]
    desc = ParameterDescriptor(name=name, type=ptype, description=description, read_only=read_only)
    if range is not None:
        lo, hi = range
        if ptype == ParameterType.PARAMETER_INTEGER:
            desc.integer_range = [IntegerRange(from_value=int(lo), to_value=int(hi), step=int(step))]
        elif ptype == ParameterType.PARAMETER_DOUBLE:
            desc.floating_point_range = [FloatingPointRange(from_value=float(lo), to_value=float(hi), step=float(step))]
        else:
            raise ValueError(f"{name}: range only applies to int/float parameters")
    # The value the node was started with (params file, -p, launch) against the declared type
    # (rclpy would raise InvalidParameterTypeException): an integer for a double is that double,
    # any other type is refused naming the node, parameter, type and value. rclpy has no public
    # accessor for the overrides (see declare_specs).
    given = getattr(node, "_parameter_overrides", {}).get(name)
    if given is not None and given.type_ != Parameter.Type.NOT_SET:
        try:
            value = coerce_value(name, given.value, TYPE_NAMES[ptype])
        except ValueError as exc:
            raise ValueError(f"/{node.get_name()}: {exc}") from None
        if value is not given.value:  # converted: declared with it, the integer override ignored
            return node.declare_parameter(name, value, desc, ignore_override=True).value
    return node.declare_parameter(name, default, desc).value


def declare_spec(node: Node, spec: ParamSpec, *, annotate: bool = False) -> Any:
    """Declare one :class:`~hand_common.param_spec.ParamSpec`; returns its current value.

    annotate: the descriptor's description also lists the choices and says " Read at configure."
    for a parameter that is not live (:meth:`ParamSpec.full_description`).
    """
    return _declare(node, spec.name, spec.default, spec.full_description(annotate), range=spec.range,
                    step=spec.step, read_only=spec.read_only, array_type=spec.array_type)


def declare_specs(node: Node, specs: Iterable[ParamSpec], *, annotate: bool = False,
                  renamed: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Declare every spec of a node's parameter table; returns ``{name: current value}``.

    renamed: ``{old name: new name}``; an old name the node was started with (params file, ``-p``,
    launch) raises ValueError naming the new one ("'command_timeout' is now 'command_timeout_s'"),
    so no node starts with a setting silently ignored."""
    renamed = dict(renamed or {})
    # rclpy has no public accessor for the overrides a node was started with (params file,
    # -p, launch parameters): this is the one read of the private attribute.
    given = set(getattr(node, "_parameter_overrides", {}))
    old = sorted(n for n in given if n in renamed)
    if old:
        raise ValueError("; ".join(renamed_message(n, renamed[n]) for n in old))
    return {s.name: declare_spec(node, s, annotate=annotate) for s in specs}


#: s a node that was active waits after its shutdown transition before it is destroyed (see run).
SHUTDOWN_LINGER_S = 0.3


def run(factory: Callable[[], Node], args: Sequence[str] | None = None, *, events: bool = False) -> int:
    """Run one node in this process until Ctrl-C/SIGTERM; returns the process exit code.

    On stop, a lifecycle node that is not finalized goes through its ``shutdown`` transition
    first (its ``on_shutdown`` sends actuators to their safe pose), then the node is destroyed.
    ``events``: spin with rclpy's EventsExecutor where this rclpy has it
    (:func:`hand_common.probe.make_executor`: ~4x less CPU per callback than the
    SingleThreadedExecutor's wait-set rebuild; an exception in a callback still ends the spin);
    only for a node without ``async`` callbacks (Jazzy's 7.1.4-7.1.10 EventsExecutor does not
    run them).
    """
    rclpy.init(args=list(args) if args is not None else sys.argv,
               signal_handler_options=SignalHandlerOptions.NO)
    # SIGINT and SIGTERM both end the spin with KeyboardInterrupt; SIGINT explicitly, because a
    # process started in the background inherits SIGINT as *ignored* and would never go safe.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    node = None
    code = 0
    try:
        node = factory()
        executor = make_executor(events)
        executor.add_node(node)
        # spin_once with a timeout (not spin()): with rclpy's signal handlers off, a blocking wait
        # would keep Python from running the SIGINT handler while the node is idle.
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception as exc:  # noqa: BLE001 - log, then still shut the node down safely
        code = 1
        if node is not None:
            node.get_logger().fatal(f"node crashed: {type(exc).__name__}: {exc}")
        else:
            print(f"node failed to start: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        if isinstance(node, LifecycleNode) and node._state_machine.current_state[1] in (
                "unconfigured", "inactive", "active"):
            was_active = node._state_machine.current_state[1] == "active"
            try:
                node.trigger_shutdown()
            except Exception as exc:  # noqa: BLE001
                code = 1  # the safe pose may not have gone out: the exit code says so
                node.get_logger().error(f"shutdown transition failed: {type(exc).__name__}: {exc}")
            if was_active:
                # the safe pose just published must leave before the participant (and the
                # shared-memory segment holding the sample) is destroyed: a subscriber's DDS
                # thread that has not read it yet finds it gone (measured: the Gazebo
                # commander's final safe pose lost once under load). Fast DDS has no flush, and
                # wait_for_all_acked took 0.8-2 s per sample here (heartbeat-paced).
                time.sleep(SHUTDOWN_LINGER_S)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return code
