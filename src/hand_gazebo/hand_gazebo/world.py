"""The Gazebo world of the two hands and its ros_gz_bridge configuration, generated from the one
hand description (hand_description's ``config/hand.yaml``). No rclpy.

``generate_gz_world`` (console script) writes, into the package source directory::

    worlds/two_hands.sdf     SDFormat 1.11 world for gz sim (Harmonic, ROS 2 Jazzy)
    config/gz_bridge.yaml    ros_gz_bridge parameter_bridge configuration

``--check`` regenerates in memory and exits 1 if a committed file differs. Both files come from
the same tables (:func:`command_topic`, :func:`joint_state_topics`), so names cannot drift.

The world:

- physics engine **bullet-featherstone** (``gz-physics-bullet-featherstone-plugin``, selected in
  the Physics system): in Gazebo Harmonic the default DART plugin does not implement mimic
  constraints ("the chosen physics engine does not support mimic constraints", gz_ros2_control
  issue #340; gz-physics issue #432 tracks DART), bullet-featherstone does (gz-physics PR #517,
  gz-sim PR #1838, SDFormat 1.11 ``//joint/axis/mimic``);
- a table and both hands as the MuJoCo two-hand scene places them (palms towards +x, the right
  hand at y = −0.16, the left one — the description mirrored — at y = +0.16, wrists 12 cm above
  the table top at z = 0.74 m), each palm fixed to the world;
- per hand the 15 revolute joints with the description's origins, axes (+y, positive = flexion),
  limits, damping and effort; links with the description's inertials and capsule/box shapes;
  fingertip frames ``{digit}_tip``;
- **mimic coupling**: each digit is driven from its proximal joint (MCP, thumb CMC); the two
  distal joints follow it, ``q_j = (upper_j / upper_proximal) · q_proximal`` — every joint at the
  same fraction of its range, which is how the tendon-driven hand curls at equilibrium
  (hand_description README, "Proportional curl"). The driver is the proximal joint and every
  follower lies downstream of it, as bullet-featherstone needs;
- one ``JointPositionController`` per proximal joint (10), listening on
  ``/hand_gz/<side>/<joint>/cmd_pos`` (gz.msgs.Double, rad), in velocity-command mode (a "perfect"
  position servo at up to the joint velocity limit: no PID to tune for gram-scale links);
- one ``JointStatePublisher`` per hand on ``/world/two_hands/model/<side>_hand/joint_state``.

The bridge (ROS ↔ gz): the 10 command topics ROS_TO_GZ (std_msgs/msg/Float64 ↔ gz.msgs.Double),
the two joint state topics GZ_TO_ROS (gz.msgs.Model → sensor_msgs/msg/JointState on
``/hand_gz/<side>/joint_states``) and ``/clock`` GZ_TO_ROS. The commands come from
``hand_gazebo.commander_node`` (flexions → proximal joint angles, with a per-finger deadband).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from collections.abc import Sequence

import numpy as np

from hand_common.contract import HAND_SIDES
from hand_description.description import HandDescription, Shape, derive_physics, load, matrix_to_rpy
from hand_description.generate import num, vec, write_or_check

WORLD_NAME = "two_hands"
#: Physics engine plugin: the one of Gazebo Harmonic that honours mimic constraints.
PHYSICS_ENGINE = "gz-physics-bullet-featherstone-plugin"
SDF_VERSION = "1.11"
TABLE_TOP = 0.74
#: Wrist mount of each hand on the table (y), as in hand_description's mjcf/scene_two_hands.xml.
MOUNT_Y = {"right": -0.16, "left": 0.16}
TOPIC_PREFIX = "/hand_gz"
OUTPUTS = ("worlds/two_hands.sdf", "config/gz_bridge.yaml")


def model_name(side: str) -> str:
    return f"{side}_hand"


def command_topic(side: str, joint: str) -> str:
    """ROS and gz topic of a proximal joint's position command (std_msgs/Float64 ↔ gz.msgs.Double, rad)."""
    return f"{TOPIC_PREFIX}/{side}/{joint}/cmd_pos"


def joint_state_topics(side: str) -> tuple[str, str]:
    """(gz topic, ROS topic) of a hand's joint states (gz.msgs.Model → sensor_msgs/JointState)."""
    return f"/world/{WORLD_NAME}/model/{model_name(side)}/joint_state", f"{TOPIC_PREFIX}/{side}/joint_states"


