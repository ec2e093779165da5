"""Gesture-teleoperated SO-101: tracker + arm_teleop + arm twin (MuJoCo) + STS3215 driver.

  ros2 launch arm_teleop arm.launch.py source:=camera:0                       # driver in dry run
  ros2 launch arm_teleop arm.launch.py real_hardware:=true port:=/dev/ttyACM0  # read-only, torque off
  ros2 launch arm_teleop arm.launch.py real_hardware:=true allow_motion:=true port:=/dev/ttyACM0
  ros2 launch arm_teleop arm.launch.py sim_bus:=true real_hardware:=true allow_motion:=true port:=/tmp/so101_bus

Nodes and parameter files come from hand_tracking.bringup's `arm` profile (the embedded runner
reads the same table); a lifecycle manager configures and activates them in that order.
"""

from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode, Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from hand_tracking.bringup import LIFECYCLE_MANAGER_NODE, profile_nodes
from hand_tracking.launch_common import discovery_range
from launch import LaunchDescription


def _overrides(key):
    out = {"use_sim_time": ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)}
    if key == "tracker":
        out["source"] = ParameterValue(LaunchConfiguration("source"), value_type=str)
    elif key == "arm_teleop":
        out["control_mode"] = ParameterValue(LaunchConfiguration("control_mode"), value_type=str)
    elif key == "arm_driver":
        for name in ("real_hardware", "allow_motion"):
            out[name] = ParameterValue(LaunchConfiguration(name), value_type=bool)
        out["port"] = ParameterValue(LaunchConfiguration("port"), value_type=str)
    return out


def generate_launch_description():
    specs = profile_nodes("arm")
    args = [
        DeclareLaunchArgument("source", default_value="camera:0", description="Tracker frame source"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="Use /clock"),
        DeclareLaunchArgument("control_mode", default_value="cartesian", description="cartesian | joint"),
        DeclareLaunchArgument("real_hardware", default_value="false",
                              description="Opt-in 1: open the STS3215 bus (alone: read-only, torque off)"),
        DeclareLaunchArgument("allow_motion", default_value="false",
                              description="Opt-in 2 (with real_hardware): torque on and move"),
        DeclareLaunchArgument("port", default_value="/dev/ttyACM0", description="Serial device of the bus"),
        DeclareLaunchArgument("sim_bus", default_value="false",
                              description="Start the simulated STS3215 bus and link its pty at `port`"),
    ]
    args += [DeclareLaunchArgument(f"{s.key}_params",
                                   default_value=PathJoinSubstitution([FindPackageShare(s.package), s.params_file]),
                                   description=f"Parameter file of /{s.name}") for s in specs]
    nodes = [LifecycleNode(package=s.package, executable=s.executable, name=s.name, namespace="",
                           parameters=[LaunchConfiguration(f"{s.key}_params"), _overrides(s.key)],
                           output="screen", emulate_tty=True) for s in specs]
    bus = Node(package="arm_teleop", executable="sim_sts_bus", name="sim_sts_bus",
               arguments=["--link", LaunchConfiguration("port")], output="screen",
               condition=IfCondition(LaunchConfiguration("sim_bus")))
    manager = Node(package="hand_tracking", executable="lifecycle_manager", name=LIFECYCLE_MANAGER_NODE,
                   parameters=[{"node_names": [s.name for s in specs], "autostart": True,
                                "use_sim_time": ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)}],
                   output="screen")
    return LaunchDescription(discovery_range() + args + [bus] + nodes + [manager])
