"""Parameters of ``retarget_node`` and ``dex_twin_node`` as data (no rclpy): names, defaults, ranges,
descriptions, which may change live, and the conversion to config dataclasses.

The nodes declare exactly these (each with a ParameterDescriptor, through
``SafeLifecycleNode.declare_params``: the configure-time rule is the base's); tests check that
``config/retarget.yaml`` and ``config/dex_twin.yaml`` only set declared keys.
"""

from __future__ import annotations

from typing import Any

from hand_common.param_spec import ParamSpec as Param

from .kapandji import KapandjiConfig
from .pipeline import PipelineConfig
from .preprocess import MIRROR_CHOICES, PreprocessConfig
from .rest_blend import RestBlendConfig
from .retarget import METHODS, RetargetConfig

HAND_CHOICES = ("best", "left", "right")
#: not on/off: YAML (and so `-p name:=off`) reads those as booleans
REST_BLEND_CHOICES = ("auto", "enabled", "disabled")


RETARGET_PARAMS: tuple[Param, ...] = (
    Param("method", "dexpilot", "retargeting optimizer: dexpilot (fingertip vectors with the pinch prior) or vector "
          "(wrist-to-tip and wrist-to-middle-joint vectors)", choices=METHODS),
    Param("robot", "", "robot hand to drive: empty = hand_description's dex_hand; a dex-retargeting robot name "
          "(leap_hand_right, allegro_hand_right, ...: its configs/teleop/<robot>[_dexpilot].yml) or the path to a "
          "dex-retargeting .yml; link and joint names come from that file and its URDF"),
    Param("robot_dir", "", "folder that holds the robot's URDF (the config's urdf_path is relative to it); "
          "empty = $HAND_ROBOTS_DIR, else ../shared/robots"),
    Param("robot_urdf", "", "URDF of the robot hand, replacing the dex-retargeting configuration's urdf_path "
          "(a hand kept anywhere: robot = its .yml, robot_urdf = its .urdf); empty = the configuration's"),
    Param("urdf_path", "", "URDF of the dexterous hand; empty = hand_description's urdf/dex_hand.urdf (dex_hand only)"),
    Param("description_path", "", "its description YAML; empty = hand_description's config/dex_hand.yaml"),
    Param("hand", "best", "which tracked hand drives the robot: best (highest handedness score), left or right "
          "(the operator's physical hand)", choices=HAND_CHOICES, live=True),
    Param("mirror", "auto", "chirality: auto mirrors an operator hand whose side differs from the robot's (right), "
          "on always mirrors, off never", choices=MIRROR_CHOICES),
    Param("calibration_time_s", 3.0, "s of accepted frames over which the median bone lengths are taken",
          range=(0.0, 60.0)),
    Param("filter_min_cutoff_hz", 2.0, "Hz, 1-euro filter on the landmarks before rebuilding; 0 = off", range=(0.0, 30.0)),
    Param("filter_beta", 5.0, "1/m, 1-euro speed coefficient", range=(0.0, 1000.0)),
    Param("scale", 0.0, "human -> robot size factor; 0 = automatic (robot hand size / calibrated human size)",
          range=(0.0, 5.0)),
    Param("project_dist", 0.03, "m, DexPilot: a thumb-finger distance below this is closed to a pinch",
          range=(0.001, 0.1)),
    Param("escape_dist", 0.04, "m, DexPilot: the pinch is released beyond this distance (dex-retargeting: 0.05; "
          "0.04 releases the thumb when the hand closes into a fist)", range=(0.001, 0.2)),
    Param("command_rate_hz", 100.0, "Hz of the safety filter and /dex_hand/joint_commands", range=(10.0, 500.0)),
    Param("max_velocity", 10.0, "rad/s, velocity cap of every joint command", range=(0.1, 50.0), live=True),
    Param("max_acceleration", 500.0, "rad/s^2, acceleration cap of every joint command", range=(1.0, 10000.0),
          live=True),
    Param("max_step", 0.1, "rad, largest change of a joint command in one tick", range=(0.001, 1.0), live=True),
    Param("crossing_clamp", True, "limit adjacent finger abductions so proximal phalanges never cross", live=True),
    Param("crossing_clearance", 0.0, "m across the palm between adjacent proximal phalanges; 0 = sum of their radii",
          range=(0.0, 0.05)),
    Param("target_timeout_s", 0.5, "s without an accepted landmark frame before the command goes (smoothly) to the "
          "open pose", range=(0.05, 60.0), live=True),
    Param("rest_blend", "auto", "open digits go to the robot's own rest pose (a relaxed open human hand is "
          "curled; the robots' rest is flat): a digit reading flexion <= rest_blend_open_flexion is retargeted to "
          "rest, one >= rest_blend_release_flexion as it is, blended between; never while the thumb touches a "
          "Kapandji site. auto = enabled for every hand",
          choices=REST_BLEND_CHOICES),
    Param("rest_blend_open_flexion", 0.2, "flexion (tracker's default windows, fused skeleton) at or below "
          "which a digit is sent to the robot's rest", range=(0.0, 0.99)),
    Param("rest_blend_release_flexion", 0.5, "flexion at or above which a digit keeps the operator's own "
          "geometry (> rest_blend_open_flexion)", range=(0.01, 1.0)),
    Param("kapandji_touch", 0.25, "Kapandji: a site is touched within this in-plane distance (palm widths)",
          range=(0.01, 2.0)),
    Param("kapandji_image_min_facing", 0.7, "Kapandji and pinch: the picture's in-plane thumb - site distances "
          "count (the smaller of picture and world landmarks) when the palm normal's |cos| to the camera axis "
          "is at least this; above 1 = never", range=(0.0, 1.5)),
    Param("kapandji_image_disagree", 0.5, "pinch: when the picture shows the thumb tip on a fingertip and the "
          "world landmarks have them more than this apart (3-D, palm widths), the thumb is moved where the "
          "picture shows it before retargeting", range=(0.05, 5.0)),
    Param("measured_topic", "/dex_twin/joint_states", "measured joint states of the robot (for its Kapandji score)"),
    Param("kapandji_robot_rate_hz", 30.0, "Hz at most of /dex_hand/kapandji/robot: the newest measured state is "
          "scored (forward kinematics + Kapandji) on a timer at this rate, when one arrived since the last score "
          "(the twin publishes at 100 Hz); 0 = every measured message", range=(0.0, 500.0)),
    Param("diagnostics_rate_hz", 1.0, "Hz of /diagnostics", range=(0.1, 10.0)),
)

