"""Tracker + dexterous retargeting + dexterous MuJoCo twin (stock ROS 2 Jazzy):

    ros2 launch hand_bringup dex.launch.py source:=camera:0

The node set is hand_bringup.bringup's ``dex`` profile (the embedded runner reads the same table);
parameters come from config/retarget.yaml and config/dex_twin.yaml (``dex_retarget_params:=...``,
``dex_twin_params:=...`` to replace them).
"""

from hand_bringup.launch_common import profile_launch


def generate_launch_description():
    return profile_launch("dex")
