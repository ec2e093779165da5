"""Builds the launch descriptions of ``launch/*.launch.py`` from :mod:`hand_bringup.bringup`.

Imported only by launch files on a stock ROS 2 Jazzy install (``launch`` and ``launch_ros``
cannot be installed on machines without ROS; the embedded runner uses bringup directly).

Launch arguments shared by every profile:
  source         frame source for the tracker, e.g. ``camera:0``, ``video:/path/clip.mp4``
  <key>_params   parameter YAML per node (defaults: the package's ``config/<node>.yaml``)
  use_sim_time   passed to every node
  headless       twin without the interactive viewer (offscreen rendering only)
  discovery_range  ROS_AUTOMATIC_DISCOVERY_RANGE of the nodes (default LOCALHOST)
  console        true: also the operator console (hand_console, a local web page showing this
                 profile's robot), brought up by its own lifecycle manager so that a busy port
                 never holds the robot's nodes back; ``console_port`` (8080), ``console_host``
                 (127.0.0.1; another address needs ``console_allow_remote:=true``, and the node
                 prints a warning: anyone who reaches the page can recalibrate and move the robot)
Profile-specific: ``robot``, ``robot_urdf``, ``robot_dir`` and ``rviz`` (dex: robot_state_publisher
with that URDF on the twin's joint states), ``port`` and ``sim_board`` (hardware, robot), ``rviz`` (rviz), ``control_mode``,
``real_hardware``, ``allow_motion``, ``port`` and ``sim_bus`` (arm), ``peer`` and
``fastdds_profile`` (the two-host profiles robot, robot_twin, operator).
"""

from __future__ import annotations

import os

from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution, PythonExpression
from launch_ros.actions import LifecycleNode, Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from hand_bringup.bringup import (
    CONSOLE,
    CONSOLE_MANAGER_NODE,
    LIFECYCLE_MANAGER_NODE,
    NODES,
    TWO_HOST_FASTDDS_PROFILE,
    NodeSpec,
    profile_nodes,
    profile_params,
)
from launch import LaunchDescription


def _overrides(spec: NodeSpec) -> dict:
    """Node parameters that the launch arguments set (``NodeSpec.launch_args``)."""
    out = {"use_sim_time": ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)}
    for la in spec.launch_args:
        if la.expr == "not":
            value = PythonExpression(["'", LaunchConfiguration(la.arg), "'.lower() not in ('true', '1')"])
        elif la.expr == "servo_port":
            value = _servo_port()
        elif la.expr:
            raise ValueError(f"{spec.key}: unknown launch expression {la.expr!r}")
        else:
            value = (LaunchConfiguration(la.arg) if la.default is None
                     else LaunchConfiguration(la.arg, default=la.default))
        out[la.param] = ParameterValue(value, value_type=la.type)
    return out


def _arguments(specs: list[NodeSpec]) -> list[DeclareLaunchArgument]:
    args = [
        DeclareLaunchArgument("source", default_value="camera:0",
                              description="Tracker frame source: camera:<index|/dev/videoN>, video:<file>, "
                                          "images:<dir>, bag:<rosbag2 dir>"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="Use /clock"),
        DeclareLaunchArgument("headless", default_value="false",
                              description="Twin without the interactive MuJoCo viewer"),
    ]
    for s in specs:
        args.append(DeclareLaunchArgument(
            f"{s.key}_params",
            default_value=PathJoinSubstitution([FindPackageShare(s.package), s.params_file]),
            description=f"Parameter file of /{s.name}"))
    return args


def _node(spec: NodeSpec, profile: str = "") -> LifecycleNode:
    return LifecycleNode(
        package=spec.package,
        executable=spec.executable,
        name=spec.name,
        namespace="",
        parameters=[LaunchConfiguration(f"{spec.key}_params"), _overrides(spec),
                    *([params] if (params := profile_params(profile, spec.key)) else [])],
        output="screen",
        emulate_tty=True,
    )


