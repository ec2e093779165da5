"""The console's pure state (hand_console.state, keys, robots): keep-last-1 slots, the render rate
limit, the 10 s history, the gate verdict, the figures from diagnostics, calibration undo."""

import math
import pathlib
import threading

import numpy as np
import pytest

from hand_console import keys
from hand_console.robots import ROBOT_VIEWS, UrdfPose, pose_moved, robot_views
from hand_console.state import (
    MAX_RENDER_HZ,
    CalibrationLog,
    FlexionHistory,
    HandInfo,
    LatencyWindow,
    LatestSlot,
    RenderClock,
    SafePoseCounter,
    figures,
    gate_view,
    markdown_table,
    slider_specs,
    update_trips,
)

SRC = pathlib.Path(__file__).resolve().parents[2]


def test_latest_slot_keeps_only_the_newest_and_counts_the_replaced():
    slot: LatestSlot[int] = LatestSlot()
    assert slot.take() is None
    for i in range(5):
        slot.put(i)
    assert slot.take() == 4 and slot.take() is None
    assert (slot.received, slot.rendered, slot.dropped) == (5, 1, 4)


def test_latest_slot_from_two_threads_loses_nothing_silently():
    slot: LatestSlot[int] = LatestSlot()
    taken = []

    def consume():
        for _ in range(20000):
            if (x := slot.take()) is not None:
                taken.append(x)

    t = threading.Thread(target=consume)
    t.start()
    for i in range(20000):
        slot.put(i)
    t.join()
    if (x := slot.take()) is not None:
        taken.append(x)
    assert taken == sorted(taken) and taken[-1] == 19999
    assert slot.rendered + slot.dropped == slot.received == 20000


def test_render_clock_never_exceeds_15_hz_and_does_not_burst_after_a_slow_render():
    with pytest.raises(ValueError):
        RenderClock(0.0)
    clock = RenderClock(100.0)
    assert clock.rate_hz == MAX_RENDER_HZ == 15.0
    t, renders = 0.0, []
    while t < 2.0:  # a loop polling every millisecond on a simulated clock
        if clock.wait_s(t) == 0.0:
            clock.rendered(t)
            renders.append(t)
        t += 0.001
    assert 28 <= len(renders) <= 30
    assert min(np.diff(renders)) >= 1 / 15 - 1e-9
    clock.rendered(10.0)  # a render that started late: the next is a full period after it
    assert clock.wait_s(10.0) == pytest.approx(1 / 15)


def test_flexion_history_keeps_10_s_and_restarts_when_time_goes_back():
    h = FlexionHistory(window_s=10.0)
    for k in range(30 * 15):  # 15 s at 30 Hz
        h.add(100.0 + k / 30, [k / 450] * 5)
    t, v = h.series()
    assert t[-1] == 0.0 and t[0] >= -10.0 - 1e-9 and t[0] < -9.9
    assert v.shape == (len(t), 5) and v[-1, 0] == pytest.approx(449 / 450)
    h.add(50.0, [0.1] * 5)  # a scrub back in a replay
    assert len(h) == 1 and h.latest() == (0.1,) * 5
    with pytest.raises(ValueError):
        h.add(51.0, [0.1] * 4)


def test_latency_window_percentiles_ignore_stamps_from_another_clock():
    w = LatencyWindow()
    assert w.percentiles_ms() == (None, None)
    for ms in range(1, 101):
        w.add(ms / 1000)
    w.add(1e9)  # a replayed recorded stamp
    p50, p95 = w.percentiles_ms()
    assert p50 == pytest.approx(50.5) and p95 == pytest.approx(95.05)


def _hand(accepted, rejection="", handedness="right", score=0.9, quality=0.8):
    return HandInfo(handedness, score, accepted, quality, rejection, np.zeros((21, 2)))


def test_gate_view_tracked_held_lost_with_reasons():
    assert gate_view([_hand(True)]).state == "tracked"
    assert gate_view([_hand(True)]).text() == "tracked: right hand (score 0.90, quality 0.80)"
    held = gate_view([_hand(False, "motion")], "held")
    assert (held.state, held.reason) == ("held", "refused: motion")
    lost = gate_view([], "lost")
    assert lost.state == "lost" and lost.text() == "lost: no hand in the frame"
    # a refused frame while the tracker already reports lost (after max_missed_frames)
    assert gate_view([_hand(False, "low_score", quality=0.2), _hand(False, "outside_image", quality=0.5)],
                     "lost").reason == "refused: outside_image"


