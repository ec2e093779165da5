"""Tracker + joint_mapper + robot_state_publisher + rviz2:
``ros2 launch hand_bringup rviz.launch.py source:=camera:0``."""

from hand_bringup.launch_common import profile_launch, rviz_extras


def generate_launch_description():
    arguments, actions = rviz_extras()
    return profile_launch("rviz", arguments, actions)
