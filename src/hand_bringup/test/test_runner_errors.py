"""The runner's answers to a user's mistakes: one line naming the problem, quickly, no traceback."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest


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
    assert "no node ['trakcer'] in profile 'sim' (did you mean 'tracker'?); its nodes are ['twin', 'tracker']" in out


def test_misspelt_parameter_is_refused_before_anything_moves(tmp_path, video_path):
    """A misspelt name in a -p and in a --params-file, each named with the close declared name;
    the integer 2 for the double index_curled_angle is taken (the tracker started with it)."""
    mine = tmp_path / "tracker.yaml"
    mine.write_text("hand_tracker:\n  ros__parameters:\n    min_detection_confidenc: 0.5\n    mirror: false\n")
    code, out, _ = runner("sim", "--video", str(video_path), "-p", "tracker.index_curled_angel=1.2",
                          "-p", "tracker.index_curled_angle=2",
                          "--params-file", f"tracker={mine}", "-p", "twin.render_rate_hz=0.0", "--out", str(tmp_path))
    assert code == 1 and "Traceback" not in out
    assert ("/hand_tracker declares no parameter ['index_curled_angel'] (check -p tracker.<name>); "
            "'index_curled_angel' (did you mean 'index_curled_angle'?)") in out
    assert (f"/hand_tracker declares no parameter ['min_detection_confidenc'] (check --params-file {mine}); "
            "'min_detection_confidenc' (did you mean 'min_detection_confidence'?)") in out
    assert "tracker exited" not in out and "Wrong parameter type" not in out
    assert "[runner] recording:" not in out  # no empty tally after the error


def test_a_decimal_for_an_integer_parameter_stops_the_node_naming_parameter_type_and_value(tmp_path, video_path):
    code, out, _ = runner("sim", "--video", str(video_path), "-p", "tracker.max_num_hands=1.5",
                          "-p", "twin.render_rate_hz=0.0", "--out", str(tmp_path))
    assert code == 1
    assert "tracker exited" in out
    assert "/hand_tracker: max_num_hands is an integer parameter: got double 1.5 (a whole number, e.g. 2)" in out


def test_the_board_flags_say_where_they_apply_and_are_refused_elsewhere(tmp_path, capsys):
    from hand_bringup.runner import BOARD_PROFILES, build_parser, check_board_flags

    assert BOARD_PROFILES == ("hardware", "robot")
    parser = build_parser({"demo": lambda *a: 0})
    help_of = {}
    for profile in ("sim", "hardware", "demo"):
        with pytest.raises(SystemExit):
            parser.parse_args([profile, "--help"])
        help_of[profile] = " ".join(capsys.readouterr().out.split())
    assert "--no-sim-board use a real board at servo_driver.port instead of the simulated one (profiles " \
           "hardware, robot)" in help_of["hardware"]
    assert "--no-sim-board profiles hardware, robot only: 'sim' has no servo board (refused)" in help_of["sim"]
    assert "--no-sim-board profiles hardware, robot only: 'demo' always uses the simulated board (refused)" \
        in help_of["demo"]
    check_board_flags(parser.parse_args(["hardware", "--no-sim-board"]))  # accepted
    check_board_flags(parser.parse_args(["robot", "--sim-board-dir", "x"]))
    for argv, message in (
            (["sim", "--no-sim-board"], "--no-sim-board: profile 'sim' has no servo board; it applies to hardware, robot"),
            (["demo", "--sim-board-dir", "x"],
             "--sim-board-dir: profile 'demo' always uses the simulated board; it applies to hardware, robot"),
            (["hardware", "--no-sim-board", "--sim-board-dir", "x"],
             "--sim-board-dir places the simulated board, --no-sim-board replaces it: give one")):
        with pytest.raises(ValueError) as err:
            check_board_flags(parser.parse_args(argv))
        assert str(err.value) == message
    code, out, took = runner("rviz", "--no-sim-board", "--out", str(tmp_path))
    assert code == 2 and "runner: error: --no-sim-board: profile 'rviz' has no servo board" in out
    assert "Traceback" not in out and not (tmp_path / "logs").exists()  # refused before anything started


def test_runner_param_values_and_names_without_ros():
    from hand_bringup.runner import param_request, param_target, parse_value

    declared = {"index_curled_angle": "double", "max_num_hands": "integer", "mirror": "bool", "gains": "double_array"}
    assert param_request("hand_tracker", "index_curled_angle", "2", declared) == 2.0
    assert param_request("hand_tracker", "index_curled_angle", "1e-1", declared) == 0.1  # rcl reads it so, PyYAML not
    assert param_request("hand_tracker", "gains", "[1, 2.5]", declared) == [1.0, 2.5]
    assert parse_value("1e3") == 1000.0 and parse_value("1e") == "1e" and parse_value("0x10") == 16
    with pytest.raises(ValueError, match=r"^mirror is a bool parameter: got string 'yes please'$"):
        param_request("hand_tracker", "mirror", "yes please", declared)
    with pytest.raises(ValueError, match=r"^/hand_tracker has no parameter 'mirorr' \(did you mean 'mirror'\?\)$"):
        param_request("hand_tracker", "mirorr", "true", declared)
    assert param_target("tracker", ["hand_tracker", "hand_twin"]) == "hand_tracker"
    assert param_target("/hand_twin", ["hand_tracker", "hand_twin"]) == "hand_twin"
    with pytest.raises(ValueError, match="running: none"):
        param_target("hand_tracker", [])


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


def test_calibrate_without_a_tracker_says_so_at_once():
    """It waited 16 s for the service, then named only the service; now it looks at the graph first."""
    code, out, _ = runner("calibrate", "open")
    assert code == 2 and "Traceback" not in out
    assert "runner: error: no node /hand_tracker is running on ROS_DOMAIN_ID" in out and "not available" not in out
