"""Tracker + MuJoCo twin: ``ros2 launch hand_bringup sim.launch.py source:=camera:0 [headless:=true]``."""

from hand_bringup.launch_common import profile_launch


def generate_launch_description():
    return profile_launch("sim")
