"""Tracker + dexterous retargeting + dexterous MuJoCo twin (stock ROS 2 Jazzy):

    ros2 launch hand_bringup dex.launch.py source:=camera:0
    ros2 launch hand_bringup dex.launch.py source:=camera:0 robot:=leap_hand_right   # any dex-retargeting hand

The node set is hand_bringup.bringup's ``dex`` profile (the embedded runner reads the same table);
parameters come from config/retarget.yaml and config/dex_twin.yaml (``dex_retarget_params:=...``,
``dex_twin_params:=...`` to replace them).
"""

from launch.actions import DeclareLaunchArgument

from hand_bringup.launch_common import profile_launch


def generate_launch_description():
    robot = DeclareLaunchArgument(
        "robot", default_value="",
        description="Robot hand: empty = dex_hand; a dex-retargeting robot name (leap_hand_right, "
                    "allegro_hand_right, ...) or a .yml path (URDFs under $HAND_ROBOTS_DIR)")
    return profile_launch("dex", extra_arguments=[robot])
