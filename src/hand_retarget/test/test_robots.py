"""Robot hands nobody here wrote (../shared/robots: LEAP, Allegro), through dex-retargeting's own
configuration files: loading, names from the files, errors, retargeting, Kapandji sites, crossing
clamp, the URDF twin (meshes, actuators, mimic coupling, duplicate <inertial> repair)."""

import pathlib
import re
import warnings

import mujoco
import numpy as np
import pytest

from hand_retarget.dex_sim import DexModelError, DexSim
from hand_retarget.kapandji import robot_kapandji
from hand_retarget.pipeline import DexPipeline, PipelineConfig
from hand_retarget.retarget import RetargetConfig, Retargeter
from hand_retarget.robot import RobotError, load_robot
from hand_retarget.safety import CrossingClamp
from hand_retarget.urdf_twin import build_twin

ROBOTS = pathlib.Path(__file__).resolve().parents[4] / "shared" / "robots"
HANDS = ("leap_hand_right", "allegro_hand_right")


@pytest.fixture(scope="module", params=HANDS)
def robot(request):
    if not ROBOTS.is_dir():
        pytest.fail(f"{ROBOTS} is missing: the tests need ../shared beside the repository")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_robot(request.param, "dexpilot", ROBOTS)


def test_names_and_limits_come_from_the_config_and_the_urdf(robot):
    assert set(robot.digits) == {"thumb", "index", "middle", "ring"} and robot.missing == ("pinky",)
    assert len(robot.joint_names) == 16
    if robot.name == "leap_hand_right":
        assert set(robot.joint_names) == {str(i) for i in range(16)}      # numeric names, as in the URDF
        assert robot.digits["index"].tip == "index_tip_head" and robot.wrist == "base"
    else:
        assert robot.digits["thumb"].tip == "link_15.0_tip" and robot.wrist == "wrist"
        k = robot.joint_names.index("joint_12.0")
        assert robot.lower[k] == pytest.approx(0.263) and robot.rest[k] == pytest.approx(0.263)
    assert np.all(robot.lower < robot.upper)
    assert np.all((robot.rest >= robot.lower) & (robot.rest <= robot.upper))
    lm = robot.landmarks()
    assert lm.shape == (21, 3) and np.all(np.isfinite(lm))
    # fingertips are the config's links: FK of the tip link at rest
    poses = robot.link_poses()
    assert np.allclose(lm[8], poses[robot.digits["index"].tip][0])


def test_errors_name_the_missing_link_and_the_file(tmp_path):
    urdf = ROBOTS / "leap_hand" / "leap_hand_right.urdf"
    cfg = tmp_path / "my_hand.yml"
    cfg.write_text(f"retargeting:\n  type: DexPilot\n  urdf_path: {urdf}\n  wrist_link_name: base\n"
                   "  finger_tip_link_names: [thumb_tip_head, index_tip, middle_tip_head, ring_tip_head]\n")
    with pytest.raises(RobotError, match=rf"'index_tip' \(from {re.escape(str(cfg))}\).*{re.escape(str(urdf))}"):
        load_robot(str(cfg))
    with pytest.raises(RobotError, match="no dex-retargeting configuration.*known robots: .*leap_hand_right"):
        load_robot("my_hand_right")
    with pytest.raises(RobotError, match=rf"URDF {re.escape(str(tmp_path))}.*does not exist; set robot_dir"):
        load_robot("leap_hand_right", robot_dir=tmp_path)
    # a config kept anywhere, its URDF given beside it (robot_urdf): the config's urdf_path is replaced
    elsewhere = tmp_path / "leap_dexpilot.yml"
    elsewhere.write_text("retargeting:\n  type: DexPilot\n  urdf_path: nowhere/leap.urdf\n  wrist_link_name: base\n"
                         "  finger_tip_link_names: [thumb_tip_head, index_tip_head, middle_tip_head, ring_tip_head]\n")
    with pytest.raises(RobotError, match="does not exist; set robot_dir .* or give the URDF with robot_urdf"):
        load_robot(str(elsewhere))
    assert load_robot(str(elsewhere), urdf_path=urdf).urdf_path == str(urdf)
    with pytest.raises(RobotError, match=rf"robot URDF {re.escape(str(tmp_path))}/none.urdf does not exist"):
        load_robot(str(elsewhere), urdf_path=tmp_path / "none.urdf")
    bad_joint = tmp_path / "joints.yml"
    bad_joint.write_text(f"retargeting:\n  type: vector\n  urdf_path: {urdf}\n  target_joint_names: ['0', thumb_cmc_abd]\n"
                         "  target_origin_link_names: [base, base]\n  target_task_link_names: [thumb_tip_head, index_tip_head]\n"
                         "  target_link_human_indices: [[0, 0], [4, 8]]\n")
    with pytest.raises(RobotError, match=rf"joint 'thumb_cmc_abd' \(target_joint_names of {re.escape(str(bad_joint))}\)"):
        load_robot(str(bad_joint))


