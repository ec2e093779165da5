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
