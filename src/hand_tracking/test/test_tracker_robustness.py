"""Issue 15 acceptance on the robustness set generated from the shared video
(hand_tracking.robustness: mirrored, rotated +-30 deg, scaled 50 %, 640x360, darkened 60 %,
motion-blurred, JPEG q20, cropped). Uncalibrated default tracker (fused skeleton, quality gate).

Frame set: every 6th frame plus every oracle frame (open 0-11, 130-140, 295-305, 580-590; fist
262-274), MediaPipe complexity 1 in video mode: 153 frames x 10 variants, ~100 s once, then read
from the on-disk landmark cache. Tolerance: the acceptance figures themselves (open <= 0.2 on all
five, fist >= 0.8 on index..pinky) on every variant; on the sampled set the margins measured are
open <= 0.12 and fist >= 0.86 (see the printed figures)."""

import os
import sys

import numpy as np
import pytest

from hand_tracking.robustness import CROP_FRAMES, VARIANTS, frame_set, run_tracker, variant_landmarks

sys.path.insert(0, os.path.dirname(__file__))
from tracker_video_cache import FIST_FRAMES, OPEN_FRAMES  # noqa: E402

pytestmark = pytest.mark.slow

FRAMES = frame_set(621, 6, (*OPEN_FRAMES, *FIST_FRAMES))


@pytest.fixture(scope="module", params=VARIANTS)
def variant(request, video_path):
    lm = variant_landmarks(video_path, request.param, FRAMES, model_complexity=1)
    return lm, run_tracker(lm)


def test_frame_set_contains_the_oracle_frames():
    assert set(OPEN_FRAMES) | set(FIST_FRAMES) <= set(FRAMES)
    assert 140 < len(FRAMES) < 170


def test_known_facts_hold_on_every_variant(variant):
    lm, outs = variant
    pos = {i: k for k, i in enumerate(lm.frames)}
    open_k = [pos[i] for i in OPEN_FRAMES if lm.variant != "crop" or i not in CROP_FRAMES]
    fist_k = [pos[i] for i in FIST_FRAMES]
    assert all(outs[k].status == "tracked" for k in open_k + fist_k), lm.variant
    flex = np.array([o.finger_flexions if o.publishable else np.full(5, np.nan) for o in outs])
    open_max = flex[open_k].max(axis=0)
    fist_min = flex[fist_k].min(axis=0)
    print(f"\n{lm.variant:9s} open max {np.round(open_max, 2)}  fist min {np.round(fist_min, 2)}  "
          f"rejected {sum(o.rejected != '' for o in outs)}")
    assert (open_max <= 0.2).all(), open_max
    assert (fist_min[1:] >= 0.8).all(), fist_min
    # the fist is the most closed stretch: its mean flexion exceeds every open frame's
    assert flex[fist_k, 1:].mean() > flex[open_k, 1:].mean() + 0.7


def test_cropped_frames_are_held_not_driven(video_path):
    lm = variant_landmarks(video_path, "crop", FRAMES, model_complexity=1)
    outs = run_tracker(lm)
    crop_k = [k for k, i in enumerate(lm.frames) if i in CROP_FRAMES]
    assert len(crop_k) >= 10
    # no cropped frame drives the output: each is a miss (no hand or refused by the gate), so the
    # last good pose is held and then released after max_missed_frames
    assert not any(outs[k].accepted for k in crop_k)
    # MediaPipe still sees the hand in most of them: the gate refuses it for leaving the image
    refused = [outs[k] for k in crop_k if outs[k].rejected == "outside_image"]
    print(f"\ncrop: {len(crop_k)} cropped frames, {len(refused)} refused as outside_image, "
          f"statuses {[outs[k].status for k in crop_k]}")
    assert len(refused) >= len(crop_k) // 2
    assert outs[crop_k[0] - 1].status == "tracked"
    before = outs[crop_k[0] - 1].finger_flexions
    held = [outs[k] for k in crop_k if outs[k].status == "held"]
    assert held and all(np.array_equal(o.finger_flexions, before) for o in held)
    # the hand comes back with the picture: MediaPipe (video mode) needs one frame to re-detect
    # after the jump (frame 150: no hand), then it is tracked again (156 and on)
    after = [outs[crop_k[-1] + j].status for j in (1, 2, 3)]
    assert after[1:] == ["tracked", "tracked"], after