def console_extras(profile: str) -> tuple[list, list]:
    """``console`` (default false), ``console_port``, ``console_host``, ``console_allow_remote`` and,
    when ``console:=true``, the console lifecycle node (showing ``profile``'s robot) with its own
    lifecycle manager (autostart)."""
    spec = NODES[CONSOLE]
    on = IfCondition(LaunchConfiguration("console"))
    arguments = [
        DeclareLaunchArgument("console", default_value="false", choices=["true", "false"],
                              description="Also serve the operator console (a local web page) at "
                                          "http://<console_host>:<console_port>"),
        DeclareLaunchArgument("console_port", default_value="8080", description="The console's TCP port"),
        DeclareLaunchArgument("console_host", default_value="127.0.0.1",
                              description="Address the console binds; another than 127.0.0.1 needs "
                                          "console_allow_remote:=true (anyone who reaches the page can "
                                          "recalibrate the tracker and move the robot)"),
        DeclareLaunchArgument("console_allow_remote", default_value="false", choices=["true", "false"],
                              description="Allow a non-loopback console_host (a warning is printed)"),
        DeclareLaunchArgument(f"{spec.key}_params",
                              default_value=PathJoinSubstitution([FindPackageShare(spec.package), spec.params_file]),
                              description=f"Parameter file of /{spec.name}"),
    ]
    node = LifecycleNode(
        package=spec.package, executable=spec.executable, name=spec.name, namespace="",
        parameters=[LaunchConfiguration(f"{spec.key}_params"),
                    {"profile": profile,
                     "port": ParameterValue(LaunchConfiguration("console_port"), value_type=int),
                     "host": ParameterValue(LaunchConfiguration("console_host"), value_type=str),
                     "allow_remote": ParameterValue(LaunchConfiguration("console_allow_remote"), value_type=bool),
                     "use_sim_time": ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)}],
        output="screen", emulate_tty=True, condition=on)
    manager = Node(
        package="hand_bringup", executable="lifecycle_manager", name=CONSOLE_MANAGER_NODE,
        parameters=[{"node_names": [spec.name], "autostart": True,
                     "use_sim_time": ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)}],
        output="screen", condition=on)
    return arguments, [node, manager]


def profile_launch(profile: str, extra_arguments=(), extra_actions=(), environment=()) -> LaunchDescription:
    """Launch description for a bringup profile: its lifecycle nodes with their YAML files, and a
    lifecycle manager that configures and activates them in order (autostart). ``environment``:
    actions (SetEnvironmentVariable) that must precede every started process."""
    specs = profile_nodes(profile)
    manager = Node(
        package="hand_bringup",
        executable="lifecycle_manager",
        name=LIFECYCLE_MANAGER_NODE,
        parameters=[{"node_names": [s.name for s in specs], "autostart": True,
                     "use_sim_time": ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)}],
        output="screen",
    )
    console_arguments, console_actions = console_extras(profile)
    return LaunchDescription(
        discovery_range() + list(environment) + _arguments(specs) + list(extra_arguments) + console_arguments
        + [_node(s, profile) for s in specs]
        + list(extra_actions) + [manager] + console_actions
    )


def discovery_range() -> list:
    """``discovery_range`` argument (default LOCALHOST: DDS traffic stays on this machine; SUBNET to
    run the graph across machines) applied to every process the launch file starts."""
    return [
        DeclareLaunchArgument("discovery_range", default_value="LOCALHOST",
                              choices=["LOCALHOST", "SUBNET", "SYSTEM_DEFAULT", "OFF"],
                              description="ROS_AUTOMATIC_DISCOVERY_RANGE of the started nodes"),
        SetEnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE", LaunchConfiguration("discovery_range")),
    ]


