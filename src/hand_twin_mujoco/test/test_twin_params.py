"""Parameter table vs config/twin.yaml, config validation and live-change rules."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from hand_common.contract import TWIN_NODE
from hand_twin_mujoco.params import PARAM_NAMES, PARAMS, check_value, config_from, renderer_problem

CONFIG = pathlib.Path(__file__).resolve().parent.parent / "config" / "twin.yaml"


def yaml_params() -> dict:
    data = yaml.safe_load(CONFIG.read_text())
    assert list(data) == [TWIN_NODE]
    return data[TWIN_NODE]["ros__parameters"]


def test_every_yaml_key_is_declared_and_valid():
    values = yaml_params()
    assert set(values) <= set(PARAM_NAMES), set(values) - set(PARAM_NAMES)
    defaults = {p.name: p.default for p in PARAMS}
    cfg = config_from({**defaults, **values})
    assert cfg.render_rate_hz == 30.0 and cfg.command_timeout_s == 0.1
    assert cfg.safe_flexions == (0.0,) * 5
    # the YAML documents every parameter with the declared default
    assert values == defaults


def test_every_parameter_has_a_description_and_sane_default():
    for p in PARAMS:
        assert len(p.description) > 15, p.name
        if p.range is not None:
            assert p.range[0] <= p.default <= p.range[1], p.name
    assert config_from({p.name: p.default for p in PARAMS}).renders


@pytest.mark.parametrize("name,value,message", [
    ("render_rate_hz", 60.0, r"render_rate_hz must be in \[0, 30\]"),
    ("command_timeout_s", 0.0, "command_timeout_s must be in"),
    ("safe_flexions", [0.0, 0.0], "needs 5 values"),
    ("safe_flexions", [0.0, 0.0, 0.0, 0.0, 1.5], r"in \[0, 1\]"),
    ("integrator", "verlet", "integrator must be one of"),
    ("record_format", "bmp", "jpg or png"),
])
def test_invalid_values_are_refused_with_a_reason(name, value, message):
    defaults = {p.name: p.default for p in PARAMS}
    with pytest.raises(ValueError, match=message):
        config_from({**defaults, name: value})
    assert check_value(name, value) is not None


def test_live_change_rules():
    """Beyond the specs (the configure-time rule is SafeLifecycleNode's, tested in hand_common):
    a configured twin's render_rate_hz > 0 needs a renderer."""
    assert check_value("command_timeout_s", 0.2) is None and check_value("safe_flexions", [1.0] * 5) is None
    assert "no renderer" in renderer_problem("render_rate_hz", 10.0, renderer_exists=False)
    assert renderer_problem("render_rate_hz", 0.0, renderer_exists=False) is None
    assert renderer_problem("render_rate_hz", 10.0, renderer_exists=True) is None


def test_readme_documents_every_parameter():
    readme = (CONFIG.parent.parent / "README.md").read_text()
    missing = [p.name for p in PARAMS if f"`{p.name}`" not in readme]
    assert not missing, missing
