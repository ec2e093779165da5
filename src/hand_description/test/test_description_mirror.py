"""Mirrored models (issue 11): for every digit on BOTH sides a positive flexion command curls the
digit towards the palm, and the left hand is the mirror image of the right one. Checked with
fingertip positions in the palm frame: in MuJoCo (flexor commands, simulated), on the URDFs with
yourdfpy forward kinematics, and in the two-hand scene (both generated hands attached with name
prefixes, a table, keyframe `open`).

Ground truth for "towards the palm": the palm's normal of the right hand is +x of its `palm`
frame (description.py; README "Frames"), and a correct left hand is the mirror image (y → −y) of
a correct right hand, so every left fingertip must sit at the mirror image of the right one for
the same command. Mirroring flips the sense of rotation about the joint axes; a generator that
forgot it would curl the left digits dorsally (or sideways) and fail both checks.
"""

import mujoco
import numpy as np
import pytest
import yourdfpy

from hand_common import contract
from hand_description import paths
from hand_description.curl_check import settle
from hand_description.render import flexion_ctrl

MIRROR = np.array([1.0, -1.0, 1.0])
SIDES = ("right", "left")
TWO_HANDS_SCENE = paths.share_dir() / "mjcf" / "scene_two_hands.xml"


def tip_in_palm(model, data, prefix=""):
    """{digit: fingertip site position (m) in the palm frame}."""
    palm = model.body(f"{prefix}palm").id
    r, p = data.xmat[palm].reshape(3, 3), data.xpos[palm]
    return {f: r.T @ (data.site_xpos[model.site(f"{prefix}{f}_tip").id] - p) for f in contract.FINGER_NAMES}


def palm_centre(side):
    """Centre of the palm's palmar face in the palm frame: between the heel and the knuckles."""
    return np.array([0.008, 0.0, 0.05]) * (MIRROR if side == "left" else 1.0)


@pytest.fixture(scope="module")
def mujoco_tips():
    """{side: (open tips, tips at flexion 0.6 of every digit)} after 1.2 s of simulation."""
    out = {}
    for side in SIDES:
        model = mujoco.MjModel.from_xml_path(str(paths.scene_path(side)))
        data = mujoco.MjData(model)
        settle(model, data, flexion_ctrl(model, 0.0), 0.3)
        opened = tip_in_palm(model, data)
        settle(model, data, flexion_ctrl(model, 0.6), 1.2)
        out[side] = (opened, tip_in_palm(model, data))
    return out


@pytest.mark.parametrize("side", SIDES)
def test_mujoco_positive_flexion_curls_every_digit_towards_the_palm(side, mujoco_tips):
    opened, flexed = mujoco_tips[side]
    centre = palm_centre(side)
    for f in contract.FINGER_NAMES:
        move = flexed[f] - opened[f]
        assert move[0] > 0.015, f"{side} {f}: tip moved {move[0] * 1e3:.1f} mm along the palm normal"
        closer = np.linalg.norm(opened[f] - centre) - np.linalg.norm(flexed[f] - centre)
        assert closer > 0.01, f"{side} {f}: tip only {closer * 1e3:.1f} mm closer to the palm centre"
        if f == "thumb":  # it swings across the palm, towards the fingers (ulnar): |y| shrinks
            assert abs(flexed[f][1]) < abs(opened[f][1]) - 0.01


def test_mujoco_left_hand_is_the_mirror_image_of_the_right(mujoco_tips):
    for k in range(2):  # open, then flexed
        for f in contract.FINGER_NAMES:
            right, left = mujoco_tips["right"][k][f], mujoco_tips["left"][k][f]
            np.testing.assert_allclose(left, right * MIRROR, atol=2e-4, err_msg=f"{f} ({'open flexed'.split()[k]})")


def urdf_tips(side, q):
    robot = yourdfpy.URDF.load(str(paths.urdf_path(side)), load_meshes=False, build_collision_scene_graph=False)
    robot.update_cfg({j: q.get(j, 0.0) for j in robot.actuated_joint_names})
    return {f: robot.get_transform(f"{f}_tip", "palm")[:3, 3] for f in contract.FINGER_NAMES}, robot


