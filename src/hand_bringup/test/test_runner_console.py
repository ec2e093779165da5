"""``runner <profile> --console``: the console's flags (the page itself: test_console_browser.py).

The page binds 127.0.0.1 by default; another address only with --allow-remote, with a printed
warning (anyone who reaches the page can recalibrate the tracker and move the robot).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from hand_bringup.bringup import NODES
from hand_bringup.runner import build_parser, console_overrides
from hand_bringup.runner_core import RunConfig, Runner


def parse(*argv: str):
    return build_parser().parse_args(list(argv))


def test_console_defaults_to_the_loopback_address_and_port_8080():
    overrides: dict = {}
    assert console_overrides(parse("sim", "--console"), overrides) == "http://127.0.0.1:8080"
    assert overrides == {"console": {"host": "127.0.0.1", "port": 8080, "allow_remote": False}}
    overrides = {"console": {"render_rate_hz": 5.0}}
    assert console_overrides(parse("hardware", "--console", "--console-port", "8123"), overrides) == \
        "http://127.0.0.1:8123"
    assert overrides["console"] == {"render_rate_hz": 5.0, "host": "127.0.0.1", "port": 8123, "allow_remote": False}
    assert console_overrides(parse("sim"), {}) is None  # no --console: no console node


def test_another_host_needs_allow_remote_and_warns(capsys):
    with pytest.raises(ValueError, match="allow_remote"):
        console_overrides(parse("sim", "--console", "--console-host", "0.0.0.0"), {})
    overrides: dict = {}
    url = console_overrides(parse("sim", "--console", "--console-host", "0.0.0.0", "--allow-remote"), overrides)
    assert url == "http://127.0.0.1:8080"  # 0.0.0.0 is reached here through the loopback address
    assert overrides["console"]["host"] == "0.0.0.0" and overrides["console"]["allow_remote"] is True
    err = capsys.readouterr().err
    assert "WARNING: binding 0.0.0.0" in err and "move the robot" in err


def test_console_flags_without_console_are_refused():
    for argv in (("--console-port", "9000"), ("--console-host", "127.0.0.1"), ("--allow-remote",)):
        with pytest.raises(ValueError, match="needs --console"):
            console_overrides(parse("sim", *argv), {})
    with pytest.raises(ValueError, match="not a TCP port"):
        console_overrides(parse("sim", "--console", "--console-port", "70000"), {})


def test_the_console_node_is_activated_first_and_shows_the_profile(tmp_path):
    runner = Runner(RunConfig(profile="dex", out_dir=tmp_path, console=True))
    assert runner.specs[0] == NODES["console"] and [s.key for s in runner.specs[1:]] == \
        ["dex_twin", "dex_retarget", "tracker"]
    assert runner.cfg.overrides["console"]["profile"] == "dex"
    assert "console" not in [s.key for s in Runner(RunConfig(profile="dex", out_dir=tmp_path)).specs]


def test_runner_refuses_a_remote_console_before_starting_anything(tmp_path, video_path):
    p = subprocess.run([sys.executable, "-m", "hand_bringup.runner", "sim", "--video", str(video_path),
                        "--console", "--console-host", "0.0.0.0", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "runner: error: console host '0.0.0.0' is not the loopback address" in p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "logs").exists()


def test_every_bringup_profile_has_its_robot_in_the_console():
    from hand_bringup.bringup import PROFILES
    from hand_console.robots import ROBOT_VIEWS

    assert set(PROFILES) <= set(ROBOT_VIEWS), sorted(set(PROFILES) - set(ROBOT_VIEWS))
