"""arm_description: generation, validation, URDF/MJCF agreement, the compiled MuJoCo model."""

from __future__ import annotations

import pathlib
import re
import shutil

import mujoco
import numpy as np
import pytest
import yaml

from arm_description import agreement, paths
from arm_description import description as D
from arm_description import generate as G

PKG = pathlib.Path(__file__).resolve().parents[1]
#: Issue 10's joint limits (rad), exactly.
ISSUE_LIMITS = {"shoulder_pan": (-1.920, 1.920), "shoulder_lift": (-1.745, 1.745),
                "elbow_flex": (-1.745, 1.571), "wrist_flex": (-1.658, 1.658), "wrist_roll": (-2.793, 2.793)}


@pytest.fixture(scope="module")
def desc():
    return D.load(PKG / "config" / "so101.yaml")


@pytest.fixture(scope="module")
def model():
    return mujoco.MjModel.from_xml_path(str(PKG / "mjcf" / "scene.xml"))


def test_committed_files_are_the_generators_output(desc):
    built = G.build(desc)
    assert sorted(built) == sorted(G.OUTPUTS)
    for rel, text in built.items():
        assert (PKG / rel).read_text() == text, f"{rel} differs: run generate_arm_models"
    assert G.build(D.load(PKG / "config" / "so101.yaml")) == built


def test_check_mode_catches_a_hand_edit(tmp_path, capsys):
    for sub in ("config", "urdf", "mjcf"):
        shutil.copytree(PKG / sub, tmp_path / sub)
    assert G.main(["--check", "--out", str(tmp_path)]) == 0
    f = tmp_path / "mjcf" / "so101.xml"
    f.write_text(f.read_text().replace('range="-1.745 1.571"', 'range="-1.745 1.9"'))
    assert G.main(["--check", "--out", str(tmp_path)]) == 1
    assert "so101.xml" in capsys.readouterr().err


def test_installed_paths_point_at_the_same_files():
    assert paths.mjcf_path().read_text() == (PKG / "mjcf" / "so101.xml").read_text()
    assert paths.urdf_path().is_file() and paths.scene_path().is_file() and paths.description_path().is_file()


def test_joint_limits_are_exactly_the_issues(desc, model):
    assert [j.name for j in desc.arm_joints] == list(ISSUE_LIMITS)
    for name, (lo, hi) in ISSUE_LIMITS.items():
        assert tuple(model.joint(name).range) == pytest.approx((lo, hi), abs=1e-12)
    assert [j.servo_id for j in desc.movable] == [1, 2, 3, 4, 5, 6]


def test_every_joint_has_a_position_actuator_and_the_gripper_range_is_its_ctrlrange(model):
    assert model.nu == 6
    for i in range(model.nu):
        j = model.actuator_trnid[i, 0]
        assert model.actuator(i).name == model.joint(j).name
        # position servo: gain kp on ctrl, bias -kp on qpos
        assert model.actuator_gainprm[i, 0] > 0 and model.actuator_biasprm[i, 1] == -model.actuator_gainprm[i, 0]
        assert tuple(model.actuator_ctrlrange[i]) == tuple(model.jnt_range[j])
    assert tuple(model.actuator("gripper").ctrlrange) == pytest.approx((-0.174533, 1.74533))


def _body_pairs(m, d):
    return {tuple(sorted((m.body(m.geom_bodyid[c.geom1]).name, m.body(m.geom_bodyid[c.geom2]).name)))
            for c in d.contact[:d.ncon]}


