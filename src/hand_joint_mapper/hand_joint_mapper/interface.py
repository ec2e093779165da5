"""The joint mapper node's external interface as data (no rclpy): what hand_bringup reads of it."""

from __future__ import annotations

from hand_common import contract

NODE = contract.JOINT_MAPPER_NODE
JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"
#: ``{topic: type}`` it publishes (for robot_state_publisher / RViz)
PUBLISHES: dict[str, str] = {contract.TOPIC_JOINT_STATES: JOINT_STATE_TYPE}
#: s to wait for /robot_description before reading the URDF file (0 = read the file at once)
PARAM_DESCRIPTION_TIMEOUT_S = "description_timeout_s"
