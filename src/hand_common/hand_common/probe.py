"""A helper node that talks to other nodes the way the ``ros2`` CLI does.

:class:`RosProbe` spins its own node in a background thread: subscribe, publish, call services,
``ros2 param set`` (``/<node>/set_parameters``) and ``ros2 lifecycle set`` (by label, see
:mod:`hand_common.lifecycle_client`). Used by the embedded runner and by integration tests.

Service clients are created once per (type, name) and reused, and lifecycle and parameter calls
survive a lost response (a fresh request after an unanswered attempt, the state checked before a
``change_state`` is re-sent): see :mod:`hand_common.lifecycle_client` for why responses get lost.
"""


from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import rclpy
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetAvailableStates, GetAvailableTransitions, GetState
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import (
    DescribeParameters,
    GetParameters,
    GetParameterTypes,
    ListParameters,
    SetParameters,
)
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from hand_common.lifecycle_client import ATTEMPT_TIMEOUT, LifecycleClient, call_with_retry
from hand_common.processes import ensure_local_discovery

#: Services whose request may be sent again after a lost answer (queries, parameter sets):
#: :meth:`RosProbe.call` retries them by default.
IDEMPOTENT_SERVICES = (GetParameters, SetParameters, ListParameters, DescribeParameters, GetParameterTypes,
                       GetState, GetAvailableStates, GetAvailableTransitions)


def make_executor(events: bool) -> Any:
    """The executor a probe spins: rclpy's EventsExecutor when ``events`` and this rclpy has it
    (``rclpy.experimental``, Jazzy 7.1.4 and later), else a SingleThreadedExecutor. Measured for a
    runner-like node (40 service clients, 16 subscriptions, 400 messages/s, 2 cores at load 17):
    357 us of CPU per callback with the SingleThreadedExecutor, which rebuilds its wait set from
    every entity in Python for each wait, 81 us with the EventsExecutor. Its 7.1.4-7.1.10 releases
    do not run ``async`` service/subscription callbacks (a probe has none)."""
    if events:
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:  # an rclpy before 7.1.4
            pass
        else:
            return EventsExecutor()
    return SingleThreadedExecutor()


class _GuardedNode(Node):
    """The probe's node: every subscription callback is run through ``guard`` (rclpy's
    EventsExecutor takes a callback that raises as fatal and delivers nothing more)."""

    def __init__(self, name: str, guard: Callable[[Callable], Callable]) -> None:
        super().__init__(name)
        self._guard = guard

    def create_subscription(self, msg_type, topic, callback, qos_profile, **kwargs):  # noqa: ANN001, ANN201
        return super().create_subscription(msg_type, topic, self._guard(callback), qos_profile, **kwargs)


