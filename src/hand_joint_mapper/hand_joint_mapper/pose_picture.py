"""Pose a URDF from /joint_states samples and write a PNG, for machines without RViz.

MuJoCo compiles the URDF itself (the same file robot_state_publisher gets), the sample's joint
positions go into ``qpos`` by joint name, ``mj_forward`` does the forward kinematics and an
offscreen renderer (``MUJOCO_GL=egl``) draws it. The picture is a grid: one column per sample,
one row per view (camera azimuth 90 and 0 degrees: looking along +y and +x of the base).

Samples come from:

- ``--pose open|fist|half`` (repeatable): uniform flexion 0 / 1 / 0.5 on all 15 human joints,
  mapped by :mod:`hand_joint_mapper.joint_mapping` with the mapping table — the joint_mapper's own
  path from flexions to a /joint_states message;
- ``--bag DIR --index N`` (repeatable index, negative counts from the end): recorded /joint_states;
- ``--live``: the next message on /joint_states.

``pose_picture --pose open --pose fist -o hand.png`` (URDF default: hand_description's).
Unknown joint names in a sample are reported on stderr and skipped; URDF joints missing from it
stay at 0 (mimic joints follow their source).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence

import numpy as np

from hand_common import contract
from hand_joint_mapper.joint_mapping import JointMapper, MappingError, load_table, load_urdf_file, parse_urdf

POSES = {"open": 0.0, "half": 0.5, "fist": 1.0}
#: (label, azimuth deg, elevation deg) of the default views: along +y and along +x of the URDF base
VIEWS = (("az 90", 90.0, -20.0), ("az 0", 0.0, -20.0))


def _resolve_package_uris(urdf_xml: str) -> str:
    """``package://pkg/rel`` → absolute path in pkg's share dir; ``file://`` stripped (MuJoCo
    reads plain paths only)."""

    def repl(m: re.Match) -> str:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        try:
            return os.path.join(get_package_share_directory(m.group(1)), m.group(2))
        except PackageNotFoundError:
            return m.group(0)

    return re.sub(r"package://([^/\"']+)/([^\"']*)", repl, urdf_xml).replace("file://", "")


def compile_urdf(urdf_xml: str):
    """MjModel of a URDF with visual geoms kept and static bodies not fused (MuJoCo's URDF
    defaults drop visuals). Raises ValueError with MuJoCo's message if it cannot compile."""
    import mujoco

    try:
        root = ET.fromstring(_resolve_package_uris(urdf_xml))
    except ET.ParseError as exc:
        raise ValueError(f"URDF is not well-formed XML: {exc}") from None
    for el in root.iter():
        if el.tag in ("visual", "collision"):
            el.attrib.pop("name", None)  # URDFs often name a link's visual and collision alike: MuJoCo warns
    root.insert(0, ET.fromstring(
        '<mujoco><compiler discardvisual="false" fusestatic="false" balanceinertia="true"/></mujoco>'))
    text = ET.tostring(root, encoding="unicode")
    try:
        spec = mujoco.MjSpec.from_string(text)
        spec.add_texture(name="sky", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
                         builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
                         rgb1=[0.93, 0.94, 0.96], rgb2=[0.55, 0.6, 0.68], width=64, height=64)
        spec.worldbody.add_light(pos=[0.0, -1.0, 1.5], dir=[0.0, 0.6, -1.0], diffuse=[0.6, 0.6, 0.6])
        return spec.compile()
    except Exception as exc:  # mujoco raises ValueError / its own errors
        raise ValueError(f"MuJoCo cannot compile the URDF: {exc}") from None


def full_positions(urdf_xml: str, sample: Mapping[str, float]) -> tuple[dict[str, float], list[str]]:
    """Complete a /joint_states sample for posing: URDF mimic joints absent from it follow their
    source (``multiplier * source + offset``, as robot_state_publisher does). Returns
    (positions by joint, names in the sample that are not movable URDF joints)."""
    _, joints = parse_urdf(urdf_xml)
    movable = {n for n, j in joints.items() if j.single_dof}
    pos = {n: float(v) for n, v in sample.items() if n in movable}
    unknown = [n for n in sample if n not in movable]
    for _ in range(len(joints)):  # resolve chains of mimics
        changed = False
        for n, j in joints.items():
            if n in movable and n not in pos and j.mimic is not None and j.mimic.joint in pos:
                pos[n] = j.mimic.multiplier * pos[j.mimic.joint] + j.mimic.offset
                changed = True
        if not changed:
            break
    return pos, unknown


def pose_model(model, data, positions: Mapping[str, float]) -> None:
    """Write joint positions into ``data.qpos`` by joint name and run forward kinematics."""
    import mujoco

    data.qpos[:] = model.qpos0
    for name, value in positions.items():
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if jid >= 0:
            data.qpos[model.jnt_qposadr[jid]] = value
    mujoco.mj_forward(model, data)


