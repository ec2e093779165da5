"""Cross-check a URDF and an MJCF of the same hand, and the bend sign of every joint.

:func:`compare` parses the URDF with a real URDF parser (yourdfpy) and compiles the MJCF with
MuJoCo, then checks that both describe the same robot: the same movable joints (URDF revolute =
MJCF hinge), each with the same parent and child, joint origin (position + rotation of the child
frame in the parent frame), axis, limits and damping; the same links/bodies (fixed URDF joints =
MJCF bodies without joints) with the same mass, centre of mass and inertia tensor; and the same
collision primitives (an MJCF capsule counts as the URDF's cylinder + two spheres). It returns a
list of human-readable discrepancies, empty when they agree.

:func:`flexion_signs_urdf` / :func:`flexion_signs_mjcf` report, for every movable joint, whether a
small positive rotation from the open pose moves the digit's tip towards the palm's palmar side
(+1 = positive is flexion, our convention), away from it (-1: e.g. a CAD export whose axis is
flipped) or neither (0).

Command line (also for your own files, e.g. a CAD export)::

    python -m hand_description.agreement --urdf my_hand.urdf --mjcf my_hand.xml [--palmar 1 0 0]

exits 1 and lists the discrepancies and the joints whose positive direction is not flexion.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

POS_TOL = 2e-5      # m
ROT_TOL = 2e-5      # rad (Frobenius norm of the rotation difference)
ANGLE_TOL = 1e-5    # rad (limits)
REL_TOL = 2e-4      # relative, masses / inertias / damping


@dataclass
class Joint:
    """One joint in a common form. origin: 4x4 child frame in the parent frame at q = 0."""

    name: str
    kind: str                     # "revolute" | "fixed" | other
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray = field(default_factory=lambda: np.zeros(3))
    lower: float = 0.0
    upper: float = 0.0
    damping: float = 0.0


@dataclass
class Link:
    name: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray           # about the com, link axes
    prims: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]  # (kind, pos, rot, params)


@dataclass
class Robot:
    joints: dict[str, Joint]
    links: dict[str, Link]
    root: str


def _tf(pos: np.ndarray, rot: np.ndarray) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = rot
    t[:3, 3] = pos
    return t


# --- URDF ----------------------------------------------------------------------------------------

def read_urdf(path: str | pathlib.Path) -> Robot:
    """Parse ``path`` with yourdfpy (no meshes loaded). Raises ValueError if it is not a valid URDF."""
    import yourdfpy

    try:
        urdf = yourdfpy.URDF.load(str(path), build_scene_graph=False, build_collision_scene_graph=False,
                                  load_meshes=False, load_collision_meshes=False)
    except Exception as exc:  # yourdfpy raises assorted lxml/parse errors
        raise ValueError(f"cannot parse URDF {path}: {exc}") from exc
    robot = urdf.robot
    joints = {}
    for j in robot.joints:
        origin = j.origin if j.origin is not None else np.eye(4)
        jt = Joint(j.name, j.type, j.parent, j.child, np.asarray(origin, float))
        if j.type in ("revolute", "continuous", "prismatic"):
            jt.axis = np.asarray(j.axis if j.axis is not None else [1.0, 0.0, 0.0], float)
            if j.limit is not None:
                jt.lower = float(j.limit.lower or 0.0)
                jt.upper = float(j.limit.upper or 0.0)
            if j.dynamics is not None and j.dynamics.damping is not None:
                jt.damping = float(j.dynamics.damping)
        joints[j.name] = jt
    links = {}
    for lk in robot.links:
        if lk.inertial is not None and lk.inertial.mass is not None:
            o = lk.inertial.origin if lk.inertial.origin is not None else np.eye(4)
            rot = np.asarray(o)[:3, :3]
            inertia = rot @ np.asarray(lk.inertial.inertia, float) @ rot.T
            mass, com = float(lk.inertial.mass), np.asarray(o)[:3, 3].astype(float)
        else:
            mass, com, inertia = 0.0, np.zeros(3), np.zeros((3, 3))
        prims = []
        for c in lk.collisions:
            o = np.asarray(c.origin if c.origin is not None else np.eye(4), float)
            g = c.geometry
            if g.box is not None:
                prims.append(("box", o[:3, 3], o[:3, :3], np.asarray(g.box.size, float)))
            elif g.cylinder is not None:
                prims.append(("cylinder", o[:3, 3], o[:3, :3], np.array([g.cylinder.radius, g.cylinder.length])))
            elif g.sphere is not None:
                prims.append(("sphere", o[:3, 3], o[:3, :3], np.array([g.sphere.radius])))
            else:
                prims.append(("mesh", o[:3, 3], o[:3, :3], np.zeros(0)))
        links[lk.name] = Link(lk.name, mass, com, inertia, prims)
    children = {j.child for j in joints.values()}
    roots = [n for n in links if n not in children]
    if len(roots) != 1:
        raise ValueError(f"URDF {path} has {len(roots)} root links ({roots}); expected one")
    return Robot(joints, links, roots[0])


# --- MJCF ----------------------------------------------------------------------------------------

def _quat_to_matrix(q: Sequence[float]) -> np.ndarray:
    import mujoco

    m = np.zeros(9)
    mujoco.mju_quat2Mat(m, np.asarray(q, float))
    return m.reshape(3, 3)


def read_mjcf(path_or_model) -> Robot:
    """Compile an MJCF path (or take a compiled ``mujoco.MjModel``) into the common form.

    The body that is the child of the world is the root; the world itself is not a link.
    Raises ValueError if MuJoCo cannot compile the file or a body has more than one joint.
    """
    import mujoco

    if isinstance(path_or_model, mujoco.MjModel):
        m = path_or_model
    else:
        try:
            m = mujoco.MjModel.from_xml_path(str(path_or_model))
        except Exception as exc:
            raise ValueError(f"MuJoCo cannot compile {path_or_model}: {exc}") from exc

    def name(obj, i: int) -> str:
        return mujoco.mj_id2name(m, obj, i) or f"<unnamed {i}>"

    joints, links = {}, {}
    roots = []
    for b in range(1, m.nbody):
        bname = name(mujoco.mjtObj.mjOBJ_BODY, b)
        parent = int(m.body_parentid[b])
        rot_i = _quat_to_matrix(m.body_iquat[b])
        inertia = rot_i @ np.diag(m.body_inertia[b]) @ rot_i.T
        prims = []
        for g in range(m.ngeom):
            if m.geom_bodyid[g] != b or (m.geom_contype[g] == 0 and m.geom_conaffinity[g] == 0):
                continue
            pos, rot, size = m.geom_pos[g].copy(), _quat_to_matrix(m.geom_quat[g]), m.geom_size[g]
            t = m.geom_type[g]
            if t == mujoco.mjtGeom.mjGEOM_CAPSULE:
                prims.append(("cylinder", pos, rot, np.array([size[0], 2.0 * size[1]])))
                prims.append(("sphere", pos - rot[:, 2] * size[1], np.eye(3), np.array([size[0]])))
                prims.append(("sphere", pos + rot[:, 2] * size[1], np.eye(3), np.array([size[0]])))
            elif t == mujoco.mjtGeom.mjGEOM_CYLINDER:
                prims.append(("cylinder", pos, rot, np.array([size[0], 2.0 * size[1]])))
            elif t == mujoco.mjtGeom.mjGEOM_BOX:
                prims.append(("box", pos, rot, 2.0 * size[:3].copy()))
            elif t == mujoco.mjtGeom.mjGEOM_SPHERE:
                prims.append(("sphere", pos, np.eye(3), np.array([size[0]])))
            else:
                prims.append((f"mjgeom{int(t)}", pos, rot, size[:3].copy()))
        links[bname] = Link(bname, float(m.body_mass[b]), m.body_ipos[b].copy(), inertia, prims)
        if parent == 0:
            roots.append(bname)
            continue
        origin = _tf(m.body_pos[b].copy(), _quat_to_matrix(m.body_quat[b]))
        nj = int(m.body_jntnum[b])
        if nj == 0:
            jname = f"<fixed {name(mujoco.mjtObj.mjOBJ_BODY, parent)}->{bname}>"
            joints[jname] = Joint(jname, "fixed", name(mujoco.mjtObj.mjOBJ_BODY, parent), bname, origin)
            continue
        if nj > 1:
            raise ValueError(f"body {bname} has {nj} joints; one joint per body is expected")
        j = int(m.body_jntadr[b])
        jname = name(mujoco.mjtObj.mjOBJ_JOINT, j)
        kind = {mujoco.mjtJoint.mjJNT_HINGE: "revolute", mujoco.mjtJoint.mjJNT_SLIDE: "prismatic"}.get(
            int(m.jnt_type[j]), f"mjjoint{int(m.jnt_type[j])}")
        if np.linalg.norm(m.jnt_pos[j]) > POS_TOL:
            kind += " (joint pos not at the body origin)"
        jt = Joint(jname, kind, name(mujoco.mjtObj.mjOBJ_BODY, parent), bname, origin, m.jnt_axis[j].copy())
        if m.jnt_limited[j]:
            jt.lower, jt.upper = float(m.jnt_range[j, 0]), float(m.jnt_range[j, 1])
        else:
            jt.lower, jt.upper = -np.inf, np.inf
        jt.damping = float(m.dof_damping[m.jnt_dofadr[j]])
        joints[jname] = jt
    if len(roots) != 1:
        raise ValueError(f"MJCF has {len(roots)} bodies attached to the world ({roots}); expected one hand root")
    return Robot(joints, links, roots[0])


# --- comparison ----------------------------------------------------------------------------------

def _close(a: float, b: float, rel: float = REL_TOL, abs_: float = 1e-9) -> bool:
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


def _rot_close(a: np.ndarray, b: np.ndarray) -> bool:
    return float(np.linalg.norm(a - b)) <= ROT_TOL


def _prim_match(p: tuple, q: tuple) -> bool:
    kind, pos, rot, params = p
    kind2, pos2, rot2, params2 = q
    if kind != kind2 or np.linalg.norm(pos - pos2) > POS_TOL or params.shape != params2.shape:
        return False
    if not np.allclose(params, params2, rtol=REL_TOL, atol=1e-7):
        return False
    if kind == "cylinder":  # symmetric about its axis: only the axis direction matters
        return abs(abs(float(np.dot(rot[:, 2], rot2[:, 2]))) - 1.0) <= ROT_TOL
    if kind == "box":       # symmetric under 180 deg turns about its axes
        return all(abs(abs(float(np.dot(rot[:, k], rot2[:, k]))) - 1.0) <= ROT_TOL for k in range(3))
    return True


def compare_robots(u: Robot, m: Robot) -> list[str]:
    """Discrepancies between a URDF robot ``u`` and an MJCF robot ``m`` (empty list = they agree)."""
    problems: list[str] = []
    if u.root != m.root:
        problems.append(f"root link: URDF '{u.root}' vs MJCF '{m.root}'")
    u_mov = {n: j for n, j in u.joints.items() if j.kind != "fixed"}
    m_mov = {n: j for n, j in m.joints.items() if j.kind != "fixed"}
    for n in sorted(set(u_mov) - set(m_mov)):
        problems.append(f"joint {n}: in the URDF, missing in the MJCF")
    for n in sorted(set(m_mov) - set(u_mov)):
        problems.append(f"joint {n}: in the MJCF, missing in the URDF")
    for n in sorted(set(u_mov) & set(m_mov)):
        a, b = u_mov[n], m_mov[n]
        if a.kind != b.kind:
            problems.append(f"joint {n}: type URDF {a.kind} vs MJCF {b.kind}")
        if (a.parent, a.child) != (b.parent, b.child):
            problems.append(f"joint {n}: parent/child URDF {a.parent}->{a.child} vs MJCF {b.parent}->{b.child}")
        _origin_problems(problems, f"joint {n}", a.origin, b.origin)
        ua, ma = a.axis / np.linalg.norm(a.axis), b.axis / np.linalg.norm(b.axis)
        if np.linalg.norm(ua - ma) > ROT_TOL:
            problems.append(f"joint {n}: axis URDF {np.round(ua, 6)} vs MJCF {np.round(ma, 6)}")
        if abs(a.lower - b.lower) > ANGLE_TOL or abs(a.upper - b.upper) > ANGLE_TOL:
            problems.append(f"joint {n}: limits URDF [{a.lower:.6g}, {a.upper:.6g}] vs MJCF [{b.lower:.6g}, {b.upper:.6g}] rad")
        if not _close(a.damping, b.damping):
            problems.append(f"joint {n}: damping URDF {a.damping:.6g} vs MJCF {b.damping:.6g}")
    # fixed joints: compare by child link
    u_fix = {j.child: j for j in u.joints.values() if j.kind == "fixed"}
    m_fix = {j.child: j for j in m.joints.values() if j.kind == "fixed"}
    for c in sorted(set(u_fix) ^ set(m_fix)):
        where = "URDF" if c in u_fix else "MJCF"
        problems.append(f"fixed frame {c}: only in the {where}")
    for c in sorted(set(u_fix) & set(m_fix)):
        a, b = u_fix[c], m_fix[c]
        if a.parent != b.parent:
            problems.append(f"fixed frame {c}: parent URDF {a.parent} vs MJCF {b.parent}")
        _origin_problems(problems, f"fixed frame {c}", a.origin, b.origin)
    for n in sorted(set(u.links) ^ set(m.links)):
        where = "URDF" if n in u.links else "MJCF"
        problems.append(f"link {n}: only in the {where}")
    for n in sorted(set(u.links) & set(m.links)):
        a, b = u.links[n], m.links[n]
        if n != u.root:  # the root is welded to the world in MuJoCo: its inertia does not matter there
            if not _close(a.mass, b.mass):
                problems.append(f"link {n}: mass URDF {a.mass:.6g} vs MJCF {b.mass:.6g} kg")
            if a.mass > 0 and np.linalg.norm(a.com - b.com) > POS_TOL:
                problems.append(f"link {n}: centre of mass URDF {np.round(a.com, 6)} vs MJCF {np.round(b.com, 6)}")
            scale = max(float(np.max(np.abs(a.inertia))), 1e-12)
            if float(np.max(np.abs(a.inertia - b.inertia))) > 1e-3 * scale:
                problems.append(f"link {n}: inertia tensors differ (max {float(np.max(np.abs(a.inertia - b.inertia))):.3g} kg m^2)")
        unmatched = list(b.prims)
        for p in a.prims:
            hit = next((k for k, q in enumerate(unmatched) if _prim_match(p, q)), None)
            if hit is None:
                problems.append(f"link {n}: URDF collision {p[0]} at {np.round(p[1], 5)} size {np.round(p[3], 5)} "
                                "has no MJCF counterpart")
            else:
                unmatched.pop(hit)
        for q in unmatched:
            problems.append(f"link {n}: MJCF collision {q[0]} at {np.round(q[1], 5)} size {np.round(q[3], 5)} "
                            "has no URDF counterpart")
    return problems


def _origin_problems(problems: list[str], what: str, a: np.ndarray, b: np.ndarray) -> None:
    if np.linalg.norm(a[:3, 3] - b[:3, 3]) > POS_TOL:
        problems.append(f"{what}: origin position URDF {np.round(a[:3, 3], 6)} vs MJCF {np.round(b[:3, 3], 6)} m")
    if not _rot_close(a[:3, :3], b[:3, :3]):
        problems.append(f"{what}: origin rotation differs (|dR| = {np.linalg.norm(a[:3, :3] - b[:3, :3]):.3g})")


def compare(urdf_path: str | pathlib.Path, mjcf_path: str | pathlib.Path) -> list[str]:
    """Discrepancies between the URDF at ``urdf_path`` and the MJCF at ``mjcf_path`` (empty = agree).

    Raises ValueError if either file cannot be parsed/compiled.
    """
    return compare_robots(read_urdf(urdf_path), read_mjcf(mjcf_path))


# --- bend signs ----------------------------------------------------------------------------------

def _leaf_below(robot: Robot, link: str) -> str:
    """The deepest link below ``link`` (following the first child at each level)."""
    depth_best, best = -1, link
    stack = [(link, 0)]
    while stack:
        cur, depth = stack.pop()
        if depth > depth_best:
            depth_best, best = depth, cur
        stack.extend((j.child, depth + 1) for j in robot.joints.values() if j.parent == cur)
    return best


def _link_pose(robot: Robot, link: str, q: dict[str, float]) -> np.ndarray:
    """Pose (4x4) of ``link`` in the root frame for joint angles ``q`` (others 0)."""
    from hand_description.description import axis_angle

    chain = []
    cur = link
    parent_of = {j.child: j for j in robot.joints.values()}
    while cur in parent_of:
        j = parent_of[cur]
        chain.append(j)
        cur = j.parent
    t = np.eye(4)
    for j in reversed(chain):
        motion = np.eye(4)
        if j.kind == "revolute":
            motion[:3, :3] = axis_angle(j.axis, q.get(j.name, 0.0))
        t = t @ j.origin @ motion
    return t


def flexion_signs(robot: Robot, palmar: Sequence[float] = (1.0, 0.0, 0.0), delta: float = 0.05) -> dict[str, int]:
    """{joint: +1 | -1 | 0}: does a rotation of ``+delta`` rad from the open pose move the digit's
    tip towards ``palmar`` (a direction in the root link's frame)? +1 = positive is flexion."""
    direction = np.asarray(palmar, float) / np.linalg.norm(palmar)
    signs = {}
    for j in robot.joints.values():
        if j.kind != "revolute":
            continue
        tip = _leaf_below(robot, j.child)
        p0 = _link_pose(robot, tip, {})[:3, 3]
        p1 = _link_pose(robot, tip, {j.name: delta})[:3, 3]
        if np.linalg.norm(p1 - p0) < 1e-9:  # the tip sits on the axis: use the child's far end instead
            signs[j.name] = 0
            continue
        move = float(np.dot(p1 - p0, direction)) / float(np.linalg.norm(p1 - p0))
        signs[j.name] = 1 if move > 0.05 else (-1 if move < -0.05 else 0)
    return signs


def flexion_signs_urdf(path: str | pathlib.Path, palmar: Sequence[float] = (1.0, 0.0, 0.0)) -> dict[str, int]:
    """:func:`flexion_signs` of a URDF file."""
    return flexion_signs(read_urdf(path), palmar)


def flexion_signs_mjcf(path_or_model, palmar: Sequence[float] = (1.0, 0.0, 0.0)) -> dict[str, int]:
    """:func:`flexion_signs` of an MJCF file or compiled model (``palmar`` in the root body's frame)."""
    return flexion_signs(read_mjcf(path_or_model), palmar)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hand_description.agreement", description=__doc__.split("\n\n")[0])
    parser.add_argument("--urdf", type=pathlib.Path, default=None, help="URDF (default: the package's hand.urdf)")
    parser.add_argument("--mjcf", type=pathlib.Path, default=None, help="MJCF (default: the package's hand.xml)")
    parser.add_argument("--palmar", type=float, nargs=3, default=(1.0, 0.0, 0.0),
                        help="palmar direction in the root link's frame (for the bend-sign check)")
    args = parser.parse_args(argv)
    from hand_description.paths import mjcf_path, urdf_path

    urdf = args.urdf or urdf_path()
    mjcf = args.mjcf or mjcf_path()
    try:
        problems = compare(urdf, mjcf)
        signs = flexion_signs_urdf(urdf, args.palmar)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for p in problems:
        print(f"MISMATCH {p}")
    wrong = {n: s for n, s in signs.items() if s != 1}
    for n, s in wrong.items():
        print(f"SIGN {n}: positive rotation is {'extension' if s < 0 else 'not a flexion'} (sign {s})")
    print(f"{urdf} vs {mjcf}: {len(problems)} mismatches, {len(wrong)} joints whose positive direction is not flexion")
    return 1 if problems or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
