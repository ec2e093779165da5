"""Underactuated robot hands (../shared/robots: Inspire RH56, PSYONIC Ability; two joints a finger,
one a <mimic>) through dex-retargeting's own configuration files: digits as the URDF gives them,
mimic joints followed by their equation (rest pose, retargeting, safety filter, robot Kapandji
FK, the twin's equality constraints), the opposition joint recognised.

Oracles: ../shared/robots/README.md (joint counts, mimic equations, Ability's q2 = 0.7235 rad at
q1 = 0, the rotator's range -2.09...0, Inspire's thumb yaw as the opposition)."""

import pathlib
import warnings

import numpy as np
import pytest

from hand_retarget.dex_sim import DexSim
from hand_retarget.kapandji import robot_kapandji
from hand_retarget.pipeline import DexPipeline, PipelineConfig
from hand_retarget.retarget import RetargetConfig, Retargeter
from hand_retarget.robot import load_robot

ROBOTS = pathlib.Path(__file__).resolve().parents[4] / "shared" / "robots"
HANDS = ("inspire_hand_right", "ability_hand_right", "inspire_hand_left", "ability_hand_left")


@pytest.fixture(scope="module", params=HANDS)
def robot(request):
    if not ROBOTS.is_dir():
        pytest.fail(f"{ROBOTS} is missing: the tests need ../shared beside the repository")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_robot(request.param, "dexpilot", ROBOTS)


def _random_pose(robot, seed: int) -> np.ndarray:
    """Independent joints uniform in the lower 70 % of their ranges (Ability's mimic q2 reaches its
    upper limit from q1 = 1.83 rad on: the equation is clipped there), mimic joints coupled."""
    rng = np.random.default_rng(seed)
    q = robot.rest.copy()
    ind = [robot.joint_names.index(j) for j in robot.independent]
    q[ind] = rng.uniform(robot.lower[ind], robot.lower[ind] + 0.7 * (robot.upper[ind] - robot.lower[ind]))
    return robot.couple(q)


def test_digits_and_mimic_come_from_the_urdf(robot):
    assert set(robot.digits) == {"thumb", "index", "middle", "ring", "pinky"} and robot.missing == ()
    assert len(robot.independent) == 6
    inspire = robot.name.startswith("inspire")
    assert len(robot.joint_names) == (12 if inspire else 10)
    for d in ("index", "middle", "ring", "pinky"):
        joints = robot.digits[d].joints
        assert len(joints) == 2 and joints[1] in robot.mimic and robot.mimic[joints[1]][0] == joints[0]
    thumb = robot.digits["thumb"].joints
    assert len(thumb) == (4 if inspire else 2)
    lm = robot.landmarks()
    assert lm.shape == (21, 3) and np.all(np.isfinite(lm))
    # the four landmarks of a two-joint finger are distinct and end at its tip link
    for d, idx in (("index", [5, 6, 7, 8]), ("pinky", [17, 18, 19, 20])):
        assert np.min(np.linalg.norm(np.diff(lm[idx], axis=0), axis=1)) > 0.005
        assert np.allclose(lm[idx[-1]], robot.link_poses()[robot.digits[d].tip][0])


def test_rest_follows_the_mimic_equation(robot):
    rest = robot.rest
    assert robot.mimic_error(rest) == 0.0
    assert np.all((rest >= robot.lower) & (rest <= robot.upper))
    if robot.name.startswith("ability"):
        # the Ability's open pose is not flat: q2 = 1.0585 * 0 + 0.7235 (README oracle)
        assert rest[robot.joint_names.index("index_q2")] == pytest.approx(0.7235, abs=1e-3)
        k = robot.joint_names.index("thumb_q1")
        assert robot.lower[k] == pytest.approx(-2.0944, abs=1e-3) and rest[k] == 0.0 == robot.upper[k]
    else:
        assert rest[robot.joint_names.index("index_intermediate_joint")] == pytest.approx(-0.04545, abs=1e-5)
    q = robot.couple(np.full(len(robot.joint_names), 0.5))
    assert robot.mimic_error(q) == 0.0
    for child, (src, mult, off) in robot.mimic.items():
        i, j = robot.joint_names.index(child), robot.joint_names.index(src)
        assert q[i] == pytest.approx(np.clip(mult * q[j] + off, robot.lower[i], robot.upper[i]))


def test_the_opposition_joint_is_recognised(robot):
    expected = "thumb_proximal_yaw_joint" if robot.name.startswith("inspire") else "thumb_q1"
    assert robot.opposition_joints == (expected,)


def test_retargeting_the_robots_own_pose_comes_back_mimic_consistent(robot):
    """Fingers at random poses, the thumb at rest (away from every fingertip: DexPilot's pinch
    prior does not pull it): the retargeted tips land on the targets, mimic joints on their equation."""
    ret = Retargeter(robot, "", RetargetConfig(method="dexpilot", scaling=1.0))
    thumb = [robot.joint_names.index(j) for j in robot.digits["thumb"].joints]
    for seed in range(3):
        q = _random_pose(robot, seed)
        q[thumb] = robot.rest[thumb]
        target = robot.landmarks(q)
        for _ in range(6):
            got = ret.retarget(target)
        assert robot.mimic_error(got) < 1e-9
        assert np.all(got >= robot.lower - 1e-6) and np.all(got <= robot.upper + 1e-6)   # nlopt's bounds
        err = np.linalg.norm(robot.landmarks(got)[[4, 8, 12, 16, 20]] - target[[4, 8, 12, 16, 20]], axis=1)
        assert err.max() < 0.012, err


