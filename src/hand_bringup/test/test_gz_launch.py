"""gazebo.launch.py, checked without `launch` or Gazebo: run against test_launch_files' recording
stand-ins of the launch classes (test/test_launch_files.py, which holds the real Jazzy keyword
signatures, IncludeLaunchDescription and PythonLaunchDescriptionSource included)."""

from __future__ import annotations

import importlib.util
import os
import pathlib

import pytest
import yaml
from ament_index_python.packages import get_package_prefix, get_package_share_directory

from hand_bringup import bringup
from hand_gazebo import world

HELPERS = pathlib.Path(__file__).resolve().parent / "test_launch_files.py"


@pytest.fixture(scope="module")
def lf():
    spec = importlib.util.spec_from_file_location("hand_tracking_launch_checks", HELPERS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def entities(lf):
    return lf.load_launch("gazebo.launch.py")


def test_profile_nodes_parameter_files_and_manager(lf, entities):
    args = {e.kw["name"]: e.kw.get("default_value") for e in entities if e.kind == "DeclareLaunchArgument"}
    specs = bringup.profile_nodes("gazebo")
    assert [s.key for s in specs] == ["gz_commander", "tracker"]
    lifecycle = [e for e in entities if e.kind == "LifecycleNode" and not lf.is_console(e)]
    assert [(n.kw["package"], n.kw["executable"], n.kw["name"]) for n in lifecycle] == \
        [(s.package, s.executable, s.name) for s in specs]
    (tracker,) = [n for n in lifecycle if n.kw["name"] == "hand_tracker"]
    assert {"hands": "two"} in tracker.kw["parameters"]
    (manager,) = [e for e in entities if e.kind == "Node" and e.kw["executable"] == "lifecycle_manager"
                  and not lf.is_console(e)]
    assert manager.kw["parameters"][0]["node_names"] == ["gz_hand_commander", "hand_tracker"]
    for s in specs:
        path = lf._resolve(args[f"{s.key}_params"], {})
        with open(path) as f:
            assert list(yaml.safe_load(f)) == [s.name]
        scripts = lf._console_scripts(s.package)
        assert s.executable in scripts and importlib.util.find_spec(scripts[s.executable].split(":")[0])
        assert os.access(os.path.join(get_package_prefix(s.package), "lib", s.package, s.executable), os.X_OK)


def test_gz_sim_gets_the_installed_world_and_the_bridge_its_generated_config(lf, entities):
    args = {e.kw["name"]: e.kw.get("default_value") for e in entities if e.kind == "DeclareLaunchArgument"}
    world_file = lf._resolve(args["world"], {})
    share = get_package_share_directory("hand_gazebo")
    assert world_file == os.path.join(share, "worlds", "two_hands.sdf") and os.path.isfile(world_file)
    (include,) = [e for e in entities if e.kind == "IncludeLaunchDescription"]
    source = include.kw["launch_description_source"]
    assert source.kind == "PythonLaunchDescriptionSource"
    parts = source.kw["launch_file_path"].kw["substitutions"]  # ros_gz_sim's own launch file
    assert parts[0].kind == "FindPackageShare" and parts[0].kw["package"] == "ros_gz_sim"
    assert parts[1:] == ["launch", "gz_sim.launch.py"]
    ((key, value),) = include.kw["launch_arguments"]
    assert key == "gz_args"
    assert [v.kw["variable_name"] if not isinstance(v, str) else v for v in value] == ["gz_args", " ", "world"]
    assert args["gz_args"] == "-r"
    (bridge,) = [e for e in entities if e.kind == "Node" and e.kw["package"] == "ros_gz_bridge"]
    assert bridge.kw["executable"] == "parameter_bridge"
    config = lf._resolve(args["bridge_config"], {})
    assert bridge.kw["parameters"][0]["config_file"].kw["variable_name"] == "bridge_config"
    assert config == os.path.join(share, "config", "gz_bridge.yaml")
    with open(config) as f:
        topics = {e["ros_topic_name"] for e in yaml.safe_load(f)}
    assert {world.command_topic("left", "index_mcp"), world.joint_state_topics("right")[1], "/clock"} <= topics
