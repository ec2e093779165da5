"""Tracker + SG90 servo driver:
``ros2 launch hand_bringup hardware.launch.py port:=/dev/ttyACM0 [sim_board:=true]``."""

from hand_bringup.launch_common import hardware_extras, profile_launch


def generate_launch_description():
    arguments, actions = hardware_extras()
    return profile_launch("hardware", arguments, actions)
