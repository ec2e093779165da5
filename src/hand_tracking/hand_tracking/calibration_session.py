"""The ``~/calibrate`` service's logic (no rclpy): one :class:`CalibrationSession` per node.

A call captures one pose: :meth:`CalibrationSession.start` opens the capture, :meth:`~CalibrationSession.add`
feeds it every processed frame (window on media time: the capture stamps; a
:class:`~hand_tracking.calibration.StallWatch` on wall time fails it when the source stops
delivering), :meth:`~CalibrationSession.stop` ends it with its result, and
:meth:`~CalibrationSession.finish` judges that result: once an open hand and a fist are captured
it returns the windows (:class:`~hand_tracking.calibration.Calibration`), which
:func:`as_parameters` turns into the node's window parameters.

What a capture takes (:func:`capture_angles`): every frame the quality gate accepted, and every
frame it refused only because the skeleton looked implausible for its size or proportions
(:data:`CAPTURABLE_REFUSALS`: MediaPipe's world head shrinks the palm of a hand seen from the back
or from close up, and the gate would hold the last pose): the hand is whole and in the picture, so
its own angles are captured (``gate_held``). Frames refused for what the picture shows (a broken
skeleton, landmarks out of the frame, a sudden jump: blur) and frames without a hand are not. A
capture's reply says how many frames of each kind it took.

Digits whose open and fist curls are too close keep their windows and the others are calibrated
(:func:`hand_tracking.calibration.windows_from_poses`); the reply names both.

Not thread-safe by itself: the node calls start/add/stop/stalled under its lock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from hand_common.contract import FINGER_NAMES, HAND_SIDES
from hand_tracking.calibration import (
    Calibration,
    CalibrationError,
    CapturedPose,
    PoseCapture,
    StallWatch,
    check_pose,
    windows_from_poses,
)
from hand_tracking.geometry import Windows, joint_angles
from hand_tracking.hand_identity import TwoHandCore, TwoHandOutput
from hand_tracking.tracker_core import TrackerCore, TrackOutput, default_finger_windows
from hand_tracking.tracker_params import finger_param

#: Gate refusals (``TrackOutput.rejected``) whose frame still shows a clear, whole hand: the gate
#: judged a digit's image length implausible (a finger pointing at a close camera is magnified by
#: perspective). A calibration captures such frames; a broken skeleton (``degenerate``, a bone folded
#: back: ``joint_angle``), landmarks out of the frame (``outside_image``), a shape that left its
#: predicted motion (``motion``: blur, a glitch), a doubtful classifier (``low_score``: blurred
#: frames measured so) and any other refusal are not captured.
CAPTURABLE_REFUSALS = frozenset({"finger_length"})


def _own_angles(core: TrackerCore, out: TrackOutput, width: int, height: int) -> tuple[np.ndarray | None, bool]:
    if out.raw_angles is not None:
        return out.raw_angles, False
    if out.rejected not in CAPTURABLE_REFUSALS or out.hand is None:
        return None, False
    angles = joint_angles(core.points(out.hand, width, height))
    return (angles, True) if np.isfinite(angles).all() else (None, False)


def capture_angles(core: TrackerCore | TwoHandCore, out: TrackOutput | TwoHandOutput, width: int, height: int
                   ) -> tuple[np.ndarray | None, bool]:
    """(15 joint angles, rad, or None; gate_held) a calibration capture takes from one processed
    frame: the gate-accepted frame's raw angles, else the frame's own angles when the gate
    refused it for one of :data:`CAPTURABLE_REFUSALS` (``gate_held`` True), else None.
    Two hands: the right hand's frame first, then the left's. width/height: image size, px."""
    if isinstance(out, TwoHandOutput):
        assert isinstance(core, TwoHandCore)
        for side in HAND_SIDES:
            angles, held = _own_angles(core.cores[side], out.sides[side], width, height)
            if angles is not None:
                return angles, held
        return None, False
    return _own_angles(core, out, width, height)

#: the calibration state reported in /diagnostics after the windows came from parameters
FROM_PARAMETERS = "parameters"
CALIBRATED = "calibrated"


@dataclass
class RunningCapture:
    """One capture in progress: its window (media time), its stall watch (wall time) and the
    caller's ``waiter`` (opaque here: the node's future)."""

    capture: PoseCapture
    watch: StallWatch
    waiter: Any


@dataclass(frozen=True)
class Outcome:
    """The answer to one ``~/calibrate`` call.

    success, message, frames, curls (rad, 5, None when no pose was captured): the reply;
    frames_gate_held: of ``frames``, those the gate refused as implausible but clear;
    calibration: the windows to set (both poses captured), else None (its ``calibrated`` and
    ``kept`` name the digits); warning: a line to log.
    """

    success: bool
    message: str
    frames: int = 0
    curls: list[float] | None = None
    calibration: Calibration | None = None
    warning: str | None = None
    frames_gate_held: int = 0


def as_parameters(cal: Calibration) -> list[tuple[str, Any]]:
    """The window parameters (name, value) a calibration sets: every finger's straight, then
    curled angle (rad), then joint_straight_angles and joint_curled_angles (15 values, rad)."""
    params: list[tuple[str, Any]] = [(finger_param(f, "straight"), float(s))
                                     for f, s in zip(FINGER_NAMES, cal.fingers.straight)]
    params += [(finger_param(f, "curled"), float(c)) for f, c in zip(FINGER_NAMES, cal.fingers.curled)]
    params += [("joint_straight_angles", [float(x) for x in cal.joints.straight]),
               ("joint_curled_angles", [float(x) for x in cal.joints.curled])]
    return params


class CalibrationSession:
    """The captured poses of one node and the capture in progress (see module docstring).

    state: what the windows come from, for /diagnostics: ``parameters``, ``open captured``,
    ``fist captured`` or ``calibrated``.
    """

    def __init__(self) -> None:
        self.captured: dict[str, CapturedPose] = {}
        self.state = FROM_PARAMETERS
        self.running: RunningCapture | None = None
        #: True while the node sets the windows of a calibration (their change is not a manual one)
        self.applying = False

    # --- one capture ------------------------------------------------------------------------------
    def start(self, pose: str, duration_s: float, waiter: Any, *, wall_now: float, slack_s: float,
              frame_gap_s: float) -> str | None:
        """Open a capture of ``pose`` (open or fist) over ``duration_s`` of media time; returns why
        it cannot start (one is already running), else None. The stall watch allows
        max(slack_s, 10 x frame_gap_s) of wall time without a frame."""
        if self.running is not None:
            return f"a {self.running.capture.pose} capture is already running"
        # the window counts media time (capture stamps); the stall watch fails the capture only
        # when no frame arrived for max(slack, 10x the source's own frame interval), so a slow
        # unpaced file is never "too slow" (calibration.StallWatch)
        self.running = RunningCapture(PoseCapture(pose, duration_s), StallWatch(wall_now, slack_s, frame_gap_s),
                                      waiter)
        return None

    def add(self, t: float, raw_angles: ArrayLike | None, wall_now: float, gate_held: bool = False) -> bool:
        """Feed one processed frame (t: capture stamp, s; raw_angles: its 15 joint angles or None;
        gate_held: the gate refused it as implausible but clear, :func:`capture_angles`);
        True when the running capture's window is complete."""
        r = self.running
        if r is None:
            return False
        r.capture.add(t, raw_angles, gate_held)
        r.watch.frame(wall_now)
        return r.capture.done

    def stalled(self, wall_now: float) -> CalibrationError | None:
        """The error of a running capture that got no frame for too long, else None."""
        r = self.running
        if r is None or not r.watch.stalled(wall_now):
            return None
        return CalibrationError(f"{r.capture.pose} capture: no frame arrived for {r.watch.limit:.1f} s "
                                f"({r.capture.frames_total} frames seen); is the source delivering?")

    def stop(self, error: CalibrationError | None = None, *, ended: bool = False
             ) -> tuple[Any, CapturedPose | CalibrationError] | None:
        """End the running capture: (its waiter, its result or ``error``), None if none runs.
        ``ended``: the source ended before the window did (the result of the frames captured)."""
        r, self.running = self.running, None
        if r is None:
            return None
        if error is not None:
            return r.waiter, error
        try:
            return r.waiter, r.capture.result()
        except CalibrationError as exc:
            return r.waiter, CalibrationError(f"{exc} (the source ended)") if ended else exc

    # --- judging the captures ---------------------------------------------------------------------
    def finish(self, pose: str, result: CapturedPose | CalibrationError, *, min_range: float,
               min_joint_range: float, current: tuple[Windows, Windows] | None = None) -> Outcome:
        """Judge a capture's ``result``: kept when plausible; with both poses kept, the windows
        (``Outcome.calibration``: the digits with enough range calibrated, the others keep their
        ``current`` (finger, joint) windows) or, when no digit has the range, this capture discarded."""
        if isinstance(result, CalibrationError):
            return Outcome(False, str(result), warning=f"calibration: {result}")
        curls = [float(c) for c in result.curls]
        try:
            check_pose(result, default_finger_windows())
        except CalibrationError as exc:
            return Outcome(False, str(exc), curls=curls, warning=f"calibration: {exc}")
        other = "fist" if pose == "open" else "open"
        self.captured[pose] = result
        held = result.frames_gate_held
        frames = result.describe_frames()
        if other not in self.captured:
            self.state = f"{pose} captured"
            return Outcome(True, f"{pose} captured ({frames}); now call with "
                                 f"pose={other.upper()} to set the windows", result.frames, curls,
                           frames_gate_held=held)
        fingers, joints = current if current is not None else (None, None)
        try:
            cal = windows_from_poses(self.captured["open"], self.captured["fist"], min_range=min_range,
                                     min_joint_range=min_joint_range, current_fingers=fingers,
                                     current_joints=joints)
        except CalibrationError as exc:
            del self.captured[pose]
            message = f"{exc}; {pose} capture discarded, the {other} capture is kept"
            return Outcome(False, message, result.frames, curls, warning=f"calibration refused: {message}",
                           frames_gate_held=held)
        warning = None
        if cal.kept:
            warning = ("calibration: kept the windows of " + ", ".join(f"{d} ({why})" for d, why in cal.kept.items())
                       + f"; calibrated {', '.join(cal.calibrated)}")
        return Outcome(True, f"windows set ({pose} {frames}): " + cal.describe(), result.frames, curls,
                       calibration=cal, warning=warning, frames_gate_held=held)

    def applied(self) -> None:
        """The windows of the last :meth:`finish` were set."""
        self.state = CALIBRATED

    def windows_changed(self) -> None:
        """Window parameters were set by hand (not by :meth:`applied`'s calibration)."""
        if not self.applying:
            self.state = FROM_PARAMETERS


def check_request(state: str, pose: int, duration_s: float, default_s: float, *, open_code: int,
                  fist_code: int) -> tuple[str, float, str]:
    """A ``~/calibrate`` request checked: ``(pose name 'open'/'fist', duration s, '')``, or
    ``('', 0, reason)`` to refuse it. state: the node's lifecycle state (active only); pose: the
    request's code (``open_code`` or ``fist_code``); duration_s: media seconds, 0 = ``default_s``,
    at most 30."""
    if state != "active":
        return "", 0.0, f"node is {state}: activate it before calibrating"
    if pose not in (open_code, fist_code):
        return "", 0.0, f"pose must be OPEN ({open_code}) or FIST ({fist_code})"
    duration = float(duration_s) or float(default_s)
    if not (math.isfinite(duration) and 0.0 < duration <= 30.0):
        return "", 0.0, f"duration_s must be in (0, 30] s, got {duration_s}"
    return ("open" if pose == open_code else "fist"), duration, ""
