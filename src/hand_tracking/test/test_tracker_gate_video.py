"""Issue 22 items 1, 3, 4 on the shared video's landmarks (tracker_video_cache: MediaPipe once per
session), default uncalibrated tracker: the quality gate judges the hand in the image, never by the
world head's scale, follows fast motion against a prediction, and holds only consistent poses.

Figures measured (printed): close-ups (world x0.2-0.5, image zoomed x2-3 about the hand) refuse
0 of the frames the plain run accepts and read the same flexions (largest difference 0.000); with
every 2nd or 3rd frame dropped, 0 frames are refused and index..pinky read >= 0.8 at most 1
processed frame after the first closed reading of each fist."""

import os
import sys

import numpy as np
import pytest

from hand_tracking.fusion import fused_points
from hand_tracking.geometry import joint_angles
from hand_tracking.landmarks import HandObservation
from hand_tracking.tracker_core import TrackerConfig, TrackerCore

sys.path.insert(0, os.path.dirname(__file__))
from tracker_video_cache import FIST_FRAMES, OPEN_FRAMES, video_landmarks  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lm(video_path):
    return video_landmarks(video_path)


def closeup(lm, i: int, world_scale: float, zoom: float) -> list[HandObservation]:
    """Frame ``i`` as a close-up: the world head shrunk by ``world_scale`` (as MediaPipe does on
    close-ups and backs of hands) and the image cropped ``zoom`` times about the hand's centre (the
    hand fills ``zoom`` times more of the frame; image z is in units of the width, so it scales too)."""
    img = lm.image[i].copy()
    centre = img[:, :2].mean(axis=0)
    img[:, :2] = 0.5 + zoom * (img[:, :2] - centre)
    img[:, 2] *= zoom
    return [HandObservation(img, lm.world[i] * world_scale, lm.handedness[i], float(lm.scores[i]))]


def run(lm, frames, hands=None, cfg=None):
    core = TrackerCore(cfg or TrackerConfig())
    hands = hands or lm.hands
    return core, [core.update(hands(i), float(lm.media_time[i]), lm.width, lm.height) for i in frames]


@pytest.mark.parametrize("world_scale", [0.2, 0.35, 0.5])
@pytest.mark.parametrize("zoom", [1.0, 2.0, 3.0])
def test_closeups_are_never_refused_and_read_the_same(lm, world_scale, zoom):
    frames = range(len(lm.indices))
    _, base = run(lm, frames)
    core, outs = run(lm, frames, lambda i: closeup(lm, i, world_scale, zoom))
    inside = min(float(np.mean(np.all((h[0].image[:, :2] >= 0) & (h[0].image[:, :2] <= 1), axis=1)))
                 for h in (closeup(lm, i, world_scale, zoom) for i in frames))
    refused = [i for i, (o, b) in enumerate(zip(outs, base)) if b.accepted and not o.accepted]
    diff = max(float(np.abs(o.finger_flexions - b.finger_flexions).max()) for o, b in zip(outs, base))
    palm_cm = 100 * world_scale * np.linalg.norm(lm.world[:, 5] - lm.world[:, 17], axis=1)
    print(f"\nworld x{world_scale} (palm {palm_cm.min():.1f}-{palm_cm.max():.1f} cm), zoom x{zoom} "
          f"(least inside {inside:.2f}): refused {len(refused)}, largest flexion difference {diff:.3f}")
    assert sum(b.accepted for b in base) == len(frames)
    assert refused == [] and sum(core.rejections.values()) == 0, core.rejections
    assert diff <= 0.05


