"""Every parameter file in src (``src/*/config/*.yaml`` holding ``ros__parameters``) against the
table its node declares (read from the node itself: hand_bringup.param_tables): every name is
declared (an old, renamed name is reported with its new one) and every value has the declared
type (rclpy refuses a YAML integer for a double parameter at start)."""

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
    problems = yaml_problems({"rate_hz": 50, "nope": 1.0, "thumb": {"channel": 0.0}, "old": 1}, rows, {"old": "new"})
    assert problems == ["rate_hz: YAML gives integer 50, the node declares double", "nope: not declared by the node",
                        "thumb.channel: YAML gives double 0.0, the node declares integer", "'old' is now 'new'"]
