"""Parameter tables, YAML files, the bringup profile and the launch file agree with each other."""

import ast
import os
import pathlib

import pytest
import yaml

from hand_bringup import bringup
from hand_retarget.params import RETARGET_PARAMS, TWIN_PARAMS, check_value, pipeline_config
from hand_retarget.topics import DEX_TWIN_NODE, RETARGET_NODE

PKG = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("node", "file", "params"), [(RETARGET_NODE, "retarget.yaml", RETARGET_PARAMS),
                                                       (DEX_TWIN_NODE, "dex_twin.yaml", TWIN_PARAMS)])
def test_yaml_sets_exactly_the_declared_parameters_with_valid_values(node, file, params):
    values = yaml.safe_load((PKG / "config" / file).read_text())[node]["ros__parameters"]
    assert set(values) == {p.name for p in params}
    for p in params:
        assert check_value(params, p.name, values[p.name]) is None, p.name
        assert values[p.name] == p.default, f"{p.name}: YAML and declared default differ"


def test_pipeline_config_from_parameters_and_live_rules():
    defaults = {p.name: p.default for p in RETARGET_PARAMS}
    cfg = pipeline_config(defaults)
    assert cfg.retarget.method == "dexpilot" and cfg.max_velocity == 10.0 and cfg.preprocess.mirror == "auto"
    with pytest.raises(ValueError, match="method must be one of"):
        pipeline_config({**defaults, "method": "ik"})
    with pytest.raises(ValueError, match=r"max_acceleration must be in"):
        pipeline_config({**defaults, "max_acceleration": float("nan")})
    # the configure-time rule is SafeLifecycleNode's (hand_common's test_param_spec)
    assert check_value(RETARGET_PARAMS, "max_velocity", 5.0) is None
    assert "hand must be one of" in check_value(RETARGET_PARAMS, "hand", "both")


def test_bringup_dex_profile_and_launch_file():
    specs = bringup.profile_nodes("dex")
    assert [s.key for s in specs] == ["dex_twin", "dex_retarget", "tracker"]
    by_key = {s.key: s for s in specs}
    assert by_key["dex_retarget"].name == RETARGET_NODE and by_key["dex_twin"].name == DEX_TWIN_NODE
    assert by_key["dex_twin"].actuator
    for s in specs:
        assert os.access(bringup.executable_path(s), os.X_OK)
        assert os.path.isfile(bringup.share_file(s.package, s.params_file))
    tree = ast.parse((PKG.parent / "hand_bringup" / "launch" / "dex.launch.py").read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "profile_launch"]
    assert [c.args[0].value for c in calls] == ["dex"]


def test_rest_blend_parameters_reach_the_pipeline_config():
    defaults = {p.name: p.default for p in RETARGET_PARAMS}
    assert pipeline_config(defaults).rest_blend.enabled is None   # auto: on for URDF robots, off for dex_hand
    on = pipeline_config({**defaults, "rest_blend": "enabled", "rest_blend_open_flexion": 0.1,
                          "rest_blend_release_flexion": 0.4}).rest_blend
    assert (on.enabled, on.open_flexion, on.release_flexion) == (True, 0.1, 0.4)
    assert pipeline_config({**defaults, "rest_blend": "disabled"}).rest_blend.enabled is False
    with pytest.raises(ValueError, match="rest_blend must be one of"):
        pipeline_config({**defaults, "rest_blend": "on"})
    with pytest.raises(ValueError, match="rest_blend_open_flexion .0.5. must be below rest_blend_release_flexion"):
        pipeline_config({**defaults, "rest_blend_open_flexion": 0.5})
