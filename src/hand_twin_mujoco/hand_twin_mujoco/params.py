"""The twin node's parameters as data (no rclpy): names, defaults, ranges, descriptions, and which
ones may change while the node is configured.

``twin_node`` declares exactly :data:`PARAMS` (each with a ParameterDescriptor) and turns their
values into a :class:`TwinConfig` with :func:`config_from`; a set is validated by
:func:`check_value` and :func:`renderer_problem` (the configure-time rule is the base node's). Tests check that ``config/twin.yaml`` only sets keys declared here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hand_common.contract import FINGER_NAMES
from hand_common.param_spec import ParamSpec as Param

from .model import INTEGRATORS
from .render import MAX_RENDER_RATE

HANDS_MODES = ("one", "two")

PARAMS: tuple[Param, ...] = (
    Param("hands", "one",
          "one: the single-hand twin on /hand/target_flexions; two: both hands of a two-hand scene (names "
          "prefixed left_/right_; default hand_description's mjcf/scene_two_hands.xml), each following "
          "/hand/<side>/target_flexions and publishing /hand_twin/<side>/joint_states and /hand_twin/<side>/tendons",
          choices=HANDS_MODES),
    Param("model_path", "", "MJCF scene to load; empty = hand_description's scene.xml (paths.scene_path()), "
          "or mjcf/scene_two_hands.xml with hands: two"),
    Param("camera", "front", "camera of the scene used for offscreen rendering"),
    Param("integrator", "implicitfast",
          "MuJoCo integrator: implicitfast (default: joint damping and actuator kv implicit, stable for "
          "gram-scale fingers), implicit, euler, rk4, or model (keep the MJCF's)", choices=tuple(sorted(INTEGRATORS))),
    Param("gain_settle_time_s", 0.10, "target 5 % settling time (s) used to size the flexor kp/kv from the model",
          range=(0.01, 1.0)),
    Param("gain_damping_ratio", 1.0, "closed-loop damping ratio used to size kv", range=(0.3, 3.0)),
    Param("gain_reach", 0.95, "steady-state fraction of each tendon length target that kp must reach",
          range=(0.5, 0.995)),
    Param("reference_settle_time_s", 0.06,
          "s, 5 % settling time of the critically damped 2nd-order filter that turns each flexion command into "
          "a smooth tendon length reference (no whip past joint limits on steps); 0 = raw steps",
          range=(0.0, 0.5), live=True),
    Param("command_timeout_s", 0.1,
          "s without a fresh /hand/target_flexions command before the hand goes to safe_flexions (WARN); "
          "default 3 frame periods at 30 Hz (the tracker publishes every frame, also while it holds a pose): "
          "opening from a fist takes the physics ~95 ms more, so the hand is open 0.2 s after the last command",
          range=(0.02, 60.0), live=True),
    Param("safe_flexions", [0.0] * len(FINGER_NAMES),
          "flexion per finger (thumb index middle ring pinky, 0 open .. 1 closed) of the safe pose used "
          "before the first command and after command_timeout_s", live=True, array_type=float),
    Param("command_deadband", [0.005] * len(FINGER_NAMES),
          "per finger (thumb index middle ring pinky), flexion units in [0, 1): a command within this of the "
          "value last applied to that finger is not re-applied (the applied value is kept; exact 0 and 1 always "
          "pass); 0 = apply every change", live=True, array_type=float),
    Param("publish_rate_hz", 100.0, "Hz of /hand_twin/joint_states and /hand_twin/tendons", range=(1.0, 500.0),
          live=True),
    Param("diagnostics_rate_hz", 1.0, "Hz of /diagnostics", range=(0.1, 10.0)),
    Param("max_lag_s", 0.25,
          "s of physics lag caught up at most after a stall (then dropped and reported); catching up "
          "0.25 s costs about 3 ms of CPU",
          range=(0.005, 1.0)),
    Param("render_rate_hz", 30.0,
          f"Hz of offscreen rendering (image topic and recorded frames), ≤ {MAX_RENDER_RATE:g}; 0 = no renderer",
          range=(0.0, MAX_RENDER_RATE), live=True),
    Param("publish_image", True, "publish rendered frames on /hand_twin/image (sensor_msgs/Image rgb8)"),
    Param("image_width_px", 640, "rendered image width (px)", range=(16, 1920)),
    Param("image_height_px", 480, "rendered image height (px)", range=(16, 1080)),
    Param("shadows", False, "render shadows (about 4x slower on software GL)"),
    Param("reflections", False, "render reflections (about 4x slower on software GL)"),
    Param("record_dir", "", "directory for numbered frame files + frames.csv (demo video); empty = off"),
    Param("record_format", "jpg", "frame file format: jpg or png", choices=("jpg", "png")),
    Param("viewer", False, "open MuJoCo's passive viewer (only when DISPLAY is set; headless otherwise)"),
)

#: Old names (before the unit-suffix rule, issue 25), refused with the new one.
RENAMED: dict[str, str] = {
    "gain_settle_time": "gain_settle_time_s",
    "reference_settle_time": "reference_settle_time_s",
    "command_timeout": "command_timeout_s",
    "publish_rate": "publish_rate_hz",
    "diagnostics_rate": "diagnostics_rate_hz",
    "max_lag": "max_lag_s",
    "render_rate": "render_rate_hz",
    "image_width": "image_width_px",
    "image_height": "image_height_px",
}
PARAM_NAMES = tuple(p.name for p in PARAMS)
_BY_NAME = {p.name: p for p in PARAMS}


@dataclass(frozen=True)
class TwinConfig:
    hands: str
    model_path: str
    camera: str
    integrator: str
    gain_settle_time_s: float
    gain_damping_ratio: float
    gain_reach: float
    reference_settle_time_s: float
    command_timeout_s: float
    safe_flexions: tuple[float, ...]
    command_deadband: tuple[float, ...]
    publish_rate_hz: float
    diagnostics_rate_hz: float
    max_lag_s: float
    render_rate_hz: float
    publish_image: bool
    image_width_px: int
    image_height_px: int
    shadows: bool
    reflections: bool
    record_dir: str
    record_format: str
    viewer: bool

    @property
    def renders(self) -> bool:
        """A renderer is needed: a rate and somewhere for the frames to go."""
        return self.render_rate_hz > 0.0 and (self.publish_image or bool(self.record_dir))


def check_value(name: str, value: Any) -> str | None:
    """Reason ``value`` is invalid for parameter ``name`` (range, choices, array lengths), or None."""
    reason = _BY_NAME[name].problem(value)  # range, choices
    if reason:
        return reason
    if name == "safe_flexions":
        vals = list(value)
        if len(vals) != len(FINGER_NAMES):
            return f"safe_flexions needs {len(FINGER_NAMES)} values ({' '.join(FINGER_NAMES)}), got {len(vals)}"
        if not all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in vals):
            return f"safe_flexions must be finite flexions in [0, 1], got {vals}"
    if name == "command_deadband":
        vals = list(value)
        if len(vals) != len(FINGER_NAMES):
            return f"command_deadband needs {len(FINGER_NAMES)} values ({' '.join(FINGER_NAMES)}), got {len(vals)}"
        if not all(math.isfinite(v) and 0.0 <= v < 1.0 for v in vals):
            return f"command_deadband must be finite flexions in [0, 1), got {vals}"
    return None


def config_from(values: dict[str, Any]) -> TwinConfig:
    """Validate the parameter values (all of PARAMS) and build the config; ValueError naming the
    first bad parameter."""
    for name in PARAM_NAMES:
        reason = check_value(name, values[name])
        if reason:
            raise ValueError(reason)
    kw = {n: values[n] for n in PARAM_NAMES}
    kw["safe_flexions"] = tuple(float(v) for v in values["safe_flexions"])
    kw["command_deadband"] = tuple(float(v) for v in values["command_deadband"])
    for n in ("gain_settle_time_s", "gain_damping_ratio", "gain_reach", "reference_settle_time_s", "command_timeout_s", "publish_rate_hz",
              "diagnostics_rate_hz", "max_lag_s", "render_rate_hz"):
        kw[n] = float(kw[n])
    return TwinConfig(**kw)


def renderer_problem(name: str, value: Any, renderer_exists: bool) -> str | None:
    """Reason to refuse a change of a *configured* node's ``name`` to ``value`` beyond its spec
    (the base node refuses configure-time parameters while configured): a ``render_rate_hz`` > 0 needs
    a renderer created at configure time."""
    if name == "render_rate_hz" and value > 0 and not renderer_exists:
        return "no renderer was created at configure time (render_rate_hz 0 or nowhere to send frames): reconfigure"
    return None
