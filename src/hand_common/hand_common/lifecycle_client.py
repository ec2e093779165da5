"""Drive other nodes through their lifecycle, as ``ros2 lifecycle set`` does.

Transitions are requested by *label* after checking ``get_available_transitions``: a request by
id that is invalid from the current state kills a Jazzy rclpy node (ros2/rclpy#1209).
The calls block, so use this from a thread other than the one spinning ``node``.
"""

from __future__ import annotations

import time

from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetAvailableTransitions, GetState
from rclpy.node import Node


class LifecycleError(RuntimeError):
    """A managed node did not reach the requested state (message names node and transition)."""


class LifecycleClient:
    """Lifecycle service client for several managed nodes, owned by ``node`` (spun elsewhere)."""

    def __init__(self, node: Node, timeout: float = 20.0):
        self._node = node
        self._timeout = timeout
        self._clients: dict[tuple[str, str], object] = {}

    def _client(self, srv_type, node_name: str, service: str):
        key = (node_name, service)
        if key not in self._clients:
            self._clients[key] = self._node.create_client(srv_type, f"/{node_name}/{service}")
        return self._clients[key]

    def _call(self, srv_type, node_name: str, service: str, request, timeout: float | None = None):
        timeout = self._timeout if timeout is None else timeout
        client = self._client(srv_type, node_name, service)
        if not client.wait_for_service(timeout_sec=timeout):
            raise LifecycleError(f"/{node_name}/{service} not available after {timeout:.0f} s")
        future = client.call_async(request)
        end = time.monotonic() + timeout
        while not future.done():
            if time.monotonic() > end:
                raise LifecycleError(f"/{node_name}/{service}: no answer after {timeout:.0f} s")
            time.sleep(0.01)
        return future.result()

    def state(self, node_name: str) -> str:
        """Current state label of ``node_name`` (unconfigured, inactive, active, finalized)."""
        return self._call(GetState, node_name, "get_state", GetState.Request()).current_state.label

    def wait_for(self, node_names: list[str], timeout: float | None = None) -> None:
        """Wait until every node's change_state service exists; LifecycleError names the missing."""
        timeout = self._timeout if timeout is None else timeout
        end = time.monotonic() + timeout
        for name in node_names:
            client = self._client(ChangeState, name, "change_state")
            if not client.wait_for_service(timeout_sec=max(0.1, end - time.monotonic())):
                raise LifecycleError(f"lifecycle node /{name} did not appear within {timeout:.0f} s")

    def transition(self, node_name: str, label: str) -> bool:
        """Request transition ``label``; False if not available from the current state or refused."""
        avail = self._call(GetAvailableTransitions, node_name, "get_available_transitions",
                           GetAvailableTransitions.Request())
        ids = {t.transition.label: t.transition.id for t in avail.available_transitions}
        if label not in ids:
            return False
        req = ChangeState.Request(transition=Transition(id=ids[label], label=label))
        return bool(self._call(ChangeState, node_name, "change_state", req).success)

    def bring_up(self, node_names: list[str], before_activate=None) -> None:
        """configure all (in order), call ``before_activate()`` if given, then activate all (in
        order). Nodes already past a step are left as they are. Raises LifecycleError naming the
        first node that fails."""
        for label, done_states in (("configure", {"inactive", "active"}), ("activate", {"active"})):
            if label == "activate" and before_activate is not None:
                before_activate()
            for name in node_names:
                if self.state(name) in done_states:
                    continue
                if not self.transition(name, label):
                    raise LifecycleError(f"/{name}: '{label}' failed (state now '{self.state(name)}'; see its log)")

    def bring_down(self, node_names: list[str], final: str = "shutdown") -> list[str]:
        """deactivate each node (in the given order), then ``final`` ('cleanup' or 'shutdown').
        Best effort: returns the list of problems instead of raising, so every node is tried."""
        problems = []
        for name in node_names:
            try:
                if self.state(name) == "active" and not self.transition(name, "deactivate"):
                    problems.append(f"/{name}: deactivate refused")
            except LifecycleError as exc:
                problems.append(str(exc))
        for name in node_names:
            try:
                if self.state(name) != "finalized" and not self.transition(name, final):
                    problems.append(f"/{name}: {final} refused")
            except LifecycleError as exc:
                problems.append(str(exc))
        return problems