def render(urdf_xml: str, samples: Sequence[tuple[str, Mapping[str, float]]], size: int = 400,
           views: Sequence[tuple[str, float, float]] = VIEWS) -> np.ndarray:
    """Grid image (rows = views, columns = samples), uint8 RGB of shape (rows*size, cols*size, 3).

    samples: (label, {URDF joint: position rad/m}). The camera looks at the model's centre, the
    distance fitted to its extent in the first sample's pose, the same for every tile.
    """
    import cv2
    import mujoco

    model = compile_urdf(urdf_xml)
    data = mujoco.MjData(model)
    renderer = mujoco.Renderer(model, size, size)
    opt = mujoco.MjvOption()
    has_visual = bool(np.any(model.geom_group == 1))
    opt.geomgroup[:] = 0
    opt.geomgroup[1 if has_visual else 0] = 1
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    pose_model(model, data, full_positions(urdf_xml, samples[0][1])[0])
    cam.lookat[:] = model.stat.center
    cam.distance = 1.6 * model.stat.extent
    rows = []
    try:
        for vname, az, el in views:
            tiles = []
            for label, sample in samples:
                pose_model(model, data, full_positions(urdf_xml, sample)[0])
                cam.azimuth, cam.elevation = az, el
                renderer.update_scene(data, cam, scene_option=opt)
                img = np.ascontiguousarray(renderer.render())
                cv2.putText(img, f"{label} ({vname})", (8, 22), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (20, 20, 20), 2,
                            cv2.LINE_AA)
                tiles.append(img)
            rows.append(np.concatenate(tiles, axis=1))
    finally:
        renderer.close()
    return np.concatenate(rows, axis=0)


def write_png(path: str, rgb: np.ndarray) -> None:
    import cv2

    if not cv2.imwrite(path, cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)):
        raise OSError(f"cannot write {path}")


def samples_from_poses(urdf_xml: str, table_path: str, poses: Sequence[str]) -> list[tuple[str, dict[str, float]]]:
    """(label, joint positions) for uniform flexion poses, mapped with the mapping table."""
    mapper = JointMapper.from_urdf(urdf_xml, load_table(table_path))
    out = []
    for p in poses:
        res = mapper.map(dict.fromkeys(contract.JOINT_NAMES, POSES[p]))
        out.append((p, dict(zip(mapper.names, res.positions))))
    return out


def samples_from_bag(bag: str, indices: Sequence[int], topic: str = contract.TOPIC_JOINT_STATES):
    """(label, joint positions) of the messages at ``indices`` on ``topic`` of a rosbag2."""
    from rclpy.serialization import deserialize_message
    from rosbags.rosbag2 import Reader
    from sensor_msgs.msg import JointState

    with Reader(bag) as reader:
        conns = [c for c in reader.connections if c.topic == topic]
        if not conns:
            raise ValueError(f"bag {bag} has no topic {topic}")
        msgs = [deserialize_message(bytes(raw), JointState) for _, _, raw in reader.messages(connections=conns)]
    out = []
    for i in indices:
        if not -len(msgs) <= i < len(msgs):
            raise ValueError(f"index {i} outside the {len(msgs)} messages on {topic}")
        m = msgs[i]
        if len(m.name) != len(m.position):
            raise ValueError(f"message {i}: {len(m.name)} names but {len(m.position)} positions")
        out.append((f"#{i % len(msgs)}", dict(zip(m.name, m.position))))
    return out


def sample_live(topic: str = contract.TOPIC_JOINT_STATES, timeout: float = 10.0):
    import rclpy
    from rclpy.wait_for_message import wait_for_message
    from sensor_msgs.msg import JointState

    from hand_common.processes import ensure_local_discovery


    ensure_local_discovery()  # DDS stays on this machine unless told otherwise

    rclpy.init()
    try:
        node = rclpy.create_node("pose_picture")
        ok, m = wait_for_message(JointState, node, topic, time_to_wait=timeout)
        if not ok:
            raise ValueError(f"no message on {topic} within {timeout:g} s")
        return [("live", dict(zip(m.name, m.position)))]
    finally:
        rclpy.try_shutdown()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="pose_picture", description=__doc__.split("\n\n")[0])
    ap.add_argument("--urdf", help="URDF file (default: hand_description's URDF)")
    ap.add_argument("--pose", action="append", choices=sorted(POSES), help="uniform flexion pose (repeatable)")
    ap.add_argument("--table", default="", help="mapping table for --pose (default: the shipped hand table)")
    ap.add_argument("--bag", help="rosbag2 with /joint_states")
    ap.add_argument("--index", type=int, action="append", help="message index in --bag (repeatable)")
    ap.add_argument("--live", action="store_true", help="take the next /joint_states message")
    ap.add_argument("--topic", default=contract.TOPIC_JOINT_STATES)
    ap.add_argument("--size", type=int, default=400, help="tile size in pixels (default 400)")
    ap.add_argument("-o", "--output", default="pose.png")
    a = ap.parse_args(argv)
    if not (a.pose or a.bag or a.live):
        a.pose = ["open", "fist"]
    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        if a.urdf:
            urdf_file = a.urdf
        else:
            from hand_description.paths import urdf_path

            urdf_file = str(urdf_path())
        urdf = load_urdf_file(urdf_file)
        samples: list = []
        if a.pose:
            from hand_joint_mapper.joint_mapper_node import resolve_table_path

            samples += samples_from_poses(urdf, resolve_table_path(a.table), a.pose)
        if a.bag:
            samples += samples_from_bag(a.bag, a.index or [0, -1], a.topic)
        if a.live:
            samples += sample_live(a.topic)
        for label, s in samples:
            unknown = full_positions(urdf, s)[1]
            if unknown:
                print(f"pose_picture: sample {label}: not movable URDF joints, skipped: {unknown}", file=sys.stderr)
        write_png(a.output, render(urdf, samples, a.size))
    except (MappingError, ValueError, OSError, ImportError) as exc:
        print(f"pose_picture: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {a.output}: {len(samples)} samples x {len(VIEWS)} views of {urdf_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
