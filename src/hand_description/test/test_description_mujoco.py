"""MuJoCo acceptance: the scene loads, each flexor flexes its own digit only, the extensors reopen
the hand, tendons have the designed moment arms, curl is proportional, nothing collides on the
way to the fist, and the camera `front` sees a right hand palm-on with the thumb on the right."""

import itertools
import math

import mujoco
import numpy as np
import pytest

from hand_common import contract
from hand_description import description as D
from hand_description import paths
from hand_description.curl_check import settle
from hand_description.render import flexion_ctrl, flexor_lengths


@pytest.fixture(scope="module")
def model():
    return mujoco.MjModel.from_xml_path(str(paths.scene_path()))


@pytest.fixture(scope="module")
def desc():
    return D.load(paths.description_path())


def qpos(model, data, joint):
    return float(data.qpos[model.jnt_qposadr[model.joint(joint).id]])


def test_scene_loads_with_the_agreed_elements(model):
    assert model.opt.timestep == pytest.approx(0.002)
    assert model.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert model.nu == 5 and model.ntendon == 10 and model.nq == 15
    assert model.camera("front").id >= 0
    key = model.key("open")
    assert np.all(key.qpos == 0.0)
    lengths = flexor_lengths(model)
    for f in contract.FINGER_NAMES:
        a = model.actuator(f"{f}_flexor")
        assert model.actuator_trntype[a.id] == mujoco.mjtTrn.mjTRN_TENDON
        assert model.actuator_trnid[a.id, 0] == model.tendon(f"{f}_flexor").id
        assert model.actuator_biastype[a.id] == mujoco.mjtBias.mjBIAS_AFFINE          # position actuator
        assert model.actuator_forcelimited[a.id] and model.actuator_forcerange[a.id, 1] == 0.0
        assert model.actuator_forcerange[a.id, 0] < 0.0                                 # pull only
        lo, hi = model.actuator_ctrlrange[a.id]
        l_open, l_closed = lengths[f]
        assert lo < l_closed < l_open < hi                                              # covers closed .. open
        assert key.ctrl[a.id] == pytest.approx(l_open, abs=1e-6)
        assert model.tendon_stiffness[model.tendon(f"{f}_extensor").id] > 0.0           # passive spring


def test_tendons_have_the_designed_constant_moment_arms(model, desc):
    """Flexor length falls by flexor_arm * angle and extensor length grows by extensor_arm * angle, over the range."""
    data = mujoco.MjData(model)
    for s in desc.segments:
        digit = s.joint.split("_")[0]
        flex, ext = model.tendon(f"{digit}_flexor").id, model.tendon(f"{digit}_extensor").id
        lengths = []
        for q in np.linspace(0.0, s.upper, 5):
            data.qpos[:] = 0.0
            data.qpos[model.jnt_qposadr[model.joint(s.joint).id]] = q
            mujoco.mj_fwdPosition(model, data)
            lengths.append((data.ten_length[flex], data.ten_length[ext]))
        lengths = np.array(lengths)
        arms = np.diff(lengths, axis=0) / (s.upper / 4)
        np.testing.assert_allclose(arms[:, 0], -s.flexor_arm, rtol=0.01, err_msg=s.joint)
        np.testing.assert_allclose(arms[:, 1], s.extensor_arm, rtol=0.01, err_msg=s.joint)


@pytest.mark.parametrize("finger", contract.FINGER_NAMES)
def test_each_flexor_flexes_its_digit_only_and_the_extensors_reopen_it(model, finger):
    data = mujoco.MjData(model)
    lengths = flexor_lengths(model)
    ctrl = np.array([lengths[f][0] for f in contract.FINGER_NAMES])  # every flexor at its open length
    ctrl[contract.FINGER_NAMES.index(finger)] = lengths[finger][1]     # this one pulled to the fist length
    settle(model, data, ctrl, 1.0)
    upper = model.jnt_range[:, 1]
    for j in contract.JOINT_NAMES:
        q = qpos(model, data, j)
        if j in contract.FINGER_JOINTS[finger]:
            assert 0.8 * upper[model.joint(j).id] < q <= upper[model.joint(j).id] + math.radians(2), j
        else:
            assert abs(q) < math.radians(0.5), f"{j} moved ({math.degrees(q):.2f} deg) when {finger} flexed"
    tension = -data.actuator_force[model.actuator(f"{finger}_flexor").id]
    assert 0.0 < tension < -model.actuator_forcerange[0, 0]
    # release: the actuator at the open length pulls nothing, the extensors return the digit open
    data.ctrl[contract.FINGER_NAMES.index(finger)] = lengths[finger][0]
    for _ in range(500):  # 1 s
        mujoco.mj_step(model, data)
    for j in contract.FINGER_JOINTS[finger]:
        assert abs(qpos(model, data, j)) < math.radians(1.0), f"{j} did not reopen"
    # the preloaded springs hold every joint a hair past 0 against its soft limit, so the tendon is
    # microns longer than L_open and the actuator at exactly L_open pulls well under 0.5 N
    assert np.all(np.abs(data.actuator_force) < 0.5)


def test_actuator_is_pull_only(model):
    data = mujoco.MjData(model)
    lengths = flexor_lengths(model)
    f = contract.FINGER_NAMES.index("index")
    settle(model, data, flexion_ctrl(model, 0.6), 1.0)
    data.ctrl[f] = lengths["index"][0] + 0.002  # target longer than the tendon: a tendon cannot push
    mujoco.mj_forward(model, data)
    assert data.actuator_force[f] == 0.0
    data.ctrl[f] = lengths["index"][1]            # target shorter: it pulls, at most Fmax
    mujoco.mj_forward(model, data)
    assert model.actuator_forcerange[f, 0] <= data.actuator_force[f] < 0.0
    settle(model, data, flexion_ctrl(model, 0.0) + 1e-4, 1.0)  # 0.1 mm above the open length: slack
    assert np.all(data.actuator_force == 0.0)


