"""The description itself: contract names, bend signs, human proportions, mirroring, errors, paths."""

import copy
import math
import pathlib

import numpy as np
import pytest
import yaml

from hand_common import contract
from hand_description import description as D
from hand_description import paths
from hand_description.agreement import flexion_signs_mjcf, flexion_signs_urdf, read_urdf

PKG = pathlib.Path(__file__).resolve().parents[1]
YAML = PKG / "config" / "hand.yaml"


@pytest.fixture(scope="module")
def desc():
    return D.load(YAML)


@pytest.fixture(scope="module")
def raw():
    return yaml.safe_load(YAML.read_text())


def test_joint_names_are_the_contract(desc):
    assert desc.joint_names == contract.JOINT_NAMES
    for d in desc.digits:
        assert d.joints == contract.FINGER_JOINTS[d.name]
    assert tuple(d.name for d in desc.digits) == contract.FINGER_NAMES


@pytest.mark.parametrize("side", ["right", "left"])
def test_generated_files_use_the_contract_names(side):
    import mujoco

    robot = read_urdf(paths.urdf_path(side))
    revolute = tuple(n for n, j in robot.joints.items() if j.kind == "revolute")
    assert revolute == contract.JOINT_NAMES
    model = mujoco.MjModel.from_xml_path(str(paths.mjcf_path(side)))
    assert tuple(model.joint(i).name for i in range(model.njnt)) == contract.JOINT_NAMES
    for f in contract.FINGER_NAMES:
        assert model.tendon(f"{f}_flexor").id >= 0 and model.tendon(f"{f}_extensor").id >= 0
        assert model.actuator(f"{f}_flexor").id >= 0
        assert robot.links[f"{f}_tip"].mass == 0.0


@pytest.mark.parametrize("side", ["right", "left"])
def test_every_joint_opens_at_zero_and_positive_is_flexion(side):
    robot = read_urdf(paths.urdf_path(side))
    for name in contract.JOINT_NAMES:
        j = robot.joints[name]
        assert j.lower == 0.0 and j.upper > math.radians(30), name
    # positive rotation from the open pose moves the digit's tip towards the palm's palmar side (+x)
    assert flexion_signs_urdf(paths.urdf_path(side)) == {n: 1 for n in contract.JOINT_NAMES}
    assert flexion_signs_mjcf(paths.mjcf_path(side)) == {n: 1 for n in contract.JOINT_NAMES}


def test_sign_check_catches_a_flipped_axis(tmp_path):
    text = paths.urdf_path().read_text()
    start = text.index('<joint name="index_pip"')
    flipped = text[:start] + text[start:].replace('<axis xyz="0 1 0"/>', '<axis xyz="0 -1 0"/>', 1)
    bad = tmp_path / "flipped.urdf"
    bad.write_text(flipped)
    signs = flexion_signs_urdf(bad)
    assert signs["index_pip"] == -1
    assert all(s == 1 for n, s in signs.items() if n != "index_pip")


def test_human_ranges_and_proportions(desc):
    deg = {s.joint: math.degrees(s.upper) for s in desc.segments}
    for f in ("index", "middle", "ring", "pinky"):
        assert 85 <= deg[f"{f}_mcp"] <= 95
        assert 95 <= deg[f"{f}_pip"] <= 110
        assert 65 <= deg[f"{f}_dip"] <= 80
    assert 30 <= deg["thumb_cmc"] <= 55 and 45 <= deg["thumb_mcp"] <= 65 and 65 <= deg["thumb_ip"] <= 85
    frames = desc.open_pose_frames()

    def tip(f):
        d = desc.digit(f)
        pos, rot = frames[d.segments[-1].link]
        return pos + rot @ np.array([0, 0, d.segments[-1].length + d.segments[-1].radius])

    # adult hand: wrist crease to middle fingertip 17-20 cm, middle finger the longest, pinky shortest
    assert 0.17 <= tip("middle")[2] <= 0.20
    lengths = {f: sum(s.length for s in desc.digit(f).segments) for f in ("index", "middle", "ring", "pinky")}
    assert max(lengths, key=lengths.get) == "middle" and min(lengths, key=lengths.get) == "pinky"
    # right hand: the thumb is radial (+y) of the index, the pinky ulnar (-y) of the ring finger
    assert tip("thumb")[1] > tip("index")[1] > tip("middle")[1] > tip("ring")[1] > tip("pinky")[1]
    # gram-scale links: a finger weighs 20-40 g
    mass = sum(desc.inertial(s.link).mass for s in desc.digit("index").segments)
    assert 0.02 <= mass <= 0.04


