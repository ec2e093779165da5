"""The diagnostic keys and node names the console reads, as named constants (no rclpy).

One place: :mod:`hand_console.state` reads the nodes' ``/diagnostics`` only through these names.
The values are the keys the nodes publish (the tracker's from :mod:`hand_tracking.interface`,
hand_twin_mujoco.twin_node, hand_servo_driver.driver_node); ``test_keys`` checks them against the
nodes' sources so that a renamed key is noticed here.
"""

from __future__ import annotations

from hand_common import contract
from hand_tracking import interface as tracker_iface

TRACKER_NODE = contract.TRACKER_NODE
TWIN_NODE = contract.TWIN_NODE
SERVO_DRIVER_NODE = contract.SERVO_DRIVER_NODE
#: The tracker's status is named ``hand_tracker: tracking``.
TRACKER_STATUS_SUFFIX = ": tracking"

TRACKER_TRACKING = "tracking"            # tracked / held / lost / none
TRACKER_FRAME_RATE = "frame_rate_hz"     # frames processed per second over the last period
TRACKER_DETECTION_RATE = "detection_rate"  # 0..1 over the last period
TRACKER_FRAMES = "frames"                # frames processed since activation
TRACKER_DROPPED = "dropped_frames"       # frames the source dropped (late)
TRACKER_INFERENCE_P95 = "inference_ms_p95_total"
TRACKER_CALIBRATION = "calibration"      # parameters / open captured / calibrated
TRACKER_SOURCE = "source"                # the source spec string, e.g. video:/path/clip.mp4
#: Gate refusals per reason (hand_tracking.interface.REJECT_REASONS).
TRACKER_REJECTED: tuple[str, ...] = tuple(tracker_iface.key_rejected(r) for r in tracker_iface.REJECT_REASONS)
#: Held frames per cause, (cause, key) (hand_tracking.interface.HOLD_CAUSES), and all causes together.
TRACKER_HELD: tuple[tuple[str, str], ...] = tuple((c, tracker_iface.key_held(c)) for c in tracker_iface.HOLD_CAUSES)
TRACKER_HELD_TOTAL = tracker_iface.KEY_HELD_TOTAL

TWIN_WATCHDOG = "watchdog"               # ok / stale / ...
TWIN_RTF = "real_time_factor_total"
SERVO_STALE = "stale"                    # "True" while the driver holds its safe pose
SERVO_LINK = "link"                      # dry_run / open / closed / ...
SERVO_PULSES = "last_pulses_us"          # the last pulse widths sent, us, space-separated
SERVO_CHANNELS = "channels"              # the board channels, space-separated
SERVO_FRAMES_SENT = "frames_sent"
SERVO_FRAMES_ACKED = "frames_acked"
SERVO_FRAMES_UNACKED = "frames_unacked"
SERVO_BOARD_REJECTS = "board_rejects"
SERVO_LOSS_RATE = "loss_rate"

#: Every diagnostic key above, by node package (checked against the sources by the tests).
KEYS_BY_PACKAGE: dict[str, tuple[str, ...]] = {
    "hand_tracking": (TRACKER_TRACKING, TRACKER_FRAME_RATE, TRACKER_DETECTION_RATE, TRACKER_FRAMES,
                      TRACKER_DROPPED, TRACKER_INFERENCE_P95, TRACKER_CALIBRATION, TRACKER_SOURCE),
    "hand_twin_mujoco": (TWIN_WATCHDOG, TWIN_RTF),
    "hand_servo_driver": (SERVO_STALE, SERVO_LINK, SERVO_PULSES, SERVO_CHANNELS, SERVO_FRAMES_SENT,
                          SERVO_FRAMES_ACKED, SERVO_FRAMES_UNACKED, SERVO_BOARD_REJECTS, SERVO_LOSS_RATE),
}
