"""Every finite source ends the run, and a broken one fails it: an image folder ends like a video
(exit 0, every image recorded); an unreadable image or a video truncated mid-file (generated here
from the shared video) exits non-zero naming the frame where it broke."""

from __future__ import annotations

import subprocess
import sys

import cv2
import pytest

from hand_common import contract
from hand_common.bag import topic_counts

FRAMES = 40  # taken from the start of the shared video (an open hand, detected in every frame)


def runner(source: str, out, timeout: float = 180) -> tuple[int, str]:
    p = subprocess.run([sys.executable, "-m", "hand_bringup.runner", "rviz", "--source", source,
                        "-p", "tracker.realtime=false", "-p", "tracker.model_complexity=0", "--out", str(out)],
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


@pytest.fixture(scope="module")
def frames(video_path) -> list:
    cap = cv2.VideoCapture(str(video_path))
    out = []
    for _ in range(FRAMES):
        ok, img = cap.read()
        assert ok
        out.append(cv2.resize(img, (640, 360)))
    cap.release()
    return out


def test_an_image_folder_ends_the_run_with_every_frame_recorded(frames, tmp_path):
    d = tmp_path / "images"
    d.mkdir()
    for i, img in enumerate(frames[:10]):
        cv2.imwrite(str(d / f"frame_{i:03d}.png"), img)
    code, out = runner(f"images:{d}", tmp_path / "run")
    assert code == 0, out[-3000:]
    assert topic_counts(tmp_path / "run" / "rviz_bag")[contract.TOPIC_LANDMARKS][1] == 10
    assert f"{contract.TOPIC_LANDMARKS}: published 10, recorded 10" in out


def test_an_unreadable_image_fails_the_run_naming_the_frame(frames, tmp_path):
    d = tmp_path / "images"
    d.mkdir()
    for i, img in enumerate(frames[:6]):
        cv2.imwrite(str(d / f"frame_{i:03d}.png"), img)
    (d / "frame_003.png").write_bytes(b"not a png")
    code, out = runner(f"images:{d}", tmp_path / "run")
    assert code == 1, out[-3000:]
    assert "1 bad frames" in out and "frame 3:" in out and "frame_003.png: not a readable image" in out


def test_an_all_unreadable_image_folder_is_an_error_not_a_loop(tmp_path):
    d = tmp_path / "images"
    d.mkdir()
    for i in range(3):
        (d / f"frame_{i}.png").write_bytes(b"junk")
    code, out = runner(f"images:{d}", tmp_path / "run", timeout=120)
    assert code == 1, out[-3000:]
    assert "none of its 3 images is readable" in out


def test_a_video_truncated_mid_file_fails_the_run_naming_the_frame(frames, tmp_path):
    full = tmp_path / "clip.avi"  # MJPG in AVI: the header declares the frame count, the index is at the end
    w = cv2.VideoWriter(str(full), cv2.VideoWriter_fourcc(*"MJPG"), 30.0, (640, 360))
    for img in frames:
        w.write(img)
    w.release()
    data = full.read_bytes()
    cut = tmp_path / "truncated.avi"
    cut.write_bytes(data[: len(data) // 2])
    cap = cv2.VideoCapture(str(cut))  # the oracle: where OpenCV's decoder stops on the cut file
    declared = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
    readable = 0
    while cap.read()[0]:
        readable += 1
    cap.release()
    assert declared == FRAMES and 0 < readable < FRAMES - 1
    code, out = runner(f"video:{cut}", tmp_path / "run")
    assert code == 1, out[-3000:]
    assert f"decoding stopped at frame {readable} of {FRAMES}" in out
    assert topic_counts(tmp_path / "run" / "rviz_bag")[contract.TOPIC_LANDMARKS][1] == readable
