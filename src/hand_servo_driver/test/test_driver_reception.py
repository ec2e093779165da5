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