def test_figures_read_the_diagnostics_through_the_named_keys():
    diag = {
        f"{keys.TRACKER_NODE}: tracking": {keys.TRACKER_TRACKING: "held", keys.TRACKER_FRAME_RATE: "29.5",
                                            keys.TRACKER_DETECTION_RATE: "0.900", keys.TRACKER_FRAMES: "300",
                                            keys.TRACKER_DROPPED: "2", keys.TRACKER_INFERENCE_P95: "21.25",
                                            keys.TRACKER_REJECTED[0]: "3", keys.TRACKER_REJECTED[4]: "4",
                                            keys.TRACKER_CALIBRATION: "calibrated", keys.TRACKER_HELD_TOTAL: "12",
                                            dict(keys.TRACKER_HELD)["no_hand"]: "9",
                                            dict(keys.TRACKER_HELD)["motion"]: "3",
                                            dict(keys.TRACKER_HELD)["low_score"]: "0"},
        f"{keys.TWIN_NODE}: physics": {keys.TWIN_RTF: "0.98", keys.TWIN_WATCHDOG: "ok"},
    }
    rows = dict(figures(diag, (30.0, 41.5), {"twin": 1}))
    assert rows["tracker"] == "held" and rows["tracker fps (last second)"] == "29.5 Hz"
    assert rows["hand detected"] == "90 %"
    assert rows["capture→flexion p50 / p95"] == "30.0 / 41.5 ms" and rows["inference p95"] == "21.2 ms"
    assert rows["frames / dropped"] == "300 / 2" and rows["gate refusals"] == "7"
    assert rows["twin real-time factor"] == "0.98" and rows["safe-pose trips (while a page is open)"] == "twin 1"
    # whose receive times the percentiles are, or why there is none, in brackets after them
    assert dict(figures(diag, (None, None), {}, "no flexion in the last 10 s"))["capture→flexion p50 / p95"] == \
        "- / - ms (no flexion in the last 10 s)"
    assert rows["calibration"] == "calibrated"
    assert rows["held frames"] == "12 (no_hand 9, motion 3)"  # causes that held no frame are not listed
    assert dict(figures({}, (None, None), {}))["tracker"] == "no diagnostics yet"
    assert dict(figures({}, (None, None), {}))["held frames"] == "-"
    assert markdown_table([("a", "b|c")]).splitlines()[-1] == "| a | b/c |"


def test_safe_pose_trips_count_ok_to_stale_transitions_only():
    c = SafePoseCounter()
    twin = f"{keys.TWIN_NODE}: physics"
    for state in ("stale", "ok", "ok", "stale", "stale", "ok", "stale"):
        update_trips(c, {twin: {keys.TWIN_WATCHDOG: state}})
    assert c.trips == {"twin": 2}
    servo = "servo_driver: serial link"
    for stale in ("False", "True", "False"):
        update_trips(c, {servo: {keys.SERVO_STALE: stale}})
    assert c.trips["servo_driver"] == 1


def test_calibration_log_undo_only_after_a_completed_calibration():
    log = CalibrationLog()
    with pytest.raises(ValueError):
        log.undo_values()
    log.before = {"index_curled_angle": 1.2}
    log.after = {"index_curled_angle": 1.5}
    log.step = "done"
    assert log.undo_values() == {"index_curled_angle": 1.2}
    assert log.table(["index_curled_angle", "pinky_curled_angle"]) == [
        ("index_curled_angle", "1.200 → 1.500"), ("pinky_curled_angle", "- → -")]


def test_slider_specs_pick_the_windows_then_the_filter_in_pattern_order():
    described = [("filter_beta", 0.0, 1000.0, ""), ("index_curled_angle", 0.0, math.pi, ""),
                 ("index_straight_angle", 0.0, math.pi, ""), ("frame_timeout_s", 0.05, 60.0, "")]
    specs = slider_specs("hand_tracker", described, [r"index_(straight|curled)_angle", r"filter_beta"])
    assert [s.name for s in specs] == ["index_curled_angle", "index_straight_angle", "filter_beta"]
    assert specs[0].step == 0.01 and specs[2].step == 0.1 and specs[2].hi == 1000.0


