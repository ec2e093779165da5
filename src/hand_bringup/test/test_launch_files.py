"""Launch files, checked without `launch` (it cannot be installed here).

The launch files are executed against recording stand-ins of the `launch` / `launch_ros` classes
they use; each stand-in accepts exactly the keyword arguments of the real Jazzy class, so a
misspelt argument fails here as it would on a stock install. Then every node they start is
checked: the package and executable exist as installed console scripts whose module imports, the
default parameter file exists, and it only sets parameters that the node really declares (the
node is started as a process and asked via /<node>/list_parameters).
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys
import types

import pytest
import yaml
from ament_index_python.packages import get_package_prefix, get_package_share_directory
from rcl_interfaces.srv import ListParameters

from hand_bringup import bringup
from hand_common.testing import NodeProcess, RosProbe

#: Real Jazzy signatures (launch 3.4 / launch_ros 0.26): accepted keyword arguments.
EXECUTE_KW = {"output", "emulate_tty", "condition", "respawn", "respawn_delay", "sigterm_timeout",
              "sigkill_timeout", "additional_env", "env", "cwd", "name", "prefix", "shell", "on_exit", "log_cmd"}
NODE_KW = {"executable", "package", "name", "namespace", "exec_name", "parameters", "remappings",
           "ros_arguments", "arguments"} | EXECUTE_KW
SIGNATURES = {
    "Node": (NODE_KW, {"executable"}),
    "LifecycleNode": (NODE_KW, {"executable", "name", "namespace"}),
    "DeclareLaunchArgument": ({"name", "default_value", "description", "choices", "condition"}, {"name"}),
    "SetEnvironmentVariable": ({"name", "value", "condition"}, {"name", "value"}),
    "LaunchDescription": ({"initial_entities", "deprecated_reason"}, set()),
    "IfCondition": ({"predicate_expression"}, {"predicate_expression"}),
    "UnlessCondition": ({"predicate_expression"}, {"predicate_expression"}),
    "LaunchConfiguration": ({"variable_name", "default"}, {"variable_name"}),
    "PathJoinSubstitution": ({"substitutions"}, {"substitutions"}),
    "PythonExpression": ({"expression", "python_modules"}, {"expression"}),
    "FindPackageShare": ({"package"}, {"package"}),
    "ParameterValue": ({"value", "value_type"}, {"value"}),
    # hand_gazebo's gazebo.launch.py (launch 3.4: IncludeLaunchDescription(source, *, launch_arguments, **action))
    "IncludeLaunchDescription": ({"launch_description_source", "launch_arguments", "condition"},
                                 {"launch_description_source"}),
    "PythonLaunchDescriptionSource": ({"launch_file_path"}, {"launch_file_path"}),
    # launch 3.4: OpaqueFunction(*, function, args=None, kwargs=None, **left_over_kwargs: condition)
    "OpaqueFunction": ({"function", "args", "kwargs", "condition"}, {"function"}),
}
POSITIONAL = {  # positional parameter names, in order
    "DeclareLaunchArgument": ["name"], "SetEnvironmentVariable": ["name", "value"], "LaunchDescription": ["initial_entities"],
    "IfCondition": ["predicate_expression"], "UnlessCondition": ["predicate_expression"],
    "LaunchConfiguration": ["variable_name"], "PathJoinSubstitution": ["substitutions"],
    "PythonExpression": ["expression"], "FindPackageShare": ["package"], "ParameterValue": ["value"],
    "Node": [], "LifecycleNode": [],
    "IncludeLaunchDescription": ["launch_description_source"], "PythonLaunchDescriptionSource": ["launch_file_path"],
    "OpaqueFunction": [],
}
OUR_PACKAGES = {"hand_bringup", "hand_tracking", "hand_joint_mapper", "hand_twin_mujoco", "hand_servo_driver",
                "hand_description", "hand_gazebo", "hand_retarget", "arm_teleop", "hand_console"}
EXTERNAL = {("robot_state_publisher", "robot_state_publisher"), ("rviz2", "rviz2"), ("ros_gz_bridge", "parameter_bridge")}


class Recorded:
    def __init__(self, kind: str, *args, **kwargs):
        allowed, required = SIGNATURES[kind]
        names = POSITIONAL[kind]
        if len(args) > len(names):
            raise TypeError(f"{kind}: too many positional arguments")
        kwargs = {**dict(zip(names, args)), **kwargs}
        unknown = set(kwargs) - allowed
        if unknown:
            raise TypeError(f"{kind}: unexpected keyword arguments {sorted(unknown)}")
        missing = required - set(kwargs)
        if missing:
            raise TypeError(f"{kind}: missing required arguments {sorted(missing)}")
        self.kind, self.kw = kind, kwargs


def _fake_modules() -> dict[str, types.ModuleType]:
    def cls(kind):
        return type(kind, (Recorded,), {"__init__": lambda self, *a, **k: Recorded.__init__(self, kind, *a, **k)})

    layout = {
        "launch": ["LaunchDescription"],
        "launch.actions": ["DeclareLaunchArgument", "IncludeLaunchDescription", "OpaqueFunction",
                           "SetEnvironmentVariable"],
        "launch.launch_description_sources": ["PythonLaunchDescriptionSource"],
        "launch.conditions": ["IfCondition", "UnlessCondition"],
        "launch.substitutions": ["LaunchConfiguration", "PathJoinSubstitution", "PythonExpression"],
        "launch_ros": [],
        "launch_ros.actions": ["Node", "LifecycleNode"],
        "launch_ros.substitutions": ["FindPackageShare"],
        "launch_ros.parameter_descriptions": ["ParameterValue"],
    }
    mods = {}
    for name, kinds in layout.items():
        m = types.ModuleType(name)
        for k in kinds:
            setattr(m, k, cls(k))
        mods[name] = m
    return mods


def _resolve(sub, args: dict[str, str]):
    """Evaluate the recorded substitutions we use (defaults of launch arguments)."""
    if isinstance(sub, str):
        return sub
    if isinstance(sub, Recorded) and sub.kind == "FindPackageShare":
        return get_package_share_directory(sub.kw["package"])
    if isinstance(sub, Recorded) and sub.kind == "PathJoinSubstitution":
        return os.path.join(*[_resolve(s, args) for s in sub.kw["substitutions"]])
    if isinstance(sub, Recorded) and sub.kind == "LaunchConfiguration":
        return args[sub.kw["variable_name"]]
    raise AssertionError(f"cannot resolve {sub!r}")


def load_launch(name: str, package: str = "hand_bringup") -> list[Recorded]:
    path = os.path.join(get_package_share_directory(package), "launch", name)
    saved = {k: sys.modules.get(k) for k in _fake_modules()}
    sys.modules.update(_fake_modules())
    sys.modules.pop("hand_bringup.launch_common", None)
    try:
        ld = runpy.run_path(path)["generate_launch_description"]()
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
        sys.modules.pop("hand_bringup.launch_common", None)
    assert ld.kind == "LaunchDescription"
    return ld.kw["initial_entities"]


def _console_scripts(package: str) -> dict[str, str]:
    """name -> "module:function" from the package's installed entry points."""
    import importlib.metadata as md

    eps = md.distribution(package).entry_points
    return {ep.name: ep.value for ep in eps if ep.group == "console_scripts"}


