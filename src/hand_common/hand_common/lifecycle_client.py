"""Drive other nodes through their lifecycle, as ``ros2 lifecycle set`` does, surviving lost
responses.

Transitions are requested by *label* after checking ``get_available_transitions``: a request by
id that is invalid from the current state kills a Jazzy rclpy node (ros2/rclpy#1209).
The calls block, so use this from a thread other than the one spinning ``node``.

Lost responses. With Fast DDS a service answers on a response writer that must have matched the
*client's* response reader; a request sent by a client created moments before (the server has
not discovered that reader yet) is served, but the answer is dropped after the writer's
``max_blocking_time``: the node logs ``failed to send response (timeout)`` and the caller waits
forever. ``wait_for_service`` cannot see this (it only tells the client saw the server). So:

- clients are created once per (node, service) and reused: only the very first exchange of a
  client can race discovery;
- every call is made in attempts (``attempt_timeout`` s each, doubling, within ``timeout``);
  after an unanswered attempt a *fresh* request (new sequence number) is sent, and the answer to
  any attempt ends the call (a slow callback's late answer counts: it is not re-sent);
- queries (get_state, get_available_transitions) are simply re-sent; a ``change_state`` is never
  re-sent blindly: after an unanswered attempt the node's state is read first (waiting while it
  is in a transition state such as ``configuring``); if the transition already happened it is
  reported done, and only if the node is still where it was is the request sent again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetAvailableTransitions, GetState
from rclpy.node import Node

#: Primary state a transition (by label) ends in when it succeeds.
TARGET_STATE = {"configure": "inactive", "activate": "active", "deactivate": "inactive",
                "cleanup": "unconfigured", "shutdown": "finalized"}
PRIMARY_STATES = ("unconfigured", "inactive", "active", "finalized")
#: First attempt's wait for an answer, s (then doubled per attempt, within the call's timeout).
ATTEMPT_TIMEOUT = 2.0
#: After ``before_retry`` found nothing done: s still waited for an earlier attempt's answer
#: before a request is sent again.
RESEND_GRACE = 0.5


class LifecycleError(RuntimeError):
    """A managed node did not reach the requested state (message names node and transition)."""


class NoAnswer(LifecycleError, TimeoutError):
    """A service gave no answer within the call's timeout (every attempt unanswered)."""


def call_with_retry(client: Any, make_request: Callable[[], Any], timeout: float, what: str,
                    attempt_timeout: float = ATTEMPT_TIMEOUT,
                    before_retry: Callable[[], Any] | None = None, grace: float = RESEND_GRACE) -> Any:
    """Call ``client`` (an rclpy Client whose node is spun by another thread) in attempts.

    make_request: builds a fresh request per attempt. Each attempt waits ``attempt_timeout`` s
    (doubled per attempt, the last one cut to the remaining time) for the answer. An unanswered
    attempt stays pending: its answer, if it comes later (a slow callback, not a lost response),
    is the call's result, whichever attempt it answers. ``before_retry()``, if given, runs before
    every re-send; a non-None value it returns ends the call with that value (used by change_state
    to detect a transition that happened although its answer was lost); when it returns None the
    call still waits up to ``grace`` s for an earlier attempt's answer before re-sending (a
    change_state whose callback blocked and failed is answered just after the node's state can be
    read again: re-sending it would run the callback a second time: a 3 s ``connect_timeout_s``
    took 6 s per configure). Every unanswered request is abandoned (``remove_pending_request``)
    when the call ends. Returns the response; raises :class:`NoAnswer` naming ``what`` after
    ``timeout`` s.
    """
    end = time.monotonic() + timeout
    if not client.wait_for_service(timeout_sec=max(0.0, timeout)):
        raise NoAnswer(f"{what} not available after {timeout:.0f} s")
    wait = max(0.05, attempt_timeout)
    attempts = 0
    pending: list[Any] = []

    def answered(until: float) -> Any:
        while time.monotonic() < until:
            done = next((f for f in pending if f.done()), None)
            if done is not None:
                return done
            time.sleep(0.005)
        return next((f for f in pending if f.done()), None)

    try:
        while True:
            attempts += 1
            pending.append(client.call_async(make_request()))
            done = answered(min(end, time.monotonic() + wait))
            if done is not None:
                return done.result()
            if time.monotonic() >= end:
                raise NoAnswer(f"{what}: no answer after {timeout:.0f} s ({attempts} attempts)")
            wait *= 2.0
            if before_retry is not None:
                result = before_retry()
                if result is not None:
                    return result
                done = answered(min(end, time.monotonic() + grace))
                if done is not None:
                    return done.result()
                if time.monotonic() >= end:
                    raise NoAnswer(f"{what}: no answer after {timeout:.0f} s ({attempts} attempts)")
    finally:
        for future in pending:
            if not future.done():
                client.remove_pending_request(future)


