"""Issue 15 on synthetic ground truth: fused skeleton from side/back views, the quality gate,
calibration that cannot be fooled. No MediaPipe, no timing."""

import math

import numpy as np
import pytest

from hand_common.contract import JOINT_NAMES
from hand_tracking.calibration import CalibrationError, capture_pose, check_pose, windows_from_poses
from hand_tracking.fusion import fused_points, view_aware_depth
from hand_tracking.geometry import (
    _rotation,
    finger_curls,
    joint_angles,
    most_open_angles,
    synthetic_hand,
)
from hand_tracking.landmarks import HandObservation
from hand_tracking.tracker_core import (
    REJECT_REASONS,
    QualityGate,
    TrackerConfig,
    TrackerCore,
    default_finger_windows,
)

W, H = 1280, 720
F_PX = 900.0  # pinhole focal length, px
DEPTH_M = 0.45  # hand centre in front of the camera, m
# A relaxed open hand (interior angles like MediaPipe's world head reads on the shared video) and
# a fist (index..pinky ~1.5 rad, thumb 2.3).
OPEN = np.array([2.95, 3.0, 2.9] + [3.0, 2.95, 3.0] * 4)
FIST = np.array([2.3, 2.5, 2.2] + [1.9, 1.3, 1.4] * 4)

VIEWS = {
    "palm": np.eye(3),
    "side": _rotation(np.array([0.0, 1.0, 0.0]), math.radians(75)),
    "back": _rotation(np.array([0.0, 1.0, 0.0]), math.radians(170)),
    "tilted": _rotation(np.array([1.0, 0.0, 0.0]), math.radians(40)),
}


def observe(angles, view, *, world_bias=None, score=0.95, shift_px=(0.0, 0.0)):
    """A detection: the posed hand rotated into ``view``, pinhole-projected for the image head;
    the world head is the same 3-D hand, optionally distorted by ``world_bias`` (a function)."""
    pts = synthetic_hand(angles, rotation=view)
    pts = pts - pts.mean(axis=0)
    cam = pts + [0.0, 0.0, DEPTH_M]
    u = F_PX * cam[:, 0] / cam[:, 2] + W / 2 + shift_px[0]
    v = F_PX * cam[:, 1] / cam[:, 2] + H / 2 + shift_px[1]
    # MediaPipe's image z: depth relative to the wrist, in roughly the scale of x (normalised)
    z = (cam[:, 2] - cam[0, 2]) * F_PX / DEPTH_M / W
    image = np.column_stack([u / W, v / H, z])
    world = pts if world_bias is None else world_bias(pts)
    return HandObservation(image=image, world=world, handedness="right", score=score)


#: What the world head said on other people's open hands (issue 15): fingers half curled.
HALF = np.array([2.6, 2.7, 2.5] + [2.5, 2.2, 2.3] * 4)


def curled_world(pts):
    """The failure seen on other hands: the world head reads the fingers half curled while the
    picture (image head) shows them straight. Same wrist/palm, same centroid convention."""
    half = synthetic_hand(HALF)
    return half - half.mean(axis=0) + pts.mean(axis=0)


def flexions(obs, mode="fused"):
    core = TrackerCore(TrackerConfig(landmark_mode=mode, filter_enabled=False))
    out = core.update([obs], 0.0, W, H)
    assert out.status == "tracked", out.reason
    return out.finger_flexions


@pytest.mark.parametrize("view", list(VIEWS))
def test_open_and_fist_read_right_from_every_view(view):
    open_f = flexions(observe(OPEN, VIEWS[view]))
    fist_f = flexions(observe(FIST, VIEWS[view]))
    print(f"\n{view}: open {np.round(open_f, 2)}  fist {np.round(fist_f, 2)}")
    assert open_f.max() <= 0.2, open_f
    assert fist_f[1:].min() >= 0.8, fist_f


def test_fused_skeleton_is_metric_and_recovers_an_exact_pinhole_hand_in_plane():
    obs = observe(OPEN, VIEWS["tilted"])
    fused = fused_points(obs.image, obs.world, W, H)
    # in-plane scale fitted onto the world head: same size (perspective within a few per cent)
    size = np.linalg.norm(fused[:, :2] - fused[:, :2].mean(0), axis=1).mean()
    ref = np.linalg.norm(obs.world[:, :2] - obs.world[:, :2].mean(0), axis=1).mean()
    assert size == pytest.approx(ref, rel=0.03)
    np.testing.assert_allclose(fused.mean(0), obs.world.mean(0), atol=1e-12)
    with pytest.raises(ValueError, match="depth_weight"):
        fused_points(obs.image, obs.world, W, H, depth_weight=1.5)


