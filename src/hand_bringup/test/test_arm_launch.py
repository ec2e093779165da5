"""arm.launch.py checked statically (no `launch` here) with test_launch_files' recording stand-ins of
the launch / launch_ros classes (imported from its test module, not copied)."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import sys

import yaml
from ament_index_python.packages import get_package_prefix

from arm_teleop import topics
from hand_bringup import bringup

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import test_launch_files as stand_ins  # noqa: E402


def load(name: str):
    return stand_ins.load_launch(name)


def test_arm_launch_starts_the_arm_profile_with_real_executables_and_files():
    entities = load("arm.launch.py")
    args = {e.kw["name"]: e.kw.get("default_value") for e in entities if e.kind == "DeclareLaunchArgument"}
    assert {"source", "real_hardware", "allow_motion", "port", "sim_bus", "control_mode"} <= set(args)
    assert args["real_hardware"] == args["allow_motion"] == "false"  # both opt-ins off by default
    nodes = [e for e in entities if e.kind in ("Node", "LifecycleNode")]
    lifecycle = [n for n in nodes if n.kind == "LifecycleNode" and not stand_ins.is_console(n)]
    expected = bringup.profile_nodes("arm")
    assert [(n.kw["package"], n.kw["executable"], n.kw["name"]) for n in lifecycle] == \
        [(s.package, s.executable, s.name) for s in expected]
    (manager,) = [n for n in nodes if n.kw["executable"] == "lifecycle_manager" and not stand_ins.is_console(n)]
    assert manager.kw["parameters"][0]["node_names"] == [s.name for s in expected]
    for n in nodes:
        pkg, exe = n.kw["package"], n.kw["executable"]
        scripts = stand_ins._console_scripts(pkg)
        assert exe in scripts, f"{pkg} has no executable {exe}"
        assert os.access(os.path.join(get_package_prefix(pkg), "lib", pkg, exe), os.X_OK)
        assert importlib.util.find_spec(scripts[exe].split(":")[0]) is not None
    for s in expected:
        params = stand_ins._resolve(args[f"{s.key}_params"], {})
        with open(params) as f:
            assert list(yaml.safe_load(f)) == [s.name]
    driver = next(n for n in lifecycle if n.kw["name"] == "arm_driver")
    assert {"real_hardware", "allow_motion", "port"} <= set(driver.kw["parameters"][1])


def test_bringup_names_are_the_packages_names():
    nodes = bringup.NODES
    assert (nodes["arm_teleop"].name, nodes["arm_twin"].name, nodes["arm_driver"].name) == \
        (topics.TELEOP_NODE, topics.TWIN_NODE, topics.DRIVER_NODE)
    assert nodes["arm_twin"].actuator and nodes["arm_driver"].actuator and not nodes["arm_teleop"].actuator
    assert bringup.profile_nodes("arm")[-1].key == "tracker"  # the tracker is activated last
