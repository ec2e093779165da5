"""Robot side of a two-host setup: the SG90 servo driver (and optionally the simulated board), no
tracker. On the computer by the hand:
``ros2 launch hand_bringup robot.launch.py peer:=<operator host> port:=/dev/ttyACM0 [sim_board:=true]``;
the operator's laptop runs ``operator.launch.py peer:=<this host>`` (hand_bringup README, "Two hosts")."""

from hand_bringup.launch_common import hardware_extras, profile_launch, two_host_extras


def generate_launch_description():
    arguments, actions = hardware_extras()
    peer_arguments, peer_actions = two_host_extras()
    return profile_launch("robot", peer_arguments + arguments, actions, environment=peer_actions)