def test_fusion_corrects_a_world_head_that_says_curled_where_the_picture_is_straight():
    obs = observe(OPEN, VIEWS["palm"], world_bias=curled_world)
    world_f = flexions(obs, "world")
    fused_f = flexions(obs, "fused")
    print(f"\nbiased world head: world {np.round(world_f, 2)} fused {np.round(fused_f, 2)}")
    assert world_f[1:].min() > 0.3  # the world head alone reads a half-closed hand
    assert fused_f.max() <= 0.2  # the image head's in-plane picture wins
    # and a real fist (both heads agree) is still a fist
    assert flexions(observe(FIST, VIEWS["palm"]))[1:].min() >= 0.8


def run_gate(frames, **gate):
    core = TrackerCore(TrackerConfig(filter_enabled=False, max_missed_frames=3, gate=QualityGate(**gate)))
    return core, [core.update(f, k / 30, W, H) for k, f in enumerate(frames)]


def test_gate_holds_a_hand_leaving_the_image_and_counts_the_reason():
    good = observe(FIST, VIEWS["palm"])
    out_of_frame = observe(OPEN, VIEWS["palm"], shift_px=(800.0, 0.0))  # most landmarks past x=W
    inside = np.all((out_of_frame.image[:, :2] >= 0) & (out_of_frame.image[:, :2] <= 1), axis=1)
    assert inside.sum() <= 10
    core, outs = run_gate([[good]] + [[out_of_frame]] * 5 + [[good]])
    assert [o.status for o in outs] == ["tracked", "held", "held", "held", "lost", "lost", "tracked"]
    for o in outs[1:4]:  # held at the fist: the open reading never drives the robot
        np.testing.assert_array_equal(o.finger_flexions, outs[0].finger_flexions)
        assert not o.accepted and o.rejected == "outside_image" and "outside the image" in o.reason
        assert o.quality == pytest.approx(0.95 * inside.mean())
    assert core.rejections["outside_image"] == 5
    assert set(core.rejections) == set(REJECT_REASONS)
    assert outs[0].accepted and outs[0].quality == pytest.approx(0.95)


def test_gate_never_judges_the_world_heads_scale():
    """MediaPipe's world head shrinks the palm to 0.5-2.6 cm on close-ups and backs of hands
    (issue 22): a clear hand is never refused for the world head's size, in any view."""
    for view in VIEWS:
        for pose in (OPEN, FIST):
            good = observe(pose, VIEWS[view])
            for k in (0.07, 0.2, 1.0, 4.0):  # world palm ~0.6 cm .. 34 cm
                core, outs = run_gate([[HandObservation(good.image, good.world * k, "right", 0.95)]])
                assert outs[0].status == "tracked", (view, k, outs[0].reason)
                np.testing.assert_allclose(outs[0].finger_flexions, flexions(good), atol=1e-9)


def test_gate_refuses_implausible_image_shapes_folded_joints_and_low_scores():
    good = observe(OPEN, VIEWS["palm"])

    def stretched():  # the index tip far out in the picture (and in the world head)
        img, w = good.image.copy(), good.world.copy()
        img[8] = img[7] + 12.0 * (img[7] - img[6])
        w[8] = w[7] + 12.0 * (w[7] - w[6])
        return HandObservation(img, w, "right", 0.95)

    def folded():  # the middle finger's distal bone folded back onto its middle bone
        img, w = good.image.copy(), good.world.copy()
        img[12] = img[11] + 0.9 * (img[10] - img[11]) + [0.002, 0.0, 0.0]
        w[12] = w[11] + 0.9 * (w[10] - w[11]) + [0.002, 0.0, 0.0]
        return HandObservation(img, w, "right", 0.95)

    cases = {
        "finger_length": stretched(),
        "joint_angle": folded(),
        "low_score": HandObservation(good.image, good.world, "right", 0.52),
    }
    for reason, obs in cases.items():
        core, outs = run_gate([[good], [obs]])
        assert outs[1].status == "held" and outs[1].rejected == reason, (reason, outs[1].reason)
        assert outs[1].hold_cause == reason and core.holds[reason] == 1
        assert core.rejections[reason] == 1
    assert "middle_dip bent to" in run_gate([[good], [folded()]])[1][1].reason
    assert "no depth opens it past 0.5" in run_gate([[good], [folded()]])[1][1].reason
    # the gate off: only degenerate skeletons are refused
    _, outs = run_gate([[good], [stretched()]], enabled=False)
    assert outs[1].status == "tracked"
    with pytest.raises(ValueError, match="max_outside_fraction"):
        QualityGate(max_outside_fraction=2.0)
    with pytest.raises(ValueError, match="motion_gain"):
        QualityGate(motion_gain=1.5)
    with pytest.raises(ValueError, match="landmark_mode"):
        TrackerConfig(landmark_mode="both")


