"""Which nodes make up each way of running the project: one table for launch files and runner.

Pure data and path resolution, no rclpy. ``launch/*.launch.py`` (stock ROS 2 Jazzy) and
:mod:`hand_bringup.runner` (embedded, no ROS CLI) both read :data:`NODES` and :data:`PROFILES`,
so the two ways of starting the system cannot drift apart.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hand_common import contract


@dataclass(frozen=True)
class NodeSpec:
    """One node process: ``ros2 run <package> <executable> --ros-args -r __node:=<name>
    --params-file <share>/<params_file>``. ``actuator``: it commands hardware or the twin, so it is
    deactivated (safe pose) before anything else on shutdown. ``nice``: niceness increment the
    runner starts the process with (0 = as the runner): consumers that are not on the hot path
    (camera → landmarks → flexion → publish) get a positive one, so under CPU contention the
    tracker runs first and they shed load (the kernel's CFS gives nice +5 about 1/3 of the share
    of nice 0)."""

    key: str
    package: str
    executable: str
    name: str
    params_file: str
    actuator: bool = False
    nice: int = 0


NODES: dict[str, NodeSpec] = {
    s.key: s
    for s in (
        NodeSpec("tracker", "hand_tracking", "tracker_node", contract.TRACKER_NODE, "config/tracker.yaml"),
        NodeSpec("joint_mapper", "hand_joint_mapper", "joint_mapper", contract.JOINT_MAPPER_NODE,
                 "config/joint_mapper.yaml", nice=10),
        NodeSpec("twin", "hand_twin_mujoco", "twin_node", contract.TWIN_NODE, "config/twin.yaml", actuator=True,
                 nice=5),
        NodeSpec("servo_driver", "hand_servo_driver", "servo_driver", contract.SERVO_DRIVER_NODE,
                 "config/servo_driver.yaml", actuator=True),
        # SO-101 arm (package arm_teleop; names = arm_teleop.topics)
        NodeSpec("arm_teleop", "arm_teleop", "arm_teleop", "arm_teleop", "config/arm_teleop.yaml"),
        NodeSpec("arm_twin", "arm_teleop", "arm_twin", "arm_twin", "config/arm_twin.yaml", actuator=True),
        NodeSpec("arm_driver", "arm_teleop", "arm_driver", "arm_driver", "config/arm_driver.yaml", actuator=True),
        # Gazebo (stock installs with gz sim; package hand_gazebo): flexions -> joint commands for ros_gz_bridge
        NodeSpec("gz_commander", "hand_gazebo", "gz_commander", "gz_hand_commander", "config/gz_commander.yaml",
                 actuator=True),
        # dexterous hand (package hand_retarget; names = hand_retarget.topics): landmarks -> DexPilot -> twin
        NodeSpec("dex_retarget", "hand_retarget", "retarget_node", "dex_retarget", "config/retarget.yaml"),
        NodeSpec("dex_twin", "hand_retarget", "dex_twin_node", "dex_twin", "config/dex_twin.yaml", actuator=True),
        # the operator console (package hand_console, issue 23): a web page; runner --console, launch console:=true
        NodeSpec("console", "hand_console", "console", contract.CONSOLE_NODE, "config/console.yaml", nice=10),
    )
}

#: Node keys per way of running, in activation order: consumers first, the tracker last, so no
#: command is published before its consumers listen. Shutdown runs :func:`shutdown_order`.
PROFILES: dict[str, tuple[str, ...]] = {
    "sim": ("twin", "tracker"),
    "rviz": ("joint_mapper", "tracker"),
    "hardware": ("servo_driver", "tracker"),
    "demo": ("twin", "joint_mapper", "servo_driver", "tracker"),
    "arm": ("arm_twin", "arm_driver", "arm_teleop", "tracker"),
    "two_hands": ("twin", "tracker"),
    "gazebo": ("gz_commander", "tracker"),  # + gz sim and ros_gz_bridge: hand_gazebo's gazebo.launch.py
    "dex": ("dex_twin", "dex_retarget", "tracker"),  # /hand/landmarks -> dexterous twin
    # two hosts (README "Two hosts"): the computer by the robot hand runs only the actuator side,
    # the operator's laptop (camera) only the tracker; DDS between them (runner --peer, launch peer:=)
    "robot": ("servo_driver",),
    "robot_twin": ("twin",),
    "operator": ("tracker",),
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
    "two_hands": {"tracker": {"hands": "two"}, "twin": {"hands": "two"}},
    "gazebo": {"tracker": {"hands": "two"}},
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
    """Actuators first (they go to their safe pose while commands still flow), then the rest in
    reverse activation order."""
    rev = list(reversed(specs))
    return [s for s in rev if s.actuator] + [s for s in rev if not s.actuator]


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
