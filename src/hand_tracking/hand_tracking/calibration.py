"""Open-hand / fist calibration of the flexion windows. Pure numpy, no rclpy.

The operator holds the hand open (flat, fingers extended) for about a second, then makes a fist
for about a second (either order). :class:`PoseCapture` averages the 15 joint angles over the
frames of each capture that showed a clear hand (accepted by the quality gate, or refused by it
only for its size or proportions: ``gate_held``, see :mod:`hand_tracking.calibration_session`);
:func:`windows_from_poses` turns the two poses
into windows:

- per finger (``/hand/target_flexions``): ``straight`` = the open hand's mean curl of that
  finger, ``curled`` = the fist's. A digit whose fist curl is not at least ``min_range`` rad below
  its open curl is *kept*: its finger window and its three joint windows stay what they were (the
  two captures look alike for that digit: the thumb barely curls in many fists, or tracking
  failed), and :attr:`Calibration.kept` names it with its two curls. The calibration is refused
  (CalibrationError naming every digit) only when no digit has that range.
- each capture must look like its pose (:func:`check_pose`): an "open" capture whose fingers
  read closed under reference windows (the tracker's evidence-based defaults), or a "fist" whose
  fingers read open, is refused naming the finger and its angle, so a fist taken as the open
  capture cannot poison the windows;
- per joint (``/hand/joint_flexions``): ``straight`` = the open hand's angle of that joint,
  ``curled`` = the fist's, but never closer to ``straight`` than ``min_joint_range`` rad. Some
  joints barely move in a fist (the thumb's CMC, a DIP held stiff); a narrower window would turn
  landmark noise into full-scale flexion, so such a joint gets the minimum window instead.

Time: a capture's window is **media time**, the frames' capture stamps (a file's own timeline),
never the wall clock: a slow unpaced file (decoding/inference slower than its frame rate) captures
the same frames, only later. The one wall-clock decision, "the source has stopped delivering",
is :class:`StallWatch`'s, relative to the source's own pace: a capture fails only after no frame
for ``max(slack, pace_factor x`` the longest interval between frames seen``)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from hand_common.contract import FINGER_NAMES, JOINT_NAMES
from hand_tracking.geometry import Windows, finger_curls

POSES = ("open", "fist")


class CalibrationError(ValueError):
    """A capture or a pair of captures that cannot define windows (message names the finger)."""


@dataclass(frozen=True)
class CapturedPose:
    """Mean joint angles (15, rad) and finger curls (5, rad) of one captured pose.

    frames: frames that went into the mean, of which ``frames_gate_held`` the quality gate had
    refused as implausible although the hand was clear (the rest it accepted); frames_total: every
    frame of the capture window, with or without a usable hand."""

    pose: str
    angles: np.ndarray
    curls: np.ndarray
    frames: int
    frames_total: int
    frames_gate_held: int = 0

    def describe_frames(self) -> str:
        """'N frames with a hand (A accepted, G held by the gate) of T'."""
        return (f"{self.frames} frames with a hand ({self.frames - self.frames_gate_held} accepted by the gate, "
                f"{self.frames_gate_held} it refused as implausible but clear) of {self.frames_total}")


class PoseCapture:
    """Accumulate one calibration pose over ``duration_s`` of stream time.

    ``add(t, angles, gate_held=False)`` for every processed frame: t = the frame's media time (s),
    angles = its 15 joint angles, or None when the frame had no usable hand (none, out of frame,
    a broken skeleton); gate_held: the quality gate refused the frame (it would hold the last
    pose) although the hand is clear, and the angles are the frame's own. The capture spans the frames
    with ``t < t_first + duration_s``; :attr:`done` turns True at the first frame past that.
    :meth:`result` raises CalibrationError when fewer than ``min_hand_fraction`` of the frames
    had a hand.
    """

    def __init__(self, pose: str, duration_s: float = 1.0, *, min_hand_fraction: float = 0.5):
        if pose not in POSES:
            raise ValueError(f"pose must be one of {POSES}, got {pose!r}")
        if not (math.isfinite(duration_s) and duration_s > 0):
            raise ValueError(f"capture duration must be positive, got {duration_s}")
        self.pose = pose
        self.duration_s = float(duration_s)
        self.min_hand_fraction = min_hand_fraction
        self._t0: float | None = None
        self._sum = np.zeros(len(JOINT_NAMES))
        self.frames = 0
        self.frames_gate_held = 0
        self.frames_total = 0
        self.done = False

    def add(self, t: float, angles: ArrayLike | None, gate_held: bool = False) -> None:
        if self.done:
            return
        if self._t0 is None:
            self._t0 = t
        if t - self._t0 >= self.duration_s - 1e-9:
            self.done = True
            return
        self.frames_total += 1
        if angles is None:
            return
        a = np.asarray(angles, dtype=float)
        if a.shape != (len(JOINT_NAMES),) or not np.isfinite(a).all():
            return
        self._sum += a
        self.frames += 1
        self.frames_gate_held += int(gate_held)

    def result(self) -> CapturedPose:
        """The captured pose; CalibrationError if no (or too few) frames had a hand."""
        if self.frames_total == 0:
            raise CalibrationError(f"{self.pose} capture got no frame (is the source delivering?)")
        if self.frames == 0:
            raise CalibrationError(f"{self.pose} capture: no hand in any of its {self.frames_total} frames")
        if self.frames < self.min_hand_fraction * self.frames_total:
            raise CalibrationError(f"{self.pose} capture: hand found in only {self.frames} of "
                                   f"{self.frames_total} frames; hold the hand in view and retry")
        angles = self._sum / self.frames
        return CapturedPose(self.pose, angles, finger_curls(angles), self.frames, self.frames_total,
                            self.frames_gate_held)


class StallWatch:
    """Has a capture's source stopped delivering? Decided on frame *arrivals* (wall clock, s,
    passed in: pure and testable), relative to the source's own pace, so a slow source is never
    taken for a stopped one.

    The limit is ``max(slack, pace_factor * pace)`` s without a frame; ``pace`` = the longest
    arrival interval seen (at construction: the source's interval before the capture began, 0 if
    unknown), so ``slack`` only rules for a source faster than ``slack / pace_factor``.
    ``start``: the time the capture was requested (the first wait counts from it).
    """

    def __init__(self, start: float, slack: float = 2.0, pace: float = 0.0, pace_factor: float = 10.0):
        if not (math.isfinite(slack) and slack > 0 and math.isfinite(pace) and pace >= 0 and pace_factor >= 1):
            raise ValueError(f"slack > 0, pace >= 0, pace_factor >= 1 required, got {slack}, {pace}, {pace_factor}")
        self.slack, self.pace, self.pace_factor = float(slack), float(pace), float(pace_factor)
        self.last = float(start)
        self.frames = 0

    def frame(self, now: float) -> None:
        """A frame arrived at ``now``."""
        if self.frames:
            self.pace = max(self.pace, now - self.last)
        self.last = float(now)
        self.frames += 1

    @property
    def limit(self) -> float:
        """s without a frame that make a stall (at the pace seen so far)."""
        return max(self.slack, self.pace_factor * self.pace)

    def stalled(self, now: float) -> bool:
        return now - self.last > self.limit


def capture_pose(pose: str, angles: ArrayLike) -> CapturedPose:
    """A CapturedPose from an (N, 15) array of joint angles (all frames with a hand)."""
    a = np.asarray(angles, dtype=float)
    if a.ndim != 2 or a.shape[1] != len(JOINT_NAMES) or len(a) == 0:
        raise CalibrationError(f"{pose} capture: expected (N>0, 15) joint angles, got {a.shape}")
    mean = a.mean(axis=0)
    return CapturedPose(pose, mean, finger_curls(mean), len(a), len(a))


def check_pose(pose: CapturedPose, reference: Windows, *, limit: float = 0.5) -> None:
    """Refuse a capture that does not look like its pose; CalibrationError names finger and angle.

    reference: finger windows (5, FINGER_NAMES) to read the capture with (uncalibrated defaults).
    "open": every digit must read flexion <= ``limit``; "fist": index..pinky must read >= ``limit``
    (the thumb barely curls in a fist and is not judged).
    """
    flex = reference.flexions(pose.curls)
    wrong = []
    for i, name in enumerate(FINGER_NAMES):
        if pose.pose == "open" and flex[i] > limit:
            wrong.append(f"{name} {pose.curls[i]:.2f} rad (reads {flex[i]:.2f} closed; straight is "
                         f"{reference.straight[i]:.2f})")
        elif pose.pose == "fist" and i > 0 and flex[i] < limit:
            wrong.append(f"{name} {pose.curls[i]:.2f} rad (reads {flex[i]:.2f}; curled is "
                         f"{reference.curled[i]:.2f})")
    if wrong:
        looks = "closed" if pose.pose == "open" else "open"
        raise CalibrationError(f"{pose.pose} capture looks {looks}: " + ", ".join(wrong) +
                               f"; hold the hand {'open and flat' if pose.pose == 'open' else 'in a fist'}"
                               " and retry")


@dataclass(frozen=True)
class Calibration:
    """Windows set by a calibration: per finger (5) and per joint (15).

    calibrated: the digits whose windows come from the two captures (FINGER_NAMES order); kept:
    digit -> why its windows were kept as they were (its open and fist curls too close).
    quality: the smallest open-to-fist curl range of the calibrated fingers among index..pinky,
    rad, clipped to [0, 1] (a full fist ranges about 1.0-1.4 rad; the thumb is not counted; 0 when
    none of them was calibrated). Below 0.5 the fist was shallow and flexions will be noisy.
    """

    fingers: Windows
    joints: Windows
    quality: float = 1.0
    calibrated: tuple[str, ...] = FINGER_NAMES
    kept: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """Human-readable windows, what was calibrated and kept, and quality (the ~/calibrate reply)."""
        w = ", ".join(f"{f} {s:.2f}->{c:.2f}" for f, s, c in
                      zip(self.fingers.names, self.fingers.straight, self.fingers.curled))
        text = f"finger windows (rad, straight->curled): {w}; quality {self.quality:.2f}"
        if self.kept:
            text = (f"calibrated {', '.join(self.calibrated)}; kept the windows of " +
                    ", ".join(f"{d} ({why})" for d, why in self.kept.items()) + "; " + text)
        return text


def windows_from_poses(open_pose: CapturedPose, fist_pose: CapturedPose, *, min_range: float = 0.15,
                       min_joint_range: float = 0.3, current_fingers: Windows | None = None,
                       current_joints: Windows | None = None) -> Calibration:
    """Flexion windows from an open-hand and a fist capture (see module docstring).

    current_fingers (5) / current_joints (15): the windows in force, kept for every digit whose
    open and fist curls differ by less than ``min_range`` rad (default: the tracker's defaults).
    Raises CalibrationError naming every digit when none of them has that range.
    """
    if open_pose.pose != "open" or fist_pose.pose != "fist":
        raise ValueError("windows_from_poses(open capture, fist capture)")
    if current_fingers is None or current_joints is None:
        from hand_tracking.tracker_core import default_finger_windows, default_joint_windows
        current_fingers = current_fingers or default_finger_windows()
        current_joints = current_joints or default_joint_windows()
    if current_fingers.names != FINGER_NAMES or current_joints.names != JOINT_NAMES:
        raise ValueError("current windows must be for FINGER_NAMES and JOINT_NAMES")
    span = open_pose.curls - fist_pose.curls
    ok = span >= min_range
    kept = {name: f"open {o:.2f} rad, fist {f:.2f} rad: {o - f:.2f} apart < {min_range:.2f}"
            for name, o, f, good in zip(FINGER_NAMES, open_pose.curls, fist_pose.curls, ok) if not good}
    if not ok.any():
        raise CalibrationError(
            "open hand and fist are too close for: " +
            ", ".join(f"{n} (open {o:.2f} rad, fist {f:.2f} rad)"
                      for n, o, f in zip(FINGER_NAMES, open_pose.curls, fist_pose.curls)) +
            f"; the fist must curl a digit at least {min_range:.2f} rad more than the open hand")
    f_straight = np.where(ok, np.clip(open_pose.curls, 0, math.pi), current_fingers.straight)
    f_curled = np.where(ok, np.clip(fist_pose.curls, 0, math.pi), current_fingers.curled)
    fingers = Windows(FINGER_NAMES, tuple(float(x) for x in f_straight), tuple(float(x) for x in f_curled))
    straight = np.clip(open_pose.angles, min_joint_range, math.pi)
    curled = np.clip(np.minimum(fist_pose.angles, straight - min_joint_range), 0.0, math.pi)
    joint_ok = np.repeat(ok, 3)  # JOINT_NAMES: three joints a digit, digit by digit
    joints = Windows(JOINT_NAMES, tuple(float(x) for x in np.where(joint_ok, straight, current_joints.straight)),
                     tuple(float(x) for x in np.where(joint_ok, curled, current_joints.curled)))
    fingers_ok = ok[1:]
    quality = float(np.clip(np.min(span[1:][fingers_ok]) / 1.0, 0.0, 1.0)) if fingers_ok.any() else 0.0
    calibrated = tuple(n for n, good in zip(FINGER_NAMES, ok) if good)
    return Calibration(fingers, joints, quality=quality, calibrated=calibrated, kept=kept)