def teleported(obs, dx):
    """The index finger (MCP excluded) moved by ``dx`` (normalised image x) in both heads: a
    MediaPipe misdetection that puts a finger where no motion could bring it."""
    img, w = obs.image.copy(), obs.world.copy()
    img[6:9, 0] += dx
    w[6:9, 0] += dx * W / F_PX * DEPTH_M
    return HandObservation(img, w, "right", 0.95)


def test_gate_judges_motion_against_a_prediction_with_a_time_scaled_tolerance():
    good = observe(OPEN, VIEWS["palm"])
    size = max(np.linalg.norm((good.image[5] - good.image[17])[:2] * (W, H)),
               np.linalg.norm((good.image[0] - good.image[9])[:2] * (W, H)))
    jump = teleported(good, 1.6 * size / W)  # 1.6 hand sizes in one frame (tolerance 1.27 at 30 fps)
    core, outs = run_gate([[good], [good], [jump], [good]])
    assert [o.status for o in outs] == ["tracked", "tracked", "held", "tracked"]
    assert outs[2].rejected == "motion" and "1.60 hand sizes" in outs[2].reason, outs[2].reason
    assert core.rejections["motion"] == 1 and core.holds["motion"] == 1
    # the same displacement after 0.2 s of capture time without a hand is a plausible motion
    core = TrackerCore(TrackerConfig(filter_enabled=False, max_missed_frames=10))
    assert core.update([good], 0.0, W, H).status == "tracked"
    for k in range(1, 6):
        assert core.update([], k / 30, W, H).status == "held"
    assert core.update([jump], 0.2, W, H).status == "tracked"
    # a real, fast change of pose: refused once against the prediction, then the next frame agrees
    # with the refused one and re-anchors the prediction (no lock-out on a stale reference)
    # (the hand turned by 150 deg in the image plane between two frames)
    far = observe(OPEN, _rotation(np.array([0.0, 0.0, 1.0]), math.radians(150)))
    core, outs = run_gate([[good], [good], [far], [far], [far]])
    assert [o.status for o in outs] == ["tracked", "tracked", "held", "tracked", "tracked"]
    assert outs[2].rejected == "motion"
    # moving hand, translation and in-plane motion of the whole hand are free
    moving = [observe(OPEN, VIEWS["palm"], shift_px=(40.0 * k, -25.0 * k)) for k in range(6)]
    _, outs = run_gate([[m] for m in moving])
    assert all(o.status == "tracked" for o in outs)


def test_a_one_frame_misreading_is_published_but_never_held():
    """Issue 22 item 4: ring 0.50 read in one frame of an open hand, then misses: the hold shows the
    last consistent pose, not the misreading; the hold ends at the next good frame; causes counted."""
    good = observe(OPEN, VIEWS["palm"])
    bent = OPEN.copy()
    bent[9:12] = [2.6, 2.3, 2.5]  # ring half closed
    misread = observe(bent, VIEWS["palm"])
    core = TrackerCore(TrackerConfig(filter_enabled=False, max_missed_frames=10))
    seq = [[good]] * 3 + [[misread]] + [[]] * 9 + [[good]]
    outs = [core.update(f, k / 30, W, H) for k, f in enumerate(seq)]
    ring = np.array([o.finger_flexions[3] for o in outs])
    assert outs[3].status == "tracked" and not outs[3].confirmed and 0.4 <= ring[3] <= 0.7, ring[3]
    assert all(o.status == "held" and o.hold_cause == "no_hand" for o in outs[4:13])
    np.testing.assert_array_equal(ring[4:13], ring[2])  # the consistent pose before it
    assert outs[13].status == "tracked" and outs[13].confirmed
    assert core.holds["no_hand"] == 9 and core.holds_skipped_unconfirmed == 1
    # a real change (the next frame agrees with it) is held
    core = TrackerCore(TrackerConfig(filter_enabled=False, max_missed_frames=10))
    seq = [[good]] * 3 + [[misread]] * 2 + [[]] * 3
    outs = [core.update(f, k / 30, W, H) for k, f in enumerate(seq)]
    assert [o.confirmed for o in outs[:5]] == [True, True, True, False, True]
    assert all(o.finger_flexions[3] == outs[4].finger_flexions[3] for o in outs[5:])
    assert core.holds_skipped_unconfirmed == 0


