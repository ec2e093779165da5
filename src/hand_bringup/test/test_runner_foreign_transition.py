"""A foreign lifecycle change during a run (issue 27): another process deactivates the servo driver
the runner brought up. The runner reports it at once and at the end, and the run exits 1 (its
nodes were not in the states it asked for); the driver's log names the clients on the graph, and
the runner's own bring-up and bring-down are not reported (robot profile: the driver and the
simulated board, no tracker)."""

from __future__ import annotations

import subprocess
import sys

from hand_common import contract
from hand_common.testing import RosProbe, wait_until

NODE = contract.SERVO_DRIVER_NODE


def test_a_foreign_deactivate_fails_the_run_and_is_logged_by_the_driver(tmp_path):
    out = tmp_path / "run"
    runner = subprocess.Popen([sys.executable, "-m", "hand_bringup.runner", "robot", "--out", str(out),
                               "--no-record", "--duration", "120"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    probe = RosProbe("foreign_operator")
    try:
        wait_until(lambda: _state(probe) == "active", 90.0, "the runner's servo driver active")
        assert probe.change_state(NODE, "deactivate")
        assert probe.change_state(NODE, "activate")
        driver_log = out / "logs" / "servo_driver.log"
        wait_until(lambda: driver_log.exists() and "'activate' requested from state 'inactive': done — by one of "
                   "the clients on the graph: /foreign_operator, /hand_runner" in driver_log.read_text(), 10.0,
                   "the driver's log of the foreign activate")
        runner.send_signal(2)  # Ctrl-C
        output, _ = runner.communicate(timeout=60)
    finally:
        probe.close()
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 1, output[-3000:]
    now = [ln for ln in output.splitlines() if ln.startswith("[runner] warning: servo_driver: lifecycle change")]
    assert [ln.split("lifecycle change ")[1].split(" not requested")[0] for ln in now] == \
        ["active -> deactivating", "inactive -> activating"], output[-3000:]
    assert "[runner] error: 2 lifecycle change(s) of the run's nodes came from another process (the run fails" \
        in output
    log = driver_log.read_text()
    assert "lifecycle transition 'deactivate' requested from state 'active': done — by one of the clients on the " \
           "graph: /foreign_operator, /hand_runner" in log
    assert "lifecycle transition 'configure' requested from state 'unconfigured': done — by one of the clients on " \
           "the graph: /hand_runner" in log


def _state(probe: RosProbe) -> str:
    try:
        return probe.get_state(NODE, timeout=2.0)
    except (TimeoutError, RuntimeError):
        return ""
