"""``runner param`` (= ``ros2 param set``) against a real tracker process: an integer for a double
parameter is that double, a double for an integer one is refused naming the parameter, its type
and the value, a misspelt parameter or node name is refused naming the close ones; the node's own
parameter service does the same for any client (``ros2 param set`` sends ``2`` as an integer)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hand_common import contract
from hand_common.testing import NodeProcess, RosProbe

NODE = contract.TRACKER_NODE


@pytest.fixture(scope="module")
def tracker(tmp_path_factory):
    """An unconfigured tracker (every parameter may change) and a probe."""
    log = tmp_path_factory.mktemp("param") / "tracker.log"
    proc = NodeProcess.module("hand_tracking.tracker_node", "--ros-args", "-r", f"__node:={NODE}", log_path=str(log))
    probe = RosProbe("runner_param_test_probe")
    try:
        assert probe.get_state(NODE, timeout=60) == "unconfigured"
        yield probe
    finally:
        probe.close()
        proc.stop()


def param(*args: str) -> tuple[int, str]:
    p = subprocess.run([sys.executable, "-m", "hand_bringup.runner", "param", *args], capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout + p.stderr


def test_an_integer_for_a_double_parameter_is_that_double(tracker):
    code, out = param(NODE, "index_curled_angle", "2")
    assert (code, out.strip()) == (0, "Set parameter successful")
    value = tracker.get_parameters(NODE, ["index_curled_angle"])["index_curled_angle"]
    assert value == 2.0 and isinstance(value, float)
    code, out = param("tracker", "index_curled_angle", "1.9")  # the runner key, as in -p tracker.<name>
    assert code == 0, out
    assert tracker.get_parameters(NODE, ["index_curled_angle"])["index_curled_angle"] == 1.9


def test_a_double_for_an_integer_parameter_is_refused_naming_parameter_type_and_value(tracker):
    before = tracker.get_parameters(NODE, ["camera_width_px"])["camera_width_px"]
    code, out = param(NODE, "camera_width_px", "640.5")
    assert code == 2 and "Traceback" not in out
    assert "runner: error: camera_width_px is an integer parameter: got double 640.5 (a whole number, e.g. 640)" in out
    assert tracker.get_parameters(NODE, ["camera_width_px"])["camera_width_px"] == before


def test_a_misspelt_parameter_or_node_is_refused_naming_the_close_names(tracker):
    code, out = param(NODE, "min_detection_confidenc", "0.5")
    assert code == 2 and "Traceback" not in out
    assert f"runner: error: /{NODE} has no parameter 'min_detection_confidenc' (did you mean " \
           "'min_detection_confidence'?)" in out
    code, out = param("hand_trackr", "mirror", "true")
    assert code == 2 and "Traceback" not in out
    assert "runner: error: no node /hand_trackr is running on ROS_DOMAIN_ID" in out
    assert f"(did you mean '{NODE}'?); running: " in out and f"/{NODE}" in out.split("running: ")[1]


def test_the_node_itself_converts_an_integer_for_a_double_and_names_a_wrong_type_or_name(tracker):
    """What ``ros2 param set /hand_tracker index_curled_angle 2`` sends: an integer."""
    (res,) = tracker.set_parameters(NODE, index_curled_angle=2)
    assert res.successful, res.reason
    assert tracker.get_parameters(NODE, ["index_curled_angle"])["index_curled_angle"] == 2.0
    (res,) = tracker.set_parameters(NODE, max_num_hands=1.5)
    assert not res.successful and res.reason == "max_num_hands is an integer parameter: got double 1.5 " \
                                                "(a whole number, e.g. 2)"
    (res,) = tracker.set_parameters(NODE, mirorr=True)
    assert not res.successful and res.reason == f"/{NODE} has no parameter 'mirorr' (did you mean 'mirror'?)"
