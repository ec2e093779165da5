"""The tracker's parameters as data (no rclpy): the table :data:`PARAMS` the node declares, and the
pure functions that turn their values into the pipeline's configuration.

- :func:`config_from`: parameter values -> :class:`~hand_tracking.tracker_core.TrackerConfig`;
- :func:`mediapipe_config`: parameter values -> :class:`~hand_tracking.landmarks.MediaPipeConfig`;
- :func:`parameter_problem`: why a set of new values must be refused (the node's on-set check,
  after :class:`~hand_common.node_tools.SafeLifecycleNode` applied the live/configure-time rule
  from ``ParamSpec.live`` and each spec's range and choices), or None.

Defaults live in one place: the pipeline's config dataclasses (:class:`TrackerConfig` with its
:class:`QualityGate` and 1-euro parameters, :class:`MediaPipeConfig`) feed the table.
Units: the workspace's one suffix rule — a parameter with a unit ends in it (``_s``, ``_ms``,
``_us``, ``_hz``, ``_px``, ``_m``, ``_deg``, ``_dps``), except angles in radians (REP 103's unit:
the windows ``*_angle(s)`` and ``calibration_min_*range``), and each description repeats the unit.
Old names are refused with the new one (:data:`RENAMED`).
"""

from __future__ import annotations

import math
from typing import Any

from hand_common.contract import FINGER_NAMES, JOINT_NAMES
from hand_common.filters import OneEuroParams
from hand_common.param_spec import ParamSpec
from hand_tracking import preview
from hand_tracking.geometry import MIN_WINDOW_RAD, Windows
from hand_tracking.landmarks import BACKENDS, MediaPipeConfig
from hand_tracking.sources import parse_source
from hand_tracking.tracker_core import (
    HAND_PREFERENCES,
    QualityGate,
    TrackerConfig,
)

PI = math.pi
#: Parameters that need a new MediaPipe graph (rebuilt by the worker between two frames).
BACKEND_PARAMS = ("backend", "max_num_hands", "model_complexity", "min_detection_confidence",
                  "min_tracking_confidence", "static_image_mode")
REPLAY_STAMPS = ("now", "recorded")
HANDS_MODES = ("one", "two")
#: The defaults the table reads (one place: the config dataclasses).
_CFG = TrackerConfig()
_MP = MediaPipeConfig()
#: Old parameter names -> new (unit suffix rule); the node refuses an old name with the new one.
RENAMED: dict[str, str] = {
    "batch_max_rate": "batch_max_rate_hz",
    "images_fps": "images_rate_hz",
    "camera_width": "camera_width_px",
    "camera_height": "camera_height_px",
    "camera_fps": "camera_rate_hz",
    "filter_min_cutoff": "filter_min_cutoff_hz",
    "filter_d_cutoff": "filter_d_cutoff_hz",
    "frame_timeout": "frame_timeout_s",
    "diagnostics_period": "diagnostics_period_s",
    "calibration_duration": "calibration_duration_s",
    # issue 22: the gate's bone-length jump against the last accepted frame became a motion check
    # against a prediction, with a tolerance in hand image sizes
    "gate_max_bone_jump": "gate_motion_tolerance",
}


def finger_param(finger: str, end: str) -> str:
    """Name of a finger window parameter, e.g. ``index_curled_angle``."""
    return f"{finger}_{end}_angle"