def two_host_extras():
    """``peer`` (required: the other host's address or name, several separated by ``;``) and
    ``fastdds_profile`` (default: this package's ``config/fastdds_two_host.xml``, UDPv4 only), set as
    ``ROS_STATIC_PEERS`` and ``FASTRTPS_DEFAULT_PROFILES_FILE`` for every process. With the default
    ``discovery_range`` LOCALHOST, Jazzy's rmw_fastrtps clears the multicast discovery locators and
    adds the static peers and 127.0.0.1 as initial peers: discovery reaches this host and the peers,
    nothing else on the network."""
    arguments = [
        DeclareLaunchArgument("peer", description="The other host (address or name; several separated by ';'): "
                                                  "ROS_STATIC_PEERS of the started nodes"),
        DeclareLaunchArgument("fastdds_profile",
                              default_value=PathJoinSubstitution([FindPackageShare("hand_bringup"),
                                                                  TWO_HOST_FASTDDS_PROFILE]),
                              description="Fast DDS XML profile (FASTRTPS_DEFAULT_PROFILES_FILE) of the started nodes"),
    ]
    actions = [
        SetEnvironmentVariable("ROS_STATIC_PEERS", LaunchConfiguration("peer")),
        SetEnvironmentVariable("FASTRTPS_DEFAULT_PROFILES_FILE", LaunchConfiguration("fastdds_profile")),
    ]
    return arguments, actions


#: Where ``sim_board:=true`` links its pty when ``port`` is left at the real board's default: a
#: normal user may not create ``/dev/ttyACM0`` (nor the board's log beside it).
SIM_BOARD_PORT = "/tmp/hand_servo_board"
REAL_BOARD_PORT = "/dev/ttyACM0"


def _servo_port() -> PythonExpression:
    """The servo port: ``port``, except ``SIM_BOARD_PORT`` for a simulated board on the default port."""
    return PythonExpression([
        f"'{SIM_BOARD_PORT}' if '", LaunchConfiguration("sim_board"), "'.lower() in ('true', '1') and '",
        LaunchConfiguration("port"), f"' == '{REAL_BOARD_PORT}' else '", LaunchConfiguration("port"), "'"])


def hardware_extras():
    """``port`` argument and an optional simulated board (``sim_board:=true``) on that port."""
    arguments = [
        DeclareLaunchArgument("port", default_value=REAL_BOARD_PORT,
                              description="Serial device of the servo board"),
        DeclareLaunchArgument("sim_board", default_value="false",
                              description=f"Start the simulated board and link its pty at `port` ({SIM_BOARD_PORT} "
                                          f"when port is left at {REAL_BOARD_PORT})"),
    ]
    board = Node(package="hand_servo_driver", executable="sim_board", name="sim_board",
                 arguments=["--link", _servo_port()], output="screen",
                 condition=IfCondition(LaunchConfiguration("sim_board")))
    return arguments, [board]


def arm_extras():
    """The arm's arguments (control mode, the two hardware opt-ins, bus port) and an optional
    simulated STS3215 bus (``sim_bus:=true``) linked at ``port``."""
    arguments = [
        DeclareLaunchArgument("control_mode", default_value="cartesian", description="cartesian | joint"),
        DeclareLaunchArgument("real_hardware", default_value="false",
                              description="Opt-in 1: open the STS3215 bus (alone: read-only, torque off)"),
        DeclareLaunchArgument("allow_motion", default_value="false",
                              description="Opt-in 2 (with real_hardware): torque on and move"),
        DeclareLaunchArgument("port", default_value="/dev/ttyACM0", description="Serial device of the bus"),
        DeclareLaunchArgument("sim_bus", default_value="false",
                              description="Start the simulated STS3215 bus and link its pty at `port`"),
    ]
    bus = Node(package="arm_teleop", executable="sim_sts_bus", name="sim_sts_bus",
               arguments=["--link", LaunchConfiguration("port")], output="screen",
               condition=IfCondition(LaunchConfiguration("sim_bus")))
    return arguments, [bus]


