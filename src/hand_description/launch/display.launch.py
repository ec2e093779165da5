"""Show the hand in RViz (stock ROS 2 Jazzy).

    ros2 launch hand_description display.launch.py                 # sliders for the 15 joints
    ros2 launch hand_description display.launch.py side:=left
    ros2 launch hand_description display.launch.py gui:=false joint_states:=/hand_twin/joint_states

Starts robot_state_publisher with ``robot_description`` = the contents of
``share/hand_description/urdf/hand.urdf`` (``hand_left.urdf`` for ``side:=left``),
joint_state_publisher_gui when ``gui:=true`` (otherwise the joint angles come from
``joint_states``, e.g. the joint mapper's /joint_states or the twin's /hand_twin/joint_states), and
rviz2 with ``rviz/hand.rviz`` (RobotModel + TF, fixed frame ``palm``) when ``rviz:=true``.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription

URDF_FILES = {"right": "hand.urdf", "left": "hand_left.urdf"}


def _nodes(context, *args, **kwargs):
    share = get_package_share_directory("hand_description")
    side = LaunchConfiguration("side").perform(context)
    with open(os.path.join(share, "urdf", URDF_FILES[side])) as f:
        robot_description = f.read()
    use_sim_time = LaunchConfiguration("use_sim_time").perform(context).lower() in ("true", "1")
    joint_states = LaunchConfiguration("joint_states").perform(context)
    return [
        Node(package="robot_state_publisher", executable="robot_state_publisher", name="robot_state_publisher",
             output="screen",
             parameters=[{"robot_description": robot_description, "use_sim_time": use_sim_time}],
             remappings=[("joint_states", joint_states)]),
        Node(package="joint_state_publisher_gui", executable="joint_state_publisher_gui",
             name="joint_state_publisher_gui", output="screen",
             parameters=[{"use_sim_time": use_sim_time}],
             remappings=[("joint_states", joint_states)],
             condition=IfCondition(LaunchConfiguration("gui"))),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="screen",
             arguments=["-d", LaunchConfiguration("rviz_config").perform(context)],
             parameters=[{"use_sim_time": use_sim_time}],
             condition=IfCondition(LaunchConfiguration("rviz"))),
    ]


def generate_launch_description():
    share = get_package_share_directory("hand_description")
    return LaunchDescription([
        DeclareLaunchArgument("side", default_value="right", choices=["right", "left"],
                              description="Which hand: right (hand.urdf) or its mirror image (hand_left.urdf)"),
        DeclareLaunchArgument("gui", default_value="true", choices=["true", "false"],
                              description="Start joint_state_publisher_gui (sliders for the 15 joints)"),
        DeclareLaunchArgument("rviz", default_value="true", choices=["true", "false"], description="Start rviz2"),
        DeclareLaunchArgument("rviz_config", default_value=os.path.join(share, "rviz", "hand.rviz"),
                              description="RViz configuration file"),
        DeclareLaunchArgument("joint_states", default_value="/joint_states",
                              description="JointState topic robot_state_publisher listens to (and the GUI publishes)"),
        DeclareLaunchArgument("use_sim_time", default_value="false", choices=["true", "false"],
                              description="Use /clock (e.g. with a bag)"),
        DeclareLaunchArgument("discovery_range", default_value="LOCALHOST",
                              choices=["LOCALHOST", "SUBNET", "SYSTEM_DEFAULT", "OFF"],
                              description="ROS_AUTOMATIC_DISCOVERY_RANGE of the started nodes"),
        SetEnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE", LaunchConfiguration("discovery_range")),
        OpaqueFunction(function=_nodes),
    ])
