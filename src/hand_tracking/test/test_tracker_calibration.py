"""Calibration captures and windows, on synthetic hands with known angles, and the pipeline core
(hold, reset, rejection, live window changes)."""

import math
import os
import sys

import numpy as np
import pytest

from hand_common.contract import FINGER_NAMES
from hand_common.filters import OneEuroParams
from hand_tracking.calibration import (
    CalibrationError,
    CapturedPose,
    PoseCapture,
    StallWatch,
    capture_pose,
    windows_from_poses,
)
from hand_tracking.calibration_session import CAPTURABLE_REFUSALS, CalibrationSession, capture_angles
from hand_tracking.geometry import finger_curls, joint_angles, synthetic_hand
from hand_tracking.landmarks import HandObservation
from hand_tracking.tracker_core import (
    DEFAULT_FINGER_CURLED,
    DEFAULT_FINGER_STRAIGHT,
    REJECT_REASONS,
    TrackerConfig,
    TrackerCore,
    TrackOutput,
    default_finger_windows,
    default_joint_windows,
)

sys.path.insert(0, os.path.dirname(__file__))
from tracker_video_cache import CAL_FIST, CAL_OPEN, FIST_FRAMES, OPEN_FRAMES, video_landmarks  # noqa: E402

OPEN = np.array([3.0, 3.05, 2.9,  2.95, 2.8, 2.75,  2.9, 2.7, 2.7,  2.95, 2.75, 2.8,  2.9, 2.7, 2.7])
FIST = np.array([2.5, 2.9, 2.2,  1.7, 1.6, 1.8,  1.6, 1.7, 1.6,  1.3, 1.8, 1.7,  1.4, 1.8, 1.4])


def hand(angles, handedness="right", score=0.9):
    w = synthetic_hand(angles)
    return HandObservation(image=w + 0.5, world=w, handedness=handedness, score=score)


def captured(pose, base, rng, n=30, noise=0.01):
    cap = PoseCapture(pose, 1.0)
    for k in range(n + 1):
        cap.add(10.0 + k / n, base + rng.normal(0, noise, 15))
    assert cap.done and cap.frames == n
    return cap.result()


def test_capture_spans_its_duration_of_stream_time():
    cap = PoseCapture("open", 0.5)
    for k in range(30):
        cap.add(k / 30, OPEN)
    assert cap.done and cap.frames_total == 15 and cap.frames == 15
    np.testing.assert_allclose(cap.result().angles, OPEN)
    np.testing.assert_allclose(cap.result().curls, OPEN.reshape(5, 3).mean(1))


def test_a_slow_unpaced_source_calibrates_on_media_time():
    """A file read 20x slower than its frame rate (0.67 s of wall time per 1/30 s frame, a fake
    clock: no sleeping): the tracker core and the capture run on the capture stamps, the stall watch
    on arrivals at the source's own pace. The capture takes the same 30 frames as at full speed and
    never times out; only a source that stops (10x its pace without a frame) stalls."""
    fps, wall_per_frame = 30.0, 20.0 / 30.0
    core = TrackerCore()
    wall = 100.0
    pre_pace = wall_per_frame            # the node's last frame interval before the call
    cap = PoseCapture("open", 1.0)
    watch = StallWatch(wall, slack=2.0, pace=pre_pace)
    k = 0
    while not cap.done:
        for probe in np.linspace(wall, wall + wall_per_frame, 5)[1:]:   # the node's timer between frames
            assert not watch.stalled(probe)
        wall += wall_per_frame
        out = core.update([hand(OPEN)], 50.0 + k / fps)    # capture stamp: media time
        cap.add(50.0 + k / fps, out.raw_angles)
        watch.frame(wall)
        k += 1
    assert cap.frames_total == cap.frames == 30 and k == 31
    assert wall - 100.0 == pytest.approx(31 * wall_per_frame)     # 20.7 s of wall time for 1 s of media
    np.testing.assert_allclose(cap.result().angles, joint_angles(synthetic_hand(OPEN)), atol=1e-9)
    # the source stops: a stall only after 10x its own pace (6.7 s), not after the 2 s slack
    assert watch.limit == pytest.approx(10 * wall_per_frame)
    assert not watch.stalled(wall + 6.0) and watch.stalled(wall + 6.8)
    # a fast source (30 fps) stalls after the slack
    fast = StallWatch(0.0, slack=2.0)
    for i in range(1, 10):
        fast.frame(i / 30.0)
    assert not fast.stalled(0.3 + 1.9) and fast.stalled(0.3 + 2.1)
    with pytest.raises(ValueError):
        StallWatch(0.0, slack=0.0)


