"""The servo driver node takes a command's arrival from its DDS reception (the MessageInfo rclpy
passes to a two-argument callback), not from when its callback ran: in-process, dry run, no board."""

import time

import pytest
import rclpy
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.subscription import Subscription
from sensor_msgs.msg import JointState

from hand_common import contract
from hand_servo_driver.driver_node import DEADLINE_MARGIN_S, ServoDriverNode


@pytest.fixture
def driver():
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=[])
    node = ServoDriverNode(context=ctx, parameter_overrides=[Parameter("dry_run", value=True)])
    try:
        yield node
    finally:
        node.destroy_node()
        rclpy.shutdown(context=ctx)


def test_the_arrival_is_the_dds_reception_and_the_deadline_counts_from_it(driver):
    assert driver.trigger_configure() == TransitionCallbackReturn.SUCCESS
    assert driver.trigger_activate() == TransitionCallbackReturn.SUCCESS
    # rclpy passes the MessageInfo only to a callback that takes two arguments
    assert driver._sub._callback_type is Subscription.CallbackType.WithMessageInfo
    timeout = driver._core.config.command_timeout_s
    msg = JointState(name=list(contract.FINGER_NAMES), position=[0.5] * 5)
    mono0, ros0 = time.monotonic(), driver.get_clock().now().nanoseconds
    msg.header.stamp = driver.get_clock().now().to_msg()
    # received 0.1 s before the callback runs (a backlog of the executor)
    driver._on_command(msg, {"received_timestamp": ros0 - 100_000_000, "source_timestamp": ros0})
    core = driver._core
    assert core.stats.commands == 1
    assert core.cmd_time == pytest.approx(mono0 - 0.1, abs=1e-3)
    # the one-shot deadline is the reception + command_timeout_s: at most 0.05 s away, not 0.15 s
    assert driver._deadline_timer.time_until_next_call() * 1e-9 <= timeout - 0.1 + DEADLINE_MARGIN_S + 1e-3
    # without a reception stamp (another middleware): the callback's time
    msg.header.stamp = driver.get_clock().now().to_msg()
    mono1 = time.monotonic()
    driver._on_command(msg, {"received_timestamp": 0})
    assert core.stats.commands == 2 and mono1 <= core.cmd_time <= time.monotonic()
    # a reception stamp on another clock (the monotonic one): ignored and counted, the callback's time
    msg.header.stamp = driver.get_clock().now().to_msg()
    mono2 = time.monotonic()
    driver._on_command(msg, {"received_timestamp": time.monotonic_ns()})
    assert core.stats.commands == 3 and mono2 <= core.cmd_time <= time.monotonic() and not core.stale
    values = {kv.key: kv.value for kv in driver.diagnostic_status().values}
    assert values["reception_stamps_ignored"] == "1"
    assert driver.trigger_deactivate() == TransitionCallbackReturn.SUCCESS


def test_a_passed_deadline_the_tick_cannot_act_on_is_not_re_armed(driver, monkeypatch):
    """The serial link down: the tick does not step the core, so a passed stale deadline stays
    undecided. The one-shot re-armed itself for it every DEADLINE_MARGIN_S (0.5 ms): ~1300 wakes a
    second of a busy executor for as long as the link stayed down (measured in process, dry run,
    load 2). Now a wake that leaves its deadline passed is not re-armed (the tick decides once the
    link is back); one that finds it still ahead (a new timeout, an early wake) is."""
    from hand_servo_driver.transport import DryRunLink

    assert driver.trigger_configure() == TransitionCallbackReturn.SUCCESS
    assert driver.trigger_activate() == TransitionCallbackReturn.SUCCESS
    msg = JointState(name=list(contract.FINGER_NAMES), position=[0.5] * 5)
    timeout = driver._core.config.command_timeout_s
    # the link up, a fresh command: a wake before its deadline re-arms for it
    msg.header.stamp = driver.get_clock().now().to_msg()
    driver._on_command(msg, {"received_timestamp": 0})
    driver._on_deadline()
    assert not driver._deadline_timer.is_canceled()
    assert 0 < driver._deadline_timer.time_until_next_call() * 1e-9 <= timeout + DEADLINE_MARGIN_S
    # the link down, a command received 0.2 s ago (its deadline passed): the wake is not re-armed
    monkeypatch.setattr(DryRunLink, "up", property(lambda self: False))
    msg.header.stamp = driver.get_clock().now().to_msg()
    driver._on_command(msg, {"received_timestamp": driver.get_clock().now().nanoseconds - 200_000_000})
    assert driver._core.stale_deadline() < time.monotonic()
    driver._on_deadline()
    assert not driver._core.stale  # undecided: nothing can go out (the board's watchdog is the guard)
    assert driver._deadline_timer.is_canceled()
    monkeypatch.undo()
    driver._tick()  # the link back: the control tick takes the decision
    assert driver._core.stale
    assert driver.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