def test_calibration_refuses_a_fist_as_open_and_an_open_hand_as_fist_naming_fingers():
    ref = default_finger_windows()
    fist = capture_pose("open", joint_angles(synthetic_hand(FIST))[None])
    with pytest.raises(CalibrationError, match=r"open capture looks closed: .*index 1\.\d\d rad"):
        check_pose(fist, ref)
    opened = capture_pose("fist", joint_angles(synthetic_hand(OPEN))[None])
    with pytest.raises(CalibrationError, match=r"fist capture looks open: .*index 2\.9\d rad"):
        check_pose(opened, ref)
    good_open = capture_pose("open", joint_angles(synthetic_hand(OPEN))[None])
    good_fist = capture_pose("fist", joint_angles(synthetic_hand(FIST))[None])
    check_pose(good_open, ref)
    check_pose(good_fist, ref)
    cal = windows_from_poses(good_open, good_fist)
    span = (finger_curls(OPEN) - finger_curls(FIST))[1:].min()
    assert cal.quality == pytest.approx(min(1.0, span))
    text = cal.describe()
    assert "index 2.98->1.53" in text and f"quality {cal.quality:.2f}" in text
    assert len(JOINT_NAMES) == len(cal.joints.straight)


# --- issue 22: folds a view explains are views, folds the picture shows are refused ---------------

#: A fist whose fingers fold at right angles at MCP and PIP: seen from the back, the proximal
#: phalanges point away from the camera and project short.
FIST90 = np.array([2.3, 2.4, 2.2] + [1.6, 1.6, 2.3] * 4)


def flattened(obs, k):
    """MediaPipe losing depth: both heads' depth pulled towards the palm's by the factor k."""
    img, wld = obs.image.copy(), obs.world.copy()
    for p in (img, wld):
        z0 = p[[0, 5, 9, 13, 17], 2].mean()
        p[:, 2] = z0 + k * (p[:, 2] - z0)
    return HandObservation(img, wld, obs.handedness, obs.score)


def back_view(rng):
    """The back of the hand to the camera, 180 +- 35 deg about y, tilted +-25 deg, rolled +-40 deg."""
    r = _rotation(np.array([0.0, 1.0, 0.0]), math.radians(180.0 + rng.uniform(-35.0, 35.0)))
    r = _rotation(np.array([1.0, 0.0, 0.0]), math.radians(rng.uniform(-25.0, 25.0))) @ r
    return _rotation(np.array([0.0, 0.0, 1.0]), math.radians(rng.uniform(-40.0, 40.0))) @ r


def test_most_open_angles_exact():
    xy = np.zeros((21, 2))
    # index: MCP at the origin, PIP one unit right, DIP back 0.6 towards the MCP (folded in 2-D)
    xy[0] = [0.0, 2.0]
    xy[5], xy[6], xy[7], xy[8] = [0.0, 0.0], [1.0, 0.0], [0.4, 0.0], [0.4, 0.5]
    for d in (1, 9, 13, 17):
        xy[d:d + 4] = [[d, 0.0], [d, -1.0], [d, -2.0], [d, -3.0]]
    full = np.full(20, 1.0)
    opened = most_open_angles(xy, full)
    pip = JOINT_NAMES.index("index_pip")
    # the middle phalanx seen 0.6 of its 1.0 length rises 0.8: cos = 0.6 / 1 -> 0.927 rad
    assert opened[pip] == pytest.approx(math.acos(0.6), abs=1e-12)
    # both bones at full length: no depth opens the fold
    full[6] = 0.6
    assert most_open_angles(xy, full)[pip] == pytest.approx(0.0, abs=1e-6)
    # straight in the picture stays pi; non-finite input reads pi (no evidence of a fold)
    assert most_open_angles(xy, full)[JOINT_NAMES.index("middle_pip")] == pytest.approx(math.pi)
    xy[7] = np.nan
    assert most_open_angles(xy, full)[pip] == math.pi
    with pytest.raises(ValueError, match="lengths"):
        most_open_angles(xy, full[:5])