@pytest.mark.parametrize("stride", [2, 3])
def test_fast_motion_is_followed_not_refused(lm, stride):
    """Every 2nd / 3rd frame dropped (15 / 10 fps of fast finger motion): no frame refused, and the
    output reaches the closed pose (index..pinky >= 0.8) within 2 processed frames of the first
    frame whose raw reading is closed, for both fists (onsets near 256 and 607)."""
    raw_core = TrackerCore(TrackerConfig(filter_enabled=False))
    raw = np.array([raw_core.update(lm.hands(i), float(lm.media_time[i]), lm.width, lm.height).finger_flexions
                    for i in range(len(lm.indices))])
    closed = raw[:, 1:].min(axis=1) >= 0.8
    for offset in range(stride):
        frames = list(range(offset, len(lm.indices), stride))
        core, outs = run(lm, frames)
        assert sum(core.rejections.values()) == 0, (offset, core.rejections)
        assert all(o.status == "tracked" for o in outs)
        lags = []
        for k, i in enumerate(frames):
            if closed[i] and (k == 0 or not closed[frames[k - 1]]):
                lag = next(m - k for m in range(k, len(frames)) if outs[m].finger_flexions[1:].min() >= 0.8)
                lags.append((i, lag))
        print(f"\nstride {stride} offset {offset}: refused 0, closed onsets (frame, lag) {lags}")
        assert len(lags) == 2 and 240 < lags[0][0] < 275 and 600 < lags[1][0] < 615, lags
        assert all(lag <= 2 for _, lag in lags), lags
        flex = np.array([o.finger_flexions for o in outs])
        pos = {i: k for k, i in enumerate(frames)}
        assert flex[[pos[i] for i in FIST_FRAMES if i in pos], 1:].min() >= 0.8
        assert flex[[pos[i] for i in OPEN_FRAMES if i in pos]].max() <= 0.2


def misread_ring(lm, i: int, fist: int = 268, blend: float = 0.4) -> list[HandObservation]:
    """Frame ``i`` with its ring finger (PIP to tip, both heads) moved ``blend`` of the way towards the
    ring of fist frame ``fist``: a one-frame misreading of ring ~0.5 in an open hand."""
    img, wld = lm.image[i].copy(), lm.world[i].copy()
    for arr, src in ((img, lm.image[fist]), (wld, lm.world[fist])):
        arr[14:17] = arr[13] + (1 - blend) * (arr[14:17] - arr[13]) + blend * (src[14:17] - src[13])
    return [HandObservation(img, wld, lm.handedness[i], float(lm.scores[i]))]


def test_a_misread_ring_in_the_open_hand_is_not_held(lm):
    """Issue 22 item 4 on the real open hand (frames 130-140): one frame reads ring ~0.5, the next 9
    are misses; the held pose is the open hand before it, and tracking resumes on the next frame."""
    raw = TrackerCore(TrackerConfig(filter_enabled=False)).update(misread_ring(lm, 135), 0.0, lm.width, lm.height)
    assert 0.4 <= raw.finger_flexions[3] <= 0.6, raw.finger_flexions
    seq = {**{i: lm.hands(i) for i in range(125, 135)}, 135: misread_ring(lm, 135),
           **{i: [] for i in range(136, 145)}, 145: lm.hands(145)}
    core, outs = run(lm, list(seq), lambda i: seq[i])
    ring = np.array([o.finger_flexions[3] for o in outs])
    print(f"\nring: before {ring[9]:.2f}, misread frame {ring[10]:.2f} (raw {raw.finger_flexions[3]:.2f}), "
          f"held {np.unique(ring[11:20]).round(2)}, after {ring[20]:.2f}")
    assert outs[10].status == "tracked" and not outs[10].confirmed
    assert [o.status for o in outs[11:20]] == ["held"] * 9 and outs[20].status == "tracked"
    assert ring[11:20].max() <= 0.2 and np.all(ring[11:20] == ring[9])
    assert core.holds["no_hand"] == 9 and core.holds_skipped_unconfirmed == 1