def test_capture_without_hand_is_rejected():
    cap = PoseCapture("fist", 1.0)
    for k in range(31):
        cap.add(k / 30, None)
    with pytest.raises(CalibrationError, match="no hand in any of its 30 frames"):
        cap.result()
    cap = PoseCapture("open", 1.0)
    for k in range(31):
        cap.add(k / 30, OPEN if k % 3 == 0 else None)
    with pytest.raises(CalibrationError, match="only 10 of 30 frames"):
        cap.result()
    with pytest.raises(CalibrationError, match="no frame"):
        PoseCapture("open").result()
    with pytest.raises(ValueError, match="pose"):
        PoseCapture("peace")


def test_windows_from_open_and_fist():
    rng = np.random.default_rng(3)
    o, f = captured("open", OPEN, rng), captured("fist", FIST, rng)
    cal = windows_from_poses(o, f, min_range=0.15, min_joint_range=0.3)
    np.testing.assert_allclose(cal.fingers.straight, OPEN.reshape(5, 3).mean(1), atol=0.01)
    np.testing.assert_allclose(cal.fingers.curled, FIST.reshape(5, 3).mean(1), atol=0.01)
    # per-joint windows: open/fist angles, except joints that barely move (thumb MCP: 0.15 rad)
    assert cal.joints.straight[1] == pytest.approx(3.05, abs=0.01)
    assert cal.joints.curled[1] == pytest.approx(cal.joints.straight[1] - 0.3)
    np.testing.assert_allclose(np.array(cal.joints.curled)[3:], FIST[3:], atol=0.01)
    # the captured poses read as 0 and 1
    np.testing.assert_allclose(cal.fingers.flexions(o.curls), 0.0, atol=1e-12)
    np.testing.assert_allclose(cal.fingers.flexions(f.curls), 1.0, atol=1e-12)


def test_a_digit_too_close_keeps_its_windows_and_the_others_calibrate():
    rng = np.random.default_rng(4)
    lazy_fist = FIST.copy()
    lazy_fist[9:12] = OPEN[9:12] - 0.05  # the ring finger did not close
    current_f, current_j = default_finger_windows(), default_joint_windows()
    cal = windows_from_poses(captured("open", OPEN, rng, noise=0), captured("fist", lazy_fist, rng, noise=0),
                             current_fingers=current_f, current_joints=current_j)
    assert cal.calibrated == ("thumb", "index", "middle", "pinky")
    assert list(cal.kept) == ["ring"] and cal.kept["ring"] == "open 2.83 rad, fist 2.78 rad: 0.05 apart < 0.15"
    assert cal.fingers.straight[3] == current_f.straight[3] and cal.fingers.curled[3] == current_f.curled[3]
    assert cal.joints.straight[9:12] == current_j.straight[9:12] and cal.joints.curled[9:12] == current_j.curled[9:12]
    np.testing.assert_allclose(cal.fingers.curled[1], FIST[3:6].mean(), atol=1e-9)  # index calibrated
    assert "kept the windows of ring (open 2.83 rad" in cal.describe()
    assert cal.quality == pytest.approx(min(1.0, *(OPEN[k:k + 3].mean() - FIST[k:k + 3].mean() for k in (3, 6, 12))))
    # refused only when no digit has the range, naming every one
    with pytest.raises(CalibrationError, match="too close for: thumb.*index.*middle.*ring.*pinky"):
        windows_from_poses(capture_pose("open", [OPEN]), capture_pose("fist", [OPEN]))


