"""Acceptance on the shared video (open hand, pinches, fist): the arm arms only after a stable
open palm, the gripper closes during the thumb–index pinch and opens after it, the fist disarms.

MediaPipe runs once per test session (hand_tracking's tracker_video_cache, mirror=false: the
legacy API's "Left" label of this physical right hand is swapped to 'right'). The teleop core
runs on every frame at the video's frame times.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

from arm_teleop.arm_model import load_arm
from arm_teleop.gestures import Gesture
from arm_teleop.state_machine import ArmState
from arm_teleop.teleop_core import HandFrame, TeleopCore

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "hand_tracking" / "test"))
from tracker_video_cache import FIST_FRAMES, video_landmarks  # noqa: E402


@pytest.fixture(scope="module")
def run(video_path):
    v = video_landmarks(video_path)  # the tracker's model, complexity 1 (issue 15)
    arm = load_arm()
    core = TeleopCore(arm)
    outs = []
    for i in range(len(v.indices)):
        hand = bool(v.handedness[i])
        outs.append(core.process(HandFrame(float(v.media_time[i]), v.world[i] if hand else None,
                                           v.image[i] if hand else None, float(v.scores[i]), v.width, v.height)))
    thumb_index_mm = np.linalg.norm(v.world[:, 4] - v.world[:, 8], axis=1) * 1000
    return v, arm, core, outs, thumb_index_mm


def test_the_hand_is_the_physical_right_hand(run):
    v = run[0]
    assert set(v.handedness) == {"right"}


def test_state_sequence_on_the_video(run):
    v, arm, core, outs, _ = run
    fps = v.fps
    trans = [(round(t.t * fps), t.target) for t in core.sm.transitions]
    print("\ntransitions (frame, state):", [(f, s.value) for f, s in trans])
    assert [s for _, s in trans] == [ArmState.ARMED, ArmState.DISABLED, ArmState.ARMED, ArmState.DISABLED]
    # arms only after the open palm was held: every frame of the last arm_hold_s before arming is
    # an open palm, and nothing is commanded before
    hold = round(core.cfg.state.arm_hold_s * fps)
    for f_arm in (trans[0][0], trans[2][0]):
        assert all(outs[i].gesture == Gesture.OPEN_PALM for i in range(f_arm - hold, f_arm + 1))
        assert outs[f_arm - 1].state == ArmState.DISABLED and outs[f_arm - 1].command is None
    assert 15 <= trans[0][0] <= 20  # the video opens on an open hand
    assert all(o.command is None for o in outs[: trans[0][0]])
    # the fists (media README: near frame 270 and 610-620) disarm within a few frames of onset
    fist1, fist2 = trans[1][0], trans[3][0]
    assert 250 <= fist1 <= FIST_FRAMES[0] and 600 <= fist2 <= 612
    assert all(outs[i].state == ArmState.DISABLED and outs[i].command is None for i in FIST_FRAMES)
    assert core.sm.transitions[1].reason == core.sm.transitions[3].reason == "fist"


def test_gripper_closes_during_the_thumb_index_pinch_and_opens_after(run):
    v, arm, core, outs, tip_mm = run
    grip = np.array([o.command[5] if o.command is not None else np.nan for o in outs])
    # the thumb–index pinch, independently of the classifier: tips under 30 mm while the other
    # three fingers stay open (frames ~310-330 of the video)
    pinch = [i for i in range(290, 360) if tip_mm[i] < 30.0]
    start, end = pinch[0], pinch[-1]
    print(f"\nthumb-index pinch frames {start}-{end} (tips {tip_mm[start:end + 1].min():.0f}-"
          f"{tip_mm[start:end + 1].max():.0f} mm); gripper before {grip[start - 1]:.2f}, "
          f"min during {np.nanmin(grip[start:end + 4]):.2f}, after {grip[end + 20]:.2f} rad")
    assert 300 <= start <= 315 and end - start >= 15
    assert grip[start - 1] == pytest.approx(arm.gripper_open)  # open before
    closed = np.flatnonzero(np.abs(grip[start:end + 4] - arm.gripper_closed) < 1e-6)
    assert closed.size >= 10  # reached the closed end of the ctrlrange and stayed there
    assert all(outs[i].gesture == Gesture.PINCH for i in range(start + 2, end))
    assert grip[end + 20] == pytest.approx(arm.gripper_open)  # open again after
    # closed only around that pinch: never while armed elsewhere (the middle/ring/little pinches
    # and the curls do not grip)
    closing = {i for i in range(len(outs)) if outs[i].gripper_closed and outs[i].command is not None}
    assert closing and min(closing) >= start - 3 and max(closing) <= end + 5


def test_commands_are_finite_and_inside_the_limits(run):
    v, arm, core, outs, _ = run
    cmds = np.array([o.command for o in outs if o.command is not None])
    assert len(cmds) > 500
    assert np.all(np.isfinite(cmds)) and np.all(cmds >= arm.lower) and np.all(cmds <= arm.upper)
    iks = [o.ik for o in outs if o.ik is not None]
    assert all(r.iterations <= 12 for r in iks)
    assert np.mean([r.converged for r in iks]) > 0.95