def is_console(entity: Recorded) -> bool:
    """An entity started only with ``console:=true`` (the console node and its lifecycle manager)."""
    cond = entity.kw.get("condition")
    return (isinstance(cond, Recorded) and cond.kind == "IfCondition"
            and isinstance(cond.kw["predicate_expression"], Recorded)
            and cond.kw["predicate_expression"].kw.get("variable_name") == "console")


LAUNCH_FILES = {"sim.launch.py": "sim", "rviz.launch.py": "rviz", "hardware.launch.py": "hardware",
                "two_hands.launch.py": "two_hands", "arm.launch.py": "arm", "dex.launch.py": "dex",
                "gazebo.launch.py": "gazebo", "robot.launch.py": "robot", "robot_twin.launch.py": "robot_twin",
                "operator.launch.py": "operator"}


def test_every_installed_launch_file_is_checked():
    """No launch file escapes the stand-in run below: the installed set is exactly LAUNCH_FILES."""
    installed = os.listdir(os.path.join(get_package_share_directory("hand_bringup"), "launch"))
    assert sorted(f for f in installed if f.endswith(".launch.py")) == sorted(LAUNCH_FILES)


@pytest.mark.parametrize("launch_file", sorted(LAUNCH_FILES))
def test_launch_file_names_real_executables_and_files(launch_file):
    entities = load_launch(launch_file)
    args = {e.kw["name"]: e.kw.get("default_value") for e in entities if e.kind == "DeclareLaunchArgument"}
    defaults = {k: _resolve(v, {}) for k, v in args.items() if v is not None}
    nodes = [e for e in entities if e.kind in ("Node", "LifecycleNode")]
    lifecycle = [n for n in nodes if n.kind == "LifecycleNode" and not is_console(n)]
    # DDS stays on this machine unless the user asks otherwise (discovery_range:=SUBNET)
    envs = {e.kw["name"]: e for e in entities if e.kind == "SetEnvironmentVariable"}
    env = envs["ROS_AUTOMATIC_DISCOVERY_RANGE"]
    assert defaults[env.kw["value"].kw["variable_name"]] == "LOCALHOST"
    assert all(entities.index(e) < min(entities.index(n) for n in nodes) for e in envs.values())
    two_host = LAUNCH_FILES[launch_file] in bringup.ROBOT_PROFILES + bringup.OPERATOR_PROFILES
    assert set(envs) == ({"ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_STATIC_PEERS", "FASTRTPS_DEFAULT_PROFILES_FILE"}
                         if two_host else {"ROS_AUTOMATIC_DISCOVERY_RANGE"})
    if two_host:  # peer:= is required (no default); the Fast DDS profile is the installed UDP-only one
        assert envs["ROS_STATIC_PEERS"].kw["value"].kw["variable_name"] == "peer" and args["peer"] is None
        profile = defaults[envs["FASTRTPS_DEFAULT_PROFILES_FILE"].kw["value"].kw["variable_name"]]
        assert os.path.isfile(profile) and profile.endswith(bringup.TWO_HOST_FASTDDS_PROFILE)
    # the launch file starts exactly its bringup profile's lifecycle nodes, with the table's names
    expected = bringup.profile_nodes(LAUNCH_FILES[launch_file])
    assert [(n.kw["package"], n.kw["executable"], n.kw["name"]) for n in lifecycle] == \
        [(s.package, s.executable, s.name) for s in expected]
    # and a lifecycle manager that activates them in the profile's order
    (manager,) = [n for n in nodes if n.kw["executable"] == "lifecycle_manager" and not is_console(n)]
    assert manager.kw["parameters"][0]["node_names"] == [s.name for s in expected]
    for n in nodes:
        pkg, exe = n.kw["package"], n.kw["executable"]
        if pkg not in OUR_PACKAGES:
            assert (pkg, exe) in EXTERNAL, f"{launch_file}: unknown external node {pkg}/{exe}"
            continue
        scripts = _console_scripts(pkg)
        assert exe in scripts, f"{launch_file}: {pkg} has no executable '{exe}' (entry points: {sorted(scripts)})"
        assert os.access(os.path.join(get_package_prefix(pkg), "lib", pkg, exe), os.X_OK)
        module = scripts[exe].split(":")[0]
        assert importlib.util.find_spec(module) is not None, f"{pkg}/{exe}: module {module} missing"
    for s in expected:
        params = defaults[f"{s.key}_params"]
        assert os.path.isfile(params), f"{launch_file}: parameter file {params} missing"
        with open(params) as f:
            doc = yaml.safe_load(f)
        assert list(doc) == [s.name], f"{params} must configure exactly /{s.name}"