def test_partial_calibration_on_the_video_keeps_a_lazy_thumb(video_path):
    """Issue 22 item 7: open/fist captures of the shared video whose thumbs differ by only 0.13 rad
    (the fist capture's thumb angles set to the open capture's minus 0.13): the four fingers
    calibrate, the thumb keeps its window, and the video's fists read closed with the result."""
    lm = video_landmarks(video_path)
    core = TrackerCore()
    caps = {}
    for pose, frames in (("open", CAL_OPEN), ("fist", CAL_FIST)):
        cap = PoseCapture(pose, duration_s=len(frames) / lm.fps)
        for i in [*frames, frames[-1] + 1]:
            t = lm.media_time[i] if i < len(lm.media_time) else lm.media_time[i - 1] + 1 / lm.fps
            out = core.update(lm.hands(i) if i < len(lm.media_time) else [], t, lm.width, lm.height)
            angles, held = capture_angles(core, out, lm.width, lm.height)
            cap.add(t, angles, held)
        caps[pose] = cap.result()
    o, f = caps["open"], caps["fist"]
    assert o.frames == len(CAL_OPEN) and f.frames == len(CAL_FIST)
    lazy = f.angles.copy()
    lazy[:3] = o.angles[:3] - 0.13
    f_lazy = CapturedPose("fist", lazy, finger_curls(lazy), f.frames, f.frames_total)
    cal = windows_from_poses(o, f_lazy)
    assert cal.calibrated == FINGER_NAMES[1:] and list(cal.kept) == ["thumb"]
    assert "0.13 apart < 0.15" in cal.kept["thumb"]
    assert cal.fingers.straight[0] == DEFAULT_FINGER_STRAIGHT[0] and cal.fingers.curled[0] == DEFAULT_FINGER_CURLED[0]
    outs = [TrackerCore(TrackerConfig(cal.fingers, cal.joints)).update(lm.hands(i), lm.media_time[i], lm.width,
                                                                       lm.height) for i in range(len(lm.indices))]
    fists = np.array([outs[i].finger_flexions for i in (*FIST_FRAMES, *CAL_FIST)])
    opens = np.array([outs[i].finger_flexions for i in OPEN_FRAMES])
    print(f"\npartial calibration: fists' fingers {fists[:, 1:].min():.2f}-{fists[:, 1:].max():.2f}, "
          f"open max {opens.max(0).round(2)}")
    assert fists[:, 1:].min() >= 0.9 and opens[:, 1:].max() <= 0.25


def test_calibration_captures_clear_frames_the_gate_refuses():
    """Issue 22 item 7: a frame the gate refuses for the skeleton's size or proportions (MediaPipe
    shrinks the world palm of a hand seen from the back) is captured with its own angles and
    counted as such; a broken, out-of-frame or jumping (blurred) frame is not."""
    core = make_core()
    small = hand(OPEN)
    small = HandObservation(small.image, small.world * 0.3, "right", 0.9)   # world palm 1.7 cm
    own = joint_angles(core.points(small, 1, 1))
    for key in CAPTURABLE_REFUSALS:
        out = TrackOutput("held", small, rejected=key, reason=f"rejected ({key})")
        angles, held = capture_angles(core, out, 1, 1)
        assert held and np.array_equal(angles, own)
    assert CAPTURABLE_REFUSALS <= set(REJECT_REASONS)   # a renamed gate reason must be judged again here
    for key in set(REJECT_REASONS) - CAPTURABLE_REFUSALS:
        assert capture_angles(core, TrackOutput("held", small, rejected=key), 1, 1) == (None, False)
    assert capture_angles(core, TrackOutput("lost"), 1, 1) == (None, False)
    # through the core and a session: every frame of a 1 s capture of the small-palmed hand counts
    session = CalibrationSession()
    session.start("open", 1.0, "w", wall_now=0.0, slack_s=2.0, frame_gap_s=0.0)
    kinds = set()
    for k in range(31):
        out = core.update([small], k / 30)
        kinds.add(out.rejected)
        angles, held = capture_angles(core, out, 1, 1)
        session.add(k / 30, angles, 0.01 * k, held)
    _, result = session.stop()
    assert result.frames == 30
    np.testing.assert_allclose(result.angles, own, atol=1e-9)
    assert kinds <= {"", *CAPTURABLE_REFUSALS}   # the image-judged gate accepts the shrunk world palm
    n_held = 30 if kinds <= CAPTURABLE_REFUSALS else 0
    assert result.frames_gate_held == n_held
    reply = session.finish("open", result, min_range=0.15, min_joint_range=0.3)
    assert reply.success and f"30 frames with a hand ({30 - n_held} accepted by the gate, {n_held} it refused " \
        "as implausible but clear) of 30" in reply.message, reply.message


def test_calibrated_synthetic_hand_reads_its_pose():
    """Ground truth end to end: hands posed with known angles → calibrate → flexions."""
    open_pose = capture_pose("open", joint_angles(synthetic_hand(OPEN))[None])
    fist_pose = capture_pose("fist", joint_angles(synthetic_hand(FIST))[None])
    cal = windows_from_poses(open_pose, fist_pose)
    core = TrackerCore(TrackerConfig(cal.fingers, cal.joints, filter_enabled=False))
    for frac in (0.0, 0.25, 0.5, 1.0):
        out = core.update([hand(OPEN + frac * (FIST - OPEN))], frac)
        np.testing.assert_allclose(out.finger_flexions, frac, atol=1e-9)


