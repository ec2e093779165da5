"""Which robot the console shows for each bringup profile, and how a ``JointState`` drives it (no
rclpy, no viser).

:data:`ROBOT_VIEWS`: profile → the URDFs to show, each with the topic of its joint states (URDF
joint names, radians) and where it stands in the scene. :class:`UrdfPose` turns a joint-state
message's names/positions into yourdfpy's configuration vector of the actuated joints; yourdfpy
computes the mimic joints from them (``URDF.update_cfg``), so a mimicked joint follows its
leader as ``robot_state_publisher`` would show it.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hand_common import contract

# topic names of the layer-3 packages, read where they are defined
_DEX_TWIN_JOINT_STATES = "hand_retarget.topics:TOPIC_TWIN_JOINT_STATES"
_ARM_TWIN_JOINT_STATES = "arm_teleop.topics:TWIN_JOINT_STATES"
#: Gazebo's joint states per hand, bridged by ros_gz_bridge (hand_gazebo.world.joint_state_topics)
_GZ_LEFT_JOINT_STATES = "hand_gazebo.world:joint_state_topics(left)"
_GZ_RIGHT_JOINT_STATES = "hand_gazebo.world:joint_state_topics(right)"


def _topic(ref: str) -> str:
    """``module:NAME`` → that module's constant; ``module:func(arg)`` → the ROS side of
    ``func(arg)`` (a (gz, ros) pair's last item, or the string it returns)."""
    import importlib

    module, _, name = ref.partition(":")
    mod = importlib.import_module(module)
    if name.endswith(")"):
        func, _, arg = name[:-1].partition("(")
        value = getattr(mod, func)(arg)
        return str(value[-1] if isinstance(value, tuple) else value)
    return str(getattr(mod, name))


def _hand_urdf(side: str) -> Callable[[], pathlib.Path]:
    def find() -> pathlib.Path:
        from hand_description.paths import urdf_path

        return urdf_path(side)
    return find


def _dex_urdf() -> pathlib.Path:
    from hand_description.paths import dex_urdf_path

    return dex_urdf_path()


def _arm_urdf() -> pathlib.Path:
    from arm_description.paths import urdf_path

    return urdf_path()


@dataclass(frozen=True)
class RobotView:
    """One robot in the console's 3D scene. name: scene node name; urdf: returns the URDF path;
    topic: its sensor_msgs/JointState topic (or a ``module:NAME`` reference resolved on use);
    offset: (x, y, z) m in the scene."""

    name: str
    urdf: Callable[[], pathlib.Path]
    topic: str
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def topic_name(self) -> str:
        return _topic(self.topic) if ":" in self.topic else self.topic


_LEFT = contract.side_topic(contract.TOPIC_TWIN_JOINT_STATES, "left")
_RIGHT = contract.side_topic(contract.TOPIC_TWIN_JOINT_STATES, "right")

#: profile → robots shown (the hand of the tendon twin for sim/rviz/demo/hardware; both hands for
#: two_hands; the dexterous twin for dex; the SO-101 for arm).
ROBOT_VIEWS: dict[str, tuple[RobotView, ...]] = {
    "sim": (RobotView("hand", _hand_urdf("right"), contract.TOPIC_TWIN_JOINT_STATES),),
    "demo": (RobotView("hand", _hand_urdf("right"), contract.TOPIC_JOINT_STATES),),
    "rviz": (RobotView("hand", _hand_urdf("right"), contract.TOPIC_JOINT_STATES),),
    # no joint states on the hardware profile: the URDF is driven by nothing (shown at rest) and
    # the servo driver's figures come from its diagnostics
    "hardware": (RobotView("hand", _hand_urdf("right"), contract.TOPIC_JOINT_STATES),),
    "two_hands": (RobotView("left_hand", _hand_urdf("left"), _LEFT, (0.0, 0.15, 0.0)),
                  RobotView("right_hand", _hand_urdf("right"), _RIGHT, (0.0, -0.15, 0.0))),
    "dex": (RobotView("dex_hand", _dex_urdf, _DEX_TWIN_JOINT_STATES),),
    "arm": (RobotView("so101", _arm_urdf, _ARM_TWIN_JOINT_STATES),),
    "gazebo": (RobotView("left_hand", _hand_urdf("left"), _GZ_LEFT_JOINT_STATES, (0.0, 0.15, 0.0)),
               RobotView("right_hand", _hand_urdf("right"), _GZ_RIGHT_JOINT_STATES, (0.0, -0.15, 0.0))),
    # two hosts: the robot's computer (servo driver or twin), the operator's laptop (tracker only:
    # the hand follows the twin's joint states when a robot_twin host runs)
    "robot": (RobotView("hand", _hand_urdf("right"), contract.TOPIC_JOINT_STATES),),
    "robot_twin": (RobotView("hand", _hand_urdf("right"), contract.TOPIC_TWIN_JOINT_STATES),),
    "operator": (RobotView("hand", _hand_urdf("right"), contract.TOPIC_TWIN_JOINT_STATES),),
}


_DEX_TWIN_IMAGE = "hand_retarget.topics:TOPIC_TWIN_IMAGE"
_KAPANDJI_HUMAN = "hand_retarget.topics:TOPIC_KAPANDJI_HUMAN"
_KAPANDJI_ROBOT = "hand_retarget.topics:TOPIC_KAPANDJI_ROBOT"
_ARM_TELEOP_STATE = "arm_teleop.topics:TELEOP_STATE"


@dataclass(frozen=True)
class RobotPanel:
    """What the page's "Robot" folder shows for a profile, besides the URDFs: twin_image: a
    sensor_msgs/Image topic (rgb8) of the MuJoCo twin's camera; servo: the servo driver's pulses and
    acks (from its diagnostics); kapandji: (human, robot) sensor_msgs/JointState topics of the
    Kapandji scores; arm_state: the arm teleop's std_msgs/String JSON state (armed / e-stop latched).
    Topics may be ``module:NAME`` references (resolved on use by :func:`resolve`)."""

    twin_image: str | None = None
    servo: bool = False
    kapandji: tuple[str, str] | None = None
    arm_state: str | None = None

    @staticmethod
    def resolve(topic: str) -> str:
        return _topic(topic) if ":" in topic else topic


#: profile -> its robot panel (profiles absent here show the URDFs only).
ROBOT_PANELS: dict[str, RobotPanel] = {
    "sim": RobotPanel(twin_image=contract.TOPIC_TWIN_IMAGE),
    "two_hands": RobotPanel(twin_image=contract.TOPIC_TWIN_IMAGE),
    "robot_twin": RobotPanel(twin_image=contract.TOPIC_TWIN_IMAGE),
    "demo": RobotPanel(twin_image=contract.TOPIC_TWIN_IMAGE, servo=True),
    "hardware": RobotPanel(servo=True),
    "robot": RobotPanel(servo=True),
    "dex": RobotPanel(twin_image=_DEX_TWIN_IMAGE, kapandji=(_KAPANDJI_HUMAN, _KAPANDJI_ROBOT)),
    "arm": RobotPanel(arm_state=_ARM_TELEOP_STATE),
}


def robot_panel(profile: str) -> RobotPanel:
    """The robot panel of ``profile`` (an empty one when it has none)."""
    return ROBOT_PANELS.get(profile, RobotPanel())


def image_rgb(width: int, height: int, encoding: str, step: int, data: bytes) -> np.ndarray:
    """A sensor_msgs/Image's pixels as RGB uint8 (height, width, 3); rgb8, bgr8, rgba8, bgra8 and
    mono8 encodings; ValueError for another encoding or a buffer shorter than height x step."""
    channels = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1}.get(encoding)
    if channels is None:
        raise ValueError(f"image encoding {encoding!r} is not shown (rgb8, bgr8, rgba8, bgra8, mono8)")
    if width <= 0 or height <= 0 or step < width * channels or len(data) < height * step:
        raise ValueError(f"image {width}x{height} {encoding} step {step}: {len(data)} bytes")
    a = np.frombuffer(bytes(data), np.uint8)[:height * step].reshape(height, step)[:, :width * channels]
    a = a.reshape(height, width, channels)
    if channels == 1:
        return np.repeat(a, 3, axis=2)
    rgb = a[:, :, :3]
    return np.ascontiguousarray(rgb[:, :, ::-1] if encoding.startswith("bgr") else rgb)