def test_mirrored_hand_is_the_mirror_image(desc):
    left = desc.mirrored()
    assert left.side == "left" and left.joint_names == desc.joint_names
    assert [s.upper for s in left.segments] == [s.upper for s in desc.segments]
    m = np.diag([1.0, -1.0, 1.0])
    for q in (0.0, 0.7):  # open and part-flexed: every link frame is mirrored in y
        fr, fl = pose_frames(desc, q), pose_frames(left, q)
        for link, (pos, rot) in fr.items():
            np.testing.assert_allclose(fl[link][0], m @ pos, atol=1e-12)
            np.testing.assert_allclose(fl[link][1], m @ rot @ m, atol=1e-12)
    assert left.mirrored().digit("thumb").base_pos.tolist() == desc.digit("thumb").base_pos.tolist()


def pose_frames(desc, fraction):
    """Link frames in the palm frame with every joint at ``fraction`` of its range."""
    frames = {desc.palm_link: (np.zeros(3), np.eye(3))}
    for d in desc.digits:
        for s in d.segments:
            pos, rot, parent = desc.joint_origin(s.joint)
            pp, pr = frames[parent]
            frames[s.link] = (pp + pr @ pos, pr @ rot @ D.rot_y(fraction * s.upper))
    return frames


def test_physics_makes_every_joint_reach_its_limit_at_the_same_tension(desc):
    """Statics of the derived springs: T * r_f = k (q - q_ref) + T_e r_e must hold at q = upper with T = closed_tension."""
    joints, digits = D.derive_physics(desc)
    p = desc.physics
    for d in desc.digits:
        dp = digits[d.name]
        ext_tension = dp.extensor_stiffness * (dp.extensor_stroke + dp.extensor_preload_length)
        assert ext_tension == pytest.approx(p.extensor_closed_tension)
        for s in d.segments:
            jp = joints[s.joint]
            torque = jp.stiffness * (s.upper - jp.springref) + ext_tension * s.extensor_arm
            assert torque == pytest.approx(p.closed_tension * s.flexor_arm)
            assert jp.armature > 0 and jp.damping > 0 and jp.inertia > 0
            # tendon mode below the stability bound: kp * r^2 / (I + armature) * dt^2 <= (max_omega_dt^2) / 3 (+slack)
            w2 = p.position_gain * s.flexor_arm ** 2 / (jp.inertia + jp.armature)
            assert w2 * p.timestep ** 2 <= p.max_omega_dt ** 2 / 3 + 1e-9


@pytest.mark.parametrize("path, value, message", [
    (("digits", "index", "segments", 1, "upper_deg"), -10, "upper_deg"),
    (("digits", "index", "segments", 0, "length"), 0.0, "length"),
    (("digits", "thumb", "base", "direction"), [0, 0, 0], "direction"),
    (("digits", "ring", "segments", 2, "lower_deg"), 5, "lower_deg"),
    (("physics", "extensor_closed_tension"), 35.0, "stiffness"),
    (("physics", "timestep"), "fast", "physics.timestep"),
    (("palm", "shapes", 0, "type"), "cone", "unknown shape"),
])
def test_bad_descriptions_are_rejected_with_the_key(raw, path, value, message):
    bad = copy.deepcopy(raw)
    node = bad
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    with pytest.raises(D.DescriptionError, match=message):
        D.from_dict(bad)


def test_missing_digit_is_rejected(raw):
    bad = copy.deepcopy(raw)
    del bad["digits"]["pinky"]
    with pytest.raises(D.DescriptionError, match="digits"):
        D.from_dict(bad)


def test_paths_resolve_installed_or_source(monkeypatch):
    share = paths.share_dir()
    for side in ("right", "left"):
        assert paths.urdf_path(side).is_file() and paths.mjcf_path(side).is_file() and paths.scene_path(side).is_file()
    assert paths.scene_path() == share / "mjcf" / "scene.xml"
    assert paths.description_path().is_file() and paths.rviz_config_path().is_file()
    with pytest.raises(ValueError, match="side"):
        paths.urdf_path("middle")
    # not installed (empty ament index): falls back to the source tree
    monkeypatch.setenv("AMENT_PREFIX_PATH", "")
    assert paths.share_dir() == paths.source_dir() == PKG
    assert paths.urdf_path() == PKG / "urdf" / "hand.urdf"
