"""The tracker node's external interface as data (no rclpy, no MediaPipe): what other packages
(the runner and launch files in hand_bringup, the console) read of it. The node publishes with
these names; a reader imports them instead of repeating the literals, so a rename here is a
rename everywhere (hand_bringup's test_interfaces checks that no literal copy remains).

Topics (QoS from :mod:`hand_common.contract`): :func:`publishes`. Diagnostics: one status per
node named ``"<node name>" + STATUS_SUFFIX`` with the ``KEY_*`` values below.
"""

from __future__ import annotations

from hand_common import contract

NODE = contract.TRACKER_NODE

#: Topic -> message type the node publishes (``two_hands``: the per-side flexion topics instead).
LANDMARKS_TYPE = "hand_msgs/msg/HandLandmarksArray"
JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"


def publishes(two_hands: bool = False, landmarks: bool = True) -> dict[str, str]:
    """``{topic: type}`` of the tracker's data topics (not /diagnostics, not the preview)."""
    out = {contract.TOPIC_LANDMARKS: LANDMARKS_TYPE} if landmarks else {}
    for topic in (contract.TOPIC_TARGET_FLEXIONS, contract.TOPIC_JOINT_FLEXIONS):
        if two_hands:
            out.update({contract.side_topic(topic, side): JOINT_STATE_TYPE for side in contract.HAND_SIDES})
        else:
            out[topic] = JOINT_STATE_TYPE
    return out


# --- diagnostics -----------------------------------------------------------------------------------
#: The tracker's status name ends with this (the node name comes first).
STATUS_SUFFIX = ": tracking"
#: Message of an active, tracking status.
STATUS_TRACKING = "tracking"
KEY_STATE = "state"
KEY_SOURCE = "source"
#: ok | timeout (no frame for frame_timeout_s) | finished (a finite source ended)
KEY_WATCHDOG = "watchdog"
WATCHDOG_FINISHED = "finished"
KEY_FRAMES = "frames"
KEY_BAD_FRAMES = "bad_frames"
#: frames the prefetch queue dropped (late frames of a paced source, a camera's stale frames)
KEY_DROPPED_FRAMES = "dropped_frames"
KEY_FLEXIONS_PUBLISHED = "flexions_published"


def key_flexions_published(side: str) -> str:
    """Two hands: the key of the flexion messages published for ``side`` (left, right)."""
    return f"{KEY_FLEXIONS_PUBLISHED}_{side}"


KEY_LAST_ERROR = "last_error"

#: Why the quality gate refused a frame (:attr:`hand_tracking.tracker_core.TrackerCore.rejections`).
REJECT_REASONS = ("degenerate", "outside_image", "finger_length", "joint_angle", "motion", "low_score")
#: Why a pose was held (:attr:`hand_tracking.tracker_core.TrackerCore.holds`): no (preferred) hand
#: in the frame, or the gate's reason.
HOLD_CAUSES = ("no_hand", *REJECT_REASONS)
#: Frames held since configure, all causes together.
KEY_HELD_TOTAL = "held_total"


def key_rejected(reason: str) -> str:
    """The key of the count of frames the gate refused for ``reason`` (:data:`REJECT_REASONS`)."""
    return f"rejected_{reason}"


def key_held(cause: str) -> str:
    """The key of the count of frames held for ``cause`` (:data:`HOLD_CAUSES`)."""
    return f"held_{cause}"

# --- parameters other packages set ------------------------------------------------------------------
PARAM_SOURCE = "source"
PARAM_HANDS = "hands"
HANDS_TWO = "two"
PARAM_REALTIME = "realtime"
PARAM_LOOP = "loop"
PARAM_PUBLISH_LANDMARKS = "publish_landmarks"
PARAM_DROP_LATE_FRAMES = "drop_late_frames"
#: Launch arguments the launch files pass to the node: parameter -> (launch argument, type).
LAUNCH_ARGS: dict[str, tuple[str, type]] = {PARAM_SOURCE: ("source", str)}

# --- log text ---------------------------------------------------------------------------------------
#: A frame the source could not read is logged (WARN/ERROR) with this word in the line.
LOG_FRAME_WORD = "frame"


def frame_problem_lines(log_text: str) -> list[str]:
    """The lines of the node's log that report a frame it could not read (WARN or ERROR)."""
    return [ln for ln in log_text.splitlines() if LOG_FRAME_WORD in ln and ("WARN" in ln or "ERROR" in ln)]