class LifecycleClient:
    """Lifecycle service client for several managed nodes, owned by ``node`` (spun elsewhere).

    timeout: budget of one call, s (every attempt included); attempt_timeout: the first attempt's
    wait for an answer, s (see module docstring). ``retries`` counts attempts left unanswered in time (a request is re-sent after one unless its
    late answer or the state check settles the call).
    """

    def __init__(self, node: Node, timeout: float = 20.0, attempt_timeout: float = ATTEMPT_TIMEOUT):
        self._node = node
        self._timeout = timeout
        self._attempt = attempt_timeout
        self._clients: dict[tuple[str, str], Any] = {}
        self.retries = 0

    def _client(self, srv_type, node_name: str, service: str):
        key = (node_name, service)
        if key not in self._clients:
            self._clients[key] = self._node.create_client(srv_type, f"/{node_name}/{service}")
        return self._clients[key]

    def _call(self, srv_type, node_name: str, service: str, make_request, timeout: float | None = None,
              before_retry=None):
        timeout = self._timeout if timeout is None else timeout
        client = self._client(srv_type, node_name, service)

        def counted():
            self.retries += 1
            return before_retry() if before_retry is not None else None

        return call_with_retry(client, make_request, timeout, f"/{node_name}/{service}", self._attempt, counted)

    def state(self, node_name: str, timeout: float | None = None) -> str:
        """Current state label of ``node_name`` (unconfigured, inactive, active, finalized, or a
        transition state such as configuring). Raises LifecycleError if never answered."""
        return self._call(GetState, node_name, "get_state", GetState.Request, timeout).current_state.label

    def settled_state(self, node_name: str, timeout: float | None = None) -> str:
        """The node's primary state, waiting while it is in a transition state."""
        timeout = self._timeout if timeout is None else timeout
        end = time.monotonic() + timeout
        while True:
            label = self.state(node_name, max(0.1, end - time.monotonic()))
            if label in PRIMARY_STATES or time.monotonic() >= end:
                return label
            time.sleep(0.05)

    def wait_for(self, node_names: list[str], timeout: float | None = None) -> None:
        """Wait until every node's lifecycle services exist; LifecycleError names the missing.

        Creates the clients of all three services now, so that their discovery runs while the
        caller waits rather than racing the first request (module docstring)."""
        timeout = self._timeout if timeout is None else timeout
        end = time.monotonic() + timeout
        for name in node_names:
            for srv_type, service in ((ChangeState, "change_state"), (GetState, "get_state"),
                                      (GetAvailableTransitions, "get_available_transitions")):
                client = self._client(srv_type, name, service)
                if not client.wait_for_service(timeout_sec=max(0.1, end - time.monotonic())):
                    raise LifecycleError(f"lifecycle node /{name} did not appear within {timeout:.0f} s")

    def transition(self, node_name: str, label: str, timeout: float | None = None) -> bool:
        """Request transition ``label``; False if not available from the current state or refused.

        A lost answer is recovered (module docstring): the state is checked before any re-send,
        so the transition's callback runs once. True also when the node is found in the
        transition's target state after an unanswered attempt (the transition happened).
        timeout: budget of the whole transition, s (default: the client's).
        """
        end = time.monotonic() + (self._timeout if timeout is None else timeout)
        avail = self._call(GetAvailableTransitions, node_name, "get_available_transitions",
                           GetAvailableTransitions.Request, max(0.1, end - time.monotonic()))
        ids = {t.transition.label: t.transition.id for t in avail.available_transitions}
        if label not in ids:
            return False
        target = TARGET_STATE.get(label)
        origin = self.settled_state(node_name, max(0.1, end - time.monotonic()))

        def check_before_resend():
            now = self.settled_state(node_name, max(0.1, end - time.monotonic()))
            if now == origin:
                return None  # the request never acted: send it again
            if now == target:
                return ChangeState.Response(success=True)
            return ChangeState.Response(success=False)  # it acted and ended elsewhere (e.g. an error)

        def request():
            return ChangeState.Request(transition=Transition(id=ids[label], label=label))

        retries = self.retries
        res = self._call(ChangeState, node_name, "change_state", request,
                         max(0.1, end - time.monotonic()), before_retry=check_before_resend)
        if not res.success and self.retries > retries and origin != target:
            # A re-sent request refused because the first one (its answer lost) had done it.
            return self.settled_state(node_name, max(0.1, end - time.monotonic())) == target
        return bool(res.success)

    def bring_up(self, node_names: list[str], before_activate=None) -> None:
        """configure all (in order), call ``before_activate()`` if given, then activate all (in
        order). Nodes already past a step are left as they are. Raises LifecycleError naming the
        first node that fails."""
        for label, done_states in (("configure", {"inactive", "active"}), ("activate", {"active"})):
            if label == "activate" and before_activate is not None:
                before_activate()
            for name in node_names:
                if self.settled_state(name) in done_states:
                    continue
                if not self.transition(name, label):
                    raise LifecycleError(f"/{name}: '{label}' failed (state now '{self.state(name)}'; see its log)")

    def bring_down(self, node_names: list[str], final: str = "shutdown") -> list[str]:
        """deactivate each node (in the given order), then ``final`` ('cleanup' or 'shutdown').
        Best effort: returns the list of problems instead of raising, so every node is tried."""
        problems = []
        for name in node_names:
            try:
                if self.settled_state(name) == "active" and not self.transition(name, "deactivate"):
                    problems.append(f"/{name}: deactivate refused")
            except LifecycleError as exc:
                problems.append(str(exc))
        for name in node_names:
            try:
                if self.settled_state(name) != "finalized" and not self.transition(name, final):
                    problems.append(f"/{name}: {final} refused")
            except LifecycleError as exc:
                problems.append(str(exc))
        return problems
