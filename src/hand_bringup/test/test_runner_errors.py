"""The runner's answers to a user's mistakes: one line naming the problem, quickly, no traceback."""

from __future__ import annotations

import subprocess
import sys
import time


def runner(*args: str, timeout: float = 90) -> tuple[int, str, float]:
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "hand_bringup.runner", *args], capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout + p.stderr, time.monotonic() - t0


def test_missing_video_is_one_line(tmp_path):
    code, out, _ = runner("sim", "--video", str(tmp_path / "none.mp4"), "--out", str(tmp_path))
    assert code == 2
    assert "runner: error: cannot open video" in out and "Traceback" not in out


def test_unknown_node_key_names_the_profile_nodes(tmp_path, video_path):
    code, out, _ = runner("sim", "--video", str(video_path), "-p", "trakcer.mirror=true", "--out", str(tmp_path))
    assert code == 2
    assert "no node ['trakcer'] in profile 'sim'" in out and "'tracker'" in out


def test_misspelt_parameter_is_refused_before_anything_moves(tmp_path, video_path):
    code, out, _ = runner("sim", "--video", str(video_path), "-p", "tracker.index_curled_angel=1.2",
                          "-p", "twin.render_rate=0.0", "--out", str(tmp_path))
    assert code == 1
    assert "/hand_tracker declares no parameter ['index_curled_angel']" in out


def test_a_node_that_dies_at_start_up_is_reported_with_its_reason(tmp_path, video_path):
    code, out, took = runner("sim", "--video", str(video_path), "-p", "tracker.index_curled_angle=9.0",
                             "-p", "twin.render_rate=0.0", "--out", str(tmp_path))
    assert code == 1
    assert "tracker exited" in out and "index_curled_angle" in out  # the node's own reason, quoted
    assert took < 45  # not the 60 s service timeout