TWIN_PARAMS: tuple[Param, ...] = (
    Param("robot", "", "robot hand: empty = hand_description's dex_hand (model_path); a dex-retargeting robot name "
          "(leap_hand_right, ...) or .yml path: its URDF is compiled into a twin (position actuator per joint)"),
    Param("robot_dir", "", "folder that holds the robot's URDF; empty = $HAND_ROBOTS_DIR, else ../shared/robots"),
    Param("robot_urdf", "", "URDF of the robot hand, replacing the configuration's urdf_path; empty = the "
          "configuration's"),
    Param("model_path", "", "MJCF scene; empty = hand_description's mjcf/dex_scene.xml"),
    Param("description_path", "", "dexterous hand description YAML (joint names); empty = hand_description's"),
    Param("command_timeout_s", 0.15, "s without a joint command before the hand goes to the open pose (4.5 frames "
          "at 30 Hz)", range=(0.02, 60.0),
          live=True),
    Param("publish_rate_hz", 100.0, "Hz of /dex_twin/joint_states", range=(1.0, 500.0), live=True),
    Param("diagnostics_rate_hz", 1.0, "Hz of /diagnostics", range=(0.1, 10.0)),
    Param("max_lag_s", 0.25, "s of physics lag caught up at most after a stall (the rest is dropped and reported)",
          range=(0.005, 1.0)),
    Param("render_rate_hz", 0.0, "Hz of offscreen rendering to /dex_twin/image (<= 30); 0 = no renderer",
          range=(0.0, 30.0)),
    Param("camera", "front", "scene camera used for rendering"),
    Param("image_width_px", 640, "rendered image width (px)", range=(16, 1920)),
    Param("image_height_px", 480, "rendered image height (px)", range=(16, 1080)),
)
#: Old names (before the unit-suffix rule, issue 25), refused with the new one.
RETARGET_RENAMED: dict[str, str] = {
    "calibration_time": "calibration_time_s", "filter_min_cutoff": "filter_min_cutoff_hz",
    "command_rate": "command_rate_hz", "target_timeout": "target_timeout_s",
    "diagnostics_rate": "diagnostics_rate_hz",
}
TWIN_RENAMED: dict[str, str] = {
    "command_timeout": "command_timeout_s", "publish_rate": "publish_rate_hz",
    "diagnostics_rate": "diagnostics_rate_hz", "max_lag": "max_lag_s", "render_rate": "render_rate_hz",
    "image_width": "image_width_px", "image_height": "image_height_px",
}


def check_value(params: tuple[Param, ...], name: str, value: Any) -> str | None:
    """Reason ``value`` is invalid for ``name`` (range, choices: :meth:`ParamSpec.problem`), or None."""
    return {q.name: q for q in params}[name].problem(value)


def pipeline_config(values: dict[str, Any]) -> PipelineConfig:
    """RETARGET_PARAMS values -> PipelineConfig; ValueError naming the first bad parameter."""
    for p in RETARGET_PARAMS:
        reason = check_value(RETARGET_PARAMS, p.name, values[p.name])
        if reason:
            raise ValueError(reason)
    v = values
    if not float(v["rest_blend_open_flexion"]) < float(v["rest_blend_release_flexion"]):
        raise ValueError(f"rest_blend_open_flexion ({v['rest_blend_open_flexion']}) must be below "
                         f"rest_blend_release_flexion ({v['rest_blend_release_flexion']})")
    return PipelineConfig(
        preprocess=PreprocessConfig(mirror=v["mirror"], calibration_time=float(v["calibration_time_s"]),
                                    filter_min_cutoff=float(v["filter_min_cutoff_hz"]), filter_beta=float(v["filter_beta"]),
                                    scale=float(v["scale"])),
        retarget=RetargetConfig(method=v["method"], project_dist=float(v["project_dist"]),
                                escape_dist=float(v["escape_dist"])),
        kapandji=KapandjiConfig(touch=float(v["kapandji_touch"]),
                                image_min_facing=float(v["kapandji_image_min_facing"]),
                                image_disagree=float(v["kapandji_image_disagree"])),
        rest_blend=RestBlendConfig(enabled={"auto": None, "enabled": True, "disabled": False}[v["rest_blend"]],
                                   open_flexion=float(v["rest_blend_open_flexion"]),
                                   release_flexion=float(v["rest_blend_release_flexion"])),
        max_velocity=float(v["max_velocity"]), max_acceleration=float(v["max_acceleration"]),
        max_step=float(v["max_step"]), crossing_clamp=bool(v["crossing_clamp"]),
        crossing_clearance=float(v["crossing_clearance"]))
