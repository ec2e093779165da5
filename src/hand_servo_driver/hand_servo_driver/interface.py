"""The servo driver node's external interface as data (no rclpy, no serial): what hand_bringup
reads of it. The node publishes with these names (see :mod:`hand_tracking.interface`)."""

from __future__ import annotations

from hand_common import contract

NODE = contract.SERVO_DRIVER_NODE

# --- diagnostics: the actuator status key -----------------------------------------------------------
#: "True" while the driver holds its safe pose for lack of fresh commands, else "False"
KEY_STALE = "stale"
STALE_TRUE = str(True)
KEY_STALE_EVENTS = "stale_events"
#: capture → first SET_PULSES frame on the wire per followed command, ms, over the driver's latest
#: core.WIRE_HISTORY commands (p50, p95; "" before the first) and how many that is
KEY_WIRE_P50 = "capture_to_wire_ms_p50"
KEY_WIRE_P95 = "capture_to_wire_ms_p95"
KEY_WIRE_N = "capture_to_wire_n"

#: "degraded" while the command stream's arrivals over the last window are (refusals, excess
#: transit, arrival gaps: command_quality.CommandQuality; the status is then WARN), else "ok"
KEY_COMMAND_STREAM = "command_stream"
COMMAND_STREAM_DEGRADED = "degraded"

# --- parameters other packages set ------------------------------------------------------------------
PARAM_PORT = "port"


def following(values: dict[str, str]) -> bool | None:
    """Whether a driver status says it follows commands (None: not the actuator status)."""
    if KEY_STALE not in values:
        return None
    return values[KEY_STALE] != STALE_TRUE