#: Every parameter of the node. source and hands (not live) change only while unconfigured; the others act live.
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
    ParamSpec("playback_rate", 1.0, "Recordings (video, images, bag): play them this many times faster "
              "than recorded (1.0 = the recording's pace; 2.0 replays a 30 fps video as a 60 fps camera: "
              "frames paced, counted and stamped 1/60 s apart, every frame read once). A camera "
              "runs at its own rate: only 1.0 with a camera.",
              range=(0.05, 20.0)),
    ParamSpec("loop", False, "Restart video files, image folders and bags at their end.", live=True),
    ParamSpec("batch_max_rate_hz", 200.0, "A recording read faster than real time (realtime false) is "
              "processed at most this many frames per second, Hz (0 = as fast as it reads): with keep-all "
              "publishers a recorder that falls thousands of samples behind stalls the replay (measured: a "
              "20 000-frame bag unpaced at ~1 kHz stalled after 18 223 frames); 200 Hz is ~7x real time.",
              range=(0.0, 100000.0), live=True),
    ParamSpec("images_rate_hz", 30.0, "Frame rate of an image folder (its media time and pacing), Hz.",
              range=(0.1, 1000.0), live=True),
    ParamSpec("camera_width_px", 0, "Requested camera width, px (0 = driver default).", range=(0, 7680),
              live=True),
    ParamSpec("camera_height_px", 0, "Requested camera height, px (0 = driver default).", range=(0, 4320),
              live=True),
    ParamSpec("camera_rate_hz", 0.0, "Requested camera frame rate, Hz (0 = driver default).",
              range=(0.0, 240.0), live=True),
    ParamSpec("frame_id", "camera_optical", "frame_id of published landmarks (camera optical frame).",
              live=True),
    ParamSpec("mirror", False, "The camera image is mirrored (selfie view). False for a camera whose "
              "image is not mirrored (the shared video): MediaPipe's legacy handedness label is then "
              "swapped so 'handedness' names the physical hand.", live=True),
    ParamSpec("backend", "mediapipe_hands", "Landmark backend: " + ", ".join(sorted(BACKENDS)) +
              " (legacy MediaPipe hands solution).", live=True, choices=tuple(sorted(BACKENDS))),
    ParamSpec("max_num_hands", _MP.max_num_hands, "Hands MediaPipe looks for (at least 2 with hands: two).", range=(1, 4),
              live=True),
    ParamSpec("hands", "one", "one: follow one hand (hand_preference) on /hand/target_flexions and "
              "/hand/joint_flexions; two: follow both operator hands with identity tracking on "
              "/hand/left/... and /hand/right/... (landmarks, target_flexions, joint_flexions). "
              "Changeable only while unconfigured.", choices=HANDS_MODES),
    ParamSpec("model_complexity", _MP.model_complexity, "MediaPipe landmark model: 0 lite (faster), 1 full.", range=(0, 1),
              live=True),
    ParamSpec("min_detection_confidence", _MP.min_detection_confidence, "MediaPipe palm detection threshold.", range=(0.0, 1.0),
              live=True),
    ParamSpec("min_tracking_confidence", _MP.min_tracking_confidence, "MediaPipe tracking threshold (below: detect again).",
              range=(0.0, 1.0), live=True),
    ParamSpec("static_image_mode", _MP.static_image_mode, "MediaPipe detects on every frame (unrelated images) "
              "instead of tracking between frames.", live=True),
    ParamSpec("landmark_mode", _CFG.landmark_mode, "Skeleton the angles come from: fused (MediaPipe's image head "
              "for in-plane coordinates fitted onto the world head, depth from both), world (world head "
              "only) or image (image landmarks in pixels).", live=True),
    ParamSpec("gate_enabled", _CFG.gate.enabled, "Frame-quality gate: refuse (hold the last consistent pose) frames "
              "with landmarks outside the image, digits too long for the hand's image size, a joint "
              "folded back, a shape the recent motion does not predict, or a low score. Sizes are judged "
              "in the image, never on the world head's scale.", live=True),
    ParamSpec("gate_max_outside_fraction", _CFG.gate.max_outside_fraction, "Gate: largest fraction of the 21 image landmarks "
              "outside the image.", range=(0.0, 1.0), live=True),
    ParamSpec("gate_max_finger_length", _CFG.gate.max_finger_length, "Gate: longest image path length of a digit, in hand image "
              "sizes (the larger of the palm's width and length in px).", range=(0.1, 100.0), live=True),
    ParamSpec("gate_min_joint_angle", _CFG.gate.min_joint_angle, "Gate: smallest interior joint angle of the skeleton, rad "
              "(below: a bone folded back).", range=(0.0, 3.0), live=True),
    ParamSpec("gate_motion_tolerance", _CFG.gate.motion_tolerance, "Gate: largest distance of an image landmark (relative to the "
              "palm) from the shape predicted by the recent motion, hand image sizes, at zero elapsed time.",
              range=(0.01, 100.0), live=True),
    ParamSpec("gate_motion_rate", _CFG.gate.motion_rate, "Gate: growth of the motion tolerance with the capture time since "
              "the last accepted frame, hand image sizes per s.", range=(0.0, 1000.0), live=True),
    ParamSpec("gate_min_score", _CFG.gate.min_score, "Gate: lowest handedness-classifier confidence max(s, 1-s).",
              range=(0.0, 1.0), live=True),
    ParamSpec("hand_preference", _CFG.hand_preference, "Which hand drives the flexions: any (most confident), "
              "right or left (physical hand).", live=True, choices=HAND_PREFERENCES),
    *(ParamSpec(finger_param(f, end), default[i], text.format(f=f), range=(0.0, PI), live=True)
      for i, f in enumerate(FINGER_NAMES)
      for end, default, text in (
          ("straight", _CFG.finger_windows.straight,
           "{f}: mean interior angle of its 3 joints read as fully open (flexion 0), rad."),
          ("curled", _CFG.finger_windows.curled,
           "{f}: mean interior angle of its 3 joints read as fully closed (flexion 1), rad; "
           f"at least {MIN_WINDOW_RAD} below the straight angle."))),
    ParamSpec("joint_straight_angles", list(_CFG.joint_windows.straight),
              "Per-joint interior angle read as flexion 0 (15 values, rad, contract.JOINT_NAMES order).",
              array_type=float, live=True),
    ParamSpec("joint_curled_angles", list(_CFG.joint_windows.curled),
              "Per-joint interior angle read as flexion 1 (15 values, rad, contract.JOINT_NAMES order).",
              array_type=float, live=True),
    ParamSpec("filter_enabled", _CFG.filter_enabled, "1€ filter on the 15 joint angles.", live=True),
    ParamSpec("filter_min_cutoff_hz", _CFG.filter.min_cutoff, "1€ cutoff at rest, Hz (lower = smoother, more lag).",
              range=(0.01, 100.0), live=True),
    ParamSpec("filter_beta", _CFG.filter.beta, "1€ speed coefficient, Hz per rad/s = 1/rad (higher = less lag "
              "on fast motion).", range=(0.0, 1000.0), live=True),
    ParamSpec("filter_d_cutoff_hz", _CFG.filter.d_cutoff, "1€ cutoff of the speed estimate, Hz.", range=(0.01, 100.0), live=True),
    ParamSpec("max_missed_frames", _CFG.max_missed_frames, "Frames without a (plausible) hand during which the last pose "
              "is held and republished; then the filter resets and flexions stop.", range=(0, 100000),
              live=True),
    ParamSpec("hold_max_step", _CFG.hold_max_step, "A held pose comes only from an accepted frame whose digit curls "
              "differ from a neighbouring accepted frame's by at most max(hold_max_step, hold_max_speed x "
              "their time gap), rad: a one-frame misreading is published but never held.",
              range=(0.01, 3.2), live=True),
    ParamSpec("hold_max_speed", _CFG.hold_max_speed, "See hold_max_step, rad/s.", range=(0.0, 1000.0), live=True),
    ParamSpec("frame_timeout_s", 1.0, "Watchdog: no frame for this long (s) while active → diagnostics "
              "ERROR (nothing is published without frames). A gap this long between the capture stamps "
              "of two frames resets the filter and drops the held pose (decided on the stamps, so a "
              "replay does the same).", range=(0.05, 60.0), live=True),
    ParamSpec("diagnostics_period_s", 1.0, "Period of /diagnostics messages, s.", range=(0.1, 60.0), live=True),
    ParamSpec("calibration_duration_s", 1.0, "Default capture window of ~/calibrate (request "
              "duration_s = 0), s of MEDIA time: counted on the frames' capture stamps (a file's own "
              "timeline), never the wall clock, so a slow unpaced file captures the same frames, later. "
              "A capture fails only when no frame arrives for max(2 s, 2 x frame_timeout_s, 10 x the "
              "source's own frame interval) of wall time; a source that ends first answers with the "
              "frames captured.", range=(0.1, 30.0), live=True),
    ParamSpec("calibration_min_range", 0.15, "A digit whose fist curl is not this much below its open "
              "curl keeps its windows (the others are calibrated; refused only when no digit has it), rad.", range=(MIN_WINDOW_RAD, 2.0), live=True),
    ParamSpec("calibration_min_joint_range", 0.3, "Narrowest per-joint window a calibration sets, rad.",
              range=(MIN_WINDOW_RAD, 2.0), live=True),
    ParamSpec("publish_landmarks", True, "Publish /hand/landmarks (never in topic: replay).", live=True),
    ParamSpec("replay_stamps", "now", "Bag replay: stamp outputs with the replay time ('now') or the "
              "recorded capture time ('recorded').", live=True, choices=REPLAY_STAMPS),
    ParamSpec("preview_max_rate_hz", preview.DEFAULT_MAX_RATE_HZ, "Operator preview (/hand/image_preview, JPEG, for hand_console): "
              "at most this many frames a second, Hz (0 = off); published only while someone subscribes, "
              "downscaled and encoded on its own thread (hand_tracking.preview).", range=(0.0, 30.0), live=True),
    ParamSpec("preview_width_px", preview.DEFAULT_WIDTH_PX, "Width of the operator preview, px (aspect kept).", range=(16, 1920),
              live=True),
)