def drivers(desc: HandDescription) -> dict[str, str]:
    """{digit: its driven (proximal) joint}."""
    return {d.name: d.segments[0].joint for d in desc.digits}


def mimic_multipliers(desc: HandDescription) -> dict[str, tuple[str, float]]:
    """{follower joint: (leader = the digit's proximal joint, multiplier = upper / upper_leader)}."""
    out = {}
    for d in desc.digits:
        lead = d.segments[0]
        for s in d.segments[1:]:
            out[s.joint] = (lead.joint, s.upper / lead.upper)
    return out


def _rot_z_to(u: np.ndarray) -> np.ndarray:
    """The minimal rotation taking +z to the direction of ``u`` (capsule axes)."""
    z = np.array([0.0, 0.0, 1.0])
    u = np.asarray(u, float) / np.linalg.norm(u)
    c = float(z @ u)
    if c > 1.0 - 1e-12:
        return np.eye(3)
    if c < -1.0 + 1e-12:
        return np.diag([1.0, -1.0, -1.0])
    axis = np.cross(z, u)
    s = float(np.linalg.norm(axis))
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]]) / s
    return np.eye(3) + s * k + (1.0 - c) * (k @ k)


def _pose(pos: Sequence[float], rot: np.ndarray) -> str:
    return f"{vec(pos)} {vec(matrix_to_rpy(rot))}"


def _geometry(shape: Shape) -> tuple[str, str]:
    """(pose text, geometry element) of one description shape in SDF (capsule = SDF capsule)."""
    if shape.kind == "capsule":
        axis = shape.b - shape.a
        length = float(np.linalg.norm(axis))
        return (_pose((shape.a + shape.b) / 2.0, _rot_z_to(axis)),
                f"<capsule><radius>{num(shape.radius)}</radius><length>{num(length)}</length></capsule>")
    if shape.kind == "box":
        return _pose(shape.pos, shape.rot), f"<box><size>{vec(2.0 * shape.half)}</size></box>"
    return _pose(shape.pos, np.eye(3)), f"<sphere><radius>{num(shape.radius)}</radius></sphere>"


def _color(rgba: Sequence[float]) -> str:
    return f"<material><ambient>{vec(rgba)}</ambient><diffuse>{vec(rgba)}</diffuse></material>"


