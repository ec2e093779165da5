"""Which nodes make up each way of running the project: one table for launch files and runner.

Pure data and path resolution, no rclpy. ``launch/*.launch.py`` (stock ROS 2 Jazzy) and
:mod:`hand_bringup.runner` (embedded, no ROS CLI) both read :data:`NODES` and :data:`PROFILES`,
so the two ways of starting the system cannot drift apart.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hand_common import contract
from hand_joint_mapper import interface as mapper_iface
from hand_servo_driver import interface as servo_iface
from hand_tracking import interface as tracker_iface
from hand_twin_mujoco import interface as twin_iface

#: The node keys (runner ``-p <key>.<param>``, ``<key>_params`` launch arguments, log file names).
TRACKER, JOINT_MAPPER, TWIN, SERVO_DRIVER = "tracker", "joint_mapper", "twin", "servo_driver"
ARM_TELEOP, ARM_TWIN, ARM_DRIVER = "arm_teleop", "arm_twin", "arm_driver"
GZ_COMMANDER, DEX_RETARGET, DEX_TWIN, CONSOLE = "gz_commander", "dex_retarget", "dex_twin", "console"


@dataclass(frozen=True)
class LaunchArg:
    """A node parameter set from a launch argument: ``param`` := LaunchConfiguration(``arg``) as
    ``type``. ``expr``: a computed value instead of the argument itself (launch_common builds it:
    ``not`` = the argument negated (``viewer`` from ``headless``), ``servo_port`` = ``port``, or
    the simulated board's pty with ``sim_board:=true``). ``default``: for an argument that only
    some profiles declare."""

    param: str
    arg: str
    type: type = str
    expr: str = ""
    default: str | None = None


@dataclass(frozen=True)
class NodeSpec:
    """One node process: ``ros2 run <package> <executable> --ros-args -r __node:=<name>
    --params-file <share>/<params_file>``. ``actuator``: it commands hardware or the twin, so it is
    deactivated (safe pose) before anything else on shutdown. ``nice``: niceness increment the
    runner starts the process with (0 = as the runner): consumers that are not on the hot path
    (camera → landmarks → flexion → publish) get a positive one, so under CPU contention the
    tracker runs first and they shed load (the kernel's CFS gives nice +5 about 1/3 of the share
    of nice 0). ``launch_args``: its parameters the launch arguments set (launch files only; the
    runner passes ``-p`` overrides)."""

    key: str
    package: str
    executable: str
    name: str
    params_file: str
    actuator: bool = False
    nice: int = 0
    launch_args: tuple[LaunchArg, ...] = ()


NODES: dict[str, NodeSpec] = {
    s.key: s
    for s in (
        NodeSpec(TRACKER, "hand_tracking", "tracker_node", tracker_iface.NODE, "config/tracker.yaml",
                 launch_args=tuple(LaunchArg(p, a, t) for p, (a, t) in tracker_iface.LAUNCH_ARGS.items())),
        NodeSpec(JOINT_MAPPER, "hand_joint_mapper", "joint_mapper", mapper_iface.NODE,
                 "config/joint_mapper.yaml", nice=10),
        # headless:=true → no interactive viewer (offscreen rendering only)
        NodeSpec(TWIN, "hand_twin_mujoco", "twin_node", twin_iface.NODE, "config/twin.yaml", actuator=True,
                 nice=5, launch_args=(LaunchArg(twin_iface.PARAM_VIEWER, "headless", bool, expr="not"),)),
        NodeSpec(SERVO_DRIVER, "hand_servo_driver", "servo_driver", servo_iface.NODE,
                 "config/servo_driver.yaml", actuator=True,
                 launch_args=(LaunchArg(servo_iface.PARAM_PORT, "port", str, expr="servo_port"),)),
        # SO-101 arm (package arm_teleop; names = arm_teleop.topics)
        NodeSpec(ARM_TELEOP, "arm_teleop", "arm_teleop", "arm_teleop", "config/arm_teleop.yaml",
                 launch_args=(LaunchArg("control_mode", "control_mode"),)),
        NodeSpec(ARM_TWIN, "arm_teleop", "arm_twin", "arm_twin", "config/arm_twin.yaml", actuator=True),
        NodeSpec(ARM_DRIVER, "arm_teleop", "arm_driver", "arm_driver", "config/arm_driver.yaml", actuator=True,
                 launch_args=(LaunchArg("real_hardware", "real_hardware", bool),
                              LaunchArg("allow_motion", "allow_motion", bool), LaunchArg("port", "port"))),
        # Gazebo (stock installs with gz sim; package hand_gazebo): flexions -> joint commands for ros_gz_bridge
        NodeSpec(GZ_COMMANDER, "hand_gazebo", "gz_commander", "gz_hand_commander", "config/gz_commander.yaml",
                 actuator=True),
        # dexterous hand (package hand_retarget; names = hand_retarget.topics): landmarks -> DexPilot -> twin;
        # robot:=leap_hand_right (dex profile; empty = dex_hand)
        NodeSpec(DEX_RETARGET, "hand_retarget", "retarget_node", "dex_retarget", "config/retarget.yaml",
                 launch_args=tuple(LaunchArg(n, n, default="") for n in ("robot", "robot_urdf", "robot_dir"))),
        NodeSpec(DEX_TWIN, "hand_retarget", "dex_twin_node", "dex_twin", "config/dex_twin.yaml", actuator=True,
                 launch_args=tuple(LaunchArg(n, n, default="") for n in ("robot", "robot_urdf", "robot_dir"))),
        # the operator console (package hand_console, issue 23): a web page; runner --console, launch console:=true
        # at the lowest priority (nice 19): under contention the page slows down (keep-last-1, drops
        # counted), the hot path does not
        NodeSpec(CONSOLE, "hand_console", "console", contract.CONSOLE_NODE, "config/console.yaml", nice=19),
    )
}

#: Node keys per way of running, in activation order: consumers first, the tracker last, so no
#: command is published before its consumers listen. Shutdown runs :func:`shutdown_order`.
PROFILES: dict[str, tuple[str, ...]] = {
    "sim": (TWIN, TRACKER),
    "rviz": (JOINT_MAPPER, TRACKER),
    "hardware": (SERVO_DRIVER, TRACKER),
    "demo": (TWIN, JOINT_MAPPER, SERVO_DRIVER, TRACKER),
    "arm": (ARM_TWIN, ARM_DRIVER, ARM_TELEOP, TRACKER),
    "two_hands": (TWIN, TRACKER),
    "gazebo": (GZ_COMMANDER, TRACKER),  # + gz sim and ros_gz_bridge: hand_gazebo's gazebo.launch.py
    "dex": (DEX_TWIN, DEX_RETARGET, TRACKER),  # /hand/landmarks -> dexterous twin
    # two hosts (README "Two hosts"): the computer by the robot hand runs only the actuator side,
    # the operator's laptop (camera) only the tracker; DDS between them (runner --peer, launch peer:=)
    "robot": (SERVO_DRIVER,),
    "robot_twin": (TWIN,),
    "operator": (TRACKER,),
}

#: The two-host profiles: robot side (actuators, started first) and operator side (camera, tracker).
ROBOT_PROFILES = ("robot", "robot_twin")
OPERATOR_PROFILES = ("operator",)

#: Fast DDS profile for runs whose DDS reaches another host (share/hand_bringup/config/...): UDPv4
#: only, no shared memory; quick discovery announcements. See the file's comments.
TWO_HOST_FASTDDS_PROFILE = "config/fastdds_two_host.xml"

#: Parameters a profile sets on its nodes on top of their YAML files (launch files and the runner
#: alike; a runner ``-p`` override still wins): profile -> node key -> {parameter: value}.
PROFILE_PARAMS: dict[str, dict[str, dict[str, object]]] = {
    # both operator hands, identity-tracked, each driving its own hand of the two-hand twin
    "two_hands": {TRACKER: {tracker_iface.PARAM_HANDS: tracker_iface.HANDS_TWO},
                  TWIN: {twin_iface.PARAM_HANDS: twin_iface.HANDS_TWO}},
    "gazebo": {TRACKER: {tracker_iface.PARAM_HANDS: tracker_iface.HANDS_TWO}},
}


def profile_params(profile: str, key: str) -> dict[str, object]:
    """The parameters ``profile`` sets on node ``key`` (empty when none)."""
    return dict(PROFILE_PARAMS.get(profile, {}).get(key, {}))

#: Name of the lifecycle manager node that the launch files start.
LIFECYCLE_MANAGER_NODE = "hand_lifecycle_manager"
#: Name of the lifecycle manager that brings up the console (``console:=true``) on its own: a
#: console that cannot serve (busy port) never holds the profile's nodes back.
CONSOLE_MANAGER_NODE = "hand_console_manager"


def profile_nodes(profile: str) -> list[NodeSpec]:
    """The NodeSpecs of a profile in activation order; KeyError names the unknown profile."""
    if profile not in PROFILES:
        raise KeyError(f"unknown profile '{profile}'; choose one of {sorted(PROFILES)}")
    return [NODES[k] for k in PROFILES[profile]]


def shutdown_order(specs: list[NodeSpec]) -> list[NodeSpec]:
    """The one shutdown order (runner and lifecycle manager): actuators first (they go to their
    safe pose while commands still flow), then the rest in reverse activation order."""
    rev = list(reversed(specs))
    return [s for s in rev if s.actuator] + [s for s in rev if not s.actuator]


def shutdown_order_names(names: list[str]) -> list[str]:
    """:func:`shutdown_order` of node *names* given in activation order (the lifecycle manager's
    ``node_names``): a name of no :data:`NODES` entry counts as a non-actuator."""
    by_name = {s.name: s for s in NODES.values()}
    specs = [by_name.get(n) or NodeSpec(n, "", "", n, "") for n in names]
    return [s.name for s in shutdown_order(specs)]


def share_file(package: str, relative: str) -> str:
    """Absolute path of ``relative`` in the package's installed share directory."""
    from ament_index_python.packages import get_package_share_directory

    return os.path.join(get_package_share_directory(package), relative)


def executable_path(spec: NodeSpec) -> str:
    """Absolute path of the installed console script (what ``ros2 run`` would execute)."""
    from ament_index_python.packages import get_package_prefix

    path = os.path.join(get_package_prefix(spec.package), "lib", spec.package, spec.executable)
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"{spec.package}/{spec.executable}: no executable at {path} (colcon build?)")
    return path
