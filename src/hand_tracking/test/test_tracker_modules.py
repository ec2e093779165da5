"""The tracker node's pure parts, without rclpy: the calibration session, the run counters and the
diagnostics status built from them, the parameter checks."""

import numpy as np
import pytest

from hand_common.contract import FINGER_NAMES, JOINT_NAMES
from hand_tracking.calibration import CalibrationError
from hand_tracking.calibration_session import CalibrationSession, as_parameters
from hand_tracking.tracker_diagnostics import ERROR, OK, WARN, RunState, TrackerReport, build_status
from hand_tracking.tracker_params import (
    PARAMS,
    config_from,
    defaults,
    finger_param,
    mediapipe_config,
    parameter_problem,
)

OPEN = np.array([3.0, 3.05, 2.9,  2.95, 2.8, 2.75,  2.9, 2.7, 2.7,  2.95, 2.75, 2.8,  2.9, 2.7, 2.7])
FIST = np.array([2.5, 2.9, 2.2,  1.7, 1.6, 1.8,  1.6, 1.7, 1.6,  1.3, 1.8, 1.7,  1.4, 1.8, 1.4])


def capture(session, pose, angles, t0, n=20, fps=30.0):
    """Feed one capture of 1 s (n frames at fps, then the frame that closes the window)."""
    assert session.start(pose, n / fps, f"waiter-{pose}", wall_now=0.0, slack_s=2.0, frame_gap_s=0.0) is None
    done = False
    for k in range(n + 1):
        done = session.add(t0 + k / fps, angles, wall_now=0.1 * k)
    assert done
    waiter, result = session.stop()
    assert waiter == f"waiter-{pose}" and session.running is None
    return result


def test_calibration_session_open_then_fist_gives_the_windows():
    s = CalibrationSession()
    assert s.state == "parameters"
    first = s.finish("open", capture(s, "open", OPEN, 10.0), min_range=0.15, min_joint_range=0.3)
    assert first.success and first.calibration is None and first.frames == 20
    assert "now call with pose=FIST" in first.message and s.state == "open captured"
    second = s.finish("fist", capture(s, "fist", FIST, 20.0), min_range=0.15, min_joint_range=0.3)
    assert second.success and second.calibration is not None and second.message.startswith("windows set (fist 20 frames with a hand (20 accepted by the gate, 0 it refused as implausible but clear) of 20): ")
    params = dict(as_parameters(second.calibration))
    assert len(params) == 2 * len(FINGER_NAMES) + 2
    assert len(params["joint_straight_angles"]) == len(JOINT_NAMES)
    for i, f in enumerate(FINGER_NAMES):  # the windows are the captured curls
        assert params[finger_param(f, "straight")] == pytest.approx(second.calibration.fingers.straight[i])
        assert params[finger_param(f, "straight")] - params[finger_param(f, "curled")] > 0.15 or f == "thumb"
    s.applied()
    assert s.state == "calibrated"
    s.applying = True
    s.windows_changed()
    assert s.state == "calibrated"
    s.applying = False
    s.windows_changed()
    assert s.state == "parameters"


def test_calibration_session_refusals():
    s = CalibrationSession()
    assert s.start("open", 1.0, None, wall_now=0.0, slack_s=2.0, frame_gap_s=0.0) is None
    assert s.start("fist", 1.0, None, wall_now=0.0, slack_s=2.0, frame_gap_s=0.0) == \
        "a open capture is already running"
    assert s.stalled(1.9) is None
    err = s.stalled(2.1)
    assert isinstance(err, CalibrationError) and "no frame arrived for 2.0 s (0 frames seen)" in str(err)
    _, result = s.stop(ended=True)
    assert isinstance(result, CalibrationError) and str(result).endswith("(the source ended)")
    out = s.finish("open", result, min_range=0.15, min_joint_range=0.3)
    assert not out.success and out.curls is None and out.warning.startswith("calibration: ")
    # a fist not curled min_range more than the open hand: the fist is discarded, the open hand kept
    s.finish("open", capture(s, "open", OPEN, 0.0), min_range=0.15, min_joint_range=0.3)
    close = s.finish("fist", capture(s, "fist", FIST, 5.0), min_range=1.5, min_joint_range=0.3)
    assert not close.success and "fist capture discarded, the open capture is kept" in close.message
    assert set(s.captured) == {"open"}