@pytest.mark.parametrize("launch_file", sorted(LAUNCH_FILES))
def test_console_true_adds_the_console_showing_the_profile(launch_file):
    """``console:=true`` (default false) starts hand_console for this profile, on 127.0.0.1:8080 by
    default, brought up by its own lifecycle manager; nothing else depends on the argument."""
    from hand_console.robots import robot_views

    profile = LAUNCH_FILES[launch_file]
    entities = load_launch(launch_file)
    args = {e.kw["name"]: e for e in entities if e.kind == "DeclareLaunchArgument"}
    assert args["console"].kw["default_value"] == "false"
    assert args["console_host"].kw["default_value"] == "127.0.0.1"
    assert args["console_port"].kw["default_value"] == "8080"
    assert args["console_allow_remote"].kw["default_value"] == "false"
    console = [e for e in entities if e.kind in ("Node", "LifecycleNode") and is_console(e)]
    spec = bringup.NODES["console"]
    (node,) = [e for e in console if e.kind == "LifecycleNode"]
    assert (node.kw["package"], node.kw["executable"], node.kw["name"]) == (spec.package, spec.executable, spec.name)
    file_param, overrides = node.kw["parameters"]
    assert _resolve(file_param, {k: _resolve(a.kw["default_value"], {}) for k, a in args.items()
                                 if a.kw.get("default_value") is not None}) == \
        bringup.share_file(spec.package, spec.params_file)
    assert overrides["profile"] == profile and robot_views(profile)  # the console knows this profile's robot
    for name, launch_arg, value_type in (("port", "console_port", int), ("host", "console_host", str),
                                         ("allow_remote", "console_allow_remote", bool)):
        pv = overrides[name]
        assert pv.kw["value"].kw["variable_name"] == launch_arg and pv.kw["value_type"] is value_type
    (manager,) = [e for e in console if e.kind == "Node"]
    assert manager.kw["executable"] == "lifecycle_manager" and manager.kw["name"] == bringup.CONSOLE_MANAGER_NODE
    assert manager.kw["parameters"][0]["node_names"] == [spec.name]
    assert manager.kw["parameters"][0]["autostart"] is True


