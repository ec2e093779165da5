"""The ``~/calibrate`` service's logic (no rclpy): one :class:`CalibrationSession` per node.

A call captures one pose: :meth:`CalibrationSession.start` opens the capture, :meth:`~CalibrationSession.add`
feeds it every processed frame (window on media time: the capture stamps; a
:class:`~hand_tracking.calibration.StallWatch` on wall time fails it when the source stops
delivering), :meth:`~CalibrationSession.stop` ends it with its result, and
:meth:`~CalibrationSession.finish` judges that result: once an open hand and a fist are captured
it returns the windows (:class:`~hand_tracking.calibration.Calibration`), which
:func:`as_parameters` turns into the node's window parameters.

Not thread-safe by itself: the node calls start/add/stop/stalled under its lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from numpy.typing import ArrayLike

from hand_common.contract import FINGER_NAMES
from hand_tracking.calibration import (
    Calibration,
    CalibrationError,
    CapturedPose,
    PoseCapture,
    StallWatch,
    check_pose,
    windows_from_poses,
)
from hand_tracking.tracker_core import default_finger_windows
from hand_tracking.tracker_params import finger_param

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
    calibration: the windows to set (both poses captured), else None; warning: a line to log.
    """

    success: bool
    message: str
    frames: int = 0
    curls: list[float] | None = None
    calibration: Calibration | None = None
    warning: str | None = None


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

    def add(self, t: float, raw_angles: ArrayLike | None, wall_now: float) -> bool:
        """Feed one processed frame (t: capture stamp, s; raw_angles: its 15 joint angles or None);
        True when the running capture's window is complete."""
        r = self.running
        if r is None:
            return False
        r.capture.add(t, raw_angles)
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
               min_joint_range: float) -> Outcome:
        """Judge a capture's ``result``: kept when plausible; with both poses kept, the windows
        (``Outcome.calibration``) or, when open and fist are too close, this capture discarded."""
        if isinstance(result, CalibrationError):
            return Outcome(False, str(result), warning=f"calibration: {result}")
        curls = [float(c) for c in result.curls]
        try:
            check_pose(result, default_finger_windows())
        except CalibrationError as exc:
            return Outcome(False, str(exc), curls=curls, warning=f"calibration: {exc}")
        other = "fist" if pose == "open" else "open"
        self.captured[pose] = result
        if other not in self.captured:
            self.state = f"{pose} captured"
            return Outcome(True, f"{pose} captured ({result.frames} frames with a hand); now call with "
                                 f"pose={other.upper()} to set the windows", result.frames, curls)
        try:
            cal = windows_from_poses(self.captured["open"], self.captured["fist"], min_range=min_range,
                                     min_joint_range=min_joint_range)
        except CalibrationError as exc:
            del self.captured[pose]
            message = f"{exc}; {pose} capture discarded, the {other} capture is kept"
            return Outcome(False, message, result.frames, curls, warning=f"calibration refused: {message}")
        return Outcome(True, "windows set: " + cal.describe(), result.frames, curls, calibration=cal)

    def applied(self) -> None:
        """The windows of the last :meth:`finish` were set."""
        self.state = CALIBRATED

    def windows_changed(self) -> None:
        """Window parameters were set by hand (not by :meth:`applied`'s calibration)."""
        if not self.applying:
            self.state = FROM_PARAMETERS
