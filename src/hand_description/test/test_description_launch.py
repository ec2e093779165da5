"""display.launch.py and hand.rviz, checked without `launch`/rviz (not installable here).

The launch file runs against stand-ins of the few launch/launch_ros classes it uses, each
accepting exactly the keyword arguments of the real Jazzy class; the OpaqueFunction is then
called with the launch arguments' defaults (or overrides) like `ros2 launch` would.
"""

import pathlib
import runpy
import sys
import types

import pytest
import yaml

from hand_description import paths

PKG = pathlib.Path(__file__).resolve().parents[1]
LAUNCH = PKG / "launch" / "display.launch.py"

KW = {
    "Node": {"executable", "package", "name", "namespace", "exec_name", "parameters", "remappings", "ros_arguments",
             "arguments", "output", "emulate_tty", "condition", "respawn", "respawn_delay", "additional_env", "env",
             "cwd", "prefix", "shell", "on_exit", "sigterm_timeout", "sigkill_timeout", "log_cmd"},
    "DeclareLaunchArgument": {"name", "default_value", "description", "choices", "condition"},
    "LaunchDescription": {"initial_entities", "deprecated_reason"},
    "OpaqueFunction": {"function", "args", "kwargs", "condition"},
    "SetEnvironmentVariable": {"name", "value", "condition"},
    "IfCondition": {"predicate_expression"},
    "LaunchConfiguration": {"variable_name", "default"},
}
POSITIONAL = {"DeclareLaunchArgument": ["name"], "LaunchDescription": ["initial_entities"],
              "IfCondition": ["predicate_expression"], "LaunchConfiguration": ["variable_name"],
              "OpaqueFunction": [], "Node": [], "SetEnvironmentVariable": ["name", "value"]}


class Context:
    def __init__(self, values):
        self.values = values


def _stand_ins():
    def make(kind):
        def init(self, *args, **kwargs):
            if len(args) > len(POSITIONAL[kind]):
                raise TypeError(f"{kind}: too many positional arguments")
            kwargs = {**dict(zip(POSITIONAL[kind], args)), **kwargs}
            unknown = set(kwargs) - KW[kind]
            if unknown:
                raise TypeError(f"{kind}: unexpected keyword arguments {sorted(unknown)}")
            self.kind, self.kw = kind, kwargs

        def perform(self, context):
            return context.values[self.kw["variable_name"]]

        return type(kind, (), {"__init__": init, "perform": perform})

    mods = {name: types.ModuleType(name) for name in ("launch", "launch.actions", "launch.conditions",
                                                      "launch.substitutions", "launch_ros", "launch_ros.actions")}
    mods["launch"].LaunchDescription = make("LaunchDescription")
    mods["launch.actions"].DeclareLaunchArgument = make("DeclareLaunchArgument")
    mods["launch.actions"].OpaqueFunction = make("OpaqueFunction")
    mods["launch.actions"].SetEnvironmentVariable = make("SetEnvironmentVariable")
    mods["launch.conditions"].IfCondition = make("IfCondition")
    mods["launch.substitutions"].LaunchConfiguration = make("LaunchConfiguration")
    mods["launch_ros.actions"].Node = make("Node")
    return mods


@pytest.fixture()
def launch(monkeypatch):
    for name, mod in _stand_ins().items():
        monkeypatch.setitem(sys.modules, name, mod)
    ld = runpy.run_path(str(LAUNCH))["generate_launch_description"]()
    args = {a.kw["name"]: a.kw for a in ld.kw["initial_entities"] if a.kind == "DeclareLaunchArgument"}
    (opaque,) = [a for a in ld.kw["initial_entities"] if a.kind == "OpaqueFunction"]

    def run(**overrides):
        values = {n: a["default_value"] for n, a in args.items()}
        values.update(overrides)
        return {n.kw["package"]: n for n in opaque.kw["function"](Context(values))}, values

    return args, run


def test_launch_arguments(launch):
    args, _ = launch
    assert set(args) == {"side", "gui", "rviz", "rviz_config", "joint_states", "use_sim_time", "discovery_range"}
    assert args["discovery_range"]["default_value"] == "LOCALHOST"
    assert args["side"]["choices"] == ["right", "left"] and args["gui"]["default_value"] == "true"
    assert pathlib.Path(args["rviz_config"]["default_value"]) == paths.rviz_config_path()


@pytest.mark.parametrize("side", ["right", "left"])
def test_robot_state_publisher_gets_the_urdf_contents(launch, side):
    _, run = launch
    nodes, values = run(side=side)
    assert set(nodes) == {"robot_state_publisher", "joint_state_publisher_gui", "rviz2"}
    rsp = nodes["robot_state_publisher"].kw
    assert rsp["executable"] == "robot_state_publisher"
    assert rsp["parameters"][0]["robot_description"] == paths.urdf_path(side).read_text()
    assert rsp["remappings"] == [("joint_states", "/joint_states")]
    gui = nodes["joint_state_publisher_gui"].kw
    assert gui["executable"] == "joint_state_publisher_gui"
    assert gui["condition"].kw["predicate_expression"].kw["variable_name"] == "gui"  # optional via gui:=false
    rviz = nodes["rviz2"].kw
    assert rviz["arguments"] == ["-d", values["rviz_config"]] and pathlib.Path(values["rviz_config"]).is_file()


def test_twin_joint_states_can_drive_the_model(launch):
    _, run = launch
    nodes, _ = run(gui="false", joint_states="/hand_twin/joint_states")
    assert nodes["robot_state_publisher"].kw["remappings"] == [("joint_states", "/hand_twin/joint_states")]


def test_rviz_config_shows_robot_model_and_tf_in_palm_frame():
    cfg = yaml.safe_load(paths.rviz_config_path().read_text())
    vm = cfg["Visualization Manager"]
    assert vm["Global Options"]["Fixed Frame"] == "palm"
    displays = {d["Class"]: d for d in vm["Displays"]}
    assert {"rviz_default_plugins/RobotModel", "rviz_default_plugins/TF"} <= set(displays)
    model = displays["rviz_default_plugins/RobotModel"]
    assert model["Description Source"] == "Topic" and model["Description Topic"]["Value"] == "/robot_description"
    assert model["Description Topic"]["Durability Policy"] == "Transient Local"
    assert displays["rviz_default_plugins/TF"]["Enabled"] is True


def test_setup_installs_the_data_and_declares_the_scripts():
    text = (PKG / "setup.py").read_text()
    for d in ("launch", "urdf", "mjcf", "rviz", "config"):
        assert f"'{d}'" in text
    assert "generate_hand_models = hand_description.generate:main" in text
    assert "render_hand = hand_description.render:main" in text
    from hand_description import generate, render
    assert callable(generate.main) and callable(render.main)