def test_two_hands_launch_sets_the_profile_parameters():
    entities = load_launch("two_hands.launch.py")
    nodes = {e.kw["name"]: e for e in entities if e.kind == "LifecycleNode"}
    for name in (bringup.NODES["tracker"].name, bringup.NODES["twin"].name):
        params = nodes[name].kw["parameters"]
        assert {"hands": "two"} in params, f"{name}: {params}"
    # the single-hand profiles do not
    for e in load_launch("sim.launch.py"):
        if e.kind == "LifecycleNode":
            assert not any(isinstance(p, dict) and "hands" in p for p in e.kw["parameters"])


def test_rviz_launch_loads_the_hand_urdf_and_config():
    entities = load_launch("rviz.launch.py")
    (rsp,) = [e for e in entities if e.kind == "Node" and e.kw["executable"] == "robot_state_publisher"]
    urdf = rsp.kw["parameters"][0]["robot_description"]
    assert urdf.lstrip().startswith("<") and "<robot" in urdf and "index_pip" in urdf
    (rviz,) = [e for e in entities if e.kind == "Node" and e.kw["executable"] == "rviz2"]
    config = _resolve(rviz.kw["arguments"][1], {})
    assert os.path.isfile(config)


def test_dex_launch_runs_any_hand_from_its_urdf_and_config(tmp_path):
    """dex.launch.py robot:=<a dex-retargeting .yml kept anywhere> robot_urdf:=<its URDF> rviz:=true:
    both dex nodes get the two files, robot_state_publisher that URDF (meshes as absolute file://
    URIs) on the twin's /dex_twin/joint_states, rviz2 fixed on its root link. The hand is Ability,
    used as if external: its .yml copied elsewhere with a urdf_path that does not resolve."""
    import xml.etree.ElementTree as ET

    from hand_retarget.robot import config_path, default_robot_dir

    urdf = str(default_robot_dir() / "ability_hand" / "ability_hand_right.urdf")
    assert os.path.isfile(urdf), urdf
    cfg = yaml.safe_load(config_path("ability_hand_right").read_text())
    cfg["retargeting"]["urdf_path"] = "nowhere/ability_hand_right.urdf"
    yml = tmp_path / "my_ability_dexpilot.yml"
    yml.write_text(yaml.safe_dump(cfg))
    entities = load_launch("dex.launch.py")
    args = {e.kw["name"]: e.kw.get("default_value") for e in entities if e.kind == "DeclareLaunchArgument"}
    assert {"robot", "robot_urdf", "robot_dir", "rviz"} <= set(args) and args["rviz"] == "false"
    for e in entities:
        if e.kind == "LifecycleNode" and e.kw["executable"] in ("retarget_node", "dex_twin_node"):
            over = e.kw["parameters"][1]
            assert {k: over[k].kw["value"].kw["variable_name"] for k in ("robot", "robot_urdf", "robot_dir")} == \
                {"robot": "robot", "robot_urdf": "robot_urdf", "robot_dir": "robot_dir"}
    (opaque,) = [e for e in entities if e.kind == "OpaqueFunction"]
    context = types.SimpleNamespace(launch_configurations={"robot": str(yml), "robot_urdf": urdf, "robot_dir": "",
                                                           "rviz": "true", "use_sim_time": "false"})
    rsp, rviz = opaque.kw["function"](context)
    assert (rsp.kw["package"], rsp.kw["executable"]) == ("robot_state_publisher", "robot_state_publisher")
    assert rsp.kw["remappings"] == [("joint_states", "/dex_twin/joint_states")]
    description = rsp.kw["parameters"][0]["robot_description"]
    assert description.kind == "ParameterValue" and description.kw["value_type"] is str
    tree = ET.fromstring(description.kw["value"])
    meshes = [m.get("filename") for m in tree.iter("mesh")]
    assert meshes and all(m.startswith("file:///") and os.path.isfile(m[len("file://"):]) for m in meshes)
    joints = {j.get("name") for j in tree.findall("joint")}
    assert {"thumb_q1", "index_q1", "index_q2"} <= joints, sorted(joints)
    assert rviz.kw["arguments"][-2:] == ["--fixed-frame", "base_link"] and os.path.isfile(rviz.kw["arguments"][1])
    # without rviz, and with the default dex_hand
    context.launch_configurations.update(robot="", robot_urdf="", rviz="false")
    (rsp,) = opaque.kw["function"](context)
    assert "index_pip" in rsp.kw["parameters"][0]["robot_description"].kw["value"]


