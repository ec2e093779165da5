"""URDF ↔ MJCF cross-check of the generated arm: same joints, axes, limits and link poses. No rclpy.

``python -m arm_description.agreement [--urdf X --mjcf Y]`` prints the worst disagreement and
exits 1 when the two models differ. The URDF is read with ``yourdfpy`` (forward kinematics
independent of MuJoCo), the MJCF compiled with ``mujoco``; link poses are compared at the
keyframes and at random joint vectors inside the limits.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import numpy as np


@dataclass
class Agreement:
    joints_urdf: list[str]
    joints_mjcf: list[str]
    limit_error: float  # rad, worst |URDF limit - MJCF range|
    axis_error: float  # worst |axis difference| in the world frame, at the home pose
    position_error: float  # m, worst link origin distance
    rotation_error: float  # worst |R_urdf - R_mjcf| (max abs entry)
    samples: int

    @property
    def ok(self) -> bool:
        # both files print 6 significant digits: rounding alone leaves a few µm / 1e-5
        return (self.joints_urdf == self.joints_mjcf and self.limit_error < 1e-5 and self.axis_error < 1e-4
                and self.position_error < 2e-5 and self.rotation_error < 1e-4)


def compare(urdf_path: str, mjcf_path: str, samples: int = 200, seed: int = 0) -> Agreement:
    """Compare the URDF and MJCF of the arm (see module docstring)."""
    import mujoco
    import yourdfpy

    urdf = yourdfpy.URDF.load(str(urdf_path), load_meshes=False, build_scene_graph=True)
    model = mujoco.MjModel.from_xml_path(str(mjcf_path))
    data = mujoco.MjData(model)
    u_joints = [n for n in urdf.actuated_joint_names]
    m_joints = [model.joint(i).name for i in range(model.njnt)]
    lim = 0.0
    for n in u_joints:
        if n in m_joints:
            j = urdf.joint_map[n]
            lim = max(lim, abs(j.limit.lower - model.joint(n).range[0]), abs(j.limit.upper - model.joint(n).range[1]))
    rng = np.random.default_rng(seed)
    lo, hi = model.jnt_range[:, 0], model.jnt_range[:, 1]
    qs = [np.array(model.key(k).qpos) for k in range(model.nkey)] + [rng.uniform(lo, hi) for _ in range(samples)]
    bodies = [model.body(i).name for i in range(1, model.nbody)]
    pos_err = rot_err = 0.0
    axis_err = 0.0
    for i, q in enumerate(qs):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        urdf.update_cfg({n: q[m_joints.index(n)] for n in u_joints})
        for b in bodies:
            t = urdf.get_transform(b, urdf.base_link)
            pos_err = max(pos_err, float(np.linalg.norm(t[:3, 3] - data.body(b).xpos)))
            rot_err = max(rot_err, float(np.max(np.abs(t[:3, :3] - data.body(b).xmat.reshape(3, 3)))))
        if i == 0:
            for n in u_joints:
                j = urdf.joint_map[n]
                t = urdf.get_transform(j.child, urdf.base_link)
                axis_err = max(axis_err, float(np.max(np.abs(t[:3, :3] @ np.asarray(j.axis) - data.joint(n).xaxis))))
    return Agreement(u_joints, m_joints, lim, axis_err, pos_err, rot_err, len(qs))


def main(argv: list[str] | None = None) -> int:
    from arm_description.paths import mjcf_path, urdf_path

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--urdf", default=str(urdf_path()))
    ap.add_argument("--mjcf", default=str(mjcf_path()))
    args = ap.parse_args(argv)
    a = compare(args.urdf, args.mjcf)
    print(a)
    return 0 if a.ok else 1


if __name__ == "__main__":
    sys.exit(main())
