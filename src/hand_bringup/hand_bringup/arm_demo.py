"""``make arm-demo``: the gesture-teleoperated SO-101 on a recording, as separate ROS processes.

The `arm` bringup profile (hand_bringup.bringup) through hand_tracking's embedded runner:
tracker (video, paced like a 30 fps camera, every frame kept) → arm_teleop → arm_twin (MuJoCo,
headless, frames recorded) and arm_driver on the **simulated STS3215 bus** (a pty, both opt-ins
on, so every command really crosses the protocol). Outputs in ``out/arm/``:

- ``arm_demo.mp4``: camera frame + skeleton + HUD (state, mode, gesture, gripper, arming) | the
  twin frame that first reflected that camera frame's command;
- ``arm_bag/``: rosbag2 (MCAP) with the tracker topics and ``/arm/teleop_state``,
  ``/arm/joint_commands``, ``/arm_twin/joint_states``, ``/arm/joint_states``;
- ``summary.json``: state transitions (frame, state, reason), gripper-closed frames, command
  counts, bus writes, driver diagnostics; ``logs/``, ``sim_bus_writes.jsonl``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import sys
import time
from typing import Any

import numpy as np

from arm_teleop import topics
from hand_bringup.bringup import ARM_DRIVER, ARM_TELEOP, ARM_TWIN, TRACKER
from hand_bringup.runner import _video_frame_count
from hand_bringup.runner_core import RunConfig, Runner
from hand_bringup.runner_monitor import MONITOR_QOS
from hand_common import contract
from hand_common.processes import NodeProcess
from hand_tracking import interface as tracker_iface

ARM_TOPICS = {topics.TELEOP_STATE: "std_msgs/msg/String", topics.JOINT_COMMANDS: "sensor_msgs/msg/JointState",
              topics.TWIN_JOINT_STATES: "sensor_msgs/msg/JointState",
              topics.DRIVER_JOINT_STATES: "sensor_msgs/msg/JointState"}


class ArmRunner(Runner):
    """hand_tracking's Runner for the `arm` profile; also records the arm's topics and runs the
    simulated STS3215 bus the driver talks to."""

    def __init__(self, cfg: RunConfig, sim_bus: bool = True):
        super().__init__(cfg)
        self.sim_bus = sim_bus
        self.bus_proc: NodeProcess | None = None
        self.states: list[dict[str, Any]] = []

    def start(self) -> None:
        if self.sim_bus:
            link = str(self.cfg.out_dir / "so101_bus.tty")
            self.bus_proc = NodeProcess.module("arm_teleop.sim_bus", "--link", link, "--log",
                                               str(self.cfg.out_dir / "sim_bus_writes.jsonl"),
                                               log_path=str(self.log_dir / "sim_sts_bus.log"))
            end = time.monotonic() + 15
            while not os.path.exists(link):
                if not self.bus_proc.alive() or time.monotonic() > end:
                    raise RuntimeError(f"simulated bus did not come up:\n{self.bus_proc.tail()}")
                time.sleep(0.05)
            self.cfg.overrides.setdefault(ARM_DRIVER, {}).update(
                {"real_hardware": True, "allow_motion": True, "port": link})
        super().start()

    def _start_recording(self) -> None:
        super()._start_recording()
        for topic, type_name in ARM_TOPICS.items():
            self.recorder.record(topic, type_name)

    def connect(self) -> None:
        from std_msgs.msg import String

        super().connect()
        self.probe.node.create_subscription(String, topics.TELEOP_STATE, lambda m: self.states.append(json.loads(m.data)),
                                            contract.qos(MONITOR_QOS))

    def progress_line(self) -> str:
        s = self.states[-1] if self.states else {}
        return (super().progress_line().split("  flexion")[0]
                + f"  arm {s.get('state', '-')} {s.get('mode', '')} {s.get('gesture', '')} gripper {s.get('gripper', '-')}")

    def stop(self) -> None:
        super().stop()
        if self.bus_proc is not None:
            self.bus_proc.stop()


def run_demo(video: str, out: pathlib.Path, mode: str = "cartesian", record: bool = True) -> int:
    out.mkdir(parents=True, exist_ok=True)
    n_frames = _video_frame_count(video)
    twin_dir = out / "twin_frames"
    overrides = {
        # the tracker's own model_complexity (config/tracker.yaml, 1), the one the gesture
        # thresholds are measured with (arm_teleop.gestures)
        TRACKER: {tracker_iface.PARAM_SOURCE: f"video:{video}", tracker_iface.PARAM_REALTIME: True,
                  tracker_iface.PARAM_DROP_LATE_FRAMES: False},
        ARM_TWIN: {"render_rate_hz": 30.0, "record_dir": str(twin_dir)},
        ARM_TELEOP: {"control_mode": mode},
    }
    cfg = RunConfig(profile="arm", out_dir=out, overrides=overrides, record=record, sim_board=False,
                    video_frames=n_frames, idle_stop_s=5.0)
    runner = ArmRunner(cfg)
    code = 0
    print(f"[arm-demo] {video}: {n_frames} frames, {mode} mode; outputs in {out}", flush=True)
    try:
        runner.start()
        runner.connect()
        runner.bring_up()
        print(f"[arm-demo] active: {', '.join(s.name for s in runner.specs)}", flush=True)
        runner.supervise()
        time.sleep(0.5)
    except KeyboardInterrupt:
        print("\n[arm-demo] interrupted: stopping (actuators first)", flush=True)
        code = 130
    except Exception as exc:  # noqa: BLE001
        print(f"[arm-demo] error: {exc}", flush=True)
        code = 1
    finally:
        runner.stop()
    if code in (0, 130):
        summary = write_outputs(runner, video, n_frames, out, twin_dir)
        print(json.dumps({k: v for k, v in summary.items() if k != "states_per_frame"}, indent=2))
    return code


# --- after the run -------------------------------------------------------------------------------
def read_twin_frames(twin_dir: pathlib.Path) -> list[dict[str, Any]]:
    path = twin_dir / "frames.csv"
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return [dict(r, command_stamp=float(r["command_stamp"])) for r in csv.DictReader(f)]


def write_outputs(runner: ArmRunner, video: str, n_frames: int, out: pathlib.Path,
                  twin_dir: pathlib.Path) -> dict[str, Any]:
    from hand_common import bag

    landmarks: dict[int, Any] = {}
    states: dict[int, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    bag_path = out / "arm_bag"
    if bag_path.exists():
        for topic, _, msg in bag.read_messages(bag_path):
            counts[topic] = counts.get(topic, 0) + 1
            if topic == contract.TOPIC_LANDMARKS and msg.hands:
                landmarks[int(msg.hands[0].frame_index)] = msg
            elif topic == topics.TELEOP_STATE:
                d = json.loads(msg.data)
                if d.get("frame", -1) >= 0:
                    states[int(d["frame"])] = d
    if not states:  # no bag: what the runner saw live
        states = {int(d["frame"]): d for d in runner.states if d.get("frame", -1) >= 0}
    transitions = []
    prev = None
    for i in sorted(states):
        if states[i]["state"] != prev:
            transitions.append({"frame": i, "state": states[i]["state"], "gesture": states[i]["gesture"]})
            prev = states[i]["state"]
    closed = [i for i in sorted(states) if states[i]["gripper_closed"] and states[i]["commanding"]]
    twin_rows = read_twin_frames(twin_dir)
    video_out = compose_video(video, out / "arm_demo.mp4", landmarks, states, twin_rows, twin_dir)
    writes = []
    log = out / "sim_bus_writes.jsonl"
    if log.exists():
        writes = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    driver = {k: v for name, v in runner.monitor.diagnostics.items() if topics.DRIVER_NODE in name for k in [name]}
    summary = {
        "video": video, "frames": n_frames, "frames_with_state": len(states),
        "transitions": transitions,
        "gripper_closed_frames": [closed[0], closed[-1]] if closed else None,
        "gripper_closed_count": len(closed),
        "commands": counts.get(topics.JOINT_COMMANDS, 0),
        "bag_message_counts": counts,
        "bus_writes": {"total": len(writes),
                       "goal_position": sum(1 for w in writes if w["addr"] == 42),
                       "gripper_goal": sum(1 for w in writes if w["addr"] == 42 and w["id"] == 6),
                       "torque": [w["data"][0] for w in writes if w["addr"] == 40][-6:]},
        "driver_diagnostics": driver,
        "twin_frames_rendered": len(twin_rows),
        "demo_video": video_out,
        "node_failure": runner.failure,
    }
    with open(out / "summary.json", "w") as f:
        json.dump(summary, f, indent=2)
    return summary


STATE_COLOURS = {"ARMED": (0, 200, 0), "DISABLED": (160, 160, 160), "HOLD": (0, 165, 255), "MANUAL": (255, 160, 0),
                 "ESTOP": (0, 0, 255)}


def draw_arm_hud(frame: np.ndarray, state: dict[str, Any] | None, frame_index: int) -> None:
    """State (colour-coded), mode, gesture, gripper bar (open → closed) and arming progress, in place."""
    import cv2

    h, w = frame.shape[:2]
    s = h / 480.0
    font = cv2.FONT_HERSHEY_SIMPLEX
    cv2.rectangle(frame, (0, 0), (w, int(64 * s)), (0, 0, 0), -1)
    if state is None:
        cv2.putText(frame, f"no teleop state   frame {frame_index}", (int(8 * s), int(26 * s)), font, 0.6 * s,
                    (0, 0, 255), max(1, int(1.5 * s)), cv2.LINE_AA)
        return
    colour = STATE_COLOURS.get(state["state"], (255, 255, 255))
    cv2.putText(frame, state["state"], (int(8 * s), int(28 * s)), font, 0.9 * s, colour, max(2, int(2 * s)), cv2.LINE_AA)
    cv2.putText(frame, f"mode {state['mode']}   gesture {state['gesture']}   frame {frame_index}",
                (int(170 * s), int(26 * s)), font, 0.55 * s, (255, 255, 255), max(1, int(1.5 * s)), cv2.LINE_AA)
    # gripper bar: full = closed
    x0, y0, bw, bh = int(8 * s), int(40 * s), int(200 * s), int(16 * s)
    cv2.putText(frame, "gripper", (x0, y0 + bh - 2), font, 0.45 * s, (255, 255, 255), 1, cv2.LINE_AA)
    bx = x0 + int(62 * s)
    cv2.rectangle(frame, (bx, y0), (bx + bw, y0 + bh), (90, 90, 90), 1)
    g = state.get("gripper")
    lo, hi = -0.174533, 1.74533  # display only; the teleop node reads the real range from the model
    if g is not None:
        frac = float(np.clip((hi - g) / (hi - lo), 0, 1))
        cv2.rectangle(frame, (bx, y0), (bx + int(frac * bw), y0 + bh), (0, 200, 255) if state["gripper_closed"]
                      else (200, 200, 0), -1)
    cv2.putText(frame, "CLOSED" if state["gripper_closed"] else "open", (bx + bw + int(8 * s), y0 + bh - 2), font,
                0.5 * s, (255, 255, 255), 1, cv2.LINE_AA)
    if state["state"] == "DISABLED" and state.get("arming", 0) > 0:
        ax = bx + bw + int(90 * s)
        cv2.putText(frame, "arming", (ax, y0 + bh - 2), font, 0.45 * s, (255, 255, 255), 1, cv2.LINE_AA)
        cv2.rectangle(frame, (ax + int(55 * s), y0), (ax + int(55 * s) + int(state["arming"] * 100 * s), y0 + bh),
                      (0, 200, 0), -1)


def compose_video(video: str, path: pathlib.Path, landmarks: dict[int, Any], states: dict[int, dict[str, Any]],
                  twin_rows: list[dict[str, Any]], twin_dir: pathlib.Path) -> str | None:
    """camera + skeleton + arm HUD | the twin frame that first reflected the frame's command."""
    import cv2

    from hand_bringup.demo_video import VideoSink, draw_skeleton, side_by_side

    cap = cv2.VideoCapture(video)
    fps = cap.get(cv2.CAP_PROP_FPS) or 30.0
    stamps = np.array([r["command_stamp"] for r in twin_rows]) if twin_rows else np.empty(0)
    blank = np.zeros((480, 640, 3), np.uint8)
    sink = VideoSink(str(path), fps)
    last_twin = blank
    index = 0
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        msg = landmarks.get(index)
        twin = last_twin
        if msg is not None:
            hand = msg.hands[0]
            draw_skeleton(frame, np.array([(p.x, p.y) for p in hand.image_landmarks]))
            stamp = hand.header.stamp.sec + hand.header.stamp.nanosec * 1e-9
            if stamps.size:
                later = np.flatnonzero(np.nan_to_num(stamps, nan=-1.0) >= stamp - 1e-6)
                k = int(later[0]) if later.size else stamps.size - 1
                img = cv2.imread(str(twin_dir / twin_rows[k]["file"]))
                twin = img if img is not None else last_twin
        last_twin = twin
        draw_arm_hud(frame, states.get(index), index)
        sink.write(side_by_side(frame, twin))
        index += 1
    cap.release()
    return sink.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="arm_demo", description=__doc__.split("\n\n")[0])
    root = os.environ.get("HAND_TELEOP_ROOT", os.getcwd())
    ap.add_argument("--video", default=os.path.join(root, "..", "shared", "media", "human_hand_video.mp4"))
    ap.add_argument("--out", default="out/arm")
    ap.add_argument("--mode", choices=["cartesian", "joint"], default="cartesian")
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args(argv)
    try:
        code = run_demo(os.path.abspath(args.video), pathlib.Path(args.out).resolve(), args.mode, not args.no_record)
    except (OSError, ValueError, RuntimeError) as exc:  # e.g. a missing video: one line, no traceback
        print(f"arm_demo: error: {exc}", file=sys.stderr)
        code = 2
    sys.exit(code)


if __name__ == "__main__":
    main()