PARAM_BY_NAME: dict[str, ParamSpec] = {s.name: s for s in PARAMS}
PARAM_NAMES: tuple[str, ...] = tuple(s.name for s in PARAMS)
#: The per-finger and per-joint window parameters (set together by a calibration).
WINDOW_PARAMS: frozenset[str] = frozenset(
    {finger_param(f, e) for f in FINGER_NAMES for e in ("straight", "curled")}
    | {"joint_straight_angles", "joint_curled_angles"})


def defaults() -> dict[str, Any]:
    """``{name: default}`` of every parameter."""
    return {s.name: s.default for s in PARAMS}


def config_from(v: dict[str, Any]) -> TrackerConfig:
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
                         max_finger_length=float(v["gate_max_finger_length"]),
                         min_joint_angle=float(v["gate_min_joint_angle"]),
                         motion_tolerance=float(v["gate_motion_tolerance"]),
                         motion_rate=float(v["gate_motion_rate"]),
                         min_score=float(v["gate_min_score"])),
        hand_preference=str(v["hand_preference"]),
        filter_enabled=bool(v["filter_enabled"]),
        filter=OneEuroParams(float(v["filter_min_cutoff_hz"]), float(v["filter_beta"]),
                             float(v["filter_d_cutoff_hz"])),
        max_missed_frames=int(v["max_missed_frames"]),
        hold_max_step=float(v["hold_max_step"]),
        hold_max_speed=float(v["hold_max_speed"]),
    )