def test_keyframes_have_no_contact_and_each_exclusion_is_needed(desc):
    xml = (PKG / "mjcf" / "so101.xml").read_text()
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    for k in range(m.nkey):
        mujoco.mj_resetDataKeyframe(m, d, k)
        mujoco.mj_forward(m, d)
        assert d.ncon == 0, f"keyframe {m.key(k).name}: contacts {_body_pairs(m, d)}"
    # without the exclusions, each excluded pair overlaps somewhere in the joint ranges (random
    # sampling); with them, that pair never produces a contact
    bare = mujoco.MjModel.from_xml_string(re.sub(r"<exclude[^>]*/>", "", xml))
    bd = mujoco.MjData(bare)
    rng = np.random.default_rng(1)
    seen_bare, seen = set(), set()
    for _ in range(1500):
        q = rng.uniform(m.jnt_range[:, 0], m.jnt_range[:, 1])
        bd.qpos[:] = q
        d.qpos[:] = q
        mujoco.mj_forward(bare, bd)
        mujoco.mj_forward(m, d)
        seen_bare |= _body_pairs(bare, bd)
        seen |= _body_pairs(m, d)
    for a, b in desc.contact_exclusions:
        pair = tuple(sorted((a, b)))
        assert pair in seen_bare, f"exclusion {pair} is superfluous"
        assert pair not in seen


def test_rest_pose_neighbourhood_is_contact_free(model):
    """The arm rests folded: small moves around `rest` must not read as collisions."""
    d = mujoco.MjData(model)
    rest = np.array(model.key("rest").qpos)
    rng = np.random.default_rng(2)
    for _ in range(200):
        d.qpos[:] = np.clip(rest + rng.uniform(-0.1, 0.1, rest.size), model.jnt_range[:, 0], model.jnt_range[:, 1])
        mujoco.mj_forward(model, d)
        arm = {p for p in _body_pairs(model, d) if "world" not in p}
        assert not arm, arm


def test_urdf_and_mjcf_agree():
    a = agreement.compare(PKG / "urdf" / "so101.urdf", PKG / "mjcf" / "so101.xml", samples=100)
    assert a.ok, a
    assert a.position_error < 2e-5 and a.samples == 103


def test_agreement_fails_on_an_edited_urdf(tmp_path):
    text = (PKG / "urdf" / "so101.urdf").read_text()
    edited = text.replace('<origin xyz="-0.1349 0.0052 0"', '<origin xyz="-0.1449 0.0052 0"')
    assert edited != text
    (tmp_path / "x.urdf").write_text(edited)
    a = agreement.compare(tmp_path / "x.urdf", PKG / "mjcf" / "so101.xml", samples=10)
    assert not a.ok and a.position_error > 0.009


def test_published_dimensions(model):
    """Reach and heights of the CAD's frames: the TCP at the home pose (arm stretched forward)
    lies 0.3756 m in front of the base origin, 0.259 m up (so101_new_calib.urdf's chain)."""
    d = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, d, model.key("home").id)
    mujoco.mj_forward(model, d)
    assert d.body("tcp").xpos == pytest.approx([0.0204, -0.3756, 0.2590], abs=5e-4)
    assert d.body("shoulder").xpos == pytest.approx([0.0207909, -0.0230745, 0.0948817], abs=1e-6)
    assert sum(model.body_mass) == pytest.approx(0.147 + 0.100006 + 0.103 + 0.104 + 0.079 + 0.087 + 0.012, rel=1e-5)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["joints"][2].update(lower=2.0), "lower 2.0 must be below upper"),
    (lambda d: d["joints"][0].update(parent="nowhere"), "unknown link 'nowhere'"),
    (lambda d: d["links"]["upper_arm"].update(mass=-1), "links.upper_arm.mass"),
    (lambda d: d["links"]["base"]["shapes"][0].update(kind="mesh"), "is not one of"),
    (lambda d: d["keyframes"].update(bad=[0, 0, 3.0, 0, 0, 0]), "keyframes.bad: elbow_flex"),
    (lambda d: d["links"]["wrist"].update(inertia=[1, 1, 5, 0, 0, 0]), "not a physical inertia"),
    (lambda d: d["joints"][1].update(rpy=["pie", 0, 0]), "joints.shoulder_lift.rpy[0]"),
])
def test_bad_descriptions_are_named(edit, message):
    doc = yaml.safe_load((PKG / "config" / "so101.yaml").read_text())
    edit(doc)
    with pytest.raises(D.DescriptionError, match=re.escape(message)):
        D.parse(doc)
