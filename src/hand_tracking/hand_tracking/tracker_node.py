"""``hand_tracker``: the tracker lifecycle node (camera / video / images / recorded landmarks →
landmarks, finger flexions, per-joint flexions, diagnostics).

Thin ROS layer over pure modules: :mod:`hand_tracking.sources` and :mod:`hand_tracking.replay`
(frames), :mod:`hand_tracking.landmarks` (MediaPipe), :mod:`hand_tracking.tracker_core`
(geometry, 1€ filter, hold/reset), :mod:`hand_tracking.calibration`.

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
or after a gap > ``frame_timeout`` between capture stamps, calibration capture duration) runs on
the frame's capture stamp as published in the message header (:func:`capture_time`), in a live
run and in a replay (``bag:``, ``topic:``) alike, so replaying recorded ``/hand/landmarks`` with
the same parameters reproduces ``/hand/target_flexions`` and ``/hand/joint_flexions`` bit for bit
(``replay_stamps: recorded`` also reproduces their stamps). The wall-clock watchdog only reports.
A video or image folder read faster than real time (``realtime: false``) is stamped on its media
timeline (first read time + frame index / fps): filtered as if played live, whatever this
machine's speed.

Run: ``ros2 run hand_tracking tracker_node --ros-args --params-file config/tracker.yaml
-p source:=video:/path/clip.mp4``, then ``ros2 lifecycle set /hand_tracker configure`` and
``activate``. See the package README (section Tracker) for every parameter.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point
from hand_msgs.msg import HandLandmarks, HandLandmarksArray
from hand_msgs.srv import Calibrate
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.lifecycle import State, TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from hand_common import contract
from hand_common.contract import FINGER_NAMES, JOINT_NAMES
from hand_common.filters import OneEuroParams
from hand_common.node_tools import SafeLifecycleNode, declare_specs, run
from hand_common.param_spec import ParamSpec
from hand_tracking.calibration import (
    CalibrationError,
    CapturedPose,
    PoseCapture,
    StallWatch,
    check_pose,
    windows_from_poses,
)
from hand_tracking.geometry import MIN_WINDOW_RAD, Windows
from hand_tracking.hand_identity import TwoHandCore, TwoHandOutput
from hand_tracking.landmarks import (
    BACKENDS,
    BackendError,
    HandObservation,
    LandmarkBackend,
    MediaPipeConfig,
    create_backend,
)
from hand_tracking.replay import LandmarkFrame, observations_from_msg, stamp_seconds
from hand_tracking.sources import (
    Frame,
    FrameError,
    PrefetchSource,
    SourceError,
    SourceSpec,
    open_frame_source,
    parse_source,
)
from hand_tracking.tracker_core import (
    DEFAULT_FINGER_CURLED,
    DEFAULT_FINGER_STRAIGHT,
    DEFAULT_JOINT_CURLED,
    DEFAULT_JOINT_STRAIGHT,
    HAND_PREFERENCES,
    REJECT_REASONS,
    QualityGate,
    TrackerConfig,
    TrackerCore,
    TrackOutput,
    default_finger_windows,
)

PI = math.pi
#: Parameters that need a new MediaPipe graph (rebuilt by the worker between two frames).
BACKEND_PARAMS = ("backend", "max_num_hands", "model_complexity", "min_detection_confidence",
                  "min_tracking_confidence", "static_image_mode")
REPLAY_STAMPS = ("now", "recorded")
HANDS_MODES = ("one", "two")


def finger_param(finger: str, end: str) -> str:
    """Name of a finger window parameter, e.g. ``index_curled_angle``."""
    return f"{finger}_{end}_angle"


#: Every parameter of the node. source and hands change only while unconfigured; the others act live.
PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("source", "camera:0",
              "Frame source: camera:<index|/dev/videoN>, video:<file>, images:<dir>, bag:<rosbag2 dir> "
              "(recorded /hand/landmarks) or topic:<landmarks topic>. Changeable only while unconfigured."),
    ParamSpec("realtime", True, "Pace video files, image folders and bags at their recorded rate "
              "(like a live camera); false = as fast as processed (a file's frames are then stamped on "
              "its media timeline: first read time + frame time; false at configure also makes the data "
              "publishers reliable keep-all, so that a recorder receives every frame of the burst).", live=True),
    ParamSpec("drop_late_frames", True, "With realtime pacing of a recording: drop frames that could "
              "not be processed in time, as a live camera does (false = process every frame, late if "
              "need be). A camera always delivers its freshest frame.", live=True),
    ParamSpec("loop", False, "Restart video files, image folders and bags at their end.", live=True),
    ParamSpec("batch_max_rate", 200.0, "A recording read faster than real time (realtime false) is "
              "processed at most this many frames per second, Hz (0 = as fast as it reads): with keep-all "
              "publishers a recorder that falls thousands of samples behind stalls the replay (measured: a "
              "20 000-frame bag unpaced at ~1 kHz stalled after 18 223 frames); 200 Hz is ~7x real time.",
              range=(0.0, 100000.0), live=True),
    ParamSpec("images_fps", 30.0, "Frame rate of an image folder (its media time and pacing), Hz.",
              range=(0.1, 1000.0), live=True),
    ParamSpec("camera_width", 0, "Requested camera width, px (0 = driver default).", range=(0, 7680),
              live=True),
    ParamSpec("camera_height", 0, "Requested camera height, px (0 = driver default).", range=(0, 4320),
              live=True),
    ParamSpec("camera_fps", 0.0, "Requested camera frame rate, Hz (0 = driver default).",
              range=(0.0, 240.0), live=True),
    ParamSpec("frame_id", "camera_optical", "frame_id of published landmarks (camera optical frame).",
              live=True),
    ParamSpec("mirror", False, "The camera image is mirrored (selfie view). False for a camera whose "
              "image is not mirrored (the shared video): MediaPipe's legacy handedness label is then "
              "swapped so 'handedness' names the physical hand.", live=True),
    ParamSpec("backend", "mediapipe_hands", "Landmark backend: " + ", ".join(sorted(BACKENDS)) +
              " (legacy MediaPipe hands solution).", live=True, choices=tuple(sorted(BACKENDS))),
    ParamSpec("max_num_hands", 1, "Hands MediaPipe looks for (at least 2 with hands: two).", range=(1, 4),
              live=True),
    ParamSpec("hands", "one", "one: follow one hand (hand_preference) on /hand/target_flexions and "
              "/hand/joint_flexions; two: follow both operator hands with identity tracking on "
              "/hand/left/... and /hand/right/... (landmarks, target_flexions, joint_flexions). "
              "Changeable only while unconfigured.", choices=HANDS_MODES),
    ParamSpec("model_complexity", 1, "MediaPipe landmark model: 0 lite (faster), 1 full.", range=(0, 1),
              live=True),
    ParamSpec("min_detection_confidence", 0.5, "MediaPipe palm detection threshold.", range=(0.0, 1.0),
              live=True),
    ParamSpec("min_tracking_confidence", 0.5, "MediaPipe tracking threshold (below: detect again).",
              range=(0.0, 1.0), live=True),
    ParamSpec("static_image_mode", False, "MediaPipe detects on every frame (unrelated images) "
              "instead of tracking between frames.", live=True),
    ParamSpec("landmark_mode", "fused", "Skeleton the angles come from: fused (MediaPipe's image head "
              "for in-plane coordinates fitted onto the world head, depth from both), world (world head "
              "only) or image (image landmarks in pixels).", live=True),
    ParamSpec("gate_enabled", True, "Frame-quality gate: refuse (hold the last pose) frames with "
              "landmarks outside the image, implausible sizes, bone-length jumps or a low score.", live=True),
    ParamSpec("gate_max_outside_fraction", 0.25, "Gate: largest fraction of the 21 image landmarks "
              "outside the image.", range=(0.0, 1.0), live=True),
    ParamSpec("gate_max_bone_jump", 0.5, "Gate: largest one-frame change of a bone, palm widths.",
              range=(0.01, 10.0), live=True),
    ParamSpec("gate_min_score", 0.55, "Gate: lowest handedness-classifier confidence max(s, 1-s).",
              range=(0.0, 1.0), live=True),
    ParamSpec("hand_preference", "any", "Which hand drives the flexions: any (most confident), "
              "right or left (physical hand).", live=True, choices=HAND_PREFERENCES),
    *(ParamSpec(finger_param(f, end), default[i], text.format(f=f), range=(0.0, PI), live=True)
      for i, f in enumerate(FINGER_NAMES)
      for end, default, text in (
          ("straight", DEFAULT_FINGER_STRAIGHT,
           "{f}: mean interior angle of its 3 joints read as fully open (flexion 0), rad."),
          ("curled", DEFAULT_FINGER_CURLED,
           "{f}: mean interior angle of its 3 joints read as fully closed (flexion 1), rad; "
           f"at least {MIN_WINDOW_RAD} below the straight angle."))),
    ParamSpec("joint_straight_angles", list(DEFAULT_JOINT_STRAIGHT),
              "Per-joint interior angle read as flexion 0 (15 values, rad, contract.JOINT_NAMES order).",
              array_type=float, live=True),
    ParamSpec("joint_curled_angles", list(DEFAULT_JOINT_CURLED),
              "Per-joint interior angle read as flexion 1 (15 values, rad, contract.JOINT_NAMES order).",
              array_type=float, live=True),
    ParamSpec("filter_enabled", True, "1€ filter on the 15 joint angles.", live=True),
    ParamSpec("filter_min_cutoff", 1.5, "1€ cutoff at rest, Hz (lower = smoother, more lag).",
              range=(0.01, 100.0), live=True),
    ParamSpec("filter_beta", 2.0, "1€ speed coefficient, Hz per rad/s = 1/rad (higher = less lag "
              "on fast motion).", range=(0.0, 1000.0), live=True),
    ParamSpec("filter_d_cutoff", 1.0, "1€ cutoff of the speed estimate, Hz.", range=(0.01, 100.0), live=True),
    ParamSpec("max_missed_frames", 10, "Frames without a (plausible) hand during which the last pose "
              "is held and republished; then the filter resets and flexions stop.", range=(0, 100000),
              live=True),
    ParamSpec("frame_timeout", 1.0, "Watchdog: no frame for this long (s) while active → diagnostics "
              "ERROR (nothing is published without frames). A gap this long between the capture stamps "
              "of two frames resets the filter and drops the held pose (decided on the stamps, so a "
              "replay does the same).", range=(0.05, 60.0), live=True),
    ParamSpec("diagnostics_period", 1.0, "Period of /diagnostics messages, s.", range=(0.1, 60.0), live=True),
    ParamSpec("calibration_duration", 1.0, "Default capture window of ~/calibrate (request "
              "duration_s = 0), s of MEDIA time: counted on the frames' capture stamps (a file's own "
              "timeline), never the wall clock, so a slow unpaced file captures the same frames, later. "
              "A capture fails only when no frame arrives for max(2 s, 2 x frame_timeout, 10 x the "
              "source's own frame interval) of wall time; a source that ends first answers with the "
              "frames captured.", range=(0.1, 30.0), live=True),
    ParamSpec("calibration_min_range", 0.15, "Calibration is refused for a finger whose fist curl is "
              "not this much below its open curl, rad.", range=(MIN_WINDOW_RAD, 2.0), live=True),
    ParamSpec("calibration_min_joint_range", 0.3, "Narrowest per-joint window a calibration sets, rad.",
              range=(MIN_WINDOW_RAD, 2.0), live=True),
    ParamSpec("publish_landmarks", True, "Publish /hand/landmarks (never in topic: replay).", live=True),
    ParamSpec("replay_stamps", "now", "Bag replay: stamp outputs with the replay time ('now') or the "
              "recorded capture time ('recorded').", live=True, choices=REPLAY_STAMPS),
)
_BY_NAME = {s.name: s for s in PARAMS}


def _stamp(t: float) -> Time:
    sec = int(math.floor(t))
    return Time(sec=sec, nanosec=min(int(round((t - sec) * 1e9)), 999_999_999))


def _stamp_ns(ns: int) -> Time:
    return Time(sec=int(ns) // 1_000_000_000, nanosec=int(ns) % 1_000_000_000)


def capture_time(stamp: Time) -> float:
    """The time (s) the filter, the hold/reset and the calibration capture run on for a frame
    stamped ``stamp``: the published capture stamp read back exactly as a replay reads it from
    the recorded message (:func:`hand_tracking.replay.stamp_seconds`), so a live run and the
    replay of its recorded ``/hand/landmarks`` compute with the very same floats."""
    return stamp_seconds(stamp)


def _points(a: np.ndarray) -> list[Point]:
    return [Point(x=x, y=y, z=z) for x, y, z in a.tolist()]


@dataclass
class _Stats:
    """Per-stage timings and counters: since the last diagnostics message and since activation."""

    frames: int = 0
    tracked: int = 0
    sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(
        ("decode", "inference", "geometry_filter", "publish"), 0.0))

    #: the last inference times (ms), bounded: their p95 goes into /diagnostics
    inference: deque = field(default_factory=lambda: deque(maxlen=4096))

    def add(self, tracked: bool, **ms: float) -> None:
        self.frames += 1
        self.tracked += int(tracked)
        for k, v in ms.items():
            self.sums[k] += v
        if "inference" in ms:
            self.inference.append(ms["inference"])

    def inference_p95(self) -> float:
        return float(np.percentile(self.inference, 95)) if self.inference else float("nan")

    def mean(self, key: str) -> float:
        return self.sums[key] / self.frames if self.frames else 0.0


@dataclass
class _Capture:
    capture: PoseCapture  # its window: media time (capture stamps)
    future: Future
    watch: StallWatch  # fails the capture when the source stops delivering (at its own pace)


class TrackerNode(SafeLifecycleNode):
    """The ``hand_tracker`` lifecycle node (see module docstring)."""

    def __init__(self, **kwargs):
        super().__init__(contract.TRACKER_NODE, **kwargs)
        declare_specs(self, PARAMS)
        self._lock = threading.Lock()        # core + capture, shared by worker and executor
        try:
            self._core = TrackerCore(self._config_from(self._param_values()))
        except ValueError as exc:  # e.g. a YAML with curled >= straight: configure refuses it
            self.get_logger().error(f"invalid parameters: {exc}")
            self._core = TrackerCore()
        self._spec: SourceSpec | None = None
        self._source = None
        self._prefetch: PrefetchSource | None = None
        self._backend: LandmarkBackend | None = None
        self._backend_dirty = False
        self._worker: threading.Thread | None = None
        self._stop = threading.Event()
        self._pub_landmarks = self._pub_target = self._pub_joints = self._pub_diag = None
        self._pub_sides: dict[str, tuple] = {}  # hands: two → side: (landmarks, target, joints)
        self._batch = False  # configured with a recording read faster than real time (contract.REPLAY)
        self._sub = None
        self._timer = None
        self._capture: _Capture | None = None
        self._captured: dict[str, CapturedPose] = {}
        self._calibration_state = "parameters"
        self._calibrating_params = False
        self._reset_run_state()
        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)
        # In every state, so that a call while not active is answered (refused with the reason).
        # Own callback group: the handler awaits frames that the timer / the topic subscription
        # (default group) deliver, so it must not hold the default group while it waits.
        # reentrant: while one capture is awaited, a second request is answered at once ("already running")
        self._srv = self.create_service(Calibrate, "~/calibrate", self._on_calibrate,
                                        callback_group=ReentrantCallbackGroup())
        self.get_logger().info(f"{contract.TRACKER_NODE} ready (unconfigured), source "
                               f"{self.get_parameter('source').value!r}")

    # --- parameters -------------------------------------------------------------------------------
    def _param_values(self, overrides: list[Parameter] | None = None) -> dict:
        values = {name: p.value for name, p in self._parameters.items()}
        for p in overrides or ():
            values[p.name] = p.value
        return values

    @staticmethod
    def _config_from(v: dict) -> TrackerConfig:
        """Parameter values → TrackerConfig; ValueError naming the offending parameter."""
        try:
            fingers = Windows(FINGER_NAMES, tuple(v[finger_param(f, "straight")] for f in FINGER_NAMES),
                              tuple(v[finger_param(f, "curled")] for f in FINGER_NAMES))
        except ValueError as exc:
            raise ValueError(f"finger window {exc} (parameters <finger>_straight_angle/_curled_angle)") from exc
        try:
            joints = Windows(JOINT_NAMES, tuple(v["joint_straight_angles"]), tuple(v["joint_curled_angles"]))
        except ValueError as exc:
            raise ValueError(f"joint window {exc} (joint_straight_angles/joint_curled_angles)") from exc
        return TrackerConfig(
            finger_windows=fingers,
            joint_windows=joints,
            landmark_mode=str(v["landmark_mode"]),
            gate=QualityGate(enabled=bool(v["gate_enabled"]),
                             max_outside_fraction=float(v["gate_max_outside_fraction"]),
                             max_bone_jump=float(v["gate_max_bone_jump"]),
                             min_score=float(v["gate_min_score"])),
            hand_preference=str(v["hand_preference"]),
            filter_enabled=bool(v["filter_enabled"]),
            filter=OneEuroParams(float(v["filter_min_cutoff"]), float(v["filter_beta"]),
                                 float(v["filter_d_cutoff"])),
            max_missed_frames=int(v["max_missed_frames"]),
        )

    def _validate_parameters(self, params: list[Parameter]) -> SetParametersResult:
        """On-set callback: refuse (with the reason) anything that would give a bad config."""
        names = {p.name for p in params}
        if "source" in names:
            if self.lifecycle_state != "unconfigured":
                return SetParametersResult(successful=False, reason=(
                    f"source can only change while unconfigured (state {self.lifecycle_state}): "
                    "deactivate and cleanup first; it is opened at configure"))
            try:
                parse_source(next(p.value for p in params if p.name == "source"))
            except ValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
        v = self._param_values(params)
        if why := _BY_NAME["hands"].problem(v["hands"]):
            return SetParametersResult(successful=False, reason=why)
        if "hands" in names and self.lifecycle_state != "unconfigured":
            return SetParametersResult(successful=False, reason=(
                f"hands can only change while unconfigured (state {self.lifecycle_state}): its "
                "publishers are created at configure"))
        for name in ("hand_preference", "backend", "replay_stamps"):
            if why := _BY_NAME[name].problem(v[name]):
                return SetParametersResult(successful=False, reason=why)
        for name in ("joint_straight_angles", "joint_curled_angles"):
            arr = v[name]
            if len(arr) != len(JOINT_NAMES):
                return SetParametersResult(successful=False, reason=(
                    f"{name} needs {len(JOINT_NAMES)} values ({', '.join(JOINT_NAMES)}), got {len(arr)}"))
        try:
            self._config_from(v)
            MediaPipeConfig(int(v["max_num_hands"]), int(v["model_complexity"]),
                            float(v["min_detection_confidence"]), float(v["min_tracking_confidence"]),
                            bool(v["static_image_mode"]))
        except (ValueError, TypeError) as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _apply_parameters(self, params: list[Parameter]) -> None:
        """Post-set callback: the new values act from the next frame on."""
        names = {p.name for p in params}
        cfg = self._config_from(self._param_values())
        with self._lock:
            self._core.config = cfg
        if self._backend is not None and "mirror" in names:
            self._backend.mirror = bool(self.get_parameter("mirror").value)
        if names & set(BACKEND_PARAMS):
            self._backend_dirty = True
        for opt in ("realtime", "loop"):
            if opt in names:
                value = bool(self.get_parameter(opt).value)
                prefetch = self._prefetch
                if prefetch is not None:
                    prefetch.set_option(opt, value)
                elif self._source is not None and hasattr(self._source, opt):
                    setattr(self._source, opt, value)
        if names & {"realtime", "drop_late_frames"} and self._prefetch is not None:
            self._prefetch.drop_old = self._drop_old()
        windows = {finger_param(f, e) for f in FINGER_NAMES for e in ("straight", "curled")}
        if names & (windows | {"joint_straight_angles", "joint_curled_angles"}) and not self._calibrating_params:
            self._calibration_state = "parameters"

    # --- lifecycle --------------------------------------------------------------------------------
    def _reset_run_state(self) -> None:
        self._stats_period = _Stats()
        self._stats_total = _Stats()
        self._last_frame = time.monotonic()
        self._frame_gap = 0.0       # wall s between the last two processed frames (a capture's pace)
        self._frames_seen = 0
        self._last_diag = time.monotonic()
        self._watchdog = "ok"
        self._finished = False
        self._last_error = ""
        self._bad_frames = 0
        self._flexions_published = 0  # /hand/target_flexions (= /hand/joint_flexions) messages, one hand
        self._publish_retries = 0  # batch source: publishes retried while a keep-all history was full
        self._last_status = ""
        self._sides_status: dict[str, str] = {}
        self._last_reason = ""
        self._last_capture: float | None = None
        self._media_epoch: float | None = None

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def on_configure(self, state: State) -> TransitionCallbackReturn:
        log = self.get_logger()
        v = self._param_values()
        try:
            spec = parse_source(v["source"])
            cfg = self._config_from(v)
        except ValueError as exc:
            log.error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        try:
            if spec.kind != "topic":
                self._source = open_frame_source(
                    spec, realtime=v["realtime"], loop=v["loop"], images_fps=v["images_fps"],
                    camera_width=v["camera_width"], camera_height=v["camera_height"],
                    camera_fps=v["camera_fps"], clock=self._now)
            if spec.kind in ("camera", "video", "images"):
                self._backend = self._make_backend()
                log.info(f"MediaPipe loaded and warmed up in {self._backend.warm_up():.0f} ms")
        except (SourceError, BackendError, ValueError, RuntimeError) as exc:
            log.error(f"configure failed: {exc}")
            self._release()
            return TransitionCallbackReturn.FAILURE
        self._spec = spec
        two = v["hands"] == "two"
        with self._lock:
            self._core = TwoHandCore(cfg) if two else TrackerCore(cfg)
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
        if spec.kind == "topic":
            self._sub = self.create_subscription(HandLandmarksArray, spec.target, self._on_landmarks, stream)
        self._timer = self.create_timer(0.05, self._on_timer)
        self._reset_run_state()
        what = "MediaPipe" if self._backend is not None else "replay (no MediaPipe)"
        log.info(f"configured: {spec} via {what}")
        return TransitionCallbackReturn.SUCCESS

    def _make_backend(self) -> LandmarkBackend:
        v = self._param_values()
        max_hands = max(int(v["max_num_hands"]), 2) if v["hands"] == "two" else int(v["max_num_hands"])
        cfg = MediaPipeConfig(max_hands, int(v["model_complexity"]),
                              float(v["min_detection_confidence"]), float(v["min_tracking_confidence"]),
                              bool(v["static_image_mode"]))
        return create_backend(str(v["backend"]), cfg, mirror=bool(v["mirror"]))

    def _drop_old(self) -> bool:
        """Whether the prefetch queue keeps only the freshest frame: always for a camera; for a
        recording only when paced in real time with drop_late_frames (else every frame)."""
        if self._spec is not None and self._spec.kind == "camera":
            return True
        return bool(self.get_parameter("realtime").value) and bool(self.get_parameter("drop_late_frames").value)

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
            self._worker = threading.Thread(target=self._work, name="tracker worker", daemon=True)
            self._worker.start()
        self.get_logger().info("active")
        return ret

    def _reopen_camera(self):
        v = self._param_values()
        return open_frame_source(self._spec, camera_width=v["camera_width"], camera_height=v["camera_height"],
                                 camera_fps=v["camera_fps"], clock=self._now)

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        self._stop_worker()
        self.get_logger().info("inactive")
        return super().on_deactivate(state)

    def _stop_worker(self) -> None:
        self._stop.set()
        if self._worker is not None:
            self._worker.join(5.0)
            if self._worker.is_alive():
                self.get_logger().error("worker thread did not stop within 5 s")
            self._worker = None
        if self._prefetch is not None:
            self._prefetch.close(close_source=False)
            self._source = self._prefetch.source  # may have been reopened (camera)
            self._prefetch = None
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
        if self._backend is not None:
            self._backend.close()
            self._backend = None
        for pub in (self._pub_landmarks, self._pub_target, self._pub_joints,
                    *(p for pubs in self._pub_sides.values() for p in pubs)):
            if pub is not None:
                self.destroy_lifecycle_publisher(pub)
        self._pub_sides = {}
        if self._pub_diag is not None:
            self.destroy_publisher(self._pub_diag)
        self._pub_landmarks = self._pub_target = self._pub_joints = self._pub_diag = None
        if self._sub is not None:
            self.destroy_subscription(self._sub)
            self._sub = None
        if self._timer is not None:
            self.destroy_timer(self._timer)
            self._timer = None
        self._captured.clear()
        self._spec = None

    # --- processing ---------------------------------------------------------------------------------
    def _work(self) -> None:
        """Worker thread: read → (MediaPipe) → geometry/filter → publish, until stopped."""
        log = self.get_logger()
        if self._batch:
            self._wait_for_matched_subscribers()
        next_due = time.monotonic()
        while not self._stop.is_set():
            rate = float(self.get_parameter("batch_max_rate").value) if self._batch else 0.0
            if rate > 0.0:  # a bounded batch rate: no subscriber falls far behind a keep-all writer
                now = time.monotonic()
                if next_due > now:
                    time.sleep(next_due - now)
                next_due = max(next_due, now - 0.1) + 1.0 / rate
            try:
                item = self._prefetch.read(timeout=0.2)
            except TimeoutError:
                continue
            except FrameError as exc:
                self._bad_frames += 1
                log.warning(str(exc), throttle_duration_sec=5.0)
                continue
            except SourceError as exc:
                self._last_error = str(exc)
                log.error(str(exc), throttle_duration_sec=5.0)
                continue
            if item is None:
                self._finished = True
                log.info(f"{self._prefetch.name}: end of stream after {self._stats_total.frames} frames")
                self._finish_capture(ended=True)  # no frame will come: answer with what was captured
                return
            try:
                self._process(item)
            except Exception as exc:  # noqa: BLE001 - one bad frame must not end the node
                self._bad_frames += 1
                self._last_error = f"{type(exc).__name__}: {exc}"
                log.error(f"frame {getattr(item, 'index', '?')} failed: {self._last_error}",
                          throttle_duration_sec=5.0)

    #: s a batch source keeps retrying one sample that its keep-all publisher cannot take yet
    BATCH_PUBLISH_PATIENCE_S = 30.0

    def _send(self, pub, msg) -> None:
        """Publish a data message. For a batch source (contract.REPLAY, keep-all) a full writer
        history is backpressure, not an error: Fast DDS blocks for its max_blocking_time and rclpy
        then raises "cannot publish data" (measured: after ~14 000 frames of a 20 000-frame
        unpaced replay, once the recorder fell behind). The sample is retried until it is taken,
        for up to BATCH_PUBLISH_PATIENCE_S (a subscriber that never reads can stall a batch run
        that long per frame, then the frame fails loudly); live sources publish once."""
        if not self._batch:
            pub.publish(msg)
            return
        end = time.monotonic() + self.BATCH_PUBLISH_PATIENCE_S
        while True:
            try:
                pub.publish(msg)
                return
            except Exception as exc:  # noqa: BLE001 - rclpy's RCLError: the writer's history is full
                if self._stop.is_set() or time.monotonic() > end:
                    raise RuntimeError(f"{pub.topic_name}: a subscriber took no sample for "
                                       f"{self.BATCH_PUBLISH_PATIENCE_S:.0f} s ({exc})") from exc
                self._publish_retries += 1
                time.sleep(0.005)

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

    def _process(self, item: Frame | LandmarkFrame) -> None:
        t0 = time.monotonic()
        if isinstance(item, LandmarkFrame):
            hands, width, height = item.hands, item.width, item.height
            for p in item.problems:
                self.get_logger().warning(f"recorded frame {item.index}: {p}", throttle_duration_sec=5.0)
            # time comes from the data: the recorded capture stamp, whatever the output stamps
            capture = item.recorded_stamp
            recorded = self.get_parameter("replay_stamps").value == "recorded"
            stamp = _stamp_ns(item.recorded_ns) if recorded else _stamp(item.stamp)
            frame_id = item.frame_id or self.get_parameter("frame_id").value
            infer_ms = 0.0
        else:
            if self._backend_dirty:
                self._backend_dirty = False
                old, self._backend = self._backend, self._make_backend()
                old.close()
                self.get_logger().info("MediaPipe rebuilt with the new parameters")
            try:
                hands = self._backend.detect(item.image)
            except ValueError as exc:
                self._bad_frames += 1
                self.get_logger().warning(f"frame {item.index}: {exc}", throttle_duration_sec=5.0)
                return
            width, height, stamp = item.width, item.height, _stamp(self._capture_stamp(item))
            capture = capture_time(stamp)  # the published stamp, read back as a replay reads it
            frame_id = self.get_parameter("frame_id").value
            infer_ms = (time.monotonic() - t0) * 1e3
        landmarks = self._pub_landmarks if self.get_parameter("publish_landmarks").value else None
        self._handle(hands, item.index, stamp, capture, width, height, frame_id,
                     decode_ms=item.decode_ms, infer_ms=infer_ms, landmarks=landmarks)

    def _capture_stamp(self, item: Frame) -> float:
        """Capture stamp (s) of a camera/video/image frame: the source's read time, except for a
        file read faster than real time (``realtime: false``), whose frames are stamped on their
        media timeline (first read time + media time), as if played live: its outputs then do
        not depend on how fast this machine processes it."""
        if self._spec is not None and self._spec.kind in ("video", "images") and \
                not bool(self.get_parameter("realtime").value):
            if self._media_epoch is None:
                self._media_epoch = item.stamp - item.media_time
            return self._media_epoch + item.media_time
        self._media_epoch = None
        return item.stamp

    def _handle(self, hands: list[HandObservation], index: int, stamp: Time, capture: float, width: int,
                height: int, frame_id: str, *, decode_ms: float, infer_ms: float, landmarks) -> None:
        """Geometry/filter/calibration capture for one frame, then publish (any thread).

        stamp: output stamp; capture: the frame's capture stamp (s, as :func:`capture_time`
        reads it), the time every time-dependent step runs on: the 1€ filter, the hold/reset
        (a gap > ``frame_timeout`` between two capture stamps, or a stamp going backwards,
        resets the pose) and the calibration capture.
        """
        t1 = time.monotonic()
        t = capture
        gap = float(self.get_parameter("frame_timeout").value)
        with self._lock:
            last, self._last_capture = self._last_capture, t
            if last is not None and not (0.0 <= t - last <= gap):
                self._core.reset()  # a gap in the data (or a restart): the held pose is stale
            out = self._core.update(hands, t, width, height)
            cap = self._capture
            if cap is not None:
                cap.capture.add(t, out.raw_angles)
                cap.watch.frame(t1)
        if cap is not None and cap.capture.done:
            self._finish_capture()
        t2 = time.monotonic()
        self._publish(out, hands, index, stamp, frame_id, width, height, landmarks)
        t3 = time.monotonic()
        if self._watchdog == "timeout":
            self.get_logger().info("frames are back: watchdog cleared")
        self._watchdog = "ok"
        self._frame_gap = t3 - self._last_frame if self._frames_seen else 0.0
        self._frames_seen += 1
        self._last_frame = t3
        self._last_status, self._last_reason = out.status, out.reason
        if isinstance(out, TwoHandOutput):
            self._sides_status = {side: o.status for side, o in out.sides.items()}
            for event in out.identity.events:
                self.get_logger().info(f"hand identity, frame {index}: {event}")
        ms = {"decode": decode_ms, "inference": infer_ms, "geometry_filter": (t2 - t1) * 1e3,
              "publish": (t3 - t2) * 1e3}
        tracked = out.status == "tracked"
        self._stats_period.add(tracked, **ms)
        self._stats_total.add(tracked, **ms)

    def _publish(self, out: TrackOutput | TwoHandOutput, hands: list[HandObservation], index: int, stamp: Time,
                 frame_id: str, width: int, height: int, landmarks) -> None:
        header = Header(stamp=stamp, frame_id=frame_id)

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

        if landmarks is not None:
            self._send(landmarks, array(hands))
        if isinstance(out, TwoHandOutput):
            for side, (pub_lm, pub_target, pub_joints) in self._pub_sides.items():
                h = out.identity.hands[side]
                if landmarks is not None:
                    self._send(pub_lm, array([h] if h is not None else []))
                self._publish_flexions(out.sides[side], stamp, pub_target, pub_joints)
            return
        self._publish_flexions(out, stamp, self._pub_target, self._pub_joints)

    def _publish_flexions(self, out: TrackOutput, stamp: Time, pub_target, pub_joints) -> None:
        if not out.publishable:
            return
        fingers, joints = out.finger_flexions, out.joint_flexions
        if not (np.isfinite(fingers).all() and np.isfinite(joints).all()):  # cannot happen; never publish NaN
            self.get_logger().error("non-finite flexion computed; frame not published", throttle_duration_sec=5.0)
            return
        flex_header = Header(stamp=stamp, frame_id="")
        self._send(pub_target, JointState(header=flex_header, name=list(FINGER_NAMES), position=fingers.tolist()))
        self._send(pub_joints, JointState(header=flex_header, name=list(JOINT_NAMES), position=joints.tolist()))
        self._flexions_published += 1

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
                     decode_ms=decode_ms, infer_ms=0.0, landmarks=None)

    # --- calibration --------------------------------------------------------------------------------
    async def _on_calibrate(self, request: Calibrate.Request, response: Calibrate.Response):
        response.success = False
        response.frames = 0
        if self.lifecycle_state != "active":
            response.message = f"node is {self.lifecycle_state}: activate it before calibrating"
            return response
        if request.pose not in (Calibrate.Request.OPEN, Calibrate.Request.FIST):
            response.message = f"pose must be OPEN ({Calibrate.Request.OPEN}) or FIST ({Calibrate.Request.FIST})"
            return response
        duration = float(request.duration_s) or float(self.get_parameter("calibration_duration").value)
        if not (math.isfinite(duration) and 0.0 < duration <= 30.0):
            response.message = f"duration_s must be in (0, 30] s, got {request.duration_s}"
            return response
        pose = "open" if request.pose == Calibrate.Request.OPEN else "fist"
        future = Future(executor=self.executor)
        slack = max(2.0, 2.0 * float(self.get_parameter("frame_timeout").value))
        with self._lock:
            if self._capture is not None:
                response.message = f"a {self._capture.capture.pose} capture is already running"
                return response
            # the window counts media time (capture stamps); the stall watch fails the capture only
            # when no frame arrived for max(slack, 10x the source's own frame interval), so a slow
            # unpaced file is never "too slow" (calibration.StallWatch)
            self._capture = _Capture(PoseCapture(pose, duration), future,
                                     StallWatch(time.monotonic(), slack, self._frame_gap))
        self.get_logger().info(f"calibration: capturing {pose} for {duration:.2f} s")
        await future
        result = future.result()
        if isinstance(result, CalibrationError):
            response.message = str(result)
            self.get_logger().warning(f"calibration: {result}")
            return response
        captured: CapturedPose = result
        try:
            check_pose(captured, default_finger_windows())
        except CalibrationError as exc:
            response.message = str(exc)
            response.captured_curl_rad = [float(c) for c in captured.curls]
            self.get_logger().warning(f"calibration: {exc}")
            return response
        response.captured_curl_rad = [float(c) for c in captured.curls]
        response.frames = captured.frames
        other = "fist" if pose == "open" else "open"
        self._captured[pose] = captured
        if other not in self._captured:
            response.success = True
            response.message = (f"{pose} captured ({captured.frames} frames with a hand); now call with "
                                f"pose={other.upper()} to set the windows")
            self._calibration_state = f"{pose} captured"
            return response
        try:
            cal = windows_from_poses(self._captured["open"], self._captured["fist"],
                                     min_range=float(self.get_parameter("calibration_min_range").value),
                                     min_joint_range=float(self.get_parameter("calibration_min_joint_range").value))
        except CalibrationError as exc:
            del self._captured[pose]
            response.message = f"{exc}; {pose} capture discarded, the {other} capture is kept"
            self.get_logger().warning(f"calibration refused: {response.message}")
            return response
        params = [Parameter(finger_param(f, "straight"), value=float(s))
                  for f, s in zip(FINGER_NAMES, cal.fingers.straight)]
        params += [Parameter(finger_param(f, "curled"), value=float(c))
                   for f, c in zip(FINGER_NAMES, cal.fingers.curled)]
        params += [Parameter("joint_straight_angles", value=[float(x) for x in cal.joints.straight]),
                   Parameter("joint_curled_angles", value=[float(x) for x in cal.joints.curled])]
        self._calibrating_params = True
        try:
            res = self.set_parameters_atomically(params)
        finally:
            self._calibrating_params = False
        if not res.successful:
            response.message = f"windows refused: {res.reason}"
            return response
        self._calibration_state = "calibrated"
        response.success = True
        response.message = "windows set: " + cal.describe()
        self.get_logger().info(f"calibration: {response.message}")
        return response

    def _finish_capture(self, error: CalibrationError | None = None, *, ended: bool = False) -> None:
        """Complete the running capture (any thread): with its result, or with ``error``; ``ended``:
        the source ended before the window did (the result of the frames captured, if enough)."""
        with self._lock:
            cap, self._capture = self._capture, None
        if cap is None:
            return
        if error is None:
            try:
                result = cap.capture.result()
            except CalibrationError as exc:
                result = CalibrationError(f"{exc} (the source ended)") if ended else exc
        else:
            result = error
        cap.future.set_result(result)
        ex = self.executor
        if ex is not None:
            ex.wake()

    # --- watchdog and diagnostics -------------------------------------------------------------------
    def _on_timer(self) -> None:
        now = time.monotonic()
        cap = self._capture
        if cap is not None and cap.watch.stalled(now):
            self._finish_capture(CalibrationError(
                f"{cap.capture.pose} capture: no frame arrived for {cap.watch.limit:.1f} s "
                f"({cap.capture.frames_total} frames seen); is the source delivering?"))
        active = self.lifecycle_state == "active"
        timeout = float(self.get_parameter("frame_timeout").value)
        if active and not self._finished and self._watchdog == "ok" and now - self._last_frame > timeout:
            # Report only: the reset of a stale pose is decided on the capture stamps in _handle
            # (a gap > frame_timeout between two frames), so a live run and its replay agree.
            self._watchdog = "timeout"
            self.get_logger().error(f"watchdog: no frame for {timeout:.2f} s from {self._spec}")
        if now - self._last_diag >= float(self.get_parameter("diagnostics_period").value):
            self._publish_diagnostics(now)

    def _rejections(self) -> dict[str, int]:
        """Frames refused by the quality gate per reason since configure (both sides summed)."""
        core = self._core
        cores = list(core.cores.values()) if isinstance(core, TwoHandCore) else [core] if core else []
        return {k: sum(c.rejections[k] for c in cores) for k in REJECT_REASONS}

    def _publish_diagnostics(self, now: float) -> None:
        period = max(now - self._last_diag, 1e-3)
        self._last_diag = now
        sp, st = self._stats_period, self._stats_total
        self._stats_period = _Stats()
        active = self.lifecycle_state == "active"
        level, message = DiagnosticStatus.OK, "tracking"
        if not active:
            message = self.lifecycle_state
        elif self._watchdog == "timeout":
            level = DiagnosticStatus.ERROR
            message = f"no frame for {now - self._last_frame:.1f} s (frame_timeout)"
        elif self._finished:
            level, message = DiagnosticStatus.WARN, f"source finished after {st.frames} frames"
        elif self._last_status == "lost":
            level, message = DiagnosticStatus.WARN, f"no hand ({self._last_reason})"
        elif self._last_status == "held":
            message = f"holding last pose ({self._last_reason})"
        rate = sp.frames / period
        values = {
            "state": self.lifecycle_state,
            "source": str(self._spec) if self._spec else str(self.get_parameter("source").value),
            "watchdog": "finished" if self._finished else self._watchdog,
            "frame_rate_hz": f"{rate:.2f}",
            "detection_rate": f"{(sp.tracked / sp.frames) if sp.frames else 0.0:.3f}",
            "frames": str(st.frames),
            "frames_tracked": str(st.tracked),
            "bad_frames": str(self._bad_frames),
            "flexions_published": str(self._flexions_published),
            "publish_retries": str(self._publish_retries),
            "dropped_frames": str(self._prefetch.dropped if self._prefetch is not None else 0),
            "tracking": self._last_status or "none",
            **{f"rejected_{k}": str(n) for k, n in self._rejections().items()},
            "calibration": self._calibration_state,
            "last_error": self._last_error,
        }
        core = self._core
        if isinstance(core, TwoHandCore):
            for side in contract.HAND_SIDES:
                values[f"tracking_{side}"] = self._sides_status.get(side, "none")
            values["identity_swaps"] = str(core.identity.swaps)
            values["label_disagreements"] = str(core.identity.disagreements)
        for key in ("decode", "inference", "geometry_filter", "publish"):
            values[f"{key}_ms"] = f"{sp.mean(key):.3f}"
            values[f"{key}_ms_mean_total"] = f"{st.mean(key):.3f}"
        values["inference_ms_p95_total"] = f"{st.inference_p95():.3f}"  # the last ≤ 4096 frames
        status = DiagnosticStatus(level=level, name=f"{self.get_name()}: tracking", message=message,
                                  hardware_id=values["source"],
                                  values=[KeyValue(key=k, value=v) for k, v in values.items()])
        if self._pub_diag is not None:
            arr = DiagnosticArray(status=[status])
            arr.header.stamp = self.get_clock().now().to_msg()
            self._pub_diag.publish(arr)


def main(args=None):
    sys.exit(run(TrackerNode, args))


if __name__ == "__main__":
    main()