def robot_views(profile: str) -> tuple[RobotView, ...]:
    """The robots of ``profile`` (KeyError naming the known profiles)."""
    if profile not in ROBOT_VIEWS:
        raise KeyError(f"no robot view for profile '{profile}'; known: {sorted(ROBOT_VIEWS)}")
    return ROBOT_VIEWS[profile]


class UrdfPose:
    """Joint states → the configuration vector of a yourdfpy URDF's actuated joints.

    actuated: the URDF's actuated joint names in yourdfpy's order (mimic joints are not among
    them: yourdfpy computes them); limits: (lower, upper) per actuated joint or None.
    :meth:`update` keeps the last value of a joint absent from a message (a partial message
    moves only what it names) and clamps to the joint limits; names it does not know are
    counted in ``unknown``.
    """

    def __init__(self, actuated: Sequence[str], limits: Sequence[tuple[float, float] | None] | None = None):
        self.names = tuple(actuated)
        self._index = {n: i for i, n in enumerate(self.names)}
        self.cfg = np.zeros(len(self.names))
        self._limits = list(limits) if limits is not None else [None] * len(self.names)
        for i, lim in enumerate(self._limits):
            if lim is not None and not (lim[0] <= 0.0 <= lim[1]):
                self.cfg[i] = lim[0]
        self.unknown: set[str] = set()

    def update(self, names: Sequence[str], positions: Sequence[float]) -> np.ndarray:
        """Apply one JointState (names, positions in rad or m); returns the configuration vector."""
        for n, p in zip(names, positions):
            i = self._index.get(n)
            if i is None:
                self.unknown.add(n)
                continue
            v = float(p)
            if not np.isfinite(v):
                continue
            lim = self._limits[i]
            if lim is not None:
                v = min(max(v, lim[0]), lim[1])
            self.cfg[i] = v
        return self.cfg.copy()

    @classmethod
    def for_urdf(cls, urdf) -> UrdfPose:  # urdf: yourdfpy.URDF
        """From a loaded ``yourdfpy.URDF`` (its actuated joints and their limits)."""
        limits = []
        for name in urdf.actuated_joint_names:
            lim = urdf.joint_map[name].limit
            limits.append((float(lim.lower), float(lim.upper)) if lim is not None and lim.lower is not None
                          and lim.upper is not None and lim.lower < lim.upper else None)
        return cls(urdf.actuated_joint_names, limits)


def joint_state_dict(names: Sequence[str], positions: Sequence[float]) -> Mapping[str, float]:
    """{name: position} of a JointState's arrays (the shorter one decides)."""
    return {n: float(p) for n, p in zip(names, positions)}


def pose_moved(sent: np.ndarray | None, cfg: np.ndarray, tolerance: float) -> bool:
    """Whether configuration ``cfg`` differs from the one ``sent`` last (None: nothing sent yet) by
    more than ``tolerance`` on any joint (rad or m): only then is it worth sending to the page."""
    if sent is None or np.shape(sent) != np.shape(cfg):
        return True
    return bool(np.max(np.abs(np.asarray(cfg, float) - np.asarray(sent, float)), initial=0.0) > tolerance)