def test_run_state_watchdog_and_status():
    run = RunState(now=100.0)
    ms = {"decode": 1.0, "inference": 30.0, "geometry_filter": 0.5, "publish": 0.2}
    assert not run.frame_done(100.1, "tracked", "", None, ms)
    run.flexions_sent()
    assert not run.frame_done(100.2, "lost", "no_hand", None, ms)
    assert run.frame_gap() == pytest.approx(0.1)
    assert not run.check_watchdog(100.5, timeout=1.0)
    assert run.check_watchdog(101.3, timeout=1.0)
    assert not run.check_watchdog(101.4, timeout=1.0)  # trips once
    report = TrackerReport(node_name="hand_tracker", state="active", source="video:x", period_s=2.0,
                           run=run.snapshot(101.4), dropped_frames=3, rejections={"outside": 2},
                           calibration="parameters", holds={"no_hand": 4, "motion": 1},
                           holds_skipped_unconfirmed=1)
    s = build_status(report)
    assert s.level == ERROR and s.message == "no frame for 1.2 s (frame_timeout_s)"
    assert s.name == "hand_tracker: tracking" and s.hardware_id == "video:x"
    v = s.values
    assert (v["frames"], v["frames_tracked"], v["flexions_published"], v["watchdog"]) == ("2", "1", "1", "timeout")
    assert (v["frame_rate_hz"], v["detection_rate"], v["dropped_frames"], v["rejected_outside"]) == \
        ("1.00", "0.500", "3", "2")
    assert v["inference_ms"] == "30.000" and v["tracking"] == "lost"
    # every hold and its cause, by name
    assert (v["held_no_hand"], v["held_motion"], v["held_total"], v["held_skipped_unconfirmed"]) == \
        ("4", "1", "5", "1")
    assert run.frame_done(101.5, "held", "no_hand", None, ms)  # frames are back: clears the watchdog
    again = build_status(TrackerReport("hand_tracker", "active", "video:x", 1.0, run.snapshot(101.6), 0, {},
                                       "parameters"))
    assert again.level == OK and again.message == "holding last pose (no_hand)"
    assert again.values["frames"] == "3" and again.values["frame_rate_hz"] == "1.00"  # a new period
    run.finish()
    done = build_status(TrackerReport("hand_tracker", "active", "video:x", 1.0, run.snapshot(102.0), 0, {},
                                      "parameters"))
    assert done.level == WARN and done.values["watchdog"] == "finished"
    # one hand: the followed identity and the switches are reported; two hands: swaps instead
    assert done.values["followed_hand"] == "none" and done.values["hand_switches"] == "0"
    one = build_status(TrackerReport("hand_tracker", "active", "video:x", 1.0, run.snapshot(102.5), 0, {},
                                     "parameters", followed_hand="1 (left)", hand_switches=1))
    assert one.values["followed_hand"] == "1 (left)" and one.values["hand_switches"] == "1"
    two = build_status(TrackerReport("hand_tracker", "active", "video:x", 1.0, run.snapshot(103.0), 0, {},
                                     "parameters", two_hands=True, sides=("right", "left")))
    assert "hand_switches" not in two.values and two.values["identity_swaps"] == "0"


def test_two_hands_status_counts_flexions_per_side():
    """Two hands: the per-side flexion topics' counts, so that the runner can check them (issue 27)."""
    run = RunState(now=0.0)
    ms = {"decode": 1.0, "inference": 30.0, "geometry_filter": 0.5, "publish": 0.2}
    for i in range(3):
        run.frame_done(0.1 * (i + 1), "tracked", "", {"left": "tracked", "right": "lost"}, ms)
        run.flexions_sent("left")
    run.flexions_sent("right")
    v = build_status(TrackerReport("hand_tracker", "active", "video:x", 1.0, run.snapshot(0.4), 0, {},
                                   "parameters", two_hands=True, sides=("left", "right"))).values
    assert (v["flexions_published"], v["flexions_published_left"], v["flexions_published_right"]) == ("4", "3", "1")
    assert v["tracking_left"] == "tracked" and v["tracking_right"] == "lost"



