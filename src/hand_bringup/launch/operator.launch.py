"""Operator side of a two-host setup: camera and tracker only, on the laptop with the webcam:
``ros2 launch hand_bringup operator.launch.py peer:=<robot host> source:=camera:0``. Start the
robot side (robot.launch.py or robot_twin.launch.py) first (hand_bringup README, "Two hosts")."""

from hand_bringup.launch_common import profile_launch, two_host_extras


def generate_launch_description():
    peer_arguments, peer_actions = two_host_extras()
    return profile_launch("operator", peer_arguments, environment=peer_actions)