def test_runner_dex_takes_the_robot_files_for_both_nodes(tmp_path):
    """The runner equivalent of robot:= / robot_urdf:= / robot_dir:=: both dex nodes get them
    (paths absolute), a -p of the same parameter wins, a missing file is refused, other profiles
    have no such options."""
    from hand_bringup import runner

    yml, urdf = tmp_path / "my_hand_dexpilot.yml", tmp_path / "my_hand.urdf"
    yml.write_text("retargeting: {}\n")
    urdf.write_text("<robot/>\n")
    args = runner.build_parser().parse_args(["dex", "--robot", str(yml), "--robot-urdf", str(urdf),
                                             "-p", "dex_twin.robot_urdf=/other.urdf"])
    overrides = runner.parse_overrides(args.param)
    runner.robot_overrides(args, overrides)
    assert overrides["dex_retarget"] == {"robot": str(yml), "robot_urdf": str(urdf)}
    assert overrides["dex_twin"] == {"robot": str(yml), "robot_urdf": "/other.urdf"}
    by_name = runner.build_parser().parse_args(["dex", "--robot", "ability_hand_right"])
    over: dict = {}
    runner.robot_overrides(by_name, over)
    assert over["dex_twin"] == {"robot": "ability_hand_right"}
    with pytest.raises(ValueError, match="--robot-urdf: no such file"):
        runner.robot_overrides(runner.build_parser().parse_args(["dex", "--robot-urdf", str(tmp_path / "x.urdf")]), {})
    with pytest.raises(SystemExit):
        runner.build_parser().parse_args(["sim", "--robot", "leap_hand_right"])