def rviz_extras():
    """robot_state_publisher with hand_description's URDF, and rviz2 with the hand config."""
    from hand_description.paths import urdf_path

    with open(urdf_path()) as f:
        robot_description = f.read()
    arguments = [DeclareLaunchArgument("rviz", default_value="true", description="Start rviz2")]
    rsp = Node(package="robot_state_publisher", executable="robot_state_publisher",
               name="robot_state_publisher", output="screen",
               # publish_frequency caps TF publication (Jazzy default 20 Hz): above the camera's 30 fps
               parameters=[{"robot_description": robot_description, "publish_frequency": 60.0,
                            "use_sim_time": ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)}])
    rviz = Node(package="rviz2", executable="rviz2", name="rviz2", output="screen",
                arguments=["-d", PathJoinSubstitution([FindPackageShare("hand_description"), "rviz", "hand.rviz"])],
                condition=IfCondition(LaunchConfiguration("rviz")))
    return arguments, [rsp, rviz]


def dex_robot_extras():
    """The dexterous profile's robot: ``robot`` (a dex-retargeting name or .yml; empty = dex_hand),
    ``robot_urdf`` (its URDF, replacing the .yml's urdf_path), ``robot_dir`` (where a relative
    urdf_path is looked up), given to the retarget node and the twin; robot_state_publisher with
    that URDF on the twin's measured ``/dex_twin/joint_states`` (mimic joints follow their
    equation in robot_state_publisher as in the twin) and, with ``rviz:=true``, rviz2 fixed on the
    URDF's root link. The URDF is resolved when the launch runs (OpaqueFunction), as the nodes
    resolve it (:func:`hand_retarget.robot.state_publisher_description`)."""
    arguments = [
        DeclareLaunchArgument("robot", default_value="",
                              description="Robot hand: empty = dex_hand; a dex-retargeting robot name (leap_hand_right, "
                                          "ability_hand_right, ...) or the path to its dex-retargeting .yml"),
        DeclareLaunchArgument("robot_urdf", default_value="",
                              description="The robot's URDF (replaces the .yml's urdf_path); empty = the .yml's, "
                                          "under robot_dir"),
        DeclareLaunchArgument("robot_dir", default_value="",
                              description="Folder of the robot URDFs for a relative urdf_path; empty = "
                                          "$HAND_ROBOTS_DIR, else ../shared/robots"),
        DeclareLaunchArgument("rviz", default_value="false", description="Start rviz2 on the robot's URDF"),
    ]
    return arguments, [OpaqueFunction(function=dex_state_publisher)]


def dex_state_publisher(context, *args, **kwargs) -> list:
    """OpaqueFunction body of :func:`dex_robot_extras` (``context.launch_configurations``: the
    launch arguments as strings)."""
    from ament_index_python.packages import get_package_share_directory

    from hand_retarget.robot import state_publisher_description
    from hand_retarget.topics import TOPIC_TWIN_JOINT_STATES

    cfg = context.launch_configurations
    description, root_link = state_publisher_description(cfg.get("robot", ""), cfg.get("robot_dir", "") or None,
                                                         cfg.get("robot_urdf", "") or None)
    sim_time = cfg.get("use_sim_time", "false").lower() in ("true", "1")
    rsp = Node(package="robot_state_publisher", executable="robot_state_publisher",
               name="robot_state_publisher", output="screen",
               parameters=[{"robot_description": ParameterValue(description, value_type=str),
                            "publish_frequency": 60.0, "use_sim_time": sim_time}],
               remappings=[("joint_states", TOPIC_TWIN_JOINT_STATES)])
    actions = [rsp]
    if cfg.get("rviz", "false").lower() in ("true", "1"):
        config = os.path.join(get_package_share_directory("hand_description"), "rviz", "hand.rviz")
        actions.append(Node(package="rviz2", executable="rviz2", name="rviz2", output="screen",
                            arguments=["-d", config, "--fixed-frame", root_link]))
    return actions


__all__ = ["profile_launch", "console_extras", "arm_extras", "dex_robot_extras", "hardware_extras", "rviz_extras", "two_host_extras"]
