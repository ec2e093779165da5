"""Node names, topics and message layouts of hand_retarget, defined once (no rclpy).

QoS specs come from :mod:`hand_common.contract` (STREAM: reliable, keep-last 10; LATEST for the
twin's command subscription).
"""

from __future__ import annotations

from .kapandji import SITE_NAMES

RETARGET_NODE = "dex_retarget"
DEX_TWIN_NODE = "dex_twin"

#: sensor_msgs/JointState: the dexterous hand's 20 URDF joint names, position = command (rad),
#: velocity = the safety filter's commanded velocity (rad/s). Stamped with the capture time of the
#: landmarks its target came from (now while it holds the open pose); published when a target
#: arrives and at command_rate_hz between targets.
TOPIC_JOINT_COMMANDS = "/dex_hand/joint_commands"
#: sensor_msgs/JointState, names :data:`KAPANDJI_NAMES`: position[0] = Kapandji score 0-10 (-1 =
#: unusable), position[k] = thumb tip - site k in-plane distance in palm widths. Human: stamped with
#: the landmarks' capture time; robot: with the measured joint state's stamp.
TOPIC_KAPANDJI_HUMAN = "/dex_hand/kapandji/human"
TOPIC_KAPANDJI_ROBOT = "/dex_hand/kapandji/robot"
#: sensor_msgs/JointState: the dexterous twin's measured joints (URDF names): position rad,
#: velocity rad/s, effort = actuator torque N m.
TOPIC_TWIN_JOINT_STATES = "/dex_twin/joint_states"
#: sensor_msgs/Image rgb8 of the dexterous twin (when its render_rate_hz > 0).
TOPIC_TWIN_IMAGE = "/dex_twin/image"

KAPANDJI_NAMES: tuple[str, ...] = ("kapandji",) + tuple(f"site_{k + 1:02d}" for k in range(len(SITE_NAMES)))