def test_every_diagnostic_key_is_one_the_nodes_publish():
    for package, names in keys.KEYS_BY_PACKAGE.items():
        text = "".join(p.read_text() for p in (SRC / package / package).glob("*.py"))
        for k in names:
            assert f'"{k}"' in text, f"{package} publishes no diagnostic key {k!r}"
    tracker = "".join(p.read_text() for p in (SRC / "hand_tracking" / "hand_tracking").glob("*.py"))
    from hand_tracking.tracker_core import HOLD_CAUSES, REJECT_REASONS
    from hand_tracking.tracker_diagnostics import RunState, TrackerReport, build_status

    assert keys.TRACKER_REJECTED == tuple(f"rejected_{r}" for r in REJECT_REASONS)
    assert [c for c, _ in keys.TRACKER_HELD] == list(HOLD_CAUSES) and "no_hand" in HOLD_CAUSES
    assert "rejected_{k}" not in tracker  # the keys come from hand_tracking.interface
    # the tracker's own status, read by the console's figures: held counts per cause and in total
    st = build_status(TrackerReport("hand_tracker", "active", "video:x", 1.0, RunState(0.0).snapshot(1.0), 0,
                                    dict.fromkeys(REJECT_REASONS, 0), "parameters",
                                    holds={**dict.fromkeys(HOLD_CAUSES, 0), "no_hand": 5, "joint_angle": 2}))
    rows = dict(figures({st.name: st.values}, (None, None), {}))
    assert rows["held frames"] == "7 (no_hand 5, joint_angle 2)" and rows["gate refusals"] == "0"


def test_a_pose_is_sent_again_only_when_a_joint_moved():
    assert pose_moved(None, np.zeros(3), 1e-3)  # nothing sent yet
    assert not pose_moved(np.zeros(3), np.array([0.0, 0.0009, -0.001]), 1e-3)
    assert pose_moved(np.zeros(3), np.array([0.0, 0.0, -0.0011]), 1e-3)
    assert pose_moved(np.zeros(3), np.zeros(4), 1e-3)  # another robot's vector
    assert not pose_moved(np.zeros(0), np.zeros(0), 1e-3)


def test_urdf_pose_keeps_absent_joints_clamps_to_limits_and_counts_unknown_names():
    pose = UrdfPose(["a", "b", "c"], [(0.0, 1.0), None, (0.2, 0.5)])
    assert pose.cfg.tolist() == [0.0, 0.0, 0.2]  # 0 outside c's limits: its lower limit
    assert pose.update(["a", "x"], [2.0, 1.0]).tolist() == [1.0, 0.0, 0.2]
    assert pose.update(["b", "c"], [-3.0, float("nan")]).tolist() == [1.0, -3.0, 0.2]
    assert pose.unknown == {"x"}


def test_every_profile_has_a_robot_whose_urdf_loads_and_whose_mimic_joints_follow():
    import yourdfpy

    assert set(ROBOT_VIEWS) >= {"sim", "rviz", "hardware", "two_hands", "dex", "arm"}
    with pytest.raises(KeyError):
        robot_views("nope")
    mimics_checked = 0
    for views in ROBOT_VIEWS.values():
        for view in views:
            assert view.topic_name().startswith("/")
            urdf = yourdfpy.URDF.load(str(view.urdf()), load_meshes=False, build_scene_graph=True)
            pose = UrdfPose.for_urdf(urdf)
            assert pose.names and set(pose.names) <= set(urdf.joint_map)
            for m in (j for j in urdf.joint_map.values() if j.mimic is not None and j.type == "revolute"):
                assert m.name not in pose.names  # yourdfpy computes it from its leader
                lead = pose.names.index(m.mimic.joint)
                lo, hi = pose._limits[lead] or (0.0, 1.0)
                q = lo + 0.6 * (hi - lo)
                urdf.update_cfg(pose.update([m.mimic.joint], [q]))
                angle = m.mimic.multiplier * q + (m.mimic.offset or 0.0)
                axis = np.asarray(m.axis, float) / np.linalg.norm(m.axis)
                k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
                rot = np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k  # Rodrigues
                expected = (m.origin if m.origin is not None else np.eye(4)).copy()
                expected[:3, :3] = expected[:3, :3] @ rot
                got = urdf.get_transform(m.child, m.parent)
                np.testing.assert_allclose(got, expected, atol=1e-9)
                mimics_checked += 1
    assert mimics_checked > 0  # the dexterous hand's URDF has mimic joints