def test_retargeting_the_robots_own_pose_comes_back(robot):
    """Landmarks from the robot's own FK at a pinch-like pose: the retargeted tips land on them."""
    ret = Retargeter(robot, "", RetargetConfig(method="dexpilot", scaling=1.0))
    assert ret.joint_names == robot.joint_names
    q = robot.rest + 0.35 * (robot.upper - robot.rest)
    target = robot.landmarks(q)
    for _ in range(5):                     # a few frames: the warm start converges
        got = ret.retarget(target)
    assert got.shape == (16,) and np.all(got >= robot.lower - 1e-9) and np.all(got <= robot.upper + 1e-9)
    lm = robot.landmarks(got)
    err = np.linalg.norm(lm[[4, 8, 12, 16]] - target[[4, 8, 12, 16]], axis=1)
    assert err.max() < 0.012, err


def test_kapandji_sites_and_unreachable_levels(robot):
    assert [s is None for s in robot.kapandji_sites] == [False] * 5 + [True] * 5
    res = robot_kapandji(robot, robot.rest)
    assert res.unreachable == (6, 7, 8, 9, 10) and res.score == 0
    assert np.all(np.isnan(res.distances[5:])) and np.all(np.isfinite(res.distances[:5]))
    # a pinch found by retargeting the robot's own thumb onto its index tip scores at least 3
    ret = Retargeter(robot, "", RetargetConfig(method="dexpilot", scaling=1.0))
    target = robot.landmarks(robot.rest + 0.3 * (robot.upper - robot.rest))
    target[4] = target[8]
    for _ in range(8):
        q = ret.retarget(target)
    lm = robot.landmarks(q)
    assert np.linalg.norm(lm[4] - lm[8]) < 0.015
    assert robot_kapandji(robot, q).score >= 3


def test_crossing_clamp_is_configured_per_robot(robot):
    fingers = robot.finger_geometry()
    if robot.name == "allegro_hand_right":
        # Allegro's base joints twist about the finger axis: no in-plane abduction to clamp
        assert fingers == [] and robot.abduction_joints() == {}
        assert DexPipeline(robot, "", PipelineConfig()).filter.crossing is None
        return
    assert [f.name for f in fingers] == ["index", "middle", "ring"]
    assert [robot.joint_names[f.abd] for f in fingers] == ["0", "4", "8"]
    clamp = CrossingClamp(fingers)
    q = robot.rest.copy()
    ii, mi = fingers[0].abd, fingers[1].abd
    # index towards the middle finger and the middle towards the index, as far as the limits allow
    q[ii] = robot.upper[ii] if fingers[0].sign < 0 else robot.lower[ii]
    q[mi] = robot.lower[mi] if fingers[1].sign < 0 else robot.upper[mi]
    assert clamp.violations(q)
    fixed = clamp.clamp(q, robot.lower, robot.upper)
    assert not clamp.violations(fixed)
    assert np.all(fixed >= robot.lower) and np.all(fixed <= robot.upper)
    changed = np.nonzero(np.abs(fixed - q) > 1e-12)[0]
    assert set(changed) <= {f.abd for f in fingers}                      # flexions never change