@pytest.fixture(scope="module")
def declared_parameters(tmp_path_factory):
    """Every bringup node started once (unconfigured) with its YAML: {node key: declared names}."""
    logs = tmp_path_factory.mktemp("launch_nodes")
    procs = {}
    for s in bringup.NODES.values():
        procs[s.key] = NodeProcess([bringup.executable_path(s), "--ros-args", "-r", f"__node:={s.name}",
                                    "--params-file", bringup.share_file(s.package, s.params_file)],
                                   log_path=str(logs / f"{s.key}.log"))
    probe = RosProbe("launch_param_probe")
    out = {}
    try:
        for s in bringup.NODES.values():
            try:
                res = probe.call(ListParameters, f"/{s.name}/list_parameters", ListParameters.Request(), timeout=30)
            except TimeoutError as exc:
                raise AssertionError(f"{s.name} did not start:\n{procs[s.key].output()[-3000:]}") from exc
            out[s.key] = set(res.result.names)
    finally:
        probe.close()
        for p in procs.values():
            p.stop()
    return out


def _flatten(d: dict, prefix: str = "") -> list[str]:
    """Nested YAML parameter keys → dotted names, as rclpy declares them."""
    out = []
    for k, v in d.items():
        out += _flatten(v, f"{prefix}{k}.") if isinstance(v, dict) else [f"{prefix}{k}"]
    return out


@pytest.mark.parametrize("key", sorted(bringup.NODES))
def test_parameter_files_only_set_declared_parameters(key, declared_parameters):
    s = bringup.NODES[key]
    with open(bringup.share_file(s.package, s.params_file)) as f:
        doc = yaml.safe_load(f)
    keys = set(_flatten(doc[s.name]["ros__parameters"]))

    undeclared = keys - declared_parameters[key]
    assert not undeclared, f"{s.params_file} sets parameters /{s.name} does not declare: {sorted(undeclared)}"


def test_stand_ins_reject_what_the_real_classes_reject():
    mods = _fake_modules()
    with pytest.raises(TypeError, match="unexpected keyword"):
        mods["launch_ros.actions"].Node(package="p", executable="e", parameter=[{}])
    with pytest.raises(TypeError, match="missing required"):
        mods["launch_ros.actions"].LifecycleNode(package="p", executable="e", name="n")


def test_lifecycle_manager_brings_nodes_to_active(tmp_path):
    """The manager the launch files start: configure + activate node_names in order (autostart)."""
    specs = [bringup.NODES["joint_mapper"], bringup.NODES["twin"]]
    procs = [NodeProcess([bringup.executable_path(s), "--ros-args", "-r", f"__node:={s.name}",
                          "--params-file", bringup.share_file(s.package, s.params_file),
                          *(["-p", "render_rate_hz:=0.0"] if s.key == "twin" else []),
                          *(["-p", "description_timeout_s:=0.0"] if s.key == "joint_mapper" else [])],
                         log_path=str(tmp_path / f"{s.key}.log")) for s in specs]
    manager = NodeProcess([os.path.join(get_package_prefix("hand_bringup"), "lib", "hand_bringup",
                                        "lifecycle_manager"), "--ros-args",
                           "-p", f"node_names:=[{', '.join(s.name for s in specs)}]"],
                          log_path=str(tmp_path / "manager.log"))
    probe = RosProbe("manager_probe")
    try:
        from hand_common.testing import wait_until

        def all_active():
            return all(probe.get_state(s.name) == "active" for s in specs)

        wait_until(all_active, 40, "both nodes active")
        # the manager logs after its last activation call returns: wait for the line, not just the states
        wait_until(lambda: "active: joint_mapper, hand_twin" in manager.output(), 10, "the manager's log line")
    finally:
        probe.close()
        for p in [manager, *procs]:
            p.stop()
