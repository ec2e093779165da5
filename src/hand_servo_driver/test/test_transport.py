"""One transport behind one factory (transport.open_transport): a dry run's DryRunLink logs the
intended pulses and never opens a port; a real (or sim_board pty) port is a SerialLink."""

from __future__ import annotations

import os

import pytest

from hand_servo_driver import protocol as p
from hand_servo_driver.link import LinkError, SerialLink
from hand_servo_driver.parameters import build_config
from hand_servo_driver.transport import LOG_PERIOD_S, DryRunLink, open_transport


def _settings(**values):
    return build_config(values)[1]


def test_dry_run_logs_the_newest_pulses_at_most_every_period_and_safe_at_once():
    t = [10.0]
    lines: list[str] = []
    link = open_transport(_settings(dry_run=True, port=""), lines.append)
    assert isinstance(link, DryRunLink) and link.up and not link.acknowledges and link.state == "dry_run"
    link = DryRunLink(lines.append, clock=lambda: t[0])
    for k, us in enumerate((1000, 1100, 1200)):
        assert link.write(p.encode_set_pulses(k, [(0, us)]))
        link.flush_log()
        t[0] += LOG_PERIOD_S / 4
    assert lines == ["dry run: would send SET_PULSES seq=0 ch0=1000us"]  # 1100 and 1200 within the period
    link.write(p.encode_safe(3))
    assert lines[-1].startswith("dry run: would send SAFE seq=3")  # a safe pose is logged at once
    link.flush_log(force=True)
    assert lines[-1] == "dry run: would send SET_PULSES seq=2 ch0=1200us"  # the log ends on the last pose
    assert len(lines) == 3 and link.frames_written == 4
    assert link.read() == b"" and link.flush() == 0 and link.stalled_s() == 0.0 and not link.maybe_reconnect(99.0)


def test_a_port_is_a_serial_link_and_a_missing_one_fails_naming_it():
    master, slave = os.openpty()
    try:
        link = open_transport(_settings(port=os.ttyname(slave), connect_timeout_s=0.0), lambda s: None)
        assert isinstance(link, SerialLink) and link.up and link.acknowledges
        assert link.write(p.encode_heartbeat(1)) and os.read(master, 64) == p.encode_heartbeat(1)
        link.close()
    finally:
        os.close(master)
        os.close(slave)
    with pytest.raises(LinkError, match="/nonexistent/tty"):
        open_transport(_settings(port="/nonexistent/tty", connect_timeout_s=0.0), lambda s: None)
