"""Every parameter file in src (``src/*/config/*.yaml`` holding ``ros__parameters``) against the
table its node declares (read from the node itself: hand_bringup.param_tables): every name is
declared (an old, renamed name is reported with its new one) and every value has the declared
type (strict: a node takes a YAML integer for a double parameter as that double, but the shipped
files say what they mean)."""

from pathlib import Path

import pytest
import yaml

from hand_bringup.bringup import NODES
from hand_bringup.param_tables import all_tables, yaml_problems

SRC = Path(__file__).resolve().parents[2]
PARAM_FILES = sorted(p for p in SRC.glob("*/config/*.yaml")
                     if isinstance(d := yaml.safe_load(p.read_text()), dict)
                     and any(isinstance(v, dict) and "ros__parameters" in v for v in d.values()))


@pytest.fixture(scope="module")
def tables():
    return all_tables()


def test_every_node_params_file_is_a_parameter_file():
    for spec in NODES.values():
        assert SRC / spec.package / spec.params_file in PARAM_FILES, spec.key


@pytest.mark.parametrize("path", PARAM_FILES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_parameter_file_matches_the_declared_table(path, tables):
    for node, body in yaml.safe_load(path.read_text()).items():
        assert node in tables, f"{path}: no node named {node} in bringup.NODES"
        rows, renamed = tables[node]
        assert yaml_problems(body["ros__parameters"], rows, renamed) == []


def test_the_check_catches_a_wrong_name_an_old_name_and_a_wrong_type(tables):
    rows, _ = tables[NODES["servo_driver"].name]
    problems = yaml_problems({"rate_hz": 50, "nope": 1.0, "thumb": {"channel": 0.0}, "old": 1, "rate_hx": 1.0},
                             rows, {"old": "new"})
    assert problems == ["rate_hz: YAML gives integer 50, the node declares double", "nope: not declared by the node",
                        "thumb.channel: YAML gives double 0.0, the node declares integer", "'old' is now 'new'",
                        "rate_hx: not declared by the node (did you mean 'rate_hz'?)"]


#: Parameters the unit-suffix rule names but that have no unit to add (issue 25): a ratio and a
#: growth in hand image sizes per second.
NO_UNIT = {"playback_rate": "x real time (a ratio)", "gate_motion_rate": "hand image sizes per second of capture time"}


def test_every_parameter_follows_the_unit_suffix_rule_and_old_names_are_refused(tables):
    """hand_common.param_spec.unit_suffix_problem over every node's declared parameters (and the
    lifecycle manager's); every renamed parameter's new name is declared, its old one is not."""
    from hand_bringup import lifecycle_manager
    from hand_common.param_spec import unit_suffix_problem

    problems = []
    numeric = ("double", "integer", "double_array", "integer_array")  # not use_sim_time (bool) and the like
    declared = {node: ({r.name for r in rows}, {r.name for r in rows if r.type in numeric}, renamed)
                for node, (rows, renamed) in tables.items()}
    lm = lifecycle_manager.PARAMS
    declared["lifecycle_manager"] = ({s.name for s in lm}, {s.name for s in lm if isinstance(s.default, float)},
                                     lifecycle_manager.RENAMED)
    for node, (names, measured, renamed) in declared.items():
        problems += [f"{node}: {why}" for n in sorted(measured) if n not in NO_UNIT and (why := unit_suffix_problem(n))]
        problems += [f"{node}: renamed {old} -> {new} but {new} is not declared" for old, new in renamed.items()
                     if new not in names]
        problems += [f"{node}: {old} is both declared and renamed" for old in renamed if old in names]
    assert problems == []
    assert all(any(n in names for names, _, _ in declared.values()) for n in NO_UNIT)  # no stale exception