def test_back_views_with_flattened_depth_are_never_refused_for_their_folds():
    """Issue 22: a fist seen from the back with MediaPipe's depth flattened folds in the skeleton
    (PIPs down to ~0.03 rad at depth x0), but its bones are foreshortened, so the picture allows
    a depth that opens them: a view, not a bone folded back. Fresh tracks (prior lengths) and
    tracks that first saw the open hand (learned lengths)."""
    rng = np.random.default_rng(22)
    folds, n = 0, 0
    gate_on = QualityGate()
    for _ in range(40):
        view = back_view(rng)
        for k in (1.0, 0.2, 0.0):
            for pose in (OPEN, FIST, FIST90):
                obs = flattened(observe(pose, view), k)
                folds += joint_angles(fused_points(obs.image, obs.world, W, H)).min() < gate_on.min_joint_angle
                for learned in (False, True):
                    core = TrackerCore(TrackerConfig(filter_enabled=False))
                    if learned:
                        assert core.update([observe(OPEN, VIEWS["palm"])], 0.0, W, H).status == "tracked"
                    # judged 1 s later: the motion check allows the change of view
                    out = core.update([obs], 1.0, W, H)
                    n += 1
                    assert out.status == "tracked", (k, learned, out.reason)
    print(f"\n{n} back views accepted, {folds} of them folded below {gate_on.min_joint_angle} rad")
    assert folds >= 20  # measured 47 of the 360 views (the old gate refused them): the case is exercised


def test_synthetic_back_views_with_flattened_depth_read_open_and_fist():
    rng = np.random.default_rng(22)
    opened, fists = [], []
    for _ in range(40):
        view = back_view(rng)
        for k in (1.0, 0.2):
            opened.append(flexions(flattened(observe(OPEN, view), k)))
            fists.append(flexions(flattened(observe(FIST, view), k)))
            fists.append(flexions(flattened(observe(FIST90, view), k)))
    opened, fists = np.array(opened), np.array(fists)
    print(f"\nback views: open max {np.round(opened.max(0), 2)}  fist min {np.round(fists.min(0), 2)}")
    assert opened.max() <= 0.2
    assert fists[:, 1:].min() >= 0.7


# --- issue 22: view-aware geometry (the picture decides where the heads' depth fails) -------------

#: A thumb bent at all three joints (what the world head said about an open thumb seen from the side).
BENT_THUMB = np.concatenate([[2.1, 1.9, 1.9], OPEN[3:]])


def bent_thumb_world(view):
    """World head = the true hand with its thumb replaced by a bent one (same bones, same base)."""
    def bias(pts):
        bent = synthetic_hand(BENT_THUMB, rotation=view)
        out = pts.copy()
        out[1:5] = bent[1:5] - bent[0] + pts[0]
        return out
    return bias


def curls_of(obs, view_aware=True):
    return finger_curls(joint_angles(fused_points(obs.image, obs.world, W, H, view_aware=view_aware)))


def flex_of(obs, view_aware=True):
    return default_finger_windows().flexions(curls_of(obs, view_aware))


@pytest.mark.parametrize("view", list(VIEWS))
def test_a_thumb_straight_in_the_picture_reads_open_whatever_the_world_head_bends(view):
    obs = observe(OPEN, VIEWS[view], world_bias=bent_thumb_world(VIEWS[view]))
    truth = finger_curls(OPEN)[0]  # 2.95 rad
    world = finger_curls(joint_angles(obs.world))[0]
    before = curls_of(obs, view_aware=False)[0]
    after = curls_of(obs)[0]
    print(f"\n{view}: thumb curl truth {truth:.2f}, world head {world:.2f}, fixed-half fusion "
          f"{before:.2f}, view-aware {after:.2f} rad; flexions {np.round(flex_of(obs), 2)}")
    assert world == pytest.approx(finger_curls(BENT_THUMB)[0], abs=1e-6)  # 1.97 rad
    # measured 2.71-2.79 rad with the fixed half of the world depth, 2.81-2.87 view-aware
    assert after >= truth - 0.15 and after - before >= 0.05
    assert flexions(obs).max() <= 0.1


