"""SafeLifecycleNode's one release hook and rclpy's lifecycle publishers (issue 17, node_tools.py).

Proves, with a real SafeLifecycleNode subclass in a private rclpy Context:
- ``_release`` runs on cleanup, on shutdown (from unconfigured, inactive and active), and on the
  error processing that follows a transition callback that raised; the node is unconfigured
  after the error and can be configured again;
- an ``on_shutdown`` override that sends a safe pose first (``state.label`` is the state the
  shutdown started from; ``lifecycle_state`` is 'shuttingdown' inside it) gets it out through a
  lifecycle publisher when shut down from active;
- a lifecycle publisher made in on_configure publishes nothing while inactive (before activate and
  after deactivate) and publishes while active, also when on_activate is overridden and calls super.
"""

from __future__ import annotations

import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.lifecycle import State, TransitionCallbackReturn
from std_msgs.msg import String

from hand_common import contract
from hand_common.node_tools import SafeLifecycleNode

TOPIC = "/release_hook_test/data"


class HookNode(SafeLifecycleNode):
    """Makes a lifecycle publisher in on_configure; counts the release hook's calls."""

    def __init__(self, context, name: str = "release_hook_test"):
        super().__init__(name, context=context)
        self.releases: list[str] = []
        self.pub = None
        self.fail_activate = False
        self.safe_sent_from: str | None = None
        self.state_inside_shutdown: str | None = None

    def on_configure(self, state: State) -> TransitionCallbackReturn:
        self.pub = self.create_lifecycle_publisher(String, TOPIC, contract.qos(contract.STREAM))
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        if self.fail_activate:
            raise RuntimeError("planted failure")  # rclpy turns it into ERROR -> on_error
        return super().on_activate(state)

    def on_shutdown(self, state: State) -> TransitionCallbackReturn:
        self.state_inside_shutdown = self.lifecycle_state
        if state.label == "active":  # an actuator's safe pose, before the release
            self.pub.publish(String(data="safe"))
            self.safe_sent_from = state.label
        return super().on_shutdown(state)

    def _release(self) -> None:
        self.releases.append(self.lifecycle_state)
        if self.pub is not None:
            self.destroy_lifecycle_publisher(self.pub)
            self.pub = None


@pytest.fixture
def ros():
    context = rclpy.Context()  # private: other tests of this session may hold the default one
    rclpy.init(context=context)
    executor = SingleThreadedExecutor(context=context)
    nodes = []

    def make(**kw):
        node = HookNode(context, **kw)
        executor.add_node(node)
        nodes.append(node)
        return node

    yield context, executor, make
    for n in nodes:
        executor.remove_node(n)
        n.destroy_node()
    executor.shutdown()
    rclpy.shutdown(context=context)


def test_release_runs_on_cleanup_shutdown_and_error(ros):
    _, _, make = ros
    node = make()
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS and node.pub is not None
    assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS
    assert node.releases == ["cleaningup"] and node.pub is None
    assert node.lifecycle_state == "unconfigured"

    node.trigger_configure()
    node.fail_activate = True
    assert node.trigger_activate() == TransitionCallbackReturn.ERROR
    assert node.releases == ["cleaningup", "errorprocessing"] and node.pub is None
    assert node.lifecycle_state == "unconfigured"  # on_error returned SUCCESS

    node.fail_activate = False
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS  # configurable again
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    assert node.trigger_shutdown() == TransitionCallbackReturn.SUCCESS
    assert node.releases == ["cleaningup", "errorprocessing", "shuttingdown"]
    assert node.lifecycle_state == "finalized"
    assert node.state_inside_shutdown == "shuttingdown" and node.safe_sent_from == "active"


@pytest.mark.parametrize("steps", [(), ("configure",)])
def test_release_runs_on_shutdown_from_unconfigured_and_inactive(ros, steps):
    _, _, make = ros
    node = make()
    for step in steps:
        getattr(node, f"trigger_{step}")()
    assert node.trigger_shutdown() == TransitionCallbackReturn.SUCCESS
    assert node.releases == ["shuttingdown"] and node.safe_sent_from is None
    assert node.lifecycle_state == "finalized"


def _spin_until(executor, done, timeout: float) -> None:
    end = time.monotonic() + timeout
    while not done() and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)


def test_a_lifecycle_publisher_publishes_only_while_active(ros):
    context, executor, make = ros
    node = make()
    listener = rclpy.create_node("release_hook_listener", context=context)
    executor.add_node(listener)
    got: list[str] = []
    listener.create_subscription(String, TOPIC, lambda m: got.append(m.data), contract.qos(contract.STREAM))
    try:
        node.trigger_configure()
        _spin_until(executor, lambda: node.pub.get_subscription_count() > 0, 10.0)
        assert node.pub.get_subscription_count() == 1  # discovery done: a lost message is not "dropped"

        assert not node.pub.is_activated
        node.pub.publish(String(data="inactive-before"))
        node.trigger_activate()
        assert node.pub.is_activated  # LifecycleNode.on_activate (called through super) enabled it
        node.pub.publish(String(data="active"))
        _spin_until(executor, lambda: "active" in got, 10.0)
        node.trigger_deactivate()
        assert not node.pub.is_activated
        node.pub.publish(String(data="inactive-after"))
        _spin_until(executor, lambda: False, 0.5)  # give a wrongly sent message time to arrive
        assert got == ["active"]

        node.trigger_activate()
        _spin_until(executor, lambda: False, 0.2)
        node.trigger_shutdown()  # from active: the override's safe pose still goes out
        _spin_until(executor, lambda: "safe" in got, 10.0)
        assert got == ["active", "safe"]
    finally:
        executor.remove_node(listener)
        listener.destroy_node()