def mediapipe_config(v: dict[str, Any]) -> MediaPipeConfig:
    """Parameter values → MediaPipeConfig (at least 2 hands with ``hands: two``); ValueError."""
    max_hands = max(int(v["max_num_hands"]), 2) if v["hands"] == "two" else int(v["max_num_hands"])
    return MediaPipeConfig(max_hands, int(v["model_complexity"]),
                           float(v["min_detection_confidence"]), float(v["min_tracking_confidence"]),
                           bool(v["static_image_mode"]))


def parameter_problem(v: dict[str, Any], changed: set[str]) -> str | None:
    """Why the values ``v`` (every parameter, ``changed`` ones new) must be refused, or None: the
    source's syntax, choices, window lengths and every value the configuration is built from are
    checked. Pure (no side effect); whether a parameter may change in the node's state is
    ``ParamSpec.live``'s rule, applied before (source and hands are read at configure)."""
    if "source" in changed:
        try:
            parse_source(v["source"])
        except ValueError as exc:
            return str(exc)
    if why := PARAM_BY_NAME["hands"].problem(v["hands"]):
        return why
    for name in ("hand_preference", "backend", "replay_stamps"):
        if why := PARAM_BY_NAME[name].problem(v[name]):
            return why
    rate = float(v["playback_rate"])
    if rate != 1.0:
        if parse_source(v["source"]).kind in ("camera", "topic"):
            return (f"playback_rate {rate:g} applies to recordings (video, images, bag), not to "
                    f"{v['source']}; keep 1.0")
        if v["replay_stamps"] == "recorded":
            return (f"replay_stamps 'recorded' reproduces the recording's stamps, which a playback_rate "
                    f"of {rate:g} would contradict; use 'now' (stamped as played)")
    for name in ("joint_straight_angles", "joint_curled_angles"):
        arr = v[name]
        if len(arr) != len(JOINT_NAMES):
            return f"{name} needs {len(JOINT_NAMES)} values ({', '.join(JOINT_NAMES)}), got {len(arr)}"
    try:
        config_from(v)
        MediaPipeConfig(int(v["max_num_hands"]), int(v["model_complexity"]),
                        float(v["min_detection_confidence"]), float(v["min_tracking_confidence"]),
                        bool(v["static_image_mode"]))
    except (ValueError, TypeError) as exc:
        return str(exc)
    return None