def test_curl_is_proportional_to_the_length_target(model):
    """Steady state for f = 0.25, 0.5, 0.75, 1 (all digits at once): every joint of a digit at about
    the same fraction of its range, rising with f, spanning >= 80 % at f = 1, never past a limit."""
    data = mujoco.MjData(model)
    upper = model.jnt_range[:, 1]
    previous = np.zeros(model.njnt)
    for f in (0.25, 0.5, 0.75, 1.0):
        settle(model, data, flexion_ctrl(model, f), 1.5)
        q = data.qpos[model.jnt_qposadr].copy()
        assert np.all(q > previous)
        assert np.all(q <= upper + math.radians(2.0))
        frac = q / upper
        for finger in contract.FINGER_NAMES:
            idx = [model.joint(j).id for j in contract.FINGER_JOINTS[finger]]
            assert np.ptp(frac[idx]) < 0.1, f"{finger} at f={f}: fractions {np.round(frac[idx], 3)}"
            assert abs(frac[idx].mean() - 0.93 * f) < 0.08, f"{finger} at f={f}: mean fraction {frac[idx].mean():.3f}"
        previous = q


def test_no_self_collision_along_the_closing_path(model):
    """With every joint at s * upper, s in [0, 1], no two non-excluded hand geoms touch (>= 0.3 mm apart)."""
    data = mujoco.MjData(model)
    hand = [g for g in range(model.ngeom)
            if model.geom_bodyid[g] > 0 and (model.geom_contype[g] or model.geom_conaffinity[g])]
    excluded = {(s >> 16, s & 0xFFFF) for s in model.exclude_signature}
    pairs = []
    for a, b in itertools.combinations(hand, 2):
        ba, bb = int(model.geom_bodyid[a]), int(model.geom_bodyid[b])
        if ba != bb and (min(ba, bb), max(ba, bb)) not in excluded:
            pairs.append((a, b))
    assert len(pairs) > 100
    for s in np.linspace(0.0, 1.0, 11):
        data.qpos[:] = s * model.jnt_range[:, 1]
        mujoco.mj_kinematics(model, data)
        mujoco.mj_collision(model, data)
        assert data.ncon == 0 or all(model.geom_bodyid[c.geom1] == 0 or model.geom_bodyid[c.geom2] == 0
                                     for c in data.contact[:data.ncon])
        worst = min(mujoco.mj_geomDistance(model, data, a, b, 0.01, None) for a, b in pairs)
        assert worst > 0.0003, f"hand geoms closer than 0.3 mm at s={s:.1f}"


def test_neighbouring_links_are_excluded(model, desc):
    excluded = {(s >> 16, s & 0xFFFF) for s in model.exclude_signature}
    for d in desc.digits:
        parent = model.body(desc.palm_link).id
        for s in d.segments:
            child = model.body(s.link).id
            assert (min(parent, child), max(parent, child)) in excluded
            parent = child


@pytest.mark.parametrize("side", ["right", "left"])
def test_front_camera_sees_the_palm_with_fingers_up_and_thumb_outside(side):
    model = mujoco.MjModel.from_xml_path(str(paths.scene_path(side)))
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("open").id)
    mujoco.mj_forward(model, data)
    cam = model.camera("front").id
    cam_pos, cam_rot = data.cam_xpos[cam], data.cam_xmat[cam].reshape(3, 3)

    def image_xy(p):  # camera frame: x = image right, y = image up
        v = cam_rot.T @ (p - cam_pos)
        return v[0], v[1]

    tips = {f: image_xy(data.site_xpos[model.site(f"{f}_tip").id]) for f in contract.FINGER_NAMES}
    palm = model.body("palm").id
    wrist = image_xy(data.xpos[palm])
    palm_normal = data.xmat[palm].reshape(3, 3)[:, 0]
    assert np.dot(palm_normal, cam_pos - data.xpos[palm]) > 0          # palm faces the camera
    assert all(tips[f][1] > wrist[1] + 0.1 for f in ("index", "middle", "ring", "pinky"))  # fingers up
    order = [tips[f][0] for f in ("thumb", "index", "middle", "ring", "pinky")]
    if side == "right":   # right hand seen palm-on: thumb on the image's right
        assert order == sorted(order, reverse=True)
    else:
        assert order == sorted(order)


def test_render_open_and_fist(tmp_path):
    """render_hand writes PNGs; the fist covers fewer skin pixels than the open hand (EGL offscreen)."""
    from PIL import Image

    from hand_description.render import main

    counts = {}
    for pose in ("open", "fist"):
        out = tmp_path / f"hand_{pose}.png"
        assert main(["--pose", pose, "--out", str(out), "--width", "320", "--height", "240", "--settle", "0.6"]) == 0
        img = np.asarray(Image.open(out).convert("RGB")).astype(int)
        assert img.shape == (240, 320, 3)
        skin = (img[..., 0] > 150) & (img[..., 0] > img[..., 2] + 40)
        counts[pose] = int(skin.sum())
    assert counts["open"] > 4000
    assert 0.3 * counts["open"] < counts["fist"] < 0.85 * counts["open"]
