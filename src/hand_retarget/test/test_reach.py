"""What a robot hand can reach (hand_retarget.reach): FK search over the thumb's and one digit's
joints. Oracles: an independent search on Inspire right (a 7 x 7 x 7 grid over thumb yaw, thumb
pitch and the finger's proximal joint, refined by L-BFGS-B from the best grid point: thumb tip to
middle / ring / little tip 12.4 / 32.4 / 52.6 mm, index 0.0 mm); the Ability hand's thumb reaches
every fingertip but the little one's (8.8 mm by the same grid search); LEAP and Allegro have no
little finger (levels 6-10 have no site)."""

import pathlib
import warnings

import numpy as np
import pytest

from hand_retarget.kapandji import KapandjiConfig, robot_kapandji
from hand_retarget.reach import reach
from hand_retarget.robot import load_robot

ROBOTS = pathlib.Path(__file__).resolve().parents[4] / "shared" / "robots"


def _load(name):
    if not ROBOTS.is_dir():
        pytest.fail(f"{ROBOTS} is missing: the tests need ../shared beside the repository")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_robot(name, "dexpilot", ROBOTS)


@pytest.fixture(scope="module")
def inspire():
    robot = _load("inspire_hand_right")
    return robot, reach(robot)


def test_inspire_cannot_pinch_its_ring_or_little_finger(inspire):
    _, found = inspire
    mm = {k: v * 1e3 for k, v in found.pinch.items()}
    assert mm["index"] < 0.5
    assert mm["middle"] == pytest.approx(12.4, abs=0.5)
    assert mm["ring"] == pytest.approx(32.4, abs=0.5)
    assert mm["pinky"] == pytest.approx(52.6, abs=0.5)
    assert found.pinch_reachable("middle", 0.015) and not found.pinch_reachable("ring", 0.015)
    # in the palm plane the thumb gets onto the index and middle sites, no farther
    assert found.expressible == (1, 2, 3, 4)
    assert found.kapandji[4] > 0.4 and np.all(found.kapandji[5:9] > 0.7)


def test_ability_reaches_every_level_and_leap_has_no_little_finger_sites():
    ability = reach(_load("ability_hand_right"))
    assert ability.expressible == tuple(range(1, 11))
    assert max(ability.pinch[f] for f in ("index", "middle", "ring")) < 5e-4
    assert ability.pinch["pinky"] * 1e3 == pytest.approx(8.8, abs=0.5)
    leap = _load("leap_hand_right")
    found = reach(leap, KapandjiConfig(touch=0.25))
    assert found.expressible == (1, 2, 3, 4, 5) and np.all(np.isnan(found.kapandji[5:]))
    assert set(found.pinch) == {"index", "middle", "ring"}


def test_a_level_judged_expressible_is_a_pose_the_robot_score_reads_as_touched(inspire):
    """The search's figure is the robot score's own distance at a pose within the limits: the
    Inspire middle-tip level (0.20 palm widths) is confirmed by robot_kapandji at a pose found by
    a plain grid over the same three joints."""
    robot, found = inspire
    idx = [robot.joint_names.index(j) for j in ("thumb_proximal_yaw_joint", "thumb_proximal_pitch_joint",
                                                "middle_proximal_joint")]
    best = np.inf
    for a in np.linspace(robot.lower[idx[0]], robot.upper[idx[0]], 9):
        for b in np.linspace(robot.lower[idx[1]], robot.upper[idx[1]], 9):
            for c in np.linspace(robot.lower[idx[2]], robot.upper[idx[2]], 9):
                q = robot.rest.copy()
                q[idx] = a, b, c
                best = min(best, float(robot_kapandji(robot, q).distances[3]))
    assert found.kapandji[3] <= best + 1e-9 and best < 0.35


def test_a_fingertip_level_is_expressible_only_where_the_pinch_is(inspire):
    """Inspire left reaches its middle tip's site in the palm plane by a hair (<= 0.25 palm widths)
    but its thumb tip never comes within 15 mm of the middle tip in 3-D (18.6 mm): level 4 is not
    expressible by touch. Inspire right's middle pinch is 12.4 mm: level 4 stays."""
    left = reach(_load("inspire_hand_left"))
    assert 4 in left.expressible and left.pinch["middle"] * 1e3 == pytest.approx(18.6, abs=0.5)
    assert left.expressible_touching(0.015) == (1, 2, 3)
    _, right = inspire
    assert right.expressible_touching(0.015) == right.expressible == (1, 2, 3, 4)
