"""``hand_tracker``: the tracker lifecycle node (camera / video / images / recorded landmarks →
landmarks, finger flexions, per-joint flexions, diagnostics).

Thin ROS layer over modules of one job each: tracker_params (parameter table → configuration),
tracker_worker (landmark model, worker thread: read, pace, MediaPipe, capture stamps), sources and
replay (frames), tracker_core (geometry, gate, 1€ filter, holds), tracker_messages, calibration_session
(``~/calibrate``) and tracker_diagnostics (counters under one lock, the status), all in hand_tracking.

Lifecycle: ``configure`` opens the source (a camera is verified with a real frame read) and loads
MediaPipe; ``activate`` starts the worker thread (read → inference → geometry/filter → publish);
``deactivate`` stops it; ``cleanup`` releases source and model. Capture and inference never run
on the executor thread, so services (``~/calibrate``, lifecycle, parameters) stay responsive.

Publications (QoS from :mod:`hand_common.contract`):
- ``/hand/landmarks`` hand_msgs/HandLandmarksArray, every processed frame (empty ``hands`` when no
  hand), not in ``topic:`` replay (the node would republish on the topic it reads);
- ``/hand/target_flexions`` sensor_msgs/JointState, FINGER_NAMES, flexions 0..1;
- ``/hand/joint_flexions`` sensor_msgs/JointState, JOINT_NAMES, per-joint flexions 0..1;
  both stamped with the frame's capture time, published on *every* processed frame while a pose
  is tracked or held (up to ``max_missed_frames`` frames without a hand): a held pose is
  republished at the frame rate, so an actuator's command timeout can be a few frame periods
  without false trips; when the hand is lost (or frames stop) publishing stops and the
  actuators' timeouts take them to their safe pose;
- ``/diagnostics`` diagnostic_msgs/DiagnosticArray.

Two hands (``hands: two``, read at configure): MediaPipe looks for at least two hands,
:class:`~hand_tracking.hand_identity.TwoHandCore` keeps each operator hand's identity by
continuity (labels are evidence only) and the node publishes ``/hand/left/...`` and
``/hand/right/...`` (landmarks of that hand, target_flexions, joint_flexions; names from
``contract.side_topic``) instead of the single-hand flexion topics; ``/hand/landmarks`` stays the
raw detections of every frame (replayable: identity runs again on replay).

Time comes from the data: every time-dependent step (1€ filter, hold/reset after missed frames
or after a gap > ``frame_timeout_s`` between capture stamps, calibration capture duration) runs on
the frame's capture stamp as published in the message header (:func:`capture_time`), in a live
run and in a replay (``bag:``, ``topic:``) alike, so replaying recorded ``/hand/landmarks`` with
the same parameters reproduces ``/hand/target_flexions`` and ``/hand/joint_flexions`` bit for bit
(``replay_stamps: recorded`` also reproduces their stamps). The wall-clock watchdog only reports.
A video or image folder read faster than real time (``realtime: false``) is stamped on its media
timeline (first read time + frame index / fps): filtered as if played live, whatever this
machine's speed.
A recording's ``playback_rate`` (1.0 = as recorded) plays it faster or slower, as a camera of
that rate would deliver it (2.0: a 30 fps video is a 60 fps camera; see :mod:`hand_tracking.sources`).

Run: ``ros2 run hand_tracking tracker_node --ros-args --params-file config/tracker.yaml
-p source:=video:/path/clip.mp4``, then ``ros2 lifecycle set /hand_tracker configure`` and
``activate``. See the package README (section Tracker) for every parameter.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from hand_msgs.msg import HandLandmarksArray
from hand_msgs.srv import Calibrate
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.lifecycle import State, TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.task import Future
from sensor_msgs.msg import CompressedImage, JointState
from std_msgs.msg import Header

from hand_common import contract
from hand_common.node_tools import SafeLifecycleNode, run
from hand_tracking.calibration import CalibrationError
from hand_tracking.calibration_session import CalibrationSession, as_parameters, capture_angles, check_request
from hand_tracking.hand_identity import OneHandCore, TwoHandCore, TwoHandOutput
from hand_tracking.landmarks import BackendError, HandObservation, LandmarkBackend, create_backend
from hand_tracking.preview import PreviewFrame, PreviewOutlet
from hand_tracking.replay import observations_from_msg
from hand_tracking.sources import (
    Frame,
    PrefetchSource,
    SourceError,
    SourceSpec,
    open_frame_source,
    parse_source,
)
from hand_tracking.tracker_core import HOLD_CAUSES, REJECT_REASONS, TrackOutput
from hand_tracking.tracker_diagnostics import RunState, TrackerReport, build_status
from hand_tracking.tracker_messages import capture_time, flexion_messages, landmark_arrays
from hand_tracking.tracker_params import (
    BACKEND_PARAMS,
    PARAMS,
    RENAMED,
    WINDOW_PARAMS,
    config_from,
    mediapipe_config,
    parameter_problem,
)
from hand_tracking.tracker_worker import FrameWorker, LandmarkModel, publish_patiently

__all__ = ["PARAMS", "TrackerNode", "capture_time", "main"]


class TrackerNode(SafeLifecycleNode):
    """The ``hand_tracker`` lifecycle node (see module docstring)."""

    #: s a batch source keeps retrying one sample that its keep-all publisher cannot take yet
    BATCH_PUBLISH_PATIENCE_S = 30.0

    def __init__(self, **kwargs):
        super().__init__(contract.TRACKER_NODE, **kwargs)
        # the one parameter idiom: on-set validates (check_parameters), post-set applies
        # (apply_parameters); source and hands (not live) are refused while configured
        self.declare_params(PARAMS, renamed=RENAMED)
        self._lock = threading.Lock()        # core + calibration capture, shared by worker and executor
        try:
            self._core = OneHandCore(config_from(self.param_values()))
        except ValueError as exc:  # e.g. a YAML with curled >= straight: configure refuses it
            self.get_logger().error(f"invalid parameters: {exc}")
            self._core = OneHandCore()
        self._spec: SourceSpec | None = None
        self._source = None
        self._prefetch: PrefetchSource | None = None
        self._model: LandmarkModel | None = None
        self._worker: FrameWorker | None = None
        self._stop = threading.Event()
        self._pub_landmarks = self._pub_target = self._pub_joints = self._pub_diag = None
        self._pub_sides: dict[str, tuple] = {}  # hands: two → side: (landmarks, target, joints)
        self._pub_preview = None  # operator preview (hand_tracking.preview): camera/video/images only
        self._preview: PreviewOutlet | None = None  # while active with a preview publisher
        self._batch = False  # configured with a recording read faster than real time (contract.REPLAY)
        self._sub = None
        self._timer = None
        self._calibration = CalibrationSession()
        self._run = RunState(time.monotonic())   # counters and watchdog: worker writes, timer reads
        self._last_diag = time.monotonic()
        self._last_capture: float | None = None  # under _lock
        # In every state, so that a call while not active is answered (refused with the reason).
        # Own callback group: the handler awaits frames that the timer / the topic subscription
        # (default group) deliver, so it must not hold the default group while it waits.
        # reentrant: while one capture is awaited, a second request is answered at once ("already running")
        self._srv = self.create_service(Calibrate, "~/calibrate", self._on_calibrate,
                                        callback_group=ReentrantCallbackGroup())
        self.get_logger().info(f"{contract.TRACKER_NODE} ready (unconfigured), source "
                               f"{self.get_parameter('source').value!r}")

    # --- parameters -------------------------------------------------------------------------------
    def _param(self, name: str) -> Any:
        return self.get_parameter(name).value

    def check_parameters(self, changes: dict[str, Any], values: dict[str, Any]) -> str | None:
        """On-set (validation only): the reason a set would give a bad configuration, or None."""
        return parameter_problem(values, set(changes))

    def apply_parameters(self, changes: dict[str, Any]) -> None:
        """Post-set: the new values act from the next frame on."""
        names = set(changes)
        cfg = config_from(self.param_values())
        with self._lock:
            self._core.config = cfg
        model = self._model
        if model is not None:
            if "mirror" in names:
                model.set_mirror(bool(self._param("mirror")))
            if names & set(BACKEND_PARAMS):
                model.rebuild_later()
        for opt in ("realtime", "loop"):
            if opt in names:
                value = bool(self._param(opt))
                prefetch = self._prefetch
                if prefetch is not None:
                    prefetch.set_option(opt, value)
                elif self._source is not None and hasattr(self._source, opt):
                    setattr(self._source, opt, value)
        if names & {"realtime", "drop_late_frames"} and self._prefetch is not None:
            self._prefetch.drop_old = self._drop_old()
        if names & WINDOW_PARAMS:
            self._calibration.windows_changed()
        if (preview := self._preview) is not None:
            preview.set_rate(self._param("preview_max_rate_hz"))
            preview.set_width(self._param("preview_width_px"))

    # --- lifecycle --------------------------------------------------------------------------------
    def _reset_run_state(self) -> None:
        self._run.reset(time.monotonic())
        self._last_diag = time.monotonic()
        with self._lock:
            self._last_capture = None

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def on_configure(self, state: State) -> TransitionCallbackReturn:
        log = self.get_logger()
        v = self.param_values()
        try:
            spec = parse_source(v["source"])
            cfg = config_from(v)
        except ValueError as exc:
            log.error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        try:
            if spec.kind != "topic":
                self._source = open_frame_source(
                    spec, realtime=v["realtime"], loop=v["loop"], images_fps=v["images_rate_hz"],
                    camera_width=v["camera_width_px"], camera_height=v["camera_height_px"],
                    camera_fps=v["camera_rate_hz"], clock=self._now, playback_rate=v["playback_rate"])
            if spec.kind in ("camera", "video", "images"):
                self._model = LandmarkModel(self._make_backend)
                log.info(f"MediaPipe loaded and warmed up in {self._model.warm_up():.0f} ms")
        except (SourceError, BackendError, ValueError, RuntimeError) as exc:
            log.error(f"configure failed: {exc}")
            self._release()
            return TransitionCallbackReturn.FAILURE
        self._spec = spec
        two = v["hands"] == "two"
        with self._lock:
            self._core = TwoHandCore(cfg) if two else OneHandCore(cfg)
        stream = contract.qos(contract.STREAM)
        # a recording read faster than real time is a batch job: its data publishers keep every
        # unacknowledged sample (DDS backpressure, contract.REPLAY) so that a recorder gets all
        # of them; a live or paced source keeps STREAM (no subscriber can hold samples back)
        batch = self._batch = spec.kind in ("video", "images", "bag") and not v["realtime"]
        data = contract.qos(contract.REPLAY if batch else contract.STREAM)
        if spec.kind != "topic":
            self._pub_landmarks = self.create_lifecycle_publisher(
                HandLandmarksArray, contract.TOPIC_LANDMARKS, data)
        if two:
            side = contract.side_topic
            self._pub_sides = {s: tuple(self.create_lifecycle_publisher(t, side(n, s), data) for t, n in (
                (HandLandmarksArray, contract.TOPIC_LANDMARKS), (JointState, contract.TOPIC_TARGET_FLEXIONS),
                (JointState, contract.TOPIC_JOINT_FLEXIONS))) for s in contract.HAND_SIDES}
        else:
            self._pub_target = self.create_lifecycle_publisher(JointState, contract.TOPIC_TARGET_FLEXIONS, data)
            self._pub_joints = self.create_lifecycle_publisher(JointState, contract.TOPIC_JOINT_FLEXIONS, data)
        self._pub_diag = self.create_publisher(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, stream)
        if self._model is not None:  # frames exist: the operator preview (sent only while subscribed)
            self._pub_preview = self.create_publisher(CompressedImage, contract.TOPIC_IMAGE_PREVIEW,
                                                      contract.qos(contract.IMAGE))
        if spec.kind == "topic":
            self._sub = self.create_subscription(HandLandmarksArray, spec.target, self._on_landmarks, stream)
        self._timer = self.create_timer(0.05, self._on_timer)
        self._reset_run_state()
        what = "MediaPipe" if self._model is not None else "replay (no MediaPipe)"
        log.info(f"configured: {spec} via {what}")
        return TransitionCallbackReturn.SUCCESS

    def _make_backend(self) -> LandmarkBackend:
        v = self.param_values()
        return create_backend(str(v["backend"]), mediapipe_config(v), mirror=bool(v["mirror"]))

    def _drop_old(self) -> bool:
        """Whether the prefetch queue keeps only the freshest frame: always for a camera; for a
        recording only when paced in real time with drop_late_frames (else every frame)."""
        if self._spec is not None and self._spec.kind == "camera":
            return True
        return bool(self._param("realtime")) and bool(self._param("drop_late_frames"))

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        # lifecycle publishers on first (rclpy's LifecycleNode.on_activate): an inactive one drops
        # what it is given, and a batch source's first frames come within milliseconds (measured:
        # frames 0-2 of an unpaced bag replay were counted as published but never sent)
        ret = super().on_activate(state)
        if ret != TransitionCallbackReturn.SUCCESS:
            return ret
        with self._lock:
            self._core.reset()
        self._reset_run_state()
        if self._source is not None:
            live = self._spec is not None and self._spec.kind == "camera"
            drop_old = self._drop_old()
            reopen = self._reopen_camera if live else None
            self._prefetch = PrefetchSource(self._source, depth=1 if drop_old else 2, drop_old=drop_old,
                                            reopen=reopen)
            self._stop.clear()
            if (pub := self._pub_preview) is not None:
                self._preview = PreviewOutlet(self._publish_preview, pub.get_subscription_count,
                                              float(self._param("preview_max_rate_hz")),
                                              int(self._param("preview_width_px")))
            self._worker = FrameWorker(
                self._prefetch, self._spec, batch=self._batch, model=self._model, param=self._param,
                handle=self._handle, state=self._run, log=self.get_logger(),
                wait_for_readers=self._wait_for_matched_subscribers,
                on_end=lambda: self._finish_capture(ended=True), stop=self._stop,
                preview=self._offer_preview if self._preview is not None else None)
            self._worker.start()
        self.get_logger().info("active")
        return ret

    def _reopen_camera(self):
        v = self.param_values()
        return open_frame_source(self._spec, camera_width=v["camera_width_px"],
                                 camera_height=v["camera_height_px"], camera_fps=v["camera_rate_hz"], clock=self._now)

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        self._stop_worker()
        self.get_logger().info("inactive")
        return super().on_deactivate(state)

    def _stop_worker(self) -> None:
        self._stop.set()
        if self._worker is not None:
            if not self._worker.join(5.0):
                self.get_logger().error("worker thread did not stop within 5 s")
            self._worker = None
        if self._prefetch is not None:
            self._prefetch.close(close_source=False)
            self._source = self._prefetch.source  # may have been reopened (camera)
            self._run.prefetch_closed(self._prefetch.dropped)  # still reported once inactive
            self._prefetch = None
        if self._preview is not None:
            self._preview.stop()
        self._finish_capture(CalibrationError("capture interrupted: the node left the active state"))

    def _release(self) -> None:
        """The release hook (cleanup, shutdown, error, failed configure): worker thread, source,
        MediaPipe model, publishers, subscription, timer."""
        self._stop_worker()
        if self._source is not None:
            try:
                self._source.close()
            except Exception as exc:  # noqa: BLE001
                self.get_logger().warning(f"closing the source: {exc}")
            self._source = None
        if self._model is not None:
            self._model.close()
            self._model = None
        for pub in (self._pub_landmarks, self._pub_target, self._pub_joints,
                    *(p for pubs in self._pub_sides.values() for p in pubs)):
            if pub is not None:
                self.destroy_lifecycle_publisher(pub)
        self._pub_sides = {}
        if self._pub_diag is not None:
            self.destroy_publisher(self._pub_diag)
        if self._pub_preview is not None:
            self.destroy_publisher(self._pub_preview)
            self._pub_preview = None
        self._pub_landmarks = self._pub_target = self._pub_joints = self._pub_diag = None
        if self._sub is not None:
            self.destroy_subscription(self._sub)
            self._sub = None
        if self._timer is not None:
            self.destroy_timer(self._timer)
            self._timer = None
        self._calibration.captured.clear()
        self._spec = None

    # --- publishing ---------------------------------------------------------------------------------
    def _send(self, pub, msg) -> None:
        """Publish a data message: once for a live source; for a batch source (keep-all) retried
        while the writer's history is full (:func:`~hand_tracking.tracker_worker.publish_patiently`)."""
        if not self._batch:
            pub.publish(msg)
            return
        publish_patiently(pub, msg, patience_s=self.BATCH_PUBLISH_PATIENCE_S, stop=self._stop,
                          on_retry=self._run.publish_retried)

    def _data_publishers(self) -> list:
        pubs = [self._pub_landmarks, self._pub_target, self._pub_joints]
        pubs += [p for side in (self._pub_sides or {}).values() for p in side]
        return [p for p in pubs if p is not None]

    def _wait_for_matched_subscribers(self, timeout: float = 5.0) -> None:
        """A batch source (a recording read faster than real time) starts once every subscription
        that the graph shows on a data topic has matched its publisher: a writer sends a sample
        only to the readers it has matched, so a recorder matched after the first frames would
        never get them (volatile). Live sources never wait."""
        end = time.monotonic() + timeout
        waiting: list[str] = []
        while not self._stop.is_set():
            waiting = [p.topic_name for p in self._data_publishers()
                       if p.get_subscription_count() < self.count_subscribers(p.topic_name)]
            if not waiting or time.monotonic() > end:
                break
            time.sleep(0.01)
        if waiting:
            self.get_logger().warning(f"starting the batch source although subscriptions of {waiting} "
                                      f"have not matched after {timeout:.0f} s")

    # --- processing ---------------------------------------------------------------------------------
    def _handle(self, hands: list[HandObservation], index: int, stamp: Time, capture: float, width: int,
                height: int, frame_id: str, *, decode_ms: float, infer_ms: float, with_landmarks: bool) -> None:
        """Geometry/filter/calibration capture for one frame, then publish (any thread).

        stamp: output stamp; capture: the frame's capture stamp (s, as :func:`capture_time`
        reads it), the time every time-dependent step runs on: the 1€ filter, the hold/reset
        (a gap > ``frame_timeout_s`` between two capture stamps, or a stamp going backwards,
        resets the pose) and the calibration capture. with_landmarks: publish /hand/landmarks.
        """
        t1 = time.monotonic()
        t = capture
        gap = float(self._param("frame_timeout_s"))
        with self._lock:
            last, self._last_capture = self._last_capture, t
            if last is not None and not (0.0 <= t - last <= gap):
                self._core.reset()  # a gap in the data (or a restart): the held pose is stale
            out = self._core.update(hands, t, width, height)
            events = out.identity.events if isinstance(out, TwoHandOutput) else list(self._core.events)
            if self._calibration.running is not None:
                angles, gate_held = capture_angles(self._core, out, width, height)
                done = self._calibration.add(t, angles, t1, gate_held)
            else:
                done = False
        if done:
            self._finish_capture()
        t2 = time.monotonic()
        landmarks = self._pub_landmarks if with_landmarks else None
        self._publish(out, hands, index, stamp, frame_id, width, height, landmarks)
        t3 = time.monotonic()
        ms = {"decode": decode_ms, "inference": infer_ms, "geometry_filter": (t2 - t1) * 1e3,
              "publish": (t3 - t2) * 1e3}
        sides = {side: o.status for side, o in out.sides.items()} if isinstance(out, TwoHandOutput) else None
        if self._run.frame_done(t3, out.status, out.reason, sides, ms):
            self.get_logger().info("frames are back: watchdog cleared")
        for event in events:
            self.get_logger().info(f"hand identity, frame {index}: {event}")

    def _publish(self, out: TrackOutput | TwoHandOutput, hands: list[HandObservation], index: int, stamp: Time,
                 frame_id: str, width: int, height: int, landmarks) -> None:
        array = landmark_arrays(out, Header(stamp=stamp, frame_id=frame_id), index, width, height)
        if landmarks is not None:
            self._send(landmarks, array(hands))
        if isinstance(out, TwoHandOutput):
            for side, (pub_lm, pub_target, pub_joints) in self._pub_sides.items():
                h = out.identity.hands[side]
                if landmarks is not None:
                    self._send(pub_lm, array([h] if h is not None else []))
                self._publish_flexions(out.sides[side], stamp, pub_target, pub_joints, side)
            return
        self._publish_flexions(out, stamp, self._pub_target, self._pub_joints)

    def _publish_flexions(self, out: TrackOutput, stamp: Time, pub_target, pub_joints,
                          side: str | None = None) -> None:
        try:
            msgs = flexion_messages(out, stamp, self.get_fully_qualified_name())
        except ValueError as exc:  # cannot happen; never publish NaN
            self.get_logger().error(str(exc), throttle_duration_sec=5.0)
            return
        if msgs is None:
            return
        self._send(pub_target, msgs[0])
        self._send(pub_joints, msgs[1])
        self._run.flexions_sent(side)

    def _on_landmarks(self, msg: HandLandmarksArray) -> None:
        """topic: replay — recorded/remote landmarks through geometry, filter and calibration."""
        if self.lifecycle_state != "active":
            return
        t0 = time.monotonic()
        hands, problems = observations_from_msg(msg)
        for p in problems:
            self.get_logger().warning(f"received landmarks: {p}", throttle_duration_sec=5.0)
        first = msg.hands[0] if len(msg.hands) else None
        index = int(first.frame_index) if first is not None else -1
        width = int(first.image_width) if first is not None else 0
        height = int(first.image_height) if first is not None else 0
        stamp = Time(sec=msg.header.stamp.sec, nanosec=msg.header.stamp.nanosec)
        decode_ms = (time.monotonic() - t0) * 1e3
        self._handle(hands, index, stamp, capture_time(stamp), width, height, msg.header.frame_id,
                     decode_ms=decode_ms, infer_ms=0.0, with_landmarks=False)

    # --- calibration --------------------------------------------------------------------------------
    async def _on_calibrate(self, request: Calibrate.Request, response: Calibrate.Response):
        response.success = False
        response.frames = 0
        pose, duration, refused = check_request(
            self.lifecycle_state, request.pose, request.duration_s, self._param("calibration_duration_s"),
            open_code=Calibrate.Request.OPEN, fist_code=Calibrate.Request.FIST)
        if refused:
            response.message = refused
            return response
        future = Future(executor=self.executor)
        slack = max(2.0, 2.0 * float(self._param("frame_timeout_s")))
        with self._lock:
            refused = self._calibration.start(pose, duration, future, wall_now=time.monotonic(), slack_s=slack,
                                              frame_gap_s=self._run.frame_gap())
        if refused:
            response.message = refused
            return response
        self.get_logger().info(f"calibration: capturing {pose} for {duration:.2f} s")
        await future
        with self._lock:
            current = (self._core.config.finger_windows, self._core.config.joint_windows)
        outcome = self._calibration.finish(pose, future.result(),
                                           min_range=float(self._param("calibration_min_range")),
                                           min_joint_range=float(self._param("calibration_min_joint_range")),
                                           current=current)
        response.message = outcome.message
        if outcome.curls is not None:
            response.captured_curl_rad = outcome.curls
        response.frames = outcome.frames
        if outcome.warning:
            self.get_logger().warning(outcome.warning)
        if outcome.calibration is None:
            response.success = outcome.success
            return response
        self._calibration.applying = True
        try:
            res = self.set_parameters_atomically([Parameter(n, value=v) for n, v in as_parameters(outcome.calibration)])
        finally:
            self._calibration.applying = False
        if not res.successful:
            response.message = f"windows refused: {res.reason}"
            return response
        self._calibration.applied()
        response.success = True
        self.get_logger().info(f"calibration: {response.message}")
        return response

    def _finish_capture(self, error: CalibrationError | None = None, *, ended: bool = False) -> None:
        """Complete the running capture (any thread): with its result, or with ``error``; ``ended``:
        the source ended before the window did (the result of the frames captured, if enough)."""
        with self._lock:
            stopped = self._calibration.stop(error, ended=ended)
        if stopped is None:
            return
        future, result = stopped
        future.set_result(result)
        ex = self.executor
        if ex is not None:
            ex.wake()

    # --- operator preview ---------------------------------------------------------------------------
    def _offer_preview(self, frame: Frame, stamp: Time) -> None:
        """Worker thread, after the frame's flexions went out: hand the frame to the preview thread
        when the rate allows and someone subscribes (no copy, no encoding here)."""
        if (preview := self._preview) is not None and self._pub_preview is not None:
            preview.offer(frame.image, stamp, frame.index)

    def _publish_preview(self, jpeg: bytes, frame: PreviewFrame, size: tuple[int, int]) -> None:
        """Preview thread: one downscaled JPEG frame, stamped with its capture stamp."""
        import array

        pub = self._pub_preview
        if pub is None:
            return
        pub.publish(CompressedImage(header=Header(stamp=frame.stamp, frame_id=str(self._param("frame_id"))),
                                    format="jpeg", data=array.array("B", jpeg)))

    # --- watchdog and diagnostics -------------------------------------------------------------------
    def _on_timer(self) -> None:
        now = time.monotonic()
        with self._lock:
            stall = self._calibration.stalled(now)
        if stall is not None:
            self._finish_capture(stall)
        timeout = float(self._param("frame_timeout_s"))
        if self.lifecycle_state == "active" and self._run.check_watchdog(now, timeout):
            # Report only: the reset of a stale pose is decided on the capture stamps in _handle
            # (a gap > frame_timeout_s between two frames), so a live run and its replay agree.
            self.get_logger().error(f"watchdog: no frame for {timeout:.2f} s from {self._spec}")
        if now - self._last_diag >= float(self._param("diagnostics_period_s")):
            self._publish_diagnostics(now)

    def _rejections(self) -> dict[str, int]:
        """Frames refused by the quality gate per reason since configure (both sides summed)."""
        with self._lock:
            core = self._core
            cores = list(core.cores.values()) if isinstance(core, TwoHandCore) else [core] if core else []
            return {k: sum(c.rejections[k] for c in cores) for k in REJECT_REASONS}

    def _holds(self) -> tuple[dict[str, int], int]:
        """(held frames per cause, holds that skipped an unconfirmed reading) since configure, both sides."""
        with self._lock:
            core = self._core
            cores = list(core.cores.values()) if isinstance(core, TwoHandCore) else [core] if core else []
            return ({k: sum(c.holds[k] for c in cores) for k in HOLD_CAUSES},
                    sum(c.holds_skipped_unconfirmed for c in cores))

    def _publish_diagnostics(self, now: float) -> None:
        period = max(now - self._last_diag, 1e-3)
        self._last_diag = now
        core = self._core
        two = isinstance(core, TwoHandCore)
        holds, skipped = self._holds()
        report = TrackerReport(
            node_name=self.get_name(), state=self.lifecycle_state,
            source=str(self._spec) if self._spec else str(self._param("source")),
            period_s=period, run=self._run.snapshot(now),
            dropped_frames=self._run.dropped_frames(self._prefetch.dropped if self._prefetch is not None else 0),
            rejections=self._rejections(), calibration=self._calibration.state, two_hands=two,
            holds=holds, holds_skipped_unconfirmed=skipped,
            identity_swaps=core.identity.swaps if two else 0,
            followed_hand="" if two else core.followed_label, hand_switches=0 if two else core.switches,
            label_disagreements=core.identity.disagreements if two else 0,
            sides=tuple(contract.HAND_SIDES))
        s = build_status(report)
        values = {**s.values, **(self._preview.values() if self._preview is not None else {})}
        status = DiagnosticStatus(level=bytes([s.level]), name=s.name, message=s.message, hardware_id=s.hardware_id,
                                  values=[KeyValue(key=k, value=v) for k, v in values.items()])
        if self._pub_diag is not None:
            arr = DiagnosticArray(status=[status])
            arr.header.stamp = self.get_clock().now().to_msg()
            self._pub_diag.publish(arr)


def main(args=None):
    sys.exit(run(TrackerNode, args))


if __name__ == "__main__":
    main()
