"""A callback of the probe that raises does not end its spin: the probe counts it and stays useful
(rclpy's EventsExecutor, which the runner's probe spins, takes a raising callback as fatal and
delivers nothing more: the runner went deaf when its recorder raised once)."""

from __future__ import annotations

import time

import pytest
from std_msgs.msg import String

from hand_common.testing import RosProbe


@pytest.mark.parametrize("EVENTS", [False, True])
def test_a_raising_callback_is_counted_and_the_probe_keeps_receiving(EVENTS):
    probe = RosProbe("probe_errors_test", events=EVENTS)
    try:
        got: list[str] = []

        def cb(msg: String) -> None:
            if msg.data == "bad":
                raise ValueError("this message is bad")
            got.append(msg.data)

        probe.node.create_subscription(String, "/probe_errors_test", cb, 100)
        pub = probe.publisher(String, "/probe_errors_test", 100)
        probe.wait_for_subscribers(pub)
        for data in ("a", "bad", "b", "bad", "c"):
            pub.publish(String(data=data))
        end = time.monotonic() + 10.0
        while time.monotonic() < end and len(got) < 3:
            time.sleep(0.02)
        assert got == ["a", "b", "c"]
        assert probe.callback_errors == 2
        assert probe.callback_error_messages == ["ValueError: this message is bad"] * 2
    finally:
        probe.close()
