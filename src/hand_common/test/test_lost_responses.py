"""Fault injection: lifecycle and parameter calls survive a lost response.

A lifecycle node in this process (spun by its own executor thread, reached over DDS like any
other node) drops chosen service responses, as Fast DDS does when a response writer has not yet
matched a new client's reader ("failed to send response (timeout)"), or loses a request before
it acts. The probe must recover with fresh requests, check the state before re-sending a
``change_state``, and run each transition's callback exactly once.
"""

from __future__ import annotations

import threading
import time

import pytest
import rclpy
from rcl_interfaces.msg import SetParametersResult
from rclpy.executors import SingleThreadedExecutor
from rclpy.lifecycle import TransitionCallbackReturn

from hand_common.lifecycle_client import LifecycleClient, NoAnswer
from hand_common.node_tools import SafeLifecycleNode, declare_specs
from hand_common.param_spec import ParamSpec
from hand_common.testing import RosProbe

NODE = "lossy_lifecycle"
ATTEMPT = 0.5  # first attempt's wait, s: an unanswered request is re-sent after it


class LossyNode(SafeLifecycleNode):
    """Counts transition callbacks and requests; drops the responses it is told to drop."""

    def __init__(self):
        super().__init__(NODE)
        declare_specs(self, (ParamSpec("gain", 1.0, "A parameter to set.", (0.0, 10.0)),))
        self.calls = {"configure": 0, "activate": 0, "set": 0}
        self.requests: dict[str, int] = {}
        self.drop: dict[str, int] = {}       # service suffix -> responses still to drop
        self.ignore: dict[str, int] = {}     # service suffix -> requests still to ignore (no action)
        self.configure_block_s = 0.0         # on_configure blocks this long (a driver's connect timeout) ...
        self.configure_result = TransitionCallbackReturn.SUCCESS  # ... and then returns this
        self.add_on_set_parameters_callback(self._on_set)
        for srv in [self._service_change_state, self._service_get_state,
                    self._service_get_available_transitions, *self.services]:
            self._instrument(srv)

    def _instrument(self, srv) -> None:
        suffix = srv.srv_name.rsplit("/", 1)[-1]
        if getattr(srv, "_lossy", False):
            return
        srv._lossy = True
        send, callback = srv.send_response, srv.callback

        def counted(req, resp):
            self.requests[suffix] = self.requests.get(suffix, 0) + 1
            if self.ignore.get(suffix, 0) > 0:  # the request is lost before it acts
                self.ignore[suffix] -= 1
                self.drop[suffix] = self.drop.get(suffix, 0) + 1
                return resp
            return callback(req, resp)

        def lossy_send(response, header):
            if self.drop.get(suffix, 0) > 0:
                self.drop[suffix] -= 1
                return  # the answer never reaches the client
            send(response, header)

        srv.callback, srv.send_response = counted, lossy_send

    def _on_set(self, params) -> SetParametersResult:
        self.calls["set"] += 1
        return SetParametersResult(successful=True)

    def on_configure(self, state) -> TransitionCallbackReturn:
        self.calls["configure"] += 1
        time.sleep(self.configure_block_s)  # blocks the node's only executor thread, like a serial connect
        return self.configure_result

    def on_activate(self, state) -> TransitionCallbackReturn:
        self.calls["activate"] += 1
        return super().on_activate(state)


@pytest.fixture
def lossy():
    probe = RosProbe("lossy_test_probe", attempt_timeout=ATTEMPT)  # initialises rclpy
    node = LossyNode()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    stop = threading.Event()

    def spin():
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=0.05)

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    yield node, probe
    stop.set()
    thread.join(2)
    executor.remove_node(node)
    node.destroy_node()
    probe.close()


def test_get_state_survives_a_lost_first_response(lossy):
    node, probe = lossy
    node.drop["get_state"] = 1
    assert probe.get_state(NODE, timeout=20) == "unconfigured"
    assert node.requests["get_state"] == 2  # the lost one, then a fresh request


def test_change_state_whose_answer_is_lost_is_not_run_twice(lossy):
    node, probe = lossy
    node.drop["change_state"] = 1
    assert probe.change_state(NODE, "configure", timeout=20) is True
    assert node.calls["configure"] == 1 and node.requests["change_state"] == 1  # state checked, not re-sent
    assert probe.get_state(NODE) == "inactive"
    # both the answer of change_state and of the first state check lost
    node.drop["change_state"] = 1
    node.drop["get_state"] = 1
    assert probe.change_state(NODE, "activate", timeout=20) is True
    assert node.calls["activate"] == 1 and node.requests["change_state"] == 2
    assert probe.get_state(NODE) == "active"


def test_change_state_whose_request_is_lost_is_sent_again(lossy):
    node, probe = lossy
    node.ignore["change_state"] = 1
    assert probe.change_state(NODE, "configure", timeout=20) is True
    assert node.calls["configure"] == 1 and node.requests["change_state"] == 2
    assert probe.get_state(NODE) == "inactive"


@pytest.mark.parametrize("result", [TransitionCallbackReturn.FAILURE, TransitionCallbackReturn.SUCCESS])
def test_a_slow_configure_is_sent_once(lossy, result):
    """A configure that blocks longer than the client's attempts (a servo driver's 3 s
    connect_timeout_s, here 3 attempts' worth) and then fails is answered late, not re-sent: it ran
    twice before (6 s per configure, issue 27). Its late answer is the result, success or not."""
    node, probe = lossy
    node.configure_block_s, node.configure_result = 3 * ATTEMPT, result
    client = LifecycleClient(probe.node, timeout=20.0, attempt_timeout=ATTEMPT)
    done = client.transition(NODE, "configure")
    assert done is (result == TransitionCallbackReturn.SUCCESS)
    assert node.calls["configure"] == 1 and node.requests["change_state"] == 1
    assert client.settled_state(NODE) == ("inactive" if done else "unconfigured")


def test_parameter_calls_survive_lost_responses(lossy):
    node, probe = lossy
    node.drop["set_parameters"] = 1
    [r] = probe.set_parameters(NODE, gain=2.5)
    assert r.successful and node.requests["set_parameters"] == 2
    node.drop["get_parameters"] = 2
    assert probe.get_parameters(NODE, ["gain"]) == {"gain": 2.5}
    assert node.requests["get_parameters"] == 3
    # a refused value still comes back refused, with its reason, after a lost answer
    node.drop["set_parameters"] = 1
    [r] = probe.set_parameters(NODE, gain=50.0)
    assert not r.successful and "gain" in r.reason


def test_a_service_that_never_answers_ends_in_a_named_timeout(lossy):
    node, probe = lossy
    node.drop["get_state"] = 1000
    client = LifecycleClient(probe.node, timeout=3.0, attempt_timeout=ATTEMPT)
    with pytest.raises(NoAnswer, match=f"/{NODE}/get_state: no answer after 3 s"):
        client.state(NODE)
    assert client.retries >= 2 and node.requests["get_state"] == client.retries + 1
