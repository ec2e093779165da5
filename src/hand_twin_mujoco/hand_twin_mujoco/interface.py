"""The twin node's external interface as data (no rclpy, no MuJoCo import): what hand_bringup
reads of it. The node publishes with these names (see :mod:`hand_tracking.interface`)."""

from __future__ import annotations

from hand_common import contract

NODE = contract.TWIN_NODE
JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"


def publishes(two_hands: bool = False) -> dict[str, str]:
    """``{topic: type}`` of the twin's joint states (per side with ``hands: two``)."""
    if two_hands:
        return {contract.side_topic(contract.TOPIC_TWIN_JOINT_STATES, side): JOINT_STATE_TYPE
                for side in contract.HAND_SIDES}
    return {contract.TOPIC_TWIN_JOINT_STATES: JOINT_STATE_TYPE}


# --- diagnostics: the actuator status key -----------------------------------------------------------
#: ok (following commands) | stale (safe pose: no fresh command) | ... (loop.Watchdog values)
KEY_WATCHDOG = "watchdog"
WATCHDOG_OK = "ok"
#: wall time (s since the epoch, 6 decimals) the newest command arrived, read before its arrival on
#: the monotonic clock the watchdog judges by: no trip comes earlier than it + command_timeout_s
KEY_COMMAND_RECEIVED_AT = "command_received_at"
#: simulated time / wall time since start
KEY_RTF_TOTAL = "real_time_factor_total"

# --- parameters other packages set ------------------------------------------------------------------
PARAM_HANDS = "hands"
HANDS_TWO = "two"
PARAM_VIEWER = "viewer"


def following(values: dict[str, str]) -> bool | None:
    """Whether a twin status says it follows commands (None: not the actuator status)."""
    if KEY_WATCHDOG not in values:
        return None
    return values[KEY_WATCHDOG] == WATCHDOG_OK