def test_dropped_frames_outlive_the_prefetch_queue():
    """The node closes its prefetch queue when it leaves active; the frames that queue dropped
    stay in the run's count (an inactive tracker reported dropped_frames 0 after dropping 409 of
    621, and the runner's end check read that), until the next activation resets the run."""
    run = RunState(now=0.0)
    assert run.dropped_frames(409) == 409  # the open queue's count
    run.prefetch_closed(409)  # deactivate: the queue is gone
    assert run.dropped_frames(0) == 409
    run.prefetch_closed(3)  # closed queues add up
    assert run.dropped_frames(2) == 414
    run.reset(now=1.0)
    assert run.dropped_frames(0) == 0

def test_parameter_problems():
    v = defaults()
    assert {s.name for s in PARAMS} == set(v)
    assert parameter_problem(v, set()) is None
    config_from(v)
    assert parameter_problem({**v, "source": "video:/x.mp4"}, {"source"}) is None
    assert "source" in parameter_problem({**v, "source": "webcam"}, {"source"})
    short = {**v, "joint_curled_angles": [1.0] * 3}
    assert parameter_problem(short, {"joint_curled_angles"}).startswith("joint_curled_angles needs 15")
    assert "hand_preference must be one of" in parameter_problem({**v, "hand_preference": "both"},
                                                                 {"hand_preference"})
    # playback_rate: recordings only, and never with the recorded stamps it would contradict
    fast = {**v, "source": "video:/x.mp4", "playback_rate": 2.0}
    assert parameter_problem(fast, {"playback_rate"}) is None
    assert parameter_problem({**fast, "source": "bag:/b"}, {"source"}) is None
    assert "applies to recordings" in parameter_problem({**fast, "source": "camera:0"}, {"playback_rate"})
    assert "applies to recordings" in parameter_problem({**fast, "source": "topic"}, {"source"})
    assert "use 'now'" in parameter_problem({**fast, "source": "bag:/b", "replay_stamps": "recorded"},
                                            {"replay_stamps"})
    assert parameter_problem({**v, "replay_stamps": "recorded"}, {"replay_stamps"}) is None


def test_parameter_table_rules():
    """Live rule, defaults from the config dataclasses, unit suffixes, renames."""
    from hand_tracking.landmarks import MediaPipeConfig
    from hand_tracking.tracker_core import TrackerConfig
    from hand_tracking.tracker_params import PARAM_BY_NAME, RENAMED

    assert {s.name for s in PARAMS if not s.live} == {"source", "hands", "playback_rate"}
    cfg, mp = TrackerConfig(), MediaPipeConfig()
    assert config_from(defaults()) == cfg
    assert mediapipe_config(defaults()) == mp
    assert PARAM_BY_NAME["gate_min_score"].default == cfg.gate.min_score
    assert PARAM_BY_NAME["filter_min_cutoff_hz"].default == cfg.filter.min_cutoff
    assert PARAM_BY_NAME["max_missed_frames"].default == cfg.max_missed_frames
    for old, new in RENAMED.items():
        assert new in PARAM_BY_NAME and old not in PARAM_BY_NAME, (old, new)
    # the suffix rule: time, frequency and pixel parameters say their unit in the name
    for s in PARAMS:
        text = s.description
        if any(u in text for u in (", s.", ", s of", "(s)", ", Hz.", ", Hz (", ", px.", ", px (")):
            assert s.name.endswith(("_s", "_hz", "_px")), s.name


def test_calibration_request_check():
    from hand_tracking.calibration_session import check_request

    ok = dict(open_code=0, fist_code=1)
    assert check_request("active", 0, 0.0, 1.0, **ok) == ("open", 1.0, "")
    assert check_request("active", 1, 2.5, 1.0, **ok) == ("fist", 2.5, "")
    assert check_request("inactive", 0, 0.0, 1.0, **ok)[2] == "node is inactive: activate it before calibrating"
    assert check_request("active", 7, 0.0, 1.0, **ok)[2] == "pose must be OPEN (0) or FIST (1)"
    assert "duration_s must be in (0, 30]" in check_request("active", 0, 31.0, 1.0, **ok)[2]
    assert "duration_s must be in (0, 30]" in check_request("active", 0, float("nan"), 1.0, **ok)[2]