@pytest.mark.parametrize("side", SIDES)
def test_urdf_forward_kinematics_every_joint_flexes_towards_the_palm(side):
    opened, robot = urdf_tips(side, {})
    limits = {j.name: j.limit.upper for j in robot.robot.joints if j.type == "revolute"}
    assert set(limits) == set(contract.JOINT_NAMES)
    centre = palm_centre(side)
    for f, joints in contract.FINGER_JOINTS.items():
        # the whole digit at half of its range, the way the tendon curls it
        flexed, _ = urdf_tips(side, {j: 0.5 * limits[j] for j in joints})
        assert flexed[f][0] - opened[f][0] > 0.015, f"{side} {f}"
        assert np.linalg.norm(flexed[f] - centre) < np.linalg.norm(opened[f] - centre) - 0.01, f"{side} {f}"
        for j in joints:  # and each joint alone: a positive angle moves the tip palmar
            one, _ = urdf_tips(side, {j: 0.2})
            assert one[f][0] - opened[f][0] > 1e-3, f"{side} {j}: positive rotation is not flexion"


def test_urdf_left_hand_is_the_mirror_image_of_the_right():
    q = {j: 0.37 * (1 + k % 3) / 3 for k, j in enumerate(contract.JOINT_NAMES)}  # an arbitrary pose
    for pose in ({}, q):
        right, _ = urdf_tips("right", pose)
        left, _ = urdf_tips("left", pose)
        for f in contract.FINGER_NAMES:
            np.testing.assert_allclose(left[f], right[f] * MIRROR, atol=1e-6)


# --- the two-hand scene ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_hands():
    return mujoco.MjModel.from_xml_path(str(TWO_HANDS_SCENE))


def test_two_hand_scene_has_both_prefixed_hands_a_table_and_an_open_keyframe(two_hands):
    m = two_hands
    assert m.nq == 30 and m.nu == 10 and m.opt.timestep == pytest.approx(0.002)
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert m.geom("table").id >= 0 and m.camera("front").id >= 0
    key = m.key("open")
    assert np.all(key.qpos == 0.0)
    for side in SIDES:
        single = mujoco.MjModel.from_xml_path(str(paths.mjcf_path(side)))
        for f in contract.FINGER_NAMES:
            assert key.ctrl[m.actuator(f"{side}_{f}_flexor").id] == pytest.approx(
                single.key("open").ctrl[single.actuator(f"{f}_flexor").id], abs=1e-9)
        for j in contract.JOINT_NAMES:
            np.testing.assert_allclose(m.jnt_range[m.joint(f"{side}_{j}").id], single.jnt_range[single.joint(j).id])
    # the operator's right hand on the image's left (−y), palms towards the camera (+x)
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, key.id)
    mujoco.mj_forward(m, d)
    assert d.xpos[m.body("right_palm").id][1] < -0.1 < 0.1 < d.xpos[m.body("left_palm").id][1]
    for side in SIDES:
        np.testing.assert_allclose(d.xmat[m.body(f"{side}_palm").id].reshape(3, 3)[:, 0], [1, 0, 0], atol=1e-9)


def test_two_hand_scene_each_hand_curls_towards_its_own_palm_alone(two_hands):
    m = two_hands
    d = mujoco.MjData(m)
    open_key = m.key("open").ctrl.copy()
    settle(m, d, open_key, 0.3)
    before = {s: tip_in_palm(m, d, f"{s}_") for s in SIDES}
    for side in SIDES:
        other = "left" if side == "right" else "right"
        ctrl = open_key.copy()
        for f in contract.FINGER_NAMES:  # flexion 0.6 of this hand only
            a = m.actuator(f"{side}_{f}_flexor").id
            closed = m.actuator_ctrlrange[a, 0] + 0.002  # ctrlrange = [L_closed - 2 mm, L_open + 2 mm]
            ctrl[a] = open_key[a] + 0.6 * (closed - open_key[a])
        settle(m, d, ctrl, 1.2)
        after = {s: tip_in_palm(m, d, f"{s}_") for s in SIDES}
        for f in contract.FINGER_NAMES:
            assert after[side][f][0] - before[side][f][0] > 0.015, f"{side} {f}"
            np.testing.assert_allclose(after[other][f], before[other][f], atol=2e-4, err_msg=f"{other} {f} moved")
