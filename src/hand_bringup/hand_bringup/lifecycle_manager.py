"""``lifecycle_manager`` node: brings a list of lifecycle nodes to active at start-up.

The launch files start it with ``node_names`` in activation order and ``autostart: true``, the way
nav2_lifecycle_manager is used. Services: ``~/startup`` and ``~/shutdown`` (std_srvs/Trigger) to
bring the same nodes up or down on demand; ``~/shutdown`` takes them down in the runner's one
shutdown order (:func:`hand_bringup.bringup.shutdown_order`: actuators first, to their safe pose
while commands still flow, then the rest in reverse activation order). On Ctrl-C the manager
itself does nothing: each node's own process receives the signal and goes through its shutdown
transition (an actuator to its safe pose) by itself (node_tools.run).
"""

from __future__ import annotations

import sys
import threading

from rclpy.node import Node
from std_srvs.srv import Trigger

from hand_bringup.bringup import LIFECYCLE_MANAGER_NODE, shutdown_order_names
from hand_common.lifecycle_client import LifecycleClient, LifecycleError
from hand_common.node_tools import declare_specs, run
from hand_common.param_spec import ParamSpec

PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("node_names", [""], "Managed nodes in activation order (consumers first, the tracker last).",
              array_type=str, read_only=True),
    ParamSpec("autostart", True, "Configure and activate node_names at start-up.", read_only=True),
    ParamSpec("transition_timeout_s", 30.0, "Seconds to wait for a node's lifecycle services and for each "
              "transition.", (1.0, 600.0), read_only=True),
)
#: Old names (before the unit-suffix rule, issue 25), refused at start with the new one.
RENAMED: dict[str, str] = {"transition_timeout": "transition_timeout_s"}


class LifecycleManager(Node):
    """Plain node (not itself managed) that sequences the managed nodes' transitions."""

    def __init__(self) -> None:
        super().__init__(LIFECYCLE_MANAGER_NODE)
        v = declare_specs(self, PARAMS, renamed=RENAMED)
        self._names = [n for n in v["node_names"] if n]
        self._autostart = v["autostart"]
        timeout = v["transition_timeout_s"]
        self._client = LifecycleClient(self, timeout)
        self._lock = threading.Lock()
        self.create_service(Trigger, "~/startup", lambda req, res: self._serve(res, self._startup))
        self.create_service(Trigger, "~/shutdown", lambda req, res: self._serve(res, self._shutdown))
        if not self._names:
            self.get_logger().warning("node_names is empty: nothing to manage")
        elif self._autostart:
            threading.Thread(target=self._startup, daemon=True).start()

    def _serve(self, res, action):
        # The service callback must not block the executor that answers our own client calls.
        threading.Thread(target=action, daemon=True).start()
        res.success, res.message = True, f"{action.__name__.strip('_')} of {self._names} started"
        return res

    def _startup(self) -> None:
        with self._lock:
            try:
                self._client.wait_for(self._names)
                self._client.bring_up(self._names)
                self.get_logger().info(f"active: {', '.join(self._names)}")
            except LifecycleError as exc:
                self.get_logger().error(f"start-up failed: {exc}")

    def _shutdown(self) -> None:
        with self._lock:
            for problem in self._client.bring_down(shutdown_order_names(self._names), final="cleanup"):
                self.get_logger().error(problem)


def main(args: list[str] | None = None) -> None:
    sys.exit(run(LifecycleManager, args))


if __name__ == "__main__":
    main()