class RosProbe:
    """A test-side node spun in a background thread: subscribe, publish, call services.
    ``events``: spin it with rclpy's EventsExecutor (:func:`make_executor`): the runner's probe
    receives every recorded message (hundreds a second)."""

    def __init__(self, name: str = "test_probe", attempt_timeout: float = ATTEMPT_TIMEOUT, events: bool = False):
        ensure_local_discovery()
        if not rclpy.ok():
            # No rclpy signal handlers: Ctrl-C stays a KeyboardInterrupt for the caller (the runner),
            # and the context stays valid so it can still take the nodes down in order.
            rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
        #: callbacks that raised (the probe goes on receiving; a user such as the runner fails its run
        #: on them), and the first few of their messages
        self.callback_errors = 0
        self.callback_error_messages: list[str] = []
        self.node = _GuardedNode(name, self.guard)
        self.attempt_timeout = attempt_timeout
        self._clients: dict[tuple[Any, str], Any] = {}
        self._lifecycle = LifecycleClient(self.node, attempt_timeout=attempt_timeout)
        self._executor = make_executor(events)
        self._executor.add_node(self.node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set() and rclpy.ok():
            try:
                self._executor.spin_once(timeout_sec=0.05)
            except Exception as exc:  # noqa: BLE001 - one bad callback must not end the spin (the probe went deaf)
                self._count_error(exc)

    def _count_error(self, exc: Exception) -> None:
        self.callback_errors += 1
        if len(self.callback_error_messages) < 5:
            self.callback_error_messages.append(f"{type(exc).__name__}: {exc}")
            import sys
            import traceback

            traceback.print_exc(file=sys.stderr)

    def guard(self, callback: Callable) -> Callable:
        """``callback`` (taking a message, or a message and its MessageInfo, as rclpy tells by its
        signature) made to count an exception in :attr:`callback_errors` instead of raising it."""
        import inspect

        try:
            inspect.signature(callback).bind(object())
        except TypeError:
            def guarded_with_info(msg: Any, info: Any) -> None:
                try:
                    callback(msg, info)
                except Exception as exc:  # noqa: BLE001
                    self._count_error(exc)
            return guarded_with_info

        def guarded(msg: Any) -> None:
            try:
                callback(msg)
            except Exception as exc:  # noqa: BLE001
                self._count_error(exc)
        return guarded

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self._executor.remove_node(self.node)
        self.node.destroy_node()

    # --- topics ----------------------------------------------------------------------------------
    def collect(self, msg_type: Any, topic: str, qos: Any = 10) -> list:
        """Subscribe and return the (growing) list that received messages are appended to."""
        received: list = []
        self.node.create_subscription(msg_type, topic, received.append, qos)
        return received

    def publisher(self, msg_type: Any, topic: str, qos: Any = 10):
        return self.node.create_publisher(msg_type, topic, qos)

    def wait_for_subscribers(self, pub: Any, count: int = 1, timeout: float = 10.0) -> None:
        wait_until(lambda: pub.get_subscription_count() >= count, timeout, f"subscriber on {pub.topic_name}")

    # --- services --------------------------------------------------------------------------------
    def client(self, srv_type: Any, name: str) -> Any:
        """The probe's client of service ``name`` (created once, then reused)."""
        key = (srv_type, name)
        if key not in self._clients:
            self._clients[key] = self.node.create_client(srv_type, name)
        return self._clients[key]

    def call(self, srv_type: Any, name: str, request: Any, timeout: float = 10.0, retry: bool | None = None) -> Any:
        """Call a service and return its response; raises TimeoutError naming the service.

        retry (default: for :data:`IDEMPOTENT_SERVICES`): an unanswered attempt is
        followed by ``request`` sent afresh, under a new sequence number
        (:func:`~hand_common.lifecycle_client.call_with_retry`).
        Without it one request is sent and awaited for ``timeout`` s.
        """
        client = self.client(srv_type, name)
        if retry is None:
            retry = srv_type in IDEMPOTENT_SERVICES
        if retry:
            return call_with_retry(client, lambda: request, timeout, f"service {name}",
                                   self.attempt_timeout)
        if not client.wait_for_service(timeout_sec=timeout):
            raise TimeoutError(f"service {name} not available after {timeout} s")
        future = client.call_async(request)
        try:
            wait_until(future.done, timeout, f"answer from {name}")
        except TimeoutError:
            client.remove_pending_request(future)
            raise
        return future.result()

    def change_state(self, node: str, label: str, timeout: float = 20.0) -> bool:
        """Request a lifecycle transition by label (configure, activate, deactivate, cleanup,
        shutdown). Returns the node's ``success``; False if the transition is not available from
        the current state (the request is then not sent, see module docstring)."""
        return self._lifecycle.transition(node, label, timeout)

    def change_state_raw(self, node: str, transition_id: int, timeout: float = 10.0) -> Any:
        """Send a ChangeState by id without checking availability (to test robustness)."""
        req = ChangeState.Request(transition=Transition(id=transition_id))
        return self.call(ChangeState, f"/{node}/change_state", req, timeout)

    def get_state(self, node: str, timeout: float = 10.0) -> str:
        """The node's lifecycle state label (unconfigured, inactive, active, finalized)."""
        return self._lifecycle.state(node, timeout)

    def get_parameters(self, node: str, names: list[str], timeout: float = 10.0) -> dict[str, Any]:
        """``ros2 param get`` for several parameters: {name: value} (None for undeclared ones)."""
        res = self.call(GetParameters, f"/{node}/get_parameters", GetParameters.Request(names=names), timeout,
                        retry=True)
        return {n: parameter_python(v) for n, v in zip(names, res.values)}

    def set_parameters(self, node: str, timeout: float = 10.0, **values: Any) -> list:
        """``ros2 param set`` for several parameters; returns the SetParametersResult list."""
        params = [Parameter(name=k, value=parameter_value(v)) for k, v in values.items()]
        res = self.call(SetParameters, f"/{node}/set_parameters",
                        SetParameters.Request(parameters=params), timeout, retry=True)
        return list(res.results)


def parameter_python(pv: ParameterValue) -> Any:
    """rcl_interfaces/ParameterValue → Python value (None for NOT_SET)."""
    t = pv.type
    return {
        ParameterType.PARAMETER_BOOL: lambda: pv.bool_value,
        ParameterType.PARAMETER_INTEGER: lambda: pv.integer_value,
        ParameterType.PARAMETER_DOUBLE: lambda: pv.double_value,
        ParameterType.PARAMETER_STRING: lambda: pv.string_value,
        ParameterType.PARAMETER_BOOL_ARRAY: lambda: list(pv.bool_array_value),
        ParameterType.PARAMETER_INTEGER_ARRAY: lambda: list(pv.integer_array_value),
        ParameterType.PARAMETER_DOUBLE_ARRAY: lambda: list(pv.double_array_value),
        ParameterType.PARAMETER_STRING_ARRAY: lambda: list(pv.string_array_value),
    }.get(t, lambda: None)()


def parameter_value(v: Any) -> ParameterValue:
    """Python value → rcl_interfaces/ParameterValue (bool, int, float, str and their lists)."""
    pv = ParameterValue()
    if isinstance(v, bool):
        pv.type, pv.bool_value = ParameterType.PARAMETER_BOOL, v
    elif isinstance(v, int):
        pv.type, pv.integer_value = ParameterType.PARAMETER_INTEGER, v
    elif isinstance(v, float):
        pv.type, pv.double_value = ParameterType.PARAMETER_DOUBLE, v
    elif isinstance(v, str):
        pv.type, pv.string_value = ParameterType.PARAMETER_STRING, v
    elif isinstance(v, (list, tuple)) and v and all(isinstance(x, float) for x in v):
        pv.type, pv.double_array_value = ParameterType.PARAMETER_DOUBLE_ARRAY, list(v)
    elif isinstance(v, (list, tuple)) and v and all(isinstance(x, bool) for x in v):
        pv.type, pv.bool_array_value = ParameterType.PARAMETER_BOOL_ARRAY, list(v)
    elif isinstance(v, (list, tuple)) and v and all(isinstance(x, int) for x in v):
        pv.type, pv.integer_array_value = ParameterType.PARAMETER_INTEGER_ARRAY, list(v)
    elif isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        pv.type, pv.string_array_value = ParameterType.PARAMETER_STRING_ARRAY, list(v)
    else:
        raise TypeError(f"unsupported parameter value {v!r}")
    return pv


def wait_until(pred: Callable[[], bool], timeout: float, what: str | Callable[[], str], period: float = 0.02) -> None:
    """Poll ``pred`` until true; raise TimeoutError naming ``what`` after ``timeout`` seconds.
    ``pred`` is asked at least once, and once more at the deadline (a process descheduled past it
    still sees a condition that came true). ``what``: a text, or a function returning it, called
    at the timeout (so the error shows the state then, e.g. a process's log tail: an f-string shows
    it as it was before the wait)."""
    end = time.monotonic() + timeout
    while True:
        if pred():
            return
        if time.monotonic() >= end:
            break
        time.sleep(period)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what() if callable(what) else what}")