def test_the_twin_compiles_and_tracks_commands(robot):
    sim = DexSim.for_urdf(robot.urdf_path, robot.joint_names)
    assert sim.model.nu == 16 and sim.model.ngeom > 0 and sim.model.nmesh > 0
    assert mujoco.mj_name2id(sim.model, mujoco.mjtObj.mjOBJ_CAMERA, "front") >= 0
    assert np.allclose(sim.state().position, robot.rest, atol=1e-9)
    q = robot.rest + 0.5 * (robot.upper - robot.rest)
    sim.set_command(q)
    assert sim.advance(1.5) is None
    assert np.abs(sim.state().position - q).max() < 0.03
    assert np.allclose(sim.lower, robot.lower) and np.allclose(sim.upper, robot.upper)


def test_the_twin_moves_at_the_speed_its_effort_allows(robot):
    """The twin adds a linear damping floor only (MuJoCo's damping is a polynomial in the joint
    velocity: a 0.01 quadratic and cubic term capped LEAP's 0.95 N m thumb at 4.2 rad/s): a command
    step from rest to 80 % of the way to the upper limit of the thumb's second joint (LEAP 1.95 rad,
    Allegro 0.93 rad) is reached within 0.03 rad in 0.15 s of simulated time (LEAP took 0.46 s)."""
    sim = DexSim.for_urdf(robot.urdf_path, robot.joint_names)
    assert not np.any(getattr(sim.model, "dof_dampingpoly", 0.0))
    j = robot.joint_names.index(robot.digits["thumb"].joints[1])
    q = robot.rest.copy()
    q[j] = robot.rest[j] + 0.8 * (robot.upper[j] - robot.rest[j])
    assert q[j] - robot.rest[j] > 0.9
    sim.set_command(q)
    assert sim.advance(0.15) is None
    assert abs(sim.state().position[j] - q[j]) < 0.03


def test_duplicate_inertial_is_repaired_with_a_warning(tmp_path):
    src = ROBOTS / "allegro_hand" / "allegro_hand_right.urdf"
    text = src.read_text()
    text = re.sub(r'filename="(meshes/[^"]+)"', lambda m: f'filename="{src.parent / m.group(1)}"', text)
    dup = '<inertial><mass value="0.01"/><inertia ixx="1e-6" ixy="0" ixz="0" iyy="1e-6" iyz="0" izz="1e-6"/></inertial>'
    text = text.replace('<link name="link_3.0">', '<link name="link_3.0">' + dup, 1)
    bad = tmp_path / "allegro_dup.urdf"
    bad.write_text(text)
    with pytest.raises(ValueError, match="inertial"):
        mujoco.MjModel.from_xml_string(text)            # what MuJoCo says on its own
    twin = build_twin(str(bad))
    assert any("link_3.0" in w and "<inertial>" in w for w in twin.warnings)
    assert twin.model.nu == 16
    missing = tmp_path / "no_mesh.urdf"
    missing.write_text(src.read_text())
    with pytest.raises(DexModelError, match=r"mesh .*base_link.obj \(from .*no_mesh.urdf\) does not exist"):
        DexSim.for_urdf(str(missing))


MIMIC_URDF = """<robot name="pinch">
  <link name="base"><inertial><mass value="0.1"/><inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial>
    <visual><geometry><box size="0.02 0.02 0.02"/></geometry></visual></link>
  <link name="a"><inertial><mass value="0.02"/><inertia ixx="1e-5" ixy="0" ixz="0" iyy="1e-5" iyz="0" izz="1e-5"/></inertial>
    <visual><geometry><box size="0.01 0.01 0.04"/></geometry></visual></link>
  <link name="b"><inertial><mass value="0.02"/><inertia ixx="1e-5" ixy="0" ixz="0" iyy="1e-5" iyz="0" izz="1e-5"/></inertial>
    <visual><geometry><box size="0.01 0.01 0.04"/></geometry></visual></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="1.5" effort="1" velocity="3"/></joint>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 0 0.04"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="1.5" effort="1" velocity="3"/><mimic joint="j1" multiplier="0.5" offset="0.1"/></joint>
</robot>"""


