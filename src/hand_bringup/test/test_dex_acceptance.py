"""The acceptance table's pure parts (hand_bringup.dex_acceptance): pinch episodes and verdicts."""

import numpy as np

from hand_bringup.dex_acceptance import Row, episodes


def test_pinch_episodes_are_runs_of_one_fingertip_level():
    levels = np.array([0, 3, 3, 3, 3, 4, 4, 2, 5, 5, 5, 7, 7, 7, 6, 6, 6, -1, 3, 3, 3])
    # index tip 1-4; middle only 2 frames (too short); ring 8-10; level 7 is no fingertip pinch;
    # little tip 14-16; index again at the end (a run that reaches the last frame)
    assert episodes(levels) == [(1, 4, 3), (8, 10, 5), (14, 16, 6), (18, 20, 3)]
    assert episodes(levels, min_frames=2) == [(1, 4, 3), (5, 6, 4), (8, 10, 5), (14, 16, 6), (18, 20, 3)]
    assert episodes(np.array([-1, 0, 1, 2, 8, 9, 10])) == []


def test_a_row_passes_only_when_every_figure_does():
    good = Row("x", 621, 0, 4.0, 3.0, [(1, 4, 3, 2.0), (8, 10, 5, 14.9)], 0.5, 0.85, 100)
    assert good.ok and good.pinch_mm == 14.9
    for change in ({"p95_ms": 5.1}, {"open_mm": 10.5}, {"pinches": [(1, 4, 3, 15.1)]}, {"fist_ratio": 0.61},
                   {"kapandji_follow": 0.79}):
        assert not Row(**{**good.__dict__, **change}).ok, change
    assert np.isnan(Row("y", 1, 0, 1.0, 1.0, [], 0.5, 0.9, 10).pinch_mm)


def test_a_pinch_the_robot_cannot_make_is_listed_not_judged():
    """Inspire's ring pinch: 32.4 mm is the robot's closest (FK search), so it does not fail the row;
    the same gap on a pinch the robot can make does."""
    row = Row("inspire", 621, 0, 4.0, 0.0, [(310, 333, 3, 2.2)], 0.5, 0.85, 46,
              out_of_reach=[(409, 426, 5, 32.4, 32.4)], expressible=(1, 2, 3, 4))
    assert row.ok and row.pinch_mm == 2.2
    assert not Row(**{**row.__dict__, "pinches": [(310, 333, 3, 2.2), (409, 426, 5, 32.4)]}).ok


def test_the_human_fist_figure_is_the_robot_columns_measure_on_the_operator():
    """A synthetic hand: every fingertip at 100 mm from the palm centre when open, the fist frames
    bring the thumb to 66 mm and the fingers to 30 mm: 0.66 and 0.30."""
    from hand_bringup.dex_acceptance import FIST, human_fist

    world = np.zeros((621, 21, 3))
    world[:, [0, 5, 9, 13]] = [[0, 0, 0], [0.02, 0.08, 0], [0, 0.08, 0], [-0.02, 0.08, 0]]
    centre = world[0, [0, 5, 9, 13]].mean(axis=0)
    for k, tip in enumerate((4, 8, 12, 16, 20)):
        world[:, tip] = centre + [0, 0, 0.1]
        world[list(FIST), tip] = centre + [0, 0, 0.066 if k == 0 else 0.03]
    assert np.allclose(human_fist(world), [0.66, 0.3, 0.3, 0.3, 0.3])


def test_a_fist_digit_is_judged_against_the_operators_own_where_it_stays_above_the_limit():
    """The shared video's fist: the operator's thumb comes only 34 % closer (0.66). A robot thumb at
    0.64 (Ability) passes, at 0.76 (Inspire) fails; a finger the operator closes to 0.34 is held to
    0.6 (0.61 fails), and a robot digit the operator closes beyond the limit cannot borrow it."""
    base = Row("x", 621, 0, 4.0, 3.0, [], 0.64, 0.85, 100)
    ok = Row(**{**base.__dict__, "fist_digits": {"thumb": (0.64, 0.66), "index": (0.36, 0.34)}})
    assert ok.ok and ok.fist_failures() == []
    inspire = Row(**{**base.__dict__, "fist_ratio": 0.76, "fist_digits": {"thumb": (0.76, 0.66), "index": (0.37, 0.34)}})
    assert not inspire.ok and inspire.fist_failures() == ["thumb"]
    finger = Row(**{**base.__dict__, "fist_digits": {"thumb": (0.5, 0.66), "index": (0.61, 0.34)}})
    assert finger.fist_failures() == ["index"]
    assert Row(**{**base.__dict__, "fist_ratio": 0.61}).fist_failures() == ["worst digit"]


def test_kapandji_misses_are_split_into_transit_onset_and_settled():
    """A pinch onset at frame 2 (human 0 -> 4): the target gets there at 3, the twin at 5; a settled
    stretch 8-9 where neither target nor twin makes the human's 9; unjudged frames never count."""
    human = np.array([0, 0, 4, 4, 4, 4, 4, 4, 9, 9, 9, 9, 9, 9])
    target = np.array([0, 0, 1, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 9])
    robot = np.array([0, 0, 0, 1, 1, 4, 4, 4, 0, 0, 0, 0, 0, 0])
    judged = human >= 3
    from hand_bringup.dex_acceptance import kapandji_misses

    # 2: target off at the onset; 3-4: target right, twin on its way; 8-11: target off within 3
    # frames of the change at 8; 12: settled; 13: the twin behind a target that made it
    assert kapandji_misses(human, robot, target, judged) == {"transit": 3, "onset": 5, "settled": 1}
    assert kapandji_misses(human, robot, target, np.zeros(14, bool)) == {"transit": 0, "onset": 0, "settled": 0}
