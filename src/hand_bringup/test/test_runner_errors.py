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
                          "-p", "twin.render_rate_hz=0.0", "--out", str(tmp_path))
    assert code == 1
    assert "/hand_tracker declares no parameter ['index_curled_angel']" in out


def test_a_node_that_dies_at_start_up_is_reported_with_its_reason(tmp_path, video_path):
    code, out, took = runner("sim", "--video", str(video_path), "-p", "tracker.index_curled_angle=9.0",
                             "-p", "twin.render_rate_hz=0.0", "--out", str(tmp_path))
    assert code == 1
    assert "tracker exited" in out and "index_curled_angle" in out  # the node's own reason, quoted
    assert took < 45  # not the 60 s service timeout


def test_a_params_file_keyed_to_another_node_is_refused(tmp_path, video_path):
    """rcl silently ignores a section for another node name: the runner names the keys found."""
    wrong = tmp_path / "tracker.yaml"
    wrong.write_text("hand_trackr:\n  ros__parameters:\n    mirror: true\n")
    code, out, dt = runner("sim", "--video", str(video_path), "--params-file", f"tracker={wrong}",
                           "--out", str(tmp_path))
    assert code == 2 and "Traceback" not in out
    assert f"--params-file {wrong} has sections for ['hand_trackr'], none for the node /hand_tracker" in out


def test_params_file_keys_that_reach_the_node(tmp_path):
    import pytest

    from hand_bringup.runner_core import check_params_file

    for key in ("hand_tracker", "/hand_tracker", "/**", "hand_*"):
        f = tmp_path / "p.yaml"
        f.write_text(f"{key!r}:\n  ros__parameters:\n    mirror: true\n")
        check_params_file(str(f), "hand_tracker")  # accepted
    f.write_text("- not a mapping\n")
    with pytest.raises(ValueError, match="not a ROS parameters file"):
        check_params_file(str(f), "hand_tracker")


def test_a_value_with_colon_space_reaches_the_node_as_text():
    """``-p tracker.source=video:/clips/take: 2.mp4`` crashed the runner with a YAML scanner error
    (issue 27): the value stays text and is quoted for rcl, which reads it back unchanged."""
    import rclpy
    from rclpy.context import Context

    from hand_bringup.runner import parse_overrides
    from hand_bringup.runner_core import ros_value

    got = parse_overrides(["tracker.source=video:/clips/take: 2.mp4", "tracker.mirror=true", "twin.rate=1.5",
                           "x.ids=[1, 2]", "x.names=[a, b]"])
    assert got == {"tracker": {"source": "video:/clips/take: 2.mp4", "mirror": True},
                   "twin": {"rate": 1.5}, "x": {"ids": [1, 2], "names": ["a", "b"]}}
    values = {"source": got["tracker"]["source"], "mirror": True, "rate": 1.5, "note": "a # b", "count": 3,
              "names": ["a", "b: c"], "ids": [1, 2]}
    args = ["--ros-args"] + [a for k, v in values.items() for a in ("-p", f"{k}:={ros_value(v)}")]
    ctx = Context()
    rclpy.init(context=ctx, args=args)
    try:
        node = rclpy.create_node("quoting_probe", context=ctx, start_parameter_services=False,
                                 automatically_declare_parameters_from_overrides=True)
        assert {k: node.get_parameter(k).value for k in values} == values
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)
