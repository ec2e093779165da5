"""The parameter table, the YAML file and the config builder agree."""

import os

import pytest
import yaml

from hand_common.contract import FINGER_NAMES, SERVO_DRIVER_NODE
from hand_servo_driver.core import DriverConfigError
from hand_servo_driver.parameters import PARAM_BY_NAME, PARAMS, build_config, defaults

YAML = os.path.join(os.path.dirname(__file__), "..", "config", "servo_driver.yaml")


def flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def yaml_params():
    with open(YAML) as f:
        doc = yaml.safe_load(f)
    assert list(doc) == [SERVO_DRIVER_NODE]
    return flatten(doc[SERVO_DRIVER_NODE]["ros__parameters"])


def test_every_yaml_key_is_declared_with_the_declared_type():
    values = yaml_params()
    unknown = sorted(set(values) - set(PARAM_BY_NAME))
    assert unknown == []
    for name, v in values.items():
        default = PARAM_BY_NAME[name].default
        assert type(v) is type(default), f"{name}: YAML {type(v).__name__}, declared {type(default).__name__}"
        if isinstance(v, list):
            assert all(isinstance(x, float) for x in v), f"{name}: write floats (0.0, 1.0)"


def test_yaml_builds_a_valid_config_matching_the_defaults():
    cfg, link = build_config(yaml_params())
    assert cfg.names == FINGER_NAMES and cfg.channels == (0, 1, 2, 3, 4)
    assert link.baud == 115200 and not link.dry_run
    assert cfg.safe_pulses().tolist() == [1000.0] * 5
    d_cfg, _ = build_config(defaults())
    assert d_cfg.rates_us() == pytest.approx(cfg.rates_us(), rel=1e-4)


def test_every_parameter_has_a_description_and_numbers_have_ranges():
    for s in PARAMS:
        assert len(s.description) > 15, s.name
        if type(s.default) in (int, float):
            assert s.range is not None, s.name
            assert s.range[0] <= s.default <= s.range[1], s.name


@pytest.mark.parametrize("changes, match", [
    ({"index.min_pulse_us": 2100}, "index: need 500 <= min_us"),
    ({"ring.channel": 1}, "ring and index both use channel 1"),
    ({"safe_mode": "off"}, "safe_mode"),
    ({"pinky.map_flexion": [0.0, 0.5, 1.0]}, "pinky: map_flexion"),
    ({"reconnect_min_s": 5.0}, "reconnect_min_s"),
    ({"port": "", "dry_run": False}, "port is empty"),
    ({f"{n}.enabled": False for n in FINGER_NAMES}, "no servo enabled"),
])
def test_bad_values_are_refused_with_the_parameter_name(changes, match):
    with pytest.raises(DriverConfigError, match=match):
        build_config(changes)


def test_disabled_servo_is_left_out():
    cfg, _ = build_config({"thumb.enabled": False, "index.channel": 0, "middle.channel": 7, "board_channels": 8})
    assert cfg.names == FINGER_NAMES[1:] and cfg.channels == (0, 7, 3, 4)


def test_readme_documents_every_parameter():
    with open(os.path.join(os.path.dirname(__file__), "..", "README.md")) as f:
        readme = f.read()
    for s in PARAMS:
        name = s.name
        if "." in name:
            name = "<finger>." + name.split(".", 1)[1]
        assert f"`{name}`" in readme, f"{name} missing from README.md"


@pytest.mark.parametrize("values, reason", [
    ({"heartbeat_period_s": 0.6}, "heartbeat_period_s 0.6 s is too long for a board watchdog of 0.5 s"),
    ({"heartbeat_period_s": 2.0}, "heartbeat_period_s 2 s is too long"),
    ({"heartbeat_period_s": 0.3}, "need at most 0.25 s"),
    ({"heartbeat_period_s": 0.2, "board_watchdog_s": 0.3}, "board watchdog of 0.3 s (board_watchdog_s)"),
    ({"thumb.channel": 7}, "thumb.channel 7 does not exist on a 5-channel board"),
    ({"pinky.channel": 5}, "pinky.channel 5 does not exist"),
    ({"command_timeout_s": 0.03, "rate_hz": 50.0}, "command_timeout_s 0.03 s is shorter than two control periods"),
])
def test_cross_parameter_rules_refuse_with_reasons(values, reason):
    with pytest.raises(DriverConfigError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        build_config(values)


def test_cross_parameter_rules_accept_and_follow_the_board():
    build_config({"heartbeat_period_s": 0.25})  # exactly half the watchdog
    build_config({"heartbeat_period_s": 0.6, "board_watchdog_s": 0.0})  # watchdog disabled
    build_config({"thumb.channel": 7, "board_channels": 8, "index.channel": 1})
    build_config({"thumb.channel": 7, "thumb.enabled": False})  # a disabled servo has no channel
    # the board's STATUS values take over from the stand-in parameters
    with pytest.raises(DriverConfigError, match="5-channel board \\(the board reports"):
        build_config({"thumb.channel": 7, "board_channels": 8, "index.channel": 1}, board_channels=5)
    with pytest.raises(DriverConfigError, match="board watchdog of 0.15 s \\(the board reports\\)"):
        build_config({}, board_watchdog_s=0.15, board_channels=5)
    build_config({"heartbeat_period_s": 0.4}, board_watchdog_s=1.0, board_channels=5)