@pytest.mark.parametrize("view", ["back", "palm"])
@pytest.mark.parametrize("k", [0.3, 0.1, 0.0])
def test_fingers_folded_towards_or_away_from_the_camera_read_folded_when_depth_is_flattened(view, k):
    truth = default_finger_windows().flexions(finger_curls(FIST90))
    obs = flattened(observe(FIST90, VIEWS[view]), k)
    before = flex_of(obs, view_aware=False)
    after = flexions(obs)  # through the tracker: the gate accepts it
    print(f"\n{view} depth x{k}: truth {np.round(truth, 2)} fixed-half {np.round(before, 2)} "
          f"view-aware {np.round(after, 2)}")
    # truth index..pinky 1.00/1.00/0.87/0.85; fixed half down to 0.83/0.79/0.68/0.69, view-aware
    # >= 1.00/0.88/0.73/0.70 (palm view 1.00/0.98/0.81/0.76); pinky 0.699 from the back at depth x0
    assert (after[1:] >= 0.69).all(), after
    assert np.abs(after[1:] - truth[1:]).max() <= 0.16
    assert (after[1:] >= before[1:] - 0.01).all() and after[1] >= 0.99


def test_view_aware_depth_keeps_the_picture_and_the_palm():
    obs = flattened(observe(FIST90, VIEWS["back"]), 0.1)
    before = fused_points(obs.image, obs.world, W, H, view_aware=False)
    after = fused_points(obs.image, obs.world, W, H)
    # x/y from the picture (centroid kept), depth changed only on the digits beyond their base
    np.testing.assert_allclose(after.mean(0), before.mean(0), atol=1e-12)
    shift = (after - before)[:, 2]
    np.testing.assert_allclose(after[:, :2] - after[:, :2].mean(0), before[:, :2] - before[:, :2].mean(0),
                               atol=1e-12)
    palm = [0, 1, 5, 9, 13, 17]
    np.testing.assert_allclose(shift[palm] - shift[palm].mean(), 0.0, atol=1e-12)
    assert np.abs(shift - shift[0]).max() > 0.005  # the folded fingers got depth back (m)
    # batches and bad input: same shapes, non-finite stays non-finite, never raises
    batch = fused_points(np.stack([obs.image] * 3), np.stack([obs.world] * 3), W, H)
    np.testing.assert_allclose(batch, np.stack([after] * 3), atol=1e-12)
    bad = obs.world.copy()
    bad[8] = np.nan
    assert not np.isfinite(fused_points(obs.image, bad, W, H)).all()
    with pytest.raises(ValueError, match="view-aware"):
        view_aware_depth(after, obs.image, obs.world, length_range=(1.2, 1.1))


def half_open_world(view):
    """The world head keeping its bone lengths but believing the hand half open (HALF)."""
    def bias(pts):
        half = synthetic_hand(HALF, rotation=view)
        return half - half.mean(axis=0) + pts.mean(axis=0)
    return bias


@pytest.mark.parametrize("view", ["back", "palm"])
def test_a_right_angle_fist_with_a_half_open_world_head_is_not_read_more_open(view):
    """The issue-22 failure (four fingers 0.49-0.73 from the back): the picture folded, the world
    head half open, the image head's depth flattened (x0.2). NOT solved by the view-aware depth:
    the heads' depth is strong (the world head's half-open hand), so it keeps its sign; measured
    index..pinky back 0.78/0.74/0.63/0.62 -> 0.77/0.73/0.63/0.61, palm 0.72/0.69/0.61/0.61 ->
    0.78/0.65/0.60/0.60 (truth 1.00/1.00/0.87/0.85). Guarded here so that it does not get worse."""
    obs = observe(FIST90, VIEWS[view], world_bias=half_open_world(VIEWS[view]))
    img = obs.image.copy()
    z0 = img[[0, 5, 9, 13, 17], 2].mean()
    img[:, 2] = z0 + 0.2 * (img[:, 2] - z0)
    obs = HandObservation(img, obs.world, "right", 0.95)
    before = flex_of(obs, view_aware=False)
    after = flexions(obs)
    print(f"\n{view}: fixed-half {np.round(before, 2)} view-aware {np.round(after, 2)}")
    assert after[1:].min() >= 0.59 and after[1:].mean() >= before[1:].mean() - 0.02
