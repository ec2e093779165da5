"""The shared parameter-spec table type and its declare helper (param_spec.py, node_tools.py)."""

import pytest
import rclpy
from rcl_interfaces.msg import ParameterType
from rclpy.parameter import Parameter

from hand_common.node_tools import declare_specs
from hand_common.param_spec import ParamSpec

SPECS = (
    ParamSpec("rate", 50.0, "Hz", (1.0, 200.0), live=True),
    ParamSpec("count", 3, "n", (1, 10)),
    ParamSpec("mode", "a", "a or b", choices=("a", "b")),
    ParamSpec("gains", [1.0, 2.0], "per finger", array_type=float),
)


def test_only_the_first_four_fields_are_positional():
    with pytest.raises(TypeError):
        ParamSpec("x", 1.0, "d", None, True)  # live must be named


def test_declare_specs_declares_types_ranges_and_refuses_out_of_range_sets():
    context = rclpy.Context()  # private: other tests of this session may hold the default one
    rclpy.init(context=context)
    try:
        node = rclpy.create_node("param_spec_test", context=context)
        values = declare_specs(node, SPECS)
        assert values == {"rate": 50.0, "count": 3, "mode": "a", "gains": [1.0, 2.0]}
        (d_rate, d_count, d_gains) = node.describe_parameters(["rate", "count", "gains"])
        assert (d_rate.floating_point_range[0].from_value, d_rate.floating_point_range[0].to_value) == (1.0, 200.0)
        assert (d_count.integer_range[0].from_value, d_count.integer_range[0].to_value) == (1, 10)
        assert d_gains.type == ParameterType.PARAMETER_DOUBLE_ARRAY
        (res,) = node.set_parameters([Parameter("rate", value=500.0)])
        assert not res.successful and node.get_parameter("rate").value == 50.0
        (res,) = node.set_parameters([Parameter("rate", value=100.0)])
        assert res.successful and node.get_parameter("rate").value == 100.0
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_problem_is_the_one_range_and_choices_check():
    rate, count, mode, gains = SPECS
    assert rate.problem(50.0) is None and "rate must be in [1, 200], got 500.0" == rate.problem(500.0)
    assert count.problem(True) is not None  # a bool is no number here
    assert mode.problem("b") is None and mode.problem("c") == "mode must be one of a or b, got 'c'"
    assert gains.problem([9.0]) is None  # no range, no choices: nothing to check


def test_annotate_lists_the_choices_and_says_read_at_configure():
    rate, count, mode, _ = SPECS
    assert rate.full_description(True) == "Hz" and rate.full_description(False) == "Hz"
    assert count.full_description(True) == "n Read at configure."
    assert mode.full_description(True) == "a or b (a/b) Read at configure."
    assert mode.full_description(False) == "a or b"


class _Node:
    """A SafeLifecycleNode with the idiom: records what the hooks saw."""

    @staticmethod
    def make(context, **kwargs):
        from rclpy.lifecycle import TransitionCallbackReturn

        from hand_common.node_tools import SafeLifecycleNode

        class Node(SafeLifecycleNode):
            def __init__(self):
                super().__init__("param_idiom_test", context=context, **kwargs)
                self.checked: list[dict] = []
                self.applied: list[dict] = []
                self.declare_params(SPECS, renamed={"old_rate": "rate"})

            def check_parameters(self, changes, values):
                self.checked.append(dict(changes))
                return "gains must have 2 values" if len(values["gains"]) != 2 else None

            def apply_parameters(self, changes):
                self.applied.append(dict(changes))

            def on_configure(self, state):
                return TransitionCallbackReturn.SUCCESS

        return Node()


def test_the_idiom_validates_on_set_applies_post_set_and_refuses_configure_time_parameters_while_configured():
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = _Node.make(context)
        # unconfigured: a configure-time parameter may change; the node's hook validates, then applies
        (res,) = node.set_parameters([Parameter("count", value=4)])
        assert res.successful and node.applied == [{"count": 4}]
        (res,) = node.set_parameters([Parameter("gains", value=[1.0])])
        assert not res.successful and res.reason == "gains must have 2 values"
        assert node.applied == [{"count": 4}] and node.get_parameter("gains").value == [1.0, 2.0]
        (res,) = node.set_parameters([Parameter("mode", value="c")])
        assert not res.successful and res.reason == "mode must be one of a or b, got 'c'"
        node.trigger_configure()
        assert node.configured
        (res,) = node.set_parameters([Parameter("count", value=5)])
        assert not res.successful and res.reason.startswith("count is read at configure time (state inactive)")
        assert node.get_parameter("count").value == 4
        (res,) = node.set_parameters([Parameter("rate", value=20.0)])  # live
        assert res.successful and node.applied[-1] == {"rate": 20.0}
        # an old name is refused with the new one, through rclpy's own path for undeclared names
        with pytest.raises(Exception, match="'old_rate' is now 'rate'"):
            node.set_parameters([Parameter("old_rate", value=20.0)])
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_an_old_parameter_name_given_at_start_stops_the_node_with_the_new_name():
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        with pytest.raises(ValueError, match="'old_rate' is now 'rate'"):
            _Node.make(context, parameter_overrides=[Parameter("old_rate", value=3.0)])
    finally:
        rclpy.shutdown(context=context)


def test_field_defaults_reads_a_config_dataclass():
    from dataclasses import dataclass, field

    from hand_common.param_spec import field_defaults

    @dataclass
    class Cfg:
        a: int
        b: float = 2.0
        c: list = field(default_factory=lambda: [1, 2])

    assert field_defaults(Cfg) == {"b": 2.0, "c": [1, 2]}


def test_unit_suffix_rule():
    from hand_common.param_spec import unit_suffix_problem

    for ok in ("command_timeout_s", "timeout_ms", "publish_rate_hz", "image_width_px", "thumb.max_speed_dps",
               "max_velocity", "realtime", "deadband", "frame_id"):
        assert unit_suffix_problem(ok) is None, ok
    assert unit_suffix_problem("command_timeout") == ("command_timeout: a timeout needs its unit at the end "
                                                      "(_s, _ms, _us, _hz, _dps, _px)")
    for bad in ("render_rate", "width", "diagnostics_period", "max_lag", "filter_min_cutoff", "calibration_time"):
        assert unit_suffix_problem(bad), bad


def test_declare_specs_refuses_a_renamed_parameter_given_at_start():
    """A plain node (the lifecycle manager) started with an old name does not start; the message
    names the new one (rclpy alone would ignore the undeclared override)."""
    context = rclpy.Context()
    rclpy.init(context=context, args=["--ros-args", "-p", "rate:=5.0"])
    try:
        node = rclpy.create_node("param_spec_renamed_test", context=context)
        with pytest.raises(ValueError, match="'rate' is now 'rate_hz'"):
            declare_specs(node, (ParamSpec("rate_hz", 50.0, "Hz", (1.0, 200.0)),), renamed={"rate": "rate_hz"})
        node.destroy_node()
        node = rclpy.create_node("param_spec_renamed_test2", context=context)
        assert declare_specs(node, (ParamSpec("rate_hz", 50.0, "Hz", (1.0, 200.0)),)) == {"rate_hz": 50.0}
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
