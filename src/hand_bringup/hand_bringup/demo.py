"""``make demo``: the whole pipeline on a real recording, with live calibration, a bag, a video
and a summary.

tracker (video, real-time pacing) → twin (headless, physics only) + joint_mapper + servo driver
on the simulated board, all as separate processes (:mod:`hand_bringup.runner`). The twin's video
is rendered AFTER the run from the recorded ``/hand_twin/joint_states`` (deterministic, zero live
cost: the hot path camera → landmarks → flexion never competes with rendering); live rendering
stays available with ``-p twin.render_rate_hz=30 -p twin.publish_image=true`` (a viewer). While it runs,
the demo calibrates the tracker live through its ``~/calibrate`` service: the open hand at frames
122-140, the fist at 262-272 (facts of the shared video, ../shared/media/README.md; on another
video there is no schedule and the tracker keeps its configured windows).
Outputs in ``out/``: ``demo.mp4`` (camera + skeleton + HUD | twin), ``demo_bag/`` (rosbag2 MCAP),
``summary.json``, ``logs/``, and ``console.png``: the operator console's page (hand_console) at one
moment of the run, replayed from ``demo_bag`` after the run and captured by a headless chromium (a
browser during the run would take CPU from the hot path: bench_pipeline's ``console`` scenario);
without a browser (tools/bootstrap.sh installs chromium) the demo says so and fails.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import threading
import time
from typing import Any

import numpy as np

from hand_bringup.bringup import TRACKER, TWIN
from hand_bringup.runner import _video_frame_count
from hand_bringup.runner_core import RunConfig, Runner
from hand_common import contract
from hand_common.stats import percentiles_ms, rate_hz
from hand_tracking import interface as tracker_iface

#: sha256 of ../shared/media/human_hand_video.mp4 (its README): the frame facts below are its own.
SHARED_VIDEO_SHA256 = "d306af128862940fc6e3c737a42ec6b00a137fff1c37b10805fe2c143c62ddb8"
#: Live calibration schedule on the shared video: (pose, first frame index, capture seconds).
#: Open hand near frame 135 (in frames 13-31 the thumb is tucked, so not the first frames); fist
#: near frame 270, held for about half a second.
CALIBRATION_SCHEDULE = (("open", 122, 0.6), ("fist", 262, 0.35))
#: The moment of ``console.png`` on the shared video: its last fist (frames 610-620), after the
#: live calibration (another video: the middle of the run).
CONSOLE_SHOT_FRAME = 615
#: Frame windows of the shared video where the summary reports mean flexions: open hand before the
#: calibration is applied, open hand and fist after it.
SUMMARY_WINDOWS = {"open_hand_before (frames 0-11)": (0, 12), "open_hand_after (frames 295-305)": (295, 306),
                   "open_hand_after (frames 580-590)": (580, 591), "fist_after (frames 610-620)": (610, 621)}


def is_shared_video(path: str) -> bool:
    """True for the shared recording (by content), whose frame facts the demo schedule uses."""
    import hashlib

    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest() == SHARED_VIDEO_SHA256


def default_video() -> str:
    root = os.environ.get("HAND_TELEOP_ROOT", os.getcwd())
    return os.path.join(root, "..", "shared", "media", "human_hand_video.mp4")


def _window_params() -> list[str]:
    return [f"{f}_{end}_angle" for f in contract.FINGER_NAMES for end in ("straight", "curled")]


class LiveCalibration:
    """Calls the tracker's calibrate service when the video reaches each scheduled frame, in a
    thread (the call blocks for the capture), and records windows and flexions around it."""

    def __init__(self, schedule=CALIBRATION_SCHEDULE):
        self.schedule = list(schedule)
        self.results: list[dict[str, Any]] = []
        self.windows_before: dict[str, float] | None = None
        self.windows_after: dict[str, float] | None = None
        self.applied_at_frame: int | None = None
        self._busy = False

    def tick(self, runner: Runner) -> None:
        if self._busy or not self.schedule or not runner.monitor.frames:
            return
        pose, frame, duration = self.schedule[0]
        if runner.monitor.frames[-1][0] < frame:
            return
        self.schedule.pop(0)
        self._busy = True
        threading.Thread(target=self._calibrate, args=(runner, pose, duration), daemon=True).start()

    def _calibrate(self, runner: Runner, pose: str, duration: float) -> None:
        from hand_msgs.srv import Calibrate

        try:
            if self.windows_before is None:
                self.windows_before = runner.probe.get_parameters(contract.TRACKER_NODE, _window_params())
            start = runner.monitor.frames[-1][0]
            req = Calibrate.Request(pose=Calibrate.Request.OPEN if pose == "open" else Calibrate.Request.FIST,
                                    duration_s=duration)
            res = runner.probe.call(Calibrate, f"/{contract.TRACKER_NODE}/calibrate", req, timeout=duration + 20)
            self.results.append({"pose": pose, "from_frame": start, "to_frame": runner.monitor.frames[-1][0],
                                 "success": bool(res.success), "message": res.message, "frames": int(res.frames),
                                 "captured_curl_rad": [round(float(v), 4) for v in res.captured_curl_rad]})
            if res.success and pose == "fist":
                self.applied_at_frame = runner.monitor.frames[-1][0]
                self.windows_after = runner.probe.get_parameters(contract.TRACKER_NODE, _window_params())
            print(f"[demo] live calibration {pose}: {'ok' if res.success else 'REJECTED'} {res.message}", flush=True)
        except Exception as exc:  # noqa: BLE001 - a failed calibration is reported, the demo goes on
            self.results.append({"pose": pose, "success": False, "message": f"{type(exc).__name__}: {exc}"})
        finally:
            self._busy = False


def run_demo(args: argparse.Namespace, out: pathlib.Path, overrides: dict, params_files: dict) -> int:
    video = os.path.abspath(args.video or default_video())
    n_frames = _video_frame_count(video)
    # real-time pacing like a camera, but every frame processed (a recording has no "later" frame)
    overrides.setdefault(TRACKER, {}).update({tracker_iface.PARAM_SOURCE: f"video:{video}",
                                              tracker_iface.PARAM_REALTIME: True,
                                              tracker_iface.PARAM_DROP_LATE_FRAMES: False})
    twin = overrides.setdefault(TWIN, {})
    for k, v in {"render_rate_hz": 0.0, "publish_image": False}.items():  # no live rendering unless asked
        twin.setdefault(k, v)
    cfg = RunConfig(profile="demo", out_dir=out, overrides=overrides, params_files=params_files,
                    record=not args.no_record, sim_board=True, video_frames=n_frames, idle_stop_s=5.0,
                    duration_s=args.duration)
    runner = Runner(cfg)
    shared = is_shared_video(video)
    calibration = LiveCalibration(CALIBRATION_SCHEDULE if shared else ())
    code = 0
    print(f"[demo] {video}: {n_frames} frames; outputs in {out}", flush=True)
    if not shared:
        print("[demo] not the shared video: no live calibration schedule (use `runner calibrate`)", flush=True)
    try:
        runner.start()
        runner.connect()
        runner.bring_up()
        print(f"[demo] active: {', '.join(s.name for s in runner.specs)}", flush=True)
        runner.supervise(on_tick=calibration.tick)
        time.sleep(0.5)  # let the last commands reach the twin and the board
    except KeyboardInterrupt:
        print("\n[demo] interrupted: stopping (actuators to safe pose first)", flush=True)
        code = 130
    except Exception as exc:  # noqa: BLE001
        print(f"[demo] error: {exc}", flush=True)
        code = 1
    finally:
        runner.stop()
    if code == 0 or code == 130:
        summary = write_outputs(runner, calibration, video, n_frames, out, shared)
        print(json.dumps(summary, indent=2))
        if summary["frames_with_hand"] == 0:
            print(f"[demo] error: no hand detected in any of the {n_frames} frames", flush=True)
            code = code or 1
    if code in (0, 130) and (out / "demo_bag").exists():
        code = console_screenshot(out, video, shared) or code
    if runner.recording_problems:  # the bag lost messages: say which and fail (runner.recording has the counts)
        print("[demo] error: the bag lost messages:\n  " + "\n  ".join(runner.recording_problems), flush=True)
        code = code or 1
    return code


# --- after the run -------------------------------------------------------------------------------
def console_screenshot(out: pathlib.Path, video: str, shared: bool) -> int:
    """``out/console.png``: the console's page replaying ``out/demo_bag`` at :data:`CONSOLE_SHOT_FRAME`
    (shared video) or the run's middle; 0, or 1 with the reason printed when it cannot be made."""
    from hand_console.replay import screenshot

    try:
        shot = screenshot(out / "demo_bag", out / "console.png", frame_index=CONSOLE_SHOT_FRAME if shared else None,
                          video=video)
    except (RuntimeError, ValueError, TimeoutError, OSError) as exc:
        print(f"[demo] error: no console.png (the operator console's page): {exc}", flush=True)
        return 1
    print(f"[demo] {shot['png']}: the operator console's page at t {shot['t_s']:.2f} s (frame {shot['frame_index']}), "
          "replayed from demo_bag", flush=True)
    return 0


