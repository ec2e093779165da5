"""Gesture-teleoperated SO-101: tracker + arm_teleop + arm twin (MuJoCo) + STS3215 driver.

  ros2 launch hand_bringup arm.launch.py source:=camera:0                       # driver in dry run
  ros2 launch hand_bringup arm.launch.py real_hardware:=true port:=/dev/ttyACM0  # read-only, torque off
  ros2 launch hand_bringup arm.launch.py real_hardware:=true allow_motion:=true port:=/dev/ttyACM0
  ros2 launch hand_bringup arm.launch.py sim_bus:=true real_hardware:=true allow_motion:=true port:=/tmp/so101_bus

Nodes and parameter files come from hand_bringup.bringup's `arm` profile (the embedded runner
reads the same table); a lifecycle manager configures and activates them in that order.
"""

from hand_bringup.launch_common import arm_extras, profile_launch


def generate_launch_description():
    arguments, actions = arm_extras()
    return profile_launch("arm", extra_arguments=arguments, extra_actions=actions)
