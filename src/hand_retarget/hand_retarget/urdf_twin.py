"""A MuJoCo twin for any URDF hand (no rclpy): :func:`build_twin` compiles the URDF with its mesh
files, adds what :class:`hand_retarget.dex_sim.DexSim` needs and returns the model.

- meshes: every ``<mesh filename>`` is resolved against the URDF's folder (``package://pkg/`` is
  dropped) and passed with its full path (``strippath="false"``), so visual and collision meshes of
  the same name stay apart; visual geoms are kept (``discardvisual="false"``) for rendering; a mesh
  format MuJoCo cannot decode (glTF ``.glb``/``.gltf``, COLLADA ``.dae``: Inspire's visual meshes)
  is converted once to STL with trimesh (cached beside the user's cache, a warning says so);
- known URDF defects are repaired with a warning (returned in ``TwinModel.warnings``): a link with
  more than one ``<inertial>`` keeps the first; inertias violating the triangle inequality are
  balanced (``balanceinertia``);
- a ``position`` actuator per actuated (non-mimic) joint, named like the joint, ``ctrlrange`` = the
  joint's limits, gain ``kp`` (N m/rad) and damping ``kv``;
- each ``<mimic>`` joint is coupled to its parent by a joint equality ``q = offset + multiplier *
  q_parent`` (and gets no actuator);
- collisions are off (contype/conaffinity 0: the twin shows commands; finger crossing is kept out
  upstream by the safety filter's clamp), gravity on;
- keyframe ``open`` (the robot's rest pose: q = 0 clipped into the limits, mimic joints by their
  equation), camera ``front`` looking at the palm side of the open hand and framing the hand only
  (:func:`hand_bodies`: the palm, where the tree branches into digits, and the digits; a forearm or
  wrist above the palm is left out of the frame), and a light.
"""

from __future__ import annotations

import pathlib
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import mujoco
import numpy as np


class TwinBuildError(ValueError):
    """The URDF cannot become a twin; the message names the file and the element."""


@dataclass
class TwinModel:
    """The compiled model, the MJCF it came from, the URDF's movable joints, the actuated ones."""

    model: mujoco.MjModel
    xml: str
    joint_names: tuple[str, ...]
    actuated: tuple[str, ...]
    mimic: dict[str, tuple[str, float, float]]
    warnings: list[str] = field(default_factory=list)


#: mesh file types MuJoCo's compiler decodes
MUJOCO_MESH_SUFFIXES = (".stl", ".obj", ".msh")