def tracker_diagnostics(runner: Runner) -> dict[str, str]:
    """The tracker's last /diagnostics values (empty before the first)."""
    for name, entry in runner.monitor.diagnostics.items():
        if contract.TRACKER_NODE in name:
            return entry
    return {}


def _float(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return round(f, 3) if math.isfinite(f) else None


def write_outputs(runner: Runner, calibration: LiveCalibration, video: str, n_frames: int,
                  out: pathlib.Path, shared: bool = False) -> dict[str, Any]:
    from hand_common import bag

    twin_states: list[tuple[float, list[str], list[float]]] = []  # (stamp s, joint names, positions)
    frames_by_index: dict[int, Any] = {}
    flexions_by_stamp: dict[int, list[float]] = {}
    counts: dict[str, int] = {}
    bag_path = out / "demo_bag"
    if bag_path.exists():
        for topic, _, msg in bag.read_messages(bag_path):
            counts[topic] = counts.get(topic, 0) + 1
            if topic == contract.TOPIC_LANDMARKS and msg.hands:
                frames_by_index[int(msg.hands[0].frame_index)] = msg
            elif topic == contract.TOPIC_TARGET_FLEXIONS:
                key = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
                d = dict(zip(msg.name, msg.position))
                flexions_by_stamp[key] = [float(d[f]) for f in contract.FINGER_NAMES]
            elif topic == contract.TOPIC_TWIN_JOINT_STATES:
                twin_states.append((msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9, list(msg.name),
                                    list(msg.position)))
    twin_states.sort(key=lambda s: s[0])
    video_out, twin_rendered = compose_video(video, out / "demo.mp4", frames_by_index, flexions_by_stamp,
                                             twin_states, calibration.applied_at_frame)
    detected = len(frames_by_index)
    diag = tracker_diagnostics(runner)
    summary = {
        "video": video,
        "frames": n_frames,
        "frames_processed": len(runner.monitor.frames),
        "frames_with_hand": detected,
        "detection": f"{detected}/{n_frames}",
        "detection_rate": round(detected / n_frames, 4) if n_frames else None,
        # frames processed per second over the whole run ((n - 1) / span of the runner's receive
        # times of /hand/landmarks): not the console's "tracker fps (last second)", which is the
        # tracker's frame_rate_hz diagnostic over its last 1 s diagnostics period
        "tracker_fps_over_run": rate_hz([f[1] for f in runner.monitor.frames]),
        "frames_dropped": int(diag["dropped_frames"]) if diag.get("dropped_frames", "").isdigit() else None,
        # as a keep-last-1 subscriber (what an actuator sees) receives them
        "latency_capture_to_target_flexions_ms": percentiles_ms(runner.monitor.flexion_latency),
        "inference_ms_p95": _float(diag.get("inference_ms_p95_total")),
        "inference_ms_mean": _float(diag.get("inference_ms_mean_total")),
        "twin_real_time_factor": None if runner.monitor.twin_rtf is None else _float(runner.monitor.twin_rtf),
        "safe_pose_trips": runner.monitor.safe_pose_trips,
        "cpu_seconds": runner.cpu_seconds,
        "twin_frames_rendered": twin_rendered,  # after the run, from the bag's /hand_twin/joint_states
        "servo": servo_summary(runner),
        "live_calibration": calibration_summary(calibration, runner, SUMMARY_WINDOWS if shared else {}),
        "bag": str(bag_path),
        "bag_message_counts": counts,
        "demo_video": video_out,
        "node_failure": runner.failure,
        "recording": runner.recording,  # per topic: published (where the publisher says), recorded, monitor
        "recording_problems": runner.recording_problems,
    }
    with open(out / "summary.json", "w") as f:
        json.dump(summary, f, indent=2)
    return summary


SERVO_FIELDS = ("frames_sent", "frames_acked", "stale_events", "frames_unacked", "board_rejected_total", "board_crc_errors",
                "board_length_errors", "board_range_errors", "board_clamped", "board_watchdog_trips",
                "commands", "commands_ignored", "reconnects", "link_errors", "last_pulses_us")


def servo_summary(runner: Runner) -> dict[str, Any]:
    """Frames sent/acked/rejected as the servo driver's /diagnostics last reported them (the board's
    counters come back in its STATUS replies; see hand_servo_driver's README). With the simulated
    board, the ``board_*`` counters are the board's own, from its log over the whole run: the
    driver's last report can precede the board's last events (a watchdog trip after the driver
    stopped) and a STATUS only carries the counters of the current boot."""
    out: dict[str, Any] = {}
    for name, entry in runner.monitor.diagnostics.items():
        if contract.SERVO_DRIVER_NODE in name:
            out = {k: entry[k] for k in SERVO_FIELDS if k in entry}
            for k, v in out.items():
                if isinstance(v, str) and v.isdigit():
                    out[k] = int(v)
            out["status"] = entry.get("_message")
            break
    log = runner.cfg.out_dir / "servo_board_pulses.jsonl"
    if runner.board is not None and log.exists():
        from hand_servo_driver.sim_board import summarize_log

        board = summarize_log(str(log))
        rejected = board["rejected"]
        out.update(board_watchdog_trips=board["watchdog_trips"], board_boots=board["boots"],
                   board_rejected_total=board["rejected_frames_or_bytes_total"],
                   board_crc_errors=rejected.get("crc_errors", 0), board_length_errors=rejected.get("length_errors", 0),
                   board_range_errors=rejected.get("range_errors", 0), board_clamped=board["frames_clamped"],
                   board_frames_applied=board["frames_applied"], board_counters_from="board log")
    return out


def calibration_summary(cal: LiveCalibration, runner: Runner,
                        windows: dict[str, tuple[int, int]]) -> dict[str, Any]:
    """Captures, windows before/after, and the mean flexion (thumb..pinky) over each named frame
    window [lo, hi) (the shared video's open-hand and fist frames)."""
    by_frame = {i: runner.monitor.flexions[stamp] for i, _, _, stamp in runner.monitor.frames if stamp in runner.monitor.flexions}

    def mean_at(lo: int, hi: int) -> list[float] | None:
        vals = [by_frame[i] for i in range(lo, hi) if i in by_frame]
        return [round(float(x), 3) for x in np.mean(vals, axis=0)] if vals else None

    return {
        "captures": cal.results,
        "applied_at_frame": cal.applied_at_frame,
        "windows_before": cal.windows_before,
        "windows_after": cal.windows_after,
        "mean_flexion": {name: mean_at(lo, hi) for name, (lo, hi) in windows.items()},
        "flexion_messages": len(runner.monitor.flexions),
    }


def compose_video(video: str, path: pathlib.Path, landmarks_by_index: dict[int, Any],
                  flexions_by_stamp: dict[int, list[float]],
                  twin_states: list[tuple[float, list[str], list[float]]],
                  calibrated_at: int | None) -> tuple[str | None, int]:
    """camera frame + skeleton + HUD | the twin rendered (now, after the run) in the last recorded
    state published before the next camera frame was captured (capture stamp + one frame period):
    what the twin showed while that frame was current. ``twin_states``: (stamp s, joint names,
    positions rad) sorted by stamp. Returns (written path or None, twin frames rendered)."""
    import cv2

    from hand_bringup.demo_video import VideoSink, draw_hud, draw_skeleton, side_by_side

    cap = cv2.VideoCapture(video)
    fps_in = cap.get(cv2.CAP_PROP_FPS) or 30.0
    stamps = np.array([s[0] for s in twin_states])
    renderer = _twin_renderer() if twin_states else None
    sink = VideoSink(str(path), fps_in)
    blank = np.zeros((480, 640, 3), np.uint8)
    capture_times: list[float] = []
    last_flex = None
    index = rendered = 0
    try:
        while True:
            ok, frame = cap.read()
            if not ok:
                break
            msg = landmarks_by_index.get(index)
            state = "LOST"
            twin = blank
            if msg is not None:
                hand = msg.hands[0]
                draw_skeleton(frame, np.array([(p.x, p.y) for p in hand.image_landmarks]))
                stamp = hand.header.stamp.sec + hand.header.stamp.nanosec * 1e-9
                capture_times.append(stamp)
                last_flex = flexions_by_stamp.get(hand.header.stamp.sec * 10**9 + hand.header.stamp.nanosec,
                                                  last_flex)
                state = "TRACKING"
                if renderer is not None:
                    k = max(int(np.searchsorted(stamps, stamp + 1.0 / fps_in, side="right")) - 1, 0)
                    _, names, positions = twin_states[k]
                    twin = cv2.cvtColor(renderer.render(names, positions), cv2.COLOR_RGB2BGR)
                    rendered += 1
            fps = rate_hz(capture_times[-30:])
            note = "calibrated live (open + fist)" if calibrated_at is not None and index >= calibrated_at else (
                "default windows (uncalibrated)")
            draw_hud(frame, last_flex, fps, state, index, note)
            sink.write(side_by_side(frame, twin))
            index += 1
    finally:
        cap.release()
        if renderer is not None:
            renderer.close()
    return sink.close(), rendered


def _twin_renderer():
    """The twin's scene (hand_description's default, camera ``front``, the twin's YAML image size)
    for rendering recorded joint states in this thread."""
    from hand_twin_mujoco.model import load_hand
    from hand_twin_mujoco.render import JointStateRenderer, RenderConfig

    return JointStateRenderer(load_hand(camera="front"), RenderConfig(640, 480, "front"))
