"""The demo path end to end on a 2-second clip of the shared video: tracker → twin (rendered
after the run from the bag) + joint_mapper + servo driver on the simulated board, all as processes; then the
side-by-side video, the bag and summary.json."""

from __future__ import annotations

import json
import subprocess
import sys

import cv2
import numpy as np

from hand_bringup.demo_video import draw_hud, draw_skeleton, side_by_side
from hand_common import contract
from hand_common.bag import topic_counts

CLIP_FRAMES = 60


def test_drawing_marks_the_frame_where_landmarks_and_bars_are():
    frame = np.zeros((480, 640, 3), np.uint8)
    landmarks = np.full((21, 2), np.nan)
    landmarks[5], landmarks[6] = (0.25, 0.5), (0.75, 0.5)  # one bone across the middle
    draw_skeleton(frame, landmarks)  # NaN points are skipped, not drawn at (0, 0)
    assert frame[240, 320].sum() > 0 and frame[5:20, 5:20].sum() == 0
    hud = np.zeros((480, 640, 3), np.uint8)
    draw_hud(hud, [0.0, 1.0, 0.5, float("nan"), 0.2], 30.0, "TRACKING", 12)
    assert hud[:34].any()  # status line
    wide = side_by_side(np.zeros((720, 1280, 3), np.uint8), np.zeros((480, 640, 3), np.uint8))
    assert wide.shape == (480, 853 + 640 - 1, 3)  # 1280x720 scaled to 853x480, total width made even


def test_demo_on_a_short_clip(video_path, tmp_path):
    cap = cv2.VideoCapture(str(video_path))
    clip = tmp_path / "clip.mp4"
    writer = None
    for _ in range(CLIP_FRAMES):
        ok, frame = cap.read()
        assert ok
        if writer is None:
            writer = cv2.VideoWriter(str(clip), cv2.VideoWriter_fourcc(*"mp4v"), 30.0,
                                     (frame.shape[1], frame.shape[0]))
        writer.write(frame)
    writer.release()
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "hand_bringup.cli", "demo", "--video", str(clip),
                           "--out", str(out)], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["detection"] == f"{CLIP_FRAMES}/{CLIP_FRAMES}"
    # paced like the camera that recorded it (30 fps): never faster; how close to 30 it stays on a
    # loaded machine is a speed figure for bench_pipeline, not for a test
    assert 0 < summary["tracker_fps_over_run"] < 40
    assert summary["live_calibration"]["flexion_messages"] == CLIP_FRAMES  # the deep subscriber: all
    # the latency probe is keep-last-1 (what an actuator sees): it may skip a message, never queue
    assert CLIP_FRAMES / 2 < summary["latency_capture_to_target_flexions_ms"]["n"] <= CLIP_FRAMES
    assert summary["frames_dropped"] == 0  # a paced file without drop_late_frames keeps every frame
    assert summary["inference_ms_p95"] > 0
    assert summary["twin_real_time_factor"] > 0
    assert set(summary["safe_pose_trips"]) == {"twin", "servo_driver"}
    assert {"tracker", "twin", "joint_mapper", "servo_driver", "runner"} <= set(summary["cpu_seconds"])
    # the twin rendered after the run from the bag's /hand_twin/joint_states, one per tracked frame
    assert summary["twin_frames_rendered"] == CLIP_FRAMES
    servo = summary["servo"]
    assert servo["frames_acked"] > 0 and servo["board_rejected_total"] == 0
    counts = topic_counts(out / "demo_bag")
    assert counts[contract.TOPIC_LANDMARKS][1] == CLIP_FRAMES
    assert counts[contract.TOPIC_JOINT_STATES][1] == CLIP_FRAMES
    video = cv2.VideoCapture(str(out / "demo.mp4"))
    assert int(video.get(cv2.CAP_PROP_FRAME_COUNT)) == CLIP_FRAMES
    ok, first = video.read()
    assert ok and first.shape[0] == 480
    # right half: the twin's rendering (a lit scene), not the blank placeholder
    assert first[:, first.shape[1] // 2 + 10:].mean() > 40
    # the console's page at the run's middle, replayed from the bag: a 1400 px wide screenshot
    shot = cv2.imread(str(out / "console.png"))
    assert shot is not None and shot.shape[1] == 1400, proc.stdout[-2000:]
    assert "console.png: the operator console's page at t" in proc.stdout


def test_dex_demo_opposition_episodes():
    from hand_bringup.dex_demo import opposition_episodes

    human = np.array([0, 3, 3, 3, 0, 4, 4, 0, 5, 6, 7, 9, 2, 3, 3, 3])
    assert opposition_episodes(human) == [(1, 3), (8, 11), (13, 15)]   # runs of >= 3 frames at >= 3
    assert opposition_episodes(human, min_frames=2) == [(1, 3), (5, 6), (8, 11), (13, 15)]
    assert opposition_episodes(np.zeros(5)) == []
