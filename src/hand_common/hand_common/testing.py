"""Helpers for ROS integration tests that talk to real nodes in separate processes.

Used by every package's tests (and usable by users' own tests). Talks to nodes the way the
``ros2`` CLI does: ``/<node>/change_state`` (by transition *label*, never by id: rclpy 7.1.6 kills
a node on an invalid transition id, ros2/rclpy#1209), ``/<node>/set_parameters`` and topics.

Every process started here inherits the caller's environment; the caller must have set
``ROS_DOMAIN_ID`` (private per test run) and ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``
(:func:`require_local_ros_env` checks both).
"""

from hand_common.probe import RosProbe, parameter_value, wait_until
from hand_common.processes import NodeProcess, require_local_ros_env

__all__ = ["NodeProcess", "RosProbe", "parameter_value", "require_local_ros_env", "wait_until"]
