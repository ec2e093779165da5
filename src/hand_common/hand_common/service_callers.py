"""Who asked: the node behind each request to a node's own parameter and lifecycle services.

rclpy (Jazzy, 7.1.x) hands a service callback the request alone, and the header the executor
takes with it (``rmw_service_info_t``) exposes only the request's sequence number to Python
(``rmw_request_id_t.sequence_number``; the client's ``writer_guid`` is not bound), so neither a
parameter callback (pre-set, on-set, post-set) nor a ``change_state`` callback can know its
caller. Jazzy's *service introspection* can: with it on (``METADATA``, no payloads) rcl
publishes, for every request taken, a ``service_msgs/ServiceEventInfo`` on
``<service>/_service_event`` carrying the request's sequence number and the client's GID
(``client_gid``; with rmw_fastrtps that is the GID of the client's reply reader). The graph
names the node that owns that GID (``get_subscriptions_info_by_topic`` on the service's reply
topic ``rr/<node>/<service>Reply``, or the request writers on ``rq/<node>/<service>Request``).

:class:`ServiceCallers` wraps the node's ``set_parameters``, ``set_parameters_atomically`` and
``change_state`` services: it describes each request when its response goes out (the parameter
with its old and new value and the verdict; the transition and the state it started from) and
logs that line once the request's event named the client: ``"<what> — by /node (client gid
…)"``. ``change_state`` cannot be introspected from rclpy (its service is made by rcl_lifecycle;
``Service.configure_introspection`` on it crashes the process in rclpy 7.1.x): its line names the
nodes that hold a client of it on the graph at that moment (``one of /a, /b``), the candidates,
not the caller. What it cannot know, it says: a client gone from the graph before it was looked up is
logged by its GID, a request whose event never came (1 s) as ``caller unknown``, and a set made
inside the process (``node.set_parameters``, no service) as ``in-process``. Identity here is what
DDS announces (node names are not authenticated without SROS2): a record for the operator, not
access control — the *values* a node accepts are decided by its parameter rules alone.

:class:`CallerMatcher` is the pure pairing of responses and events (tested without rclpy).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: ``service_msgs/ServiceEventInfo.REQUEST_RECEIVED``
REQUEST_RECEIVED = 1
#: a request whose event has not come within this is logged with "caller unknown" (s)
EVENT_WAIT_S = 1.0
#: the services watched, by the last part of their name; the first ones are introspected
INTROSPECTED = ("set_parameters", "set_parameters_atomically")
WATCHED = (*INTROSPECTED, "change_state")


@dataclass
class _Pending:
    service: str
    seq: int
    lines: list[str]
    t: float
    caller: str | None = None


@dataclass
class CallerMatcher:
    """Pairs described responses (service, sequence number, lines) with request events
    (service, sequence number, caller). Sequence numbers are per client, so a pair is the oldest
    unpaired entry with the same service and number. Times in seconds (monotonic)."""

    wait_s: float = EVENT_WAIT_S
    responses: deque[_Pending] = field(default_factory=deque)
    events: deque[tuple[str, int, str, float]] = field(default_factory=deque)

    def response(self, service: str, seq: int, lines: list[str], now: float) -> None:
        for i, (svc, s, caller, _) in enumerate(self.events):
            if svc == service and s == seq:
                del self.events[i]
                self.responses.append(_Pending(service, seq, lines, now, caller))
                return
        self.responses.append(_Pending(service, seq, lines, now))

    def event(self, service: str, seq: int, caller: str, now: float) -> None:
        for pend in self.responses:
            if pend.caller is None and pend.service == service and pend.seq == seq:
                pend.caller = caller
                return
        self.events.append((service, seq, caller, now))

    def ready(self, now: float) -> list[tuple[str, str]]:
        """``(line, caller)`` for every response now named (or waited for too long), in order."""
        out: list[tuple[str, str]] = []
        while self.responses and (self.responses[0].caller is not None or now - self.responses[0].t > self.wait_s):
            pend = self.responses.popleft()
            caller = pend.caller or f"caller unknown (no request event within {self.wait_s:g} s)"
            out.extend((line, caller) for line in pend.lines)
        while self.events and now - self.events[0][3] > 10 * self.wait_s:  # events of requests not described
            self.events.popleft()
        return out


def gid_hex(gid: Any) -> str:
    return bytes(bytearray(gid)[:16]).hex()


class ServiceCallers:
    """Log every parameter set and lifecycle transition requested of ``node``, with the caller.

    node: an rclpy Node (or LifecycleNode) whose services exist. log: ``(line)`` → None (default:
    the node's logger, INFO). Call once, after the node declared its parameters. ``lines``
    (the lines logged so far, newest last, at most 200) is what tests read.
    """

    def __init__(self, node: Any, log: Callable[[str], None] | None = None):
        from rclpy.qos import qos_profile_system_default
        from rclpy.service_introspection import ServiceIntrospectionState

        self._node = node
        self._log = log or (lambda line: node.get_logger().info(line))
        self.matcher = CallerMatcher()
        self.lines: deque[str] = deque(maxlen=200)
        self._fqn = node.get_fully_qualified_name()
        self._last: tuple[str, list[str]] | None = None
        self._in_service = False
        self._subs = []
        for srv in list(node.services):
            short = srv.srv_name.rstrip("/").rsplit("/", 1)[-1]
            if short not in WATCHED:
                continue
            self._wrap(srv, short)
            if short not in INTROSPECTED:
                continue
            srv.configure_introspection(node.get_clock(), qos_profile_system_default,
                                        ServiceIntrospectionState.METADATA)
            topic = f"{self._fqn.rstrip('/')}/{short}/_service_event"
            self._subs.append(node.create_subscription(
                srv.srv_type.Event, topic, lambda msg, s=short: self._on_event(s, msg), 50))
        self._timer = node.create_timer(0.1, self._flush)
        node.add_post_set_parameters_callback(self._post_set)

    # --- wrapping ---------------------------------------------------------------------------------
    def _wrap(self, srv: Any, short: str) -> None:
        callback, send = srv.callback, srv.send_response

        def described(request, response):
            before = self._before(short, request)
            self._in_service = True
            try:
                result = callback(request, response)
            finally:
                self._in_service = False
            self._last = (short, self._describe(short, request, result, before))
            return result

        def sent(response, header):
            send(response, header)
            last, self._last = self._last, None
            if last is None or last[0] != short or not last[1]:
                return
            if short not in INTROSPECTED:
                for line in last[1]:
                    self._emit(line, self.clients_of(short))
            else:
                seq = getattr(getattr(header, "request_id", header), "sequence_number", -1)
                self.matcher.response(short, int(seq), last[1], time.monotonic())
                self._flush()

        srv.callback = described
        srv.send_response = sent

    def _before(self, short: str, request: Any) -> Any:
        if short == "change_state":
            return self._node._state_machine.current_state[1] if hasattr(self._node, "_state_machine") else "?"
        old = {}
        for p in request.parameters:
            if self._node.has_parameter(p.name):
                old[p.name] = self._node.get_parameter(p.name).value
        return old

    def _describe(self, short: str, request: Any, response: Any, before: Any) -> list[str]:
        if short == "change_state":
            t = request.transition
            what = f"'{t.label}'" if t.label else f"id {t.id}"
            return [f"lifecycle transition {what} requested from state '{before}': "
                    f"{'done' if response.success else 'refused or failed'}"]
        from rclpy.parameter import parameter_value_to_python

        results = list(response.results) if short == "set_parameters" else [response.result] * len(request.parameters)
        lines = []
        for p, res in zip(request.parameters, results):
            new = parameter_value_to_python(p.value)
            verdict = "set" if res.successful else f"refused: {res.reason}"
            lines.append(f"parameter {p.name}: {before.get(p.name, '(undeclared)')!r} -> {new!r} {verdict}")
        return lines

    def _post_set(self, params: list[Any]) -> None:
        """A set accepted outside the parameter services: made inside this process."""
        if not self._in_service:
            for p in params:
                self._emit(f"parameter {p.name}: -> {p.value!r} set", "in-process (node.set_parameters, no service)")

    # --- naming -----------------------------------------------------------------------------------
    def _on_event(self, short: str, msg: Any) -> None:
        info = msg.info
        if info.event_type != REQUEST_RECEIVED:
            return
        self.matcher.event(short, int(info.sequence_number), self.name_of(short, info.client_gid), time.monotonic())
        self._flush()

    def name_of(self, short: str, gid: Any) -> str:
        """The node owning the client endpoint ``gid`` of our service ``short`` (graph lookup)."""
        want = gid_hex(gid)
        base = self._fqn.lstrip("/")
        node = self._node
        for ends in (node.get_subscriptions_info_by_topic(f"rr/{base}/{short}Reply", no_mangle=True),
                     node.get_publishers_info_by_topic(f"rq/{base}/{short}Request", no_mangle=True)):
            for e in ends:
                if gid_hex(e.endpoint_gid) == want:
                    ns = e.node_namespace.rstrip("/")
                    return f"{ns}/{e.node_name} (client gid {want})"
        return f"a client gone from the graph before it was named (client gid {want}, participant {want[:24]})"

    def clients_of(self, short: str) -> str:
        """The nodes holding a client of our service ``short`` on the graph now (candidates)."""
        base = self._fqn.lstrip("/")
        names = sorted({f"{e.node_namespace.rstrip('/')}/{e.node_name}" for e in
                        self._node.get_subscriptions_info_by_topic(f"rr/{base}/{short}Reply", no_mangle=True)})
        return ("one of the clients on the graph: " + ", ".join(names)) if names else "caller unknown (no client seen)"

    def _flush(self) -> None:
        for line, caller in self.matcher.ready(time.monotonic()):
            self._emit(line, caller)

    def _emit(self, line: str, caller: str) -> None:
        text = f"{line} — by {caller}"
        self.lines.append(text)
        self._log(text)
