"""The tracker's outgoing messages built from its results (message types only, no node):
stamps, ``hand_msgs/HandLandmarksArray`` with the quality gate's verdict per detection, and the
two ``sensor_msgs/JointState`` flexion messages (``contract.FINGER_NAMES`` and
``contract.JOINT_NAMES``, 0..1)."""

from __future__ import annotations

import math

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point
from hand_msgs.msg import HandLandmarks, HandLandmarksArray
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from hand_common.contract import FINGER_NAMES, JOINT_NAMES
from hand_tracking.hand_identity import TwoHandOutput
from hand_tracking.landmarks import HandObservation
from hand_tracking.replay import stamp_seconds
from hand_tracking.tracker_core import TrackOutput


def stamp_from_seconds(t: float) -> Time:
    """Time (s) → builtin_interfaces/Time, nanoseconds rounded (at most 999 999 999)."""
    sec = int(math.floor(t))
    return Time(sec=sec, nanosec=min(int(round((t - sec) * 1e9)), 999_999_999))


def stamp_from_ns(ns: int) -> Time:
    """Time (integer ns) → builtin_interfaces/Time, exactly."""
    return Time(sec=int(ns) // 1_000_000_000, nanosec=int(ns) % 1_000_000_000)


def capture_time(stamp: Time) -> float:
    """The time (s) the filter, the hold/reset and the calibration capture run on for a frame
    stamped ``stamp``: the published capture stamp read back exactly as a replay reads it from
    the recorded message (:func:`hand_tracking.replay.stamp_seconds`), so a live run and the
    replay of its recorded ``/hand/landmarks`` compute with the very same floats."""
    return stamp_seconds(stamp)


def _points(a: np.ndarray) -> list[Point]:
    return [Point(x=x, y=y, z=z) for x, y, z in a.tolist()]


def landmark_arrays(out: TrackOutput | TwoHandOutput, header: Header, index: int, width: int, height: int):
    """A builder ``array(hands) -> HandLandmarksArray`` for one frame: each detection of ``hands``
    (image landmarks in px, world landmarks in m; NaN sent as 0) carries the quality gate's
    verdict from ``out`` (accepted, quality, rejection; ``not_followed`` when it was not judged)."""
    judged = list(out.sides.values()) if isinstance(out, TwoHandOutput) else [out]

    def verdict(h: HandObservation) -> tuple[bool, float, str]:
        """(accepted, quality, rejection) of a detection: the gate's verdict if it was judged."""
        for o in judged:
            if o.hand is not None and np.array_equal(o.hand.image, h.image, equal_nan=True):
                return o.accepted, float(o.quality), o.rejected
        return False, 0.0, "not_followed"

    def array(hs: list[HandObservation]) -> HandLandmarksArray:
        msg = HandLandmarksArray(header=header)
        for h in hs:
            ok, quality, rejection = verdict(h)
            msg.hands.append(HandLandmarks(
                accepted=ok, quality=quality, rejection=rejection,
                header=header, frame_index=int(index), handedness=h.handedness,
                handedness_score=float(h.score), hand_id=int(h.hand_id), image_width=int(width),
                image_height=int(height), image_landmarks=_points(np.nan_to_num(h.image)),
                world_landmarks=_points(np.nan_to_num(h.world))))
        return msg

    return array


def flexion_messages(out: TrackOutput, stamp: Time, source: str = "") -> tuple[JointState, JointState] | None:
    """(/hand/target_flexions, /hand/joint_flexions) of one hand's result, stamped ``stamp``, with
    ``frame_id`` = ``source`` (the publishing node's fully qualified name: the command source, see
    ``contract.TOPIC_TARGET_FLEXIONS``); None when nothing is to be published (no pose tracked or
    held). ValueError for a non-finite flexion (never published)."""
    if not out.publishable:
        return None
    fingers, joints = out.finger_flexions, out.joint_flexions
    if not (np.isfinite(fingers).all() and np.isfinite(joints).all()):
        raise ValueError("non-finite flexion computed; frame not published")
    header = Header(stamp=stamp, frame_id=source)
    return (JointState(header=header, name=list(FINGER_NAMES), position=fingers.tolist()),
            JointState(header=header, name=list(JOINT_NAMES), position=joints.tolist()))
