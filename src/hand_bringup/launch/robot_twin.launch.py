"""Robot side of a two-host setup with the MuJoCo twin instead of servos (a second computer
showing the twin): ``ros2 launch hand_bringup robot_twin.launch.py peer:=<operator host>``."""

from hand_bringup.launch_common import profile_launch, two_host_extras


def generate_launch_description():
    peer_arguments, peer_actions = two_host_extras()
    return profile_launch("robot_twin", peer_arguments, environment=peer_actions)