def test_mimic_joints_are_coupled_and_not_actuated(tmp_path):
    urdf = tmp_path / "pinch.urdf"
    urdf.write_text(MIMIC_URDF)
    twin = build_twin(str(urdf))
    assert twin.actuated == ("j1",) and twin.mimic == {"j2": ("j1", 0.5, 0.1)} and twin.model.neq == 1
    sim = DexSim.for_urdf(str(urdf))
    sim.set_command(np.array([1.0, 0.0]))            # the mimic entry is ignored
    assert sim.advance(1.0) is None
    j1, j2 = sim.state().position
    assert j1 == pytest.approx(1.0, abs=0.03) and j2 == pytest.approx(0.1 + 0.5 * j1, abs=0.01)


FOREARM = """<link name="forearm"><inertial><mass value="0.8"/><inertia ixx="1e-2" ixy="0" ixz="0" iyy="1e-2" iyz="0" izz="1e-3"/></inertial>
    <visual><origin xyz="0 0 -0.18"/><geometry><cylinder radius="0.04" length="0.35"/></geometry></visual></link>
  <link name="wrist_link"><inertial><mass value="0.05"/><inertia ixx="1e-5" ixy="0" ixz="0" iyy="1e-5" iyz="0" izz="1e-5"/></inertial></link>
  <joint name="wrist_flexion" type="revolute"><parent link="forearm"/><child link="wrist_link"/>
    <origin xyz="0 0 0.02"/><axis xyz="1 0 0"/><limit lower="-1.0" upper="1.0" effort="5" velocity="3"/></joint>
  <joint name="wrist_deviation" type="revolute"><parent link="wrist_link"/><child link="base"/>
    <origin xyz="0 0 0.01"/><axis xyz="0 1 0"/><limit lower="-0.5" upper="0.5" effort="5" velocity="3"/></joint>
"""


def _hand_extent(model) -> float:
    """Half the image height (fraction, 0..1) the hand bodies' geom centres span from camera 'front'."""
    from hand_retarget.urdf_twin import hand_bodies

    d = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, d, mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "open"))
    mujoco.mj_forward(model, d)
    c = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, "front")
    p = (d.geom_xpos[np.isin(model.geom_bodyid, hand_bodies(model))] - d.cam_xpos[c]) @ d.cam_xmat[c].reshape(3, 3)
    v = p[:, 1] / -p[:, 2] / np.tan(np.radians(model.cam_fovy[c] / 2))
    return float(np.ptp(v) / 2)


def test_the_twin_camera_frames_the_hand_not_the_forearm(tmp_path):
    """LEAP under a 35 cm forearm and two wrist joints: the camera frames the palm and the digits as
    it does without the forearm (the hand spans the same part of the image), the forearm is not in
    the hand's bodies, and the wrist joints are actuated like any other (at rest)."""
    from hand_retarget.urdf_twin import hand_bodies

    src = ROBOTS / "leap_hand" / "leap_hand_right.urdf"
    text = re.sub(r'filename="(meshes/[^"]+)"', lambda m: f'filename="{src.parent / m.group(1)}"', src.read_text())
    text = re.sub(r"(<robot[^>]*>)", lambda m: m.group(1) + FOREARM, text, count=1)
    urdf = tmp_path / "leap_forearm.urdf"
    urdf.write_text(text)
    plain, armed = build_twin(str(src)).model, build_twin(str(urdf)).model
    names = [mujoco.mj_id2name(armed, mujoco.mjtObj.mjOBJ_BODY, b) for b in hand_bodies(armed)]
    assert names[0] == "palm_lower" and "forearm" not in names and "wrist_link" not in names
    assert len(names) == len(hand_bodies(plain))
    e_plain, e_armed = _hand_extent(plain), _hand_extent(armed)
    print(f"hand spans {e_plain:.2f} (LEAP) and {e_armed:.2f} (LEAP under a forearm) of the image height")
    assert e_armed == pytest.approx(e_plain, rel=0.05) and e_armed >= 0.45