def test_robot_panel_rows_servo_kapandji_arm():
    from hand_console.state import arm_rows, kapandji_rows, servo_rows

    assert servo_rows({}) == []
    diag = {"servo_driver: serial link": {keys.SERVO_LINK: "open", keys.SERVO_PULSES: "1500 1620 1710 1800 1900",
                                          keys.SERVO_CHANNELS: "0 1 2 3 4", keys.SERVO_FRAMES_SENT: "120",
                                          keys.SERVO_FRAMES_ACKED: "118", keys.SERVO_FRAMES_UNACKED: "2",
                                          keys.SERVO_BOARD_REJECTS: "0", keys.SERVO_LOSS_RATE: "0.017",
                                          keys.SERVO_STALE: "False"}}
    rows = dict(servo_rows(diag))
    assert rows["servo link"] == "open"
    assert rows["pulses (us), channels 0 1 2 3 4"] == "thumb 1500 · index 1620 · middle 1710 · ring 1800 · pinky 1900"
    assert rows["frames sent / acked / unacked"] == "120 / 118 / 2"
    assert rows["servo safe pose"] == "no"
    diag["servo_driver: serial link"][keys.SERVO_STALE] = "True"
    assert dict(servo_rows(diag))["servo safe pose"].startswith("held")
    assert kapandji_rows(8.0, -1.0) == [("Kapandji human", "8.0 / 10"), ("Kapandji robot", "-")]
    assert kapandji_rows(None, float("nan"))[1] == ("Kapandji robot", "-")
    assert arm_rows(None) == [("arm", "no state yet")]
    assert dict(arm_rows('{"state": "ESTOP", "gesture": "FIST", "mode": "cartesian", "gripper_closed": true}')) == \
        {"arm": "e-stop latched", "gesture": "FIST", "mode": "cartesian", "gripper": "closed"}
    assert dict(arm_rows('{"state": "ARMED", "ik_error_mm": 1.5}'))["IK error"] == "1.5 mm"
    assert arm_rows("{not json")[0][1].startswith("unreadable state")


def test_arm_state_words_cover_the_state_machine():
    from arm_teleop.state_machine import ArmState
    from hand_console.state import ARM_STATE_WORDS

    assert set(ARM_STATE_WORDS) == {s.value for s in ArmState}


def test_robot_panels_resolve_their_topics_and_images_decode():
    from hand_console.robots import ROBOT_PANELS, image_rgb, robot_panel

    for profile, panel in ROBOT_PANELS.items():
        for t in [panel.twin_image, panel.arm_state, *(panel.kapandji or ())]:
            if t is not None:
                assert panel.resolve(t).startswith("/"), (profile, t)
    assert robot_panel("dex").resolve(robot_panel("dex").kapandji[0]) == "/dex_hand/kapandji/human"
    assert robot_panel("arm").resolve(robot_panel("arm").arm_state) == "/arm/teleop_state"
    assert robot_panel("operator") == type(robot_panel("sim"))()  # nothing but the URDF
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    padded = np.concatenate([rgb.reshape(2, 9), np.zeros((2, 3), np.uint8)], axis=1)  # step 12
    assert (image_rgb(3, 2, "rgb8", 12, padded.tobytes()) == rgb).all()
    assert (image_rgb(3, 2, "bgr8", 9, rgb[:, :, ::-1].tobytes()) == rgb).all()
    assert image_rgb(3, 2, "mono8", 3, bytes(6)).shape == (2, 3, 3)
    with pytest.raises(ValueError, match="encoding"):
        image_rgb(3, 2, "16UC1", 6, bytes(12))
    with pytest.raises(ValueError, match="bytes"):
        image_rgb(3, 2, "rgb8", 9, bytes(10))
