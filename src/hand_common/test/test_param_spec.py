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


def test_coerce_value_takes_an_integer_for_a_double_and_names_every_other_mismatch():
    from hand_common.param_spec import coerce_value

    assert coerce_value("rate", 2, "double") == 2.0 and isinstance(coerce_value("rate", 2, "double"), float)
    assert coerce_value("gains", [1, 2], "double_array") == [1.0, 2.0]
    assert coerce_value("gains", [1, 2.5], "double_array") == [1.0, 2.5]
    assert coerce_value("gains", [], "double_array") == []
    assert coerce_value("count", 3, "integer") == 3
    with pytest.raises(ValueError, match=r"^count is an integer parameter: got double 0\.5 \(a whole number, e\.g\. 0\)$"):
        coerce_value("count", 0.5, "integer")
    with pytest.raises(ValueError, match=r"^count is an integer parameter: got double 2\.0"):
        coerce_value("count", 2.0, "integer")  # a double is not rounded, even a whole one
    with pytest.raises(ValueError, match=r"^rate is a double parameter: got bool True$"):
        coerce_value("rate", True, "double")  # a bool is no number here
    with pytest.raises(ValueError, match=r"^rate is a double parameter: got string '1,5'$"):
        coerce_value("rate", "1,5", "double")


def test_did_you_mean_names_the_close_known_names():
    from hand_common.param_spec import did_you_mean

    known = ["min_detection_confidence", "min_tracking_confidence", "mirror", "index_curled_angle"]
    assert did_you_mean("min_detection_confidenc", known) == " (did you mean 'min_detection_confidence'?)"
    assert did_you_mean("index_curled_angel", known) == " (did you mean 'index_curled_angle'?)"
    assert did_you_mean("min_confidence", known) == (" (did you mean 'min_tracking_confidence' or "
                                                     "'min_detection_confidence'?)")
    assert did_you_mean("zzz", known) == ""


def test_an_integer_given_at_start_for_a_double_is_that_double_and_a_double_for_an_integer_stops_the_node():
    """``-p rate:=2`` (rcl reads an integer) for a double parameter: rclpy alone raises
    InvalidParameterTypeException and the node does not start; here it starts with 2.0."""
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = _Node.make(context, parameter_overrides=[Parameter("rate", value=2),
                                                        Parameter("gains", value=[1, 3])])
        assert node.get_parameter("rate").value == 2.0 and node.get_parameter("rate").type_ == Parameter.Type.DOUBLE
        assert list(node.get_parameter("gains").value) == [1.0, 3.0]
        node.destroy_node()
        with pytest.raises(ValueError, match=r"^/param_idiom_test: count is an integer parameter: got double 4\.5"):
            _Node.make(context, parameter_overrides=[Parameter("count", value=4.5)])
        with pytest.raises(ValueError, match=r"^/param_idiom_test: rate is a double parameter: got string 'fast'$"):
            _Node.make(context, parameter_overrides=[Parameter("rate", value="fast")])
    finally:
        rclpy.shutdown(context=context)


def test_a_set_converts_an_integer_for_a_double_and_refuses_a_misspelt_name_or_another_type_with_a_reason():
    """Through the parameter service, as ``ros2 param set`` / ``runner param`` / the console send it."""
    from rcl_interfaces.msg import Parameter as ParameterMsg
    from rcl_interfaces.srv import SetParameters

    from hand_common.probe import parameter_value

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = _Node.make(context)
        service = next(s for s in node.services if s.srv_name.endswith("/set_parameters"))
        request = SetParameters.Request(parameters=[
            ParameterMsg(name="rate", value=parameter_value(20)),  # an integer for a double
            ParameterMsg(name="rte", value=parameter_value(20.0)),
            ParameterMsg(name="count", value=parameter_value(4.5)),
            ParameterMsg(name="gains", value=parameter_value([2, 3])),
        ])
        rate, rte, count, gains = service.callback(request, SetParameters.Response()).results
        assert rate.successful and node.get_parameter("rate").value == 20.0
        assert node.get_parameter("rate").type_ == Parameter.Type.DOUBLE and node.applied[0] == {"rate": 20.0}
        assert not rte.successful and rte.reason == "/param_idiom_test has no parameter 'rte' (did you mean 'rate'?)"
        assert not count.successful
        assert count.reason == "count is an integer parameter: got double 4.5 (a whole number, e.g. 4)"
        assert node.get_parameter("count").value == 3
        assert gains.successful and list(node.get_parameter("gains").value) == [2.0, 3.0]
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