def model_sdf(desc: HandDescription, indent: str = "    ") -> list[str]:
    """The ``<model>`` of one hand (its side), placed on the table."""
    side = desc.side
    joints, _ = derive_physics(desc)
    p = desc.physics
    mimic = mimic_multipliers(desc)
    mount = np.array([0.0, MOUNT_Y[side], TABLE_TOP]) + desc.mount_pos
    i1, i2, i3 = indent + "  ", indent + "    ", indent + "      "
    out = [f'{indent}<model name="{model_name(side)}">',
           f"{i1}<pose>{_pose(mount, desc.mount_rot)}</pose>",
           f"{i1}<self_collide>false</self_collide>"]

    def link(name: str, color: Sequence[float], pose: str | None) -> None:
        ine = desc.inertial(name)
        i = ine.inertia
        out.append(f'{i1}<link name="{name}">')
        if pose is not None:
            out.append(f"{i2}{pose}")
        out.append(f"{i2}<inertial>")
        out.append(f"{i3}<pose>{vec(ine.com)} 0 0 0</pose>")
        out.append(f"{i3}<mass>{num(ine.mass)}</mass>")
        out.append(f"{i3}<inertia><ixx>{num(i[0, 0])}</ixx><ixy>{num(i[0, 1])}</ixy><ixz>{num(i[0, 2])}</ixz>"
                   f"<iyy>{num(i[1, 1])}</iyy><iyz>{num(i[1, 2])}</iyz><izz>{num(i[2, 2])}</izz></inertia>")
        out.append(f"{i2}</inertial>")
        for k, shape in enumerate(desc.link_shapes(name)):
            pose_text, geom = _geometry(shape)
            for tag in ("collision", "visual"):
                out.append(f'{i2}<{tag} name="{name}_{tag}_{k}"><pose>{pose_text}</pose><geometry>{geom}</geometry>'
                           + (_color(color) if tag == "visual" else "") + f"</{tag}>")
        out.append(f"{i1}</link>")

    link(desc.palm_link, desc.colors["palm"], None)
    out.append(f'{i1}<joint name="palm_fixed" type="fixed"><parent>world</parent><child>{desc.palm_link}</child></joint>')
    for d in desc.digits:
        for s in d.segments:
            pos, rot, parent = desc.joint_origin(s.joint)
            link(s.link, desc.colors["skin"], f'<pose relative_to="{parent}">{_pose(pos, rot)}</pose>')
            jp = joints[s.joint]
            out.append(f'{i1}<joint name="{s.joint}" type="revolute">')
            out.append(f"{i2}<parent>{parent}</parent>")
            out.append(f"{i2}<child>{s.link}</child>")
            out.append(f"{i2}<axis>")
            out.append(f"{i3}<xyz>0 1 0</xyz>")
            out.append(f"{i3}<limit><lower>{num(s.lower)}</lower><upper>{num(s.upper)}</upper>"
                       f"<effort>{num(jp.effort)}</effort><velocity>{num(p.joint_velocity_limit)}</velocity></limit>")
            out.append(f"{i3}<dynamics><damping>{num(jp.damping)}</damping></dynamics>")
            if s.joint in mimic:
                lead, mult = mimic[s.joint]
                out.append(f'{i3}<mimic joint="{lead}" axis="axis"><multiplier>{num(mult)}</multiplier>'
                           "<offset>0</offset><reference>0</reference></mimic>")
            out.append(f"{i2}</axis>")
            out.append(f"{i1}</joint>")
        out.append(f'{i1}<frame name="{d.tip_link}" attached_to="{d.segments[-1].link}">'
                   f"<pose>0 0 {num(d.segments[-1].length)} 0 0 0</pose></frame>")
    for joint in drivers(desc).values():
        out.append(f'{i1}<plugin filename="gz-sim-joint-position-controller-system" '
                   'name="gz::sim::systems::JointPositionController">')
        out.append(f"{i2}<joint_name>{joint}</joint_name>")
        out.append(f"{i2}<topic>{command_topic(side, joint)}</topic>")
        out.append(f"{i2}<use_velocity_commands>true</use_velocity_commands>")
        out.append(f"{i2}<cmd_max>{num(p.joint_velocity_limit)}</cmd_max>")
        out.append(f"{i2}<cmd_min>{num(-p.joint_velocity_limit)}</cmd_min>")
        out.append(f"{i2}<initial_position>0</initial_position>")
        out.append(f"{i1}</plugin>")
    out.append(f'{i1}<plugin filename="gz-sim-joint-state-publisher-system" name="gz::sim::systems::JointStatePublisher">'
               f"<topic>{joint_state_topics(side)[0]}</topic></plugin>")
    out.append(f"{indent}</model>")
    return out


def world_sdf(desc: HandDescription) -> str:
    """The whole world (both hands of ``desc``, mirrored for the left) as SDFormat text."""
    out = ['<?xml version="1.0"?>',
           "<!-- GENERATED by hand_gazebo.world (generate_gz_world) from hand_description's config/hand.yaml. "
           "Do not edit: change the description and regenerate. -->",
           "<!-- gz sim -r worlds/two_hands.sdf (Gazebo Harmonic). Bullet-featherstone physics: the engine of "
           "Harmonic that honours the mimic constraints coupling each digit's distal joints to its proximal joint. -->",
           f'<sdf version="{SDF_VERSION}">',
           f'  <world name="{WORLD_NAME}">',
           '    <physics name="1ms" type="ignored">',
           "      <max_step_size>0.001</max_step_size>",
           "      <real_time_factor>1.0</real_time_factor>",
           "    </physics>",
           '    <plugin filename="gz-sim-physics-system" name="gz::sim::systems::Physics">',
           f"      <engine><filename>{PHYSICS_ENGINE}</filename></engine>",
           "    </plugin>",
           '    <plugin filename="gz-sim-user-commands-system" name="gz::sim::systems::UserCommands"/>',
           '    <plugin filename="gz-sim-scene-broadcaster-system" name="gz::sim::systems::SceneBroadcaster"/>',
           "    <gravity>0 0 -9.81</gravity>",
           '    <light type="directional" name="sun">',
           "      <cast_shadows>false</cast_shadows>",
           "      <pose>0.8 0.3 1.8 0 0 0</pose>",
           "      <diffuse>0.8 0.8 0.8 1</diffuse>",
           "      <direction>-0.5 -0.2 -0.85</direction>",
           "    </light>",
           '    <model name="ground_plane"><static>true</static><link name="link">'
           "<collision name=\"collision\"><geometry><plane><normal>0 0 1</normal><size>3 3</size></plane></geometry></collision>"
           "<visual name=\"visual\"><geometry><plane><normal>0 0 1</normal><size>3 3</size></plane></geometry>"
           + _color((0.3, 0.33, 0.37, 1.0)) + "</visual></link></model>",
           f'    <model name="table"><static>true</static><pose>0 0 {num(TABLE_TOP / 2)} 0 0 0</pose><link name="link">'
           f"<collision name=\"collision\"><geometry><box><size>0.6 0.9 {num(TABLE_TOP)}</size></box></geometry></collision>"
           f"<visual name=\"visual\"><geometry><box><size>0.6 0.9 {num(TABLE_TOP)}</size></box></geometry>"
           + _color((0.55, 0.42, 0.30, 1.0)) + "</visual></link></model>"]
    for side in ("right", "left"):
        out += model_sdf(desc.for_side(side))
    out += ["  </world>", "</sdf>"]
    return "\n".join(out) + "\n"