# --- the per-frame pipeline ----------------------------------------------------------------------

def make_core(**kw):
    return TrackerCore(TrackerConfig(filter=OneEuroParams(1.5, 2.0, 1.0), **kw))


def test_hold_then_lose_then_reacquire():
    core = make_core(max_missed_frames=3)
    out = core.update([hand(FIST)], 0.0)
    assert out.status == "tracked" and out.publishable
    held = out.finger_flexions
    for k in range(1, 4):
        out = core.update([], k / 30)
        assert out.status == "held" and out.missed == k and out.reason == "no hand"
        np.testing.assert_array_equal(out.finger_flexions, held)
    out = core.update([], 4 / 30)
    assert out.status == "lost" and not out.publishable and out.angles is None
    # the filter was reset: the next hand is taken as it is, with no smoothing from the old pose
    out = core.update([hand(OPEN)], 5 / 30)
    assert out.status == "tracked"
    np.testing.assert_allclose(out.angles, joint_angles(synthetic_hand(OPEN)), atol=1e-9)


def test_implausible_skeleton_counts_as_a_miss():
    core = make_core()
    core.update([hand(OPEN)], 0.0)
    w = synthetic_hand(OPEN)
    w[6] = w[5]
    bad = HandObservation(w + 0.5, w, "right")
    out = core.update([bad], 1 / 30)
    assert out.status == "held" and out.reason.startswith("implausible skeleton: zero-length bone")
    w = synthetic_hand(OPEN)
    w[3, 0] = np.nan
    out = core.update([HandObservation(w, w, "right")], 2 / 30)
    assert out.status == "held" and "non-finite landmark(s): thumb_ip" in out.reason
    assert np.isfinite(out.finger_flexions).all()


def test_hand_preference_and_score():
    core = make_core(hand_preference="left", filter_enabled=False)
    out = core.update([hand(OPEN, "right", 0.99), hand(FIST, "left", 0.6)], 0.0)
    assert out.hand.handedness == "left" and out.finger_flexions[1] > 0.9
    out = core.update([hand(OPEN, "right", 0.99)], 0.1)
    assert out.reason == "no left hand"
    core.config = core.config.with_changes(hand_preference="any")
    out = core.update([hand(FIST, "left", 0.6), hand(OPEN, "right", 0.99)], 0.2)
    assert out.hand.handedness == "right"


def test_window_change_acts_on_the_next_frame():
    core = make_core()
    a = core.update([hand(FIST)], 0.0).finger_flexions[1]
    cfg = core.config
    core.config = cfg.with_changes(finger_windows=cfg.finger_windows.replace("index", curled=0.5))
    b = core.update([hand(FIST)], 1 / 30).finger_flexions[1]
    curl = joint_angles(synthetic_hand(FIST))[3:6].mean()
    assert b == pytest.approx((cfg.finger_windows.straight[1] - curl) / (cfg.finger_windows.straight[1] - 0.5))
    assert b < a


def test_image_landmarks_option_uses_pixels():
    w = synthetic_hand(FIST, rotation=np.array([[0, 0, 1.0], [0, 1, 0], [-1, 0, 0]]))
    h = HandObservation(image=w / np.array([640, 480, 640]) + 0.3, world=np.zeros((21, 3)), handedness="right")
    world_core = make_core()
    assert "collapsed palm" in world_core.update([h], 0.0).reason
    img_core = make_core(landmark_mode="image")
    out = img_core.update([h], 0.0, 640, 480)
    assert out.status == "tracked"
    np.testing.assert_allclose(out.raw_angles, joint_angles(w), atol=1e-9)


def test_config_validation():
    with pytest.raises(ValueError, match="hand_preference"):
        TrackerConfig(hand_preference="both")
    with pytest.raises(ValueError, match="max_missed_frames"):
        TrackerConfig(max_missed_frames=-1)
    assert TrackerConfig().finger_windows.names == FINGER_NAMES
    assert all(s > c for s, c in zip(TrackerConfig().joint_windows.straight, TrackerConfig().joint_windows.curled))
    assert math.pi >= max(TrackerConfig().joint_windows.straight)