def _converted_mesh(src: pathlib.Path) -> pathlib.Path:
    """An STL copy of ``src`` (any format trimesh reads: glTF, COLLADA, PLY...), made once and kept in
    ``$XDG_CACHE_HOME/hand_teleop/meshes`` (default ``~/.cache``; keyed by path, size and mtime).
    TwinBuildError if it cannot be read."""
    import hashlib
    import os

    st = src.stat()
    key = hashlib.sha1(f"{src}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    cache = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "hand_teleop" / "meshes"
    out = cache / f"{src.stem}-{key}.stl"
    if out.is_file():
        return out
    try:
        import trimesh

        mesh = trimesh.load(str(src), force="mesh")
        if mesh.is_empty:
            raise ValueError("no triangles")
        cache.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        mesh.export(str(tmp), file_type="stl")
        tmp.replace(out)
    except Exception as exc:  # trimesh raises many types for an unreadable file
        raise TwinBuildError(f"mesh {src} is not a format MuJoCo decodes and trimesh cannot convert it: {exc}") from exc
    return out


def prepared_urdf(urdf_path: str) -> tuple[str, dict[str, tuple[str, float, float]], list[str]]:
    """URDF text ready for MuJoCo's importer, its mimic table {joint: (parent, multiplier, offset)}
    and the repairs made. TwinBuildError for an unreadable file or a missing mesh."""
    path = pathlib.Path(urdf_path)
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise TwinBuildError(f"cannot read the URDF {path}: {exc}") from exc
    notes: list[str] = []
    for link in root.iter("link"):
        inertials = link.findall("inertial")
        if len(inertials) > 1:
            for extra in inertials[1:]:
                link.remove(extra)
            notes.append(f"{path}: link '{link.get('name')}' has {len(inertials)} <inertial> elements "
                         "(MuJoCo refuses that); kept the first")
    for mesh in root.iter("mesh"):
        name = mesh.get("filename", "")
        if name.startswith("package://"):
            name = name[len("package://"):].split("/", 1)[-1]
        full = (path.parent / name) if not pathlib.Path(name).is_absolute() else pathlib.Path(name)
        if not full.is_file():
            raise TwinBuildError(f"mesh {full} (from {path}) does not exist")
        full = full.resolve()
        if full.suffix.lower() not in MUJOCO_MESH_SUFFIXES:
            converted = _converted_mesh(full)
            notes.append(f"{path}: mesh {full.name} ({full.suffix}: MuJoCo has no decoder) converted to {converted}")
            full = converted
        mesh.set("filename", str(full))
    mimic = {}
    for j in root.iter("joint"):
        m = j.find("mimic")
        if m is not None:
            mimic[j.get("name")] = (m.get("joint"), float(m.get("multiplier", 1.0)), float(m.get("offset", 0.0)))
            j.remove(m)
    for old in root.findall("mujoco"):
        root.remove(old)
    mj = ET.SubElement(root, "mujoco")
    ET.SubElement(mj, "compiler", strippath="false", balanceinertia="true", discardvisual="false",
                  fusestatic="false", angle="radian")
    return ET.tostring(root, encoding="unicode"), mimic, notes


def hand_bodies(model: mujoco.MjModel) -> np.ndarray:
    """Body ids of the hand: the palm (the body where the kinematic tree branches into two or more
    subtrees with joints, found walking down from the world while only one subtree has joints: the
    wrist and forearm bodies above it are passed) and every body below it. Palm first. A model
    that never branches (a single chain) is all hand: the world's first body and below."""
    n = model.nbody
    kids: list[list[int]] = [[] for _ in range(n)]
    for b in range(1, n):
        kids[int(model.body_parentid[b])].append(b)
    jointed = np.zeros(n, dtype=bool)
    for b in range(n - 1, 0, -1):          # children have larger ids than their parent
        jointed[b] = jointed[b] or model.body_jntnum[b] > 0
        jointed[int(model.body_parentid[b])] |= jointed[b]
    palm = 0
    while True:
        moving = [k for k in kids[palm] if jointed[k]]
        if len(moving) != 1:
            break
        palm = moving[0]
    if palm == 0 or not any(jointed[k] for k in kids[palm]):
        # no branching (a single chain: a gripper, a test linkage): the whole model is the hand
        palm = kids[0][0] if kids[0] else 0
    out, todo = [], [palm]
    while todo:
        b = todo.pop(0)
        out.append(b)
        todo += kids[b]
    return np.array(out, dtype=int)


def build_twin(urdf_path: str, kp: float = 5.0, kv: float = 0.1, timestep: float = 0.001) -> TwinModel:
    """Compile ``urdf_path`` into a twin (see the module docstring). TwinBuildError on failure."""
    text, mimic, notes = prepared_urdf(urdf_path)
    try:
        spec = mujoco.MjSpec.from_string(text)
        probe = spec.compile()
    except Exception as exc:  # mujoco raises ValueError with the compiler's message
        raise TwinBuildError(f"MuJoCo cannot compile {urdf_path}: {exc}") from exc
    names = []
    for j in range(probe.njnt):
        if int(probe.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            names.append(mujoco.mj_id2name(probe, mujoco.mjtObj.mjOBJ_JOINT, j))
    for parent_child in mimic.items():
        child, (parent, _, _) = parent_child
        if child not in names or parent not in names:
            raise TwinBuildError(f"{urdf_path}: mimic joint '{child}' follows '{parent}', which is not a movable joint")
    spec.option.timestep = timestep
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    for g in spec.geoms:
        g.contype, g.conaffinity = 0, 0
    rest = {}
    for j in spec.joints:
        if j.name not in names:
            continue
        lo, hi = float(j.range[0]), float(j.range[1])
        if not j.limited or hi <= lo:
            lo, hi = -np.pi, np.pi
            j.range = [lo, hi]
            j.limited = mujoco.mjtLimited.mjLIMITED_TRUE
            notes.append(f"{urdf_path}: joint '{j.name}' has no limits (continuous): twin range [-pi, pi]")
        # a small viscous damping floor; MuJoCo 3.3+ holds damping as a polynomial in the joint
        # velocity (linear, quadratic, cubic): only the linear term gets the floor (flooring all three
        # put 0.01 v^2 + 0.01 v^3 on every joint, which capped LEAP's 0.95 N m thumb at 4.2 rad/s,
        # half its URDF velocity limit of 8.48 rad/s)
        damping = np.array(j.damping, dtype=float).ravel()
        damping[0] = max(float(damping[0]), 0.01)
        j.damping = damping if damping.size > 1 else float(damping[0])
        j.armature = max(float(np.asarray(j.armature).ravel()[0]), 1e-4)
        rest[j.name] = min(max(0.0, lo), hi)
    actuated = tuple(n for n in names if n not in mimic)
    # a mimic joint rests where its equation puts it (Ability's fingers: q2 = 0.7235 at q1 = 0)
    for child in mimic:
        src, mult, off, seen = *mimic[child], [child]
        while src in mimic and src not in seen:
            seen.append(src)
            s2, m2, o2 = mimic[src]
            src, mult, off = s2, mult * m2, mult * o2 + off
        lo, hi = (float(x) for x in spec.joint(child).range)
        rest[child] = min(max(mult * rest.get(src, 0.0) + off, lo), hi)
    for n in actuated:
        j = spec.joint(n)
        a = spec.add_actuator(name=n, target=n, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        a.gaintype = mujoco.mjtGain.mjGAIN_FIXED
        a.biastype = mujoco.mjtBias.mjBIAS_AFFINE
        a.gainprm[0] = kp
        a.biasprm[0], a.biasprm[1], a.biasprm[2] = 0.0, -kp, -kv
        a.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        a.ctrlrange = [float(j.range[0]), float(j.range[1])]
    for child, (parent, mult, off) in mimic.items():
        e = spec.add_equality(type=mujoco.mjtEq.mjEQ_JOINT, name1=child, name2=parent)
        e.data[0:5] = [off, mult, 0.0, 0.0, 0.0]
    # camera on the palm side of the open hand
    model = spec.compile()
    data = mujoco.MjData(model)
    for n, v in rest.items():
        data.qpos[model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n)]] = v
    mujoco.mj_forward(model, data)
    hand = hand_bodies(model)
    pts = data.xpos[hand]
    centre = 0.5 * (pts.min(axis=0) + pts.max(axis=0))
    spread = pts - pts.mean(axis=0)
    _, _, vt = np.linalg.svd(spread, full_matrices=False)
    along, across, normal = vt[0], vt[1], vt[2]
    root_pos = data.xpos[hand[0]]
    if float((pts.mean(axis=0) - root_pos) @ along) < 0:
        along = -along
    # palmar side: where the fingertips go when every actuated joint moves a little towards its upper limit
    q1 = data.qpos.copy()
    for n in actuated:
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n)
        lo, hi = model.jnt_range[jid]
        q1[model.jnt_qposadr[jid]] = min(hi, rest[n] + 0.3 * (hi - rest[n]))
    d1 = mujoco.MjData(model)
    d1.qpos[:] = q1
    mujoco.mj_forward(model, d1)
    if float((d1.xpos[hand] - data.xpos[hand]).sum(axis=0) @ normal) < 0:
        normal = -normal
    across = np.cross(along, normal)
    # camera axes: x = -across, y = along (fingers up), z = normal (it looks along -z, at the palm)
    x_axis = -across / np.linalg.norm(across)
    y_axis = along / np.linalg.norm(along)
    rot = np.column_stack([x_axis, y_axis, np.cross(x_axis, y_axis)])
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, rot.reshape(-1))
    # frame the hand (palm and digits, not a forearm): its geoms' bounding spheres (a link's origin is at its base, so the
    # fingertip meshes reach beyond the body positions), at MuJoCo's default 45 deg vertical fovy,
    # the horizontal half-angle taken as the vertical one (any image at least as wide as tall)
    z_axis = np.cross(x_axis, y_axis)
    in_hand = np.isin(model.geom_bodyid, hand)
    gp, gr = data.geom_xpos[in_hand], model.geom_rbound[in_hand]
    lo_y, hi_y = float((gp @ y_axis - gr).min()), float((gp @ y_axis + gr).max())
    lo_x, hi_x = float((gp @ x_axis - gr).min()), float((gp @ x_axis + gr).max())
    front = float((gp @ z_axis + gr).max())
    half = 0.5 * max(hi_y - lo_y, hi_x - lo_x)
    distance = 1.1 * half / np.tan(np.radians(22.5))
    centre = 0.5 * (lo_x + hi_x) * x_axis + 0.5 * (lo_y + hi_y) * y_axis + (centre @ z_axis) * z_axis
    cam = centre + ((front - centre @ z_axis) + distance) * z_axis
    spec.worldbody.add_camera(name="front", pos=cam.tolist(), quat=quat.tolist())
    spec.worldbody.add_light(pos=(centre + 0.6 * normal + 0.2 * along).tolist(), dir=(-normal).tolist())
    spec.visual.headlight.ambient = [0.35, 0.35, 0.35]
    spec.visual.headlight.diffuse = [0.6, 0.6, 0.6]
    spec.visual.global_.offwidth = 1920
    spec.visual.global_.offheight = 1080
    key = spec.add_key(name="open")
    model = spec.compile()
    qpos = model.qpos0.copy()
    for n, v in rest.items():
        qpos[model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n)]] = v
    key.qpos = qpos.tolist()
    key.ctrl = [rest[n] for n in actuated]
    try:
        model = spec.compile()
    except Exception as exc:
        raise TwinBuildError(f"MuJoCo cannot compile the twin of {urdf_path}: {exc}") from exc
    return TwinModel(model, spec.to_xml(), tuple(names), actuated, mimic, notes)