def test_safety_filter_commands_stay_mimic_consistent(robot):
    pipe = DexPipeline(robot, "", PipelineConfig())
    assert np.allclose(pipe.rest, robot.rest)
    q = None
    for seed in range(4):
        goal = _random_pose(robot, 10 + seed)
        goal[[robot.joint_names.index(m) for m in robot.mimic]] += 0.3   # a target violating the equation
        for _ in range(20):
            q = pipe.tick(goal, 0.01)
            assert robot.mimic_error(q) < 1e-12
            assert np.all(q >= robot.lower - 1e-12) and np.all(q <= robot.upper + 1e-12)
    # the robot score's FK applies the equation to measured angles that drift from it
    drifted = q.copy()
    drifted[[robot.joint_names.index(m) for m in robot.mimic]] += 0.02
    assert np.allclose(robot_kapandji(robot, drifted).distances, robot_kapandji(robot, q).distances, equal_nan=True)


def test_the_twin_couples_mimic_joints_by_equality(robot):
    sim = DexSim.for_urdf(robot.urdf_path, robot.joint_names)
    assert sim.model.nu == 6 and sim.model.neq == len(robot.mimic)
    assert np.abs(sim.state().position - robot.rest).max() < 1e-6
    q = _random_pose(robot, 3)
    sim.set_command(q)
    assert sim.advance(1.5) is None
    pos = sim.state().position
    assert np.abs(pos - q).max() < 0.05
    assert robot.mimic_error(pos) < 0.01


def test_the_side_comes_from_the_geometry_and_a_mirrored_operator_hand_drives_it(robot):
    """The side is read off the URDF (dex-retargeting's operator -> MANO rotation of that side maps
    the hand's own landmarks onto themselves); either operator hand reaches the robot's side in that
    frame: the robot's own pose seen from a camera as its own side, and mirrored as the other hand,
    give the same retargeting input, close to the robot's own landmarks (the MANO wrist frame is
    estimated from wrist, index and middle MCP: <= 30 mm off on these hands; the other side's
    rotation puts them 220-350 mm off, the thumb on the ulnar side)."""
    from hand_retarget.preprocess import PreprocessConfig, Preprocessor

    side = "left" if robot.name.endswith("_left") else "right"
    assert robot.side == side
    other = "right" if side == "left" else "left"
    rng = np.random.default_rng(7)
    a, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    cam = a * np.sign(np.linalg.det(a))                      # a proper rotation: the camera's view
    q = _random_pose(robot, 21)
    lm = robot.landmarks(q)
    seen = (lm - lm[0]) @ cam.T + np.array([0.1, -0.05, 0.5])
    mirrored = seen * np.array([-1.0, 1.0, 1.0])             # the operator's other hand, same pose
    cfg = PreprocessConfig(robot_side=robot.side, frame="mano", scale=1.0, filter_min_cutoff=0.0)
    own = Preprocessor(robot.landmarks(), cfg).process(seen, side, 0.0)
    via_mirror = Preprocessor(robot.landmarks(), cfg).process(mirrored, other, 0.0)
    assert own.ok and via_mirror.ok and via_mirror.mirrored and not own.mirrored
    assert np.abs(own.raw - via_mirror.raw).max() < 1e-9
    assert np.linalg.norm(own.raw - (lm - lm[0]), axis=1).max() < 0.030


@pytest.mark.parametrize("name", ("ability_hand_right", "ability_hand_left"))
def test_a_curled_little_finger_hides_its_base_crease(name):
    """Ability's twin on the shared video, frames 459-474 (measured angles): the thumb tip on the
    curled little fingertip (in-plane 0.15 palm widths) also lies in-plane over the little MCP
    crease (0.23); the robot score counts the tip (6), not the crease under the curled finger (9)
    that it read before (the operator was at 7, DIP crease)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = load_robot(name, "dexpilot", ROBOTS)
    q = robot.rest.copy()
    for n, v in zip(("index_q1", "middle_q1", "pinky_q1", "ring_q1", "thumb_q1", "thumb_q2"),
                    (0.41, 0.38, 0.95, 0.68, -2.09, 0.83)):
        q[robot.joint_names.index(n)] = v
    res = robot_kapandji(robot, robot.couple(q))
    assert res.distances[5] < 0.25 and res.distances[8] < 0.25      # tip and MCP crease both in-plane touched
    assert res.score == 6 and 9 in res.occluded


def test_one_fk_pass_gives_the_landmarks_and_sites_of_the_link_by_link_formula(robot):
    """landmarks_and_sites (one pinocchio pass, points vectorised; what the robot score runs at the
    twin's 100 Hz) equals every landmark and site taken link by link (link_poses + point, weights of
    the site table) at random poses."""
    table = robot.kapandji_sites
    for seed in range(3):
        q = _random_pose(robot, 100 + seed)
        lm, sites = robot.landmarks_and_sites(q)
        poses = robot.link_poses(q)
        assert np.allclose(lm[0], poses[robot.wrist][0], atol=1e-12)
        for d, dig in robot.digits.items():
            idx = {"thumb": (1, 2, 3, 4), "index": (5, 6, 7, 8), "middle": (9, 10, 11, 12), "ring": (13, 14, 15, 16),
                   "pinky": (17, 18, 19, 20)}[d]
            for i, (link, off) in zip(idx, dig.points):
                assert np.allclose(lm[i], robot.point(poses, link, off), atol=1e-12)
        for k, site in enumerate(table):
            if site is None:
                assert np.all(np.isnan(sites[k]))
            else:
                assert np.allclose(sites[k], sum(w * robot.point(poses, link, off) for link, off, w in site), atol=1e-12)
        assert np.allclose(robot.landmarks(q), lm, atol=1e-12)
