"""The contracts between vision and actuation, defined once and imported everywhere else.

No rclpy import at module level: pure modules and tests can use the names and the validator;
nodes call :func:`qos` to get the matching ``rclpy.qos.QoSProfile``.

Flexion convention
------------------
A *flexion* is a unitless number in [0, 1]: 0.0 = digit fully open (straight, extended),
1.0 = digit fully closed (curled into a fist). Every actuator maps 0 → its open end and
1 → its closed end. ``/hand/target_flexions`` carries one flexion per digit, in
:data:`FINGER_NAMES` order; ``/hand/joint_flexions`` one per anatomical joint, in
:data:`JOINT_NAMES` order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# --- digits and joints ---------------------------------------------------------------------------

#: Digit names, in the order of ``/hand/target_flexions``.
FINGER_NAMES: tuple[str, ...] = ("thumb", "index", "middle", "ring", "pinky")

#: Anatomical joints of each digit, proximal to distal. The thumb has CMC, MCP and IP joints; the
#: other fingers MCP, PIP and DIP.
FINGER_JOINTS: Mapping[str, tuple[str, str, str]] = {
    "thumb": ("thumb_cmc", "thumb_mcp", "thumb_ip"),
    "index": ("index_mcp", "index_pip", "index_dip"),
    "middle": ("middle_mcp", "middle_pip", "middle_dip"),
    "ring": ("ring_mcp", "ring_pip", "ring_dip"),
    "pinky": ("pinky_mcp", "pinky_pip", "pinky_dip"),
}

#: The 15 anatomical joint names, digit by digit, proximal to distal (``/hand/joint_flexions``).
JOINT_NAMES: tuple[str, ...] = tuple(j for f in FINGER_NAMES for j in FINGER_JOINTS[f])

FLEXION_OPEN = 0.0
FLEXION_CLOSED = 1.0

# --- node names -----------------------------------------------------------------------------------
TRACKER_NODE = "hand_tracker"
TWIN_NODE = "hand_twin"
SERVO_DRIVER_NODE = "servo_driver"
CONSOLE_NODE = "hand_console"
JOINT_MAPPER_NODE = "joint_mapper"

# --- topics ---------------------------------------------------------------------------------------
#: hand_msgs/HandLandmarksArray: every hand in a frame (empty array = frame with no hand).
TOPIC_LANDMARKS = "/hand/landmarks"
#: sensor_msgs/JointState: names = FINGER_NAMES, position = flexion 0..1, stamp = frame capture,
#: frame_id = the publishing node's fully qualified name (the command source a servo driver follows).
TOPIC_TARGET_FLEXIONS = "/hand/target_flexions"
#: sensor_msgs/JointState: names = JOINT_NAMES, position = per-joint flexion 0..1.
TOPIC_JOINT_FLEXIONS = "/hand/joint_flexions"
#: sensor_msgs/JointState with the URDF's joint names and angles (radians), for robot_state_publisher.
TOPIC_JOINT_STATES = "/joint_states"
#: std_msgs/String, transient local: the URDF, as robot_state_publisher publishes it.
TOPIC_ROBOT_DESCRIPTION = "/robot_description"
#: sensor_msgs/JointState: measured joint angles/velocities of the MuJoCo twin (URDF names).
TOPIC_TWIN_JOINT_STATES = "/hand_twin/joint_states"
#: sensor_msgs/Image: the twin's offscreen rendering.
TOPIC_TWIN_IMAGE = "/hand_twin/image"
#: sensor_msgs/Image: the tracker's annotated camera frame (optional).
TOPIC_TRACKER_IMAGE = "/hand/image_annotated"
#: sensor_msgs/CompressedImage (jpeg): the tracker's camera frame, downscaled and rate-limited, for
#: the operator console; published only while someone subscribes (hand_tracking.preview).
TOPIC_IMAGE_PREVIEW = "/hand/image_preview"
TOPIC_DIAGNOSTICS = "/diagnostics"

# --- two hands (tracker parameter hands: two) -------------------------------------------------------
#: The operator's physical hands, in the order of per-hand arrays. One hand keeps the topics above.
HAND_SIDES: tuple[str, ...] = ("left", "right")


def side_topic(topic: str, side: str) -> str:
    """The per-hand name of a topic: ``/hand/target_flexions`` → ``/hand/left/target_flexions``,
    ``/hand_twin/joint_states`` → ``/hand_twin/left/joint_states`` (side after the first part).
    Same types, contents and QoS as the single-hand topic. ValueError for an unknown side."""
    if side not in HAND_SIDES:
        raise ValueError(f"side must be one of {HAND_SIDES}, got {side!r}")
    head, _, rest = topic.lstrip("/").partition("/")
    return f"/{head}/{side}/{rest}" if rest else f"/{head}/{side}"


#: hand_msgs/HandLandmarksArray with the one hand followed on that side (empty: none this frame);
#: ``handedness`` = the side given by identity tracking, ``hand_id`` = its track.
TOPIC_LEFT_LANDMARKS = side_topic(TOPIC_LANDMARKS, "left")
TOPIC_RIGHT_LANDMARKS = side_topic(TOPIC_LANDMARKS, "right")
#: sensor_msgs/JointState per hand, as TOPIC_TARGET_FLEXIONS / TOPIC_JOINT_FLEXIONS.
TOPIC_LEFT_TARGET_FLEXIONS = side_topic(TOPIC_TARGET_FLEXIONS, "left")
TOPIC_RIGHT_TARGET_FLEXIONS = side_topic(TOPIC_TARGET_FLEXIONS, "right")
TOPIC_LEFT_JOINT_FLEXIONS = side_topic(TOPIC_JOINT_FLEXIONS, "left")
TOPIC_RIGHT_JOINT_FLEXIONS = side_topic(TOPIC_JOINT_FLEXIONS, "right")
#: sensor_msgs/JointState per twin hand, as TOPIC_TWIN_JOINT_STATES.
TOPIC_LEFT_TWIN_JOINT_STATES = side_topic(TOPIC_TWIN_JOINT_STATES, "left")
TOPIC_RIGHT_TWIN_JOINT_STATES = side_topic(TOPIC_TWIN_JOINT_STATES, "right")


# --- QoS ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class QosSpec:
    """A QoS choice as plain data, turned into an rclpy profile by :func:`qos`."""

    reliable: bool
    depth: int
    transient_local: bool = False
    #: History keep-all instead of keep-last ``depth``: the reader's queue then holds every sample
    #: it has not taken yet (Fast DDS keeps them in memory), so a busy subscriber loses nothing.
    keep_all: bool = False


#: Streams of state (landmarks, flexions, joint states, diagnostics): reliable, so recorders and
#: reliable subscribers (``ros2 topic echo``'s default) get every sample, keep-last 10 so a slow
#: subscriber never blocks the publisher. A best-effort subscriber also matches it.
STREAM = QosSpec(reliable=True, depth=10)
#: What an actuator subscribes with: only the newest command matters; older queued ones are
#: dropped rather than replayed late.
LATEST = QosSpec(reliable=True, depth=1)
#: What the servo driver (an actuator following one command source among possibly several
#: publishers) subscribes with: keep-last 20, so a flood from another publisher cannot push the
#: followed source's commands out of the reader's queue before they are taken (keep-last 1: a
#: 380/s foreign flood starved a 30 Hz source into the safe pose); a queued command is still judged
#: by its stamp (refused when older than command_timeout_s or than the newest followed), never
#: replayed late.
COMMAND = QosSpec(reliable=True, depth=20)
#: What a viewer (the operator console) subscribes with: best effort, keep-last 1: it never makes a
#: publisher resend, and an old sample is overwritten by the newest, never queued.
VIEW = QosSpec(reliable=False, depth=1)
#: Camera-sized images: reliable keep-last 2 (an old frame is overwritten, never queued late).
#: Reliable because RViz's Image display subscribes reliable by default (rviz_common's
#: RosTopicDisplay starts from ``rclcpp::QoS(5)``, reliable/volatile) and a reliable subscription
#: does not match a best-effort publisher; a best-effort subscriber still matches this one.
IMAGE = QosSpec(reliable=True, depth=2)
#: What a recorder subscribes with: reliable keep-all. A keep-last reader drops the oldest
#: sample when its application falls behind by ``depth`` (measured: keep-last 1000 kept 1440 of a
#: 3000-message burst, keep-all 3000 of 3000 with a 5 ms callback, behind a keep-last 10 writer).
RECORD = QosSpec(reliable=True, depth=1000, keep_all=True)
#: The data publishers of a recording read faster than real time (an unpaced replay, a batch job):
#: reliable keep-all, i.e. backpressure inside DDS. A sample that a reliable reader has not yet
#: acknowledged stays in the writer's history and is resent; with keep-last 10 a ~2 kHz burst
#: overwrote unacknowledged samples and the recorder lost 33-133 of 600 on 2 busy cores. Never
#: for live sources: there a slow subscriber must not hold samples (see STREAM).
REPLAY = QosSpec(reliable=True, depth=10, keep_all=True)
#: Latched data (robot_description): reliable + transient local, as robot_state_publisher offers it.
LATCHED = QosSpec(reliable=True, depth=1, transient_local=True)


def qos(spec: QosSpec):  # -> rclpy.qos.QoSProfile (rclpy imported lazily)
    """Return the ``rclpy.qos.QoSProfile`` for a :class:`QosSpec` (keep-last ``depth`` or keep-all)."""
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(
        history=HistoryPolicy.KEEP_ALL if spec.keep_all else HistoryPolicy.KEEP_LAST,
        depth=spec.depth,
        reliability=ReliabilityPolicy.RELIABLE if spec.reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if spec.transient_local else DurabilityPolicy.VOLATILE,
    )


# --- validation of the flexion contract -----------------------------------------------------------
class FlexionContractError(ValueError):
    """A message on a flexion topic that breaks the contract (names, lengths, values)."""


def parse_flexions(
    names: Sequence[str],
    positions: Sequence[float],
    expected: Sequence[str] = FINGER_NAMES,
) -> dict[str, float]:
    """Check one flexion message against the contract and return ``{name: flexion}``.

    names, positions: the JointState's ``name`` and ``position`` arrays.
    expected: the names that must all be present (FINGER_NAMES or JOINT_NAMES); order is free.
    Raises FlexionContractError naming the problem for: unequal array lengths, duplicate or
    unknown names, a missing expected name, a non-finite value, or a value outside [0, 1].
    Never clips silently: out-of-range values are an error, so a broken producer is noticed.
    """
    if len(names) != len(positions):
        raise FlexionContractError(f"{len(names)} names but {len(positions)} positions")
    if len(set(names)) != len(names):
        raise FlexionContractError(f"duplicate names in {list(names)}")
    unknown = sorted(set(names) - set(expected))
    if unknown:
        raise FlexionContractError(f"unknown names {unknown}; expected {list(expected)}")
    missing = [n for n in expected if n not in names]
    if missing:
        raise FlexionContractError(f"missing names {missing}")
    out: dict[str, float] = {}
    for n, p in zip(names, positions):
        v = float(p)
        if not math.isfinite(v):
            raise FlexionContractError(f"{n}: non-finite flexion {v}")
        if not FLEXION_OPEN <= v <= FLEXION_CLOSED:
            raise FlexionContractError(f"{n}: flexion {v:.4f} outside [0, 1]")
        out[n] = v
    return out