def bridge_yaml(desc: HandDescription) -> str:
    """The ros_gz_bridge ``parameter_bridge`` configuration (a YAML list) for the world."""
    out = ["# GENERATED by hand_gazebo.world (generate_gz_world) together with worlds/two_hands.sdf: do not edit.",
           "# ros2 run ros_gz_bridge parameter_bridge --ros-args -p config_file:=<this file>",
           "# Commands: hand_gazebo's gz_commander publishes each digit's proximal joint angle (rad); the",
           "# world's JointPositionController drives it and the mimic constraints move the distal joints.",
           "- ros_topic_name: /clock",
           "  gz_topic_name: /clock",
           "  ros_type_name: rosgraph_msgs/msg/Clock",
           "  gz_type_name: gz.msgs.Clock",
           "  direction: GZ_TO_ROS"]
    for side in HAND_SIDES:
        d = desc.for_side(side)
        for joint in drivers(d).values():
            t = command_topic(side, joint)
            out += [f"- ros_topic_name: {t}", f"  gz_topic_name: {t}", "  ros_type_name: std_msgs/msg/Float64",
                    "  gz_type_name: gz.msgs.Double", "  direction: ROS_TO_GZ"]
        gz_topic, ros_topic = joint_state_topics(side)
        out += [f"- ros_topic_name: {ros_topic}", f"  gz_topic_name: {gz_topic}",
                "  ros_type_name: sensor_msgs/msg/JointState", "  gz_type_name: gz.msgs.Model",
                "  direction: GZ_TO_ROS"]
    return "\n".join(out) + "\n"


def build(desc: HandDescription) -> dict[str, str]:
    """{relative path: text} of the generated files."""
    return {OUTPUTS[0]: world_sdf(desc), OUTPUTS[1]: bridge_yaml(desc)}


def source_dir() -> pathlib.Path | None:
    """This package's source directory (running from a checkout), or None."""
    here = pathlib.Path(__file__).resolve().parent.parent
    if (here / "package.xml").is_file() and (here / "worlds").is_dir():
        return here
    import os

    root = os.environ.get("HAND_TELEOP_ROOT")
    if root and (pathlib.Path(root) / "src" / "hand_gazebo" / "package.xml").is_file():
        return pathlib.Path(root) / "src" / "hand_gazebo"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    from hand_description.paths import description_path

    parser = argparse.ArgumentParser(prog="generate_gz_world", description=__doc__.split("\n\n")[0])
    parser.add_argument("--description", type=pathlib.Path, default=None,
                        help="hand description YAML (default: hand_description's config/hand.yaml)")
    parser.add_argument("--out", type=pathlib.Path, default=None, help="hand_gazebo package directory to write into")
    parser.add_argument("--check", action="store_true", help="compare with the files on disk; exit 1 if they differ")
    args = parser.parse_args(argv)
    out_dir = args.out or source_dir()
    if out_dir is None:
        parser.error("cannot find the hand_gazebo source tree: pass --out <package dir>")
    files = build(load(args.description or description_path()))
    return write_or_check(files, out_dir, args.check, "generate_gz_world")

if __name__ == "__main__":
    sys.exit(main())