def test_view_aware_depth_never_folds_a_half_read_ring(lm):
    """The view-aware depth adds no fold the heads did not show (issue 22): the ring of open frame
    135 blended 0.38-0.60 of the way to fist frame 268 (its middle phalanx points at the camera,
    3-4 px long) keeps every joint at >= 1.0 rad (measured >= 1.01). The first port (h22v2 aee8c26:
    a weak-depth bone continued the turn of the bones before it, the depth clipped to the
    foreshortening bound whatever it did to the joint) folded its DIP to 0.37-0.53 rad at 0.42-0.60;
    the fixed half of the world depth reads >= 1.08."""
    for blend in (0.38, 0.40, 0.42, 0.45, 0.50, 0.60):
        hand = misread_ring(lm, 135, blend=blend)[0]
        ring = joint_angles(fused_points(hand.image, hand.world, lm.width, lm.height))[9:12]
        assert ring.min() >= 1.0, (blend, ring.round(2))


@pytest.mark.parametrize("blurred", ["refused", "no_hand", "refused_world_shrinks"])
def test_a_fast_fist_after_blurred_frames_is_followed_not_held(lm, blurred):
    """Issue 22 item 3: 3 blurred frames (250-252, refused for a low score as MediaPipe's blurred
    detections are, or not detected at all), then the clear frames of the closing fist (253-260):
    every clear frame is tracked (none held at the open value), and index..pinky reach 0.8 by 257
    (the unfiltered reading is closed from 256). ``refused_world_shrinks``: the world head of the
    clear frames shrinks to 0.45 (palm ~3 cm, as on the held-back recordings when the view turns):
    the former gate (world bone lengths against the last accepted frame, 0.5 palm widths) refused
    253-259 as bone jumps and held the open hand (index..pinky 0.00) until the pose was lost."""
    def frame(i):
        if 250 <= i <= 252:
            if blurred == "no_hand":
                return []
            return [HandObservation(lm.image[i], lm.world[i], lm.handedness[i], 0.52)]
        if i >= 253 and blurred == "refused_world_shrinks":
            return [HandObservation(lm.image[i], 0.45 * lm.world[i], lm.handedness[i], float(lm.scores[i]))]
        return lm.hands(i)

    frames = list(range(236, 262))
    core, outs = run(lm, frames, frame)
    status = {i: o.status for i, o in zip(frames, outs)}
    flex = {i: o.finger_flexions for i, o in zip(frames, outs)}
    print(f"\n{blurred}: " + ", ".join(f"{i} {status[i]} {flex[i][1:].min():.2f}" for i in range(249, 259)))
    assert [status[i] for i in (250, 251, 252)] == ["held"] * 3
    assert all(status[i] == "tracked" for i in range(253, 262))
    assert flex[253][1:].max() > flex[252][1:].max() + 0.1  # the first clear frame moves the output
    assert flex[257][1:].min() >= 0.8
    cause = "no_hand" if blurred == "no_hand" else "low_score"
    assert core.holds[cause] == 3 and sum(core.rejections.values()) == (0 if blurred == "no_hand" else 3)


def test_unconfirmed_readings_are_rare_and_short_on_the_real_video(lm):
    """Only the first frames of a real finger event disagree with their predecessor: on the shared
    video 14 of 621 frames are unconfirmed (measured; 15 before the view-aware depth), never more
    than 3 in a row (605-607, the final fist closing: the view-aware depth reads its middle finger
    closed a frame earlier, steps 0.34/0.43/0.37 rad > hold_max_step 0.3; 2 before), so a hold
    falls back at most 3 frames (0.1 s)."""
    _, outs = run(lm, range(len(lm.indices)))
    unconfirmed = [i for i, o in enumerate(outs) if not o.confirmed]
    longest, run_len = 0, 0
    for o in outs:
        run_len = 0 if o.confirmed else run_len + 1
        longest = max(longest, run_len)
    print(f"\nunconfirmed {len(unconfirmed)} of {len(outs)}: {unconfirmed}; longest run {longest}")
    assert len(unconfirmed) <= 25 and longest <= 3
    assert outs[0].confirmed  # a track's first frame
