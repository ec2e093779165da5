"""Both operator hands → both hands in Gazebo (stock ROS 2 Jazzy + Gazebo Harmonic, ros-jazzy-ros-gz):

    ros2 launch hand_bringup gazebo.launch.py source:=camera:0 [gz_args:="-r -s"]

Starts gz sim with the generated world (worlds/two_hands.sdf: both hands, mimic-coupled fingers,
bullet-featherstone physics, one JointPositionController per proximal joint), ros_gz_bridge's
parameter_bridge with config/gz_bridge.yaml (joint commands ROS → gz, joint states and /clock
gz → ROS), and the bringup profile ``gazebo``: the tracker with ``hands: two`` and
``gz_hand_commander`` (flexions → proximal joint angles, per-finger deadband, stale → safe pose),
brought to active by the lifecycle manager. Not runnable on machines without Gazebo (this
workspace's CI checks it statically: hand_gazebo/test/test_gz_launch.py).
"""

from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from hand_bringup.launch_common import profile_launch


def generate_launch_description():
    arguments = [
        DeclareLaunchArgument("world", default_value=PathJoinSubstitution(
            [FindPackageShare("hand_gazebo"), "worlds", "two_hands.sdf"]), description="SDF world for gz sim"),
        DeclareLaunchArgument("gz_args", default_value="-r",
                              description="gz sim options before the world (-r: run at start; -s: server only)"),
        DeclareLaunchArgument("bridge_config", default_value=PathJoinSubstitution(
            [FindPackageShare("hand_gazebo"), "config", "gz_bridge.yaml"]),
            description="ros_gz_bridge configuration (generated with the world)"),
    ]
    gz_sim = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(PathJoinSubstitution([FindPackageShare("ros_gz_sim"), "launch", "gz_sim.launch.py"])),
        launch_arguments=[("gz_args", [LaunchConfiguration("gz_args"), " ", LaunchConfiguration("world")])])
    bridge = Node(package="ros_gz_bridge", executable="parameter_bridge", name="hand_gz_bridge", output="screen",
                  parameters=[{"config_file": LaunchConfiguration("bridge_config"),
                               "use_sim_time": ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)}])
    return profile_launch("gazebo", extra_arguments=arguments, extra_actions=[gz_sim, bridge])
