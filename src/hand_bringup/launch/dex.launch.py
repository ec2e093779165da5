"""Tracker + dexterous retargeting + dexterous MuJoCo twin + robot_state_publisher (stock ROS 2 Jazzy):

    ros2 launch hand_bringup dex.launch.py source:=camera:0
    ros2 launch hand_bringup dex.launch.py source:=camera:0 robot:=leap_hand_right   # any dex-retargeting hand
    ros2 launch hand_bringup dex.launch.py source:=camera:0 rviz:=true \
        robot:=/path/ability_hand_right_dexpilot.yml robot_urdf:=/path/ability_hand/ability_hand_right.urdf

The node set is hand_bringup.bringup's ``dex`` profile (the embedded runner reads the same table);
parameters come from config/retarget.yaml and config/dex_twin.yaml (``dex_retarget_params:=...``,
``dex_twin_params:=...`` to replace them). robot_state_publisher publishes the robot's TF from the
twin's ``/dex_twin/joint_states`` (``rviz:=true`` opens RViz on it).
"""

from hand_bringup.launch_common import dex_robot_extras, profile_launch


def generate_launch_description():
    arguments, actions = dex_robot_extras()
    return profile_launch("dex", extra_arguments=arguments, extra_actions=actions)
