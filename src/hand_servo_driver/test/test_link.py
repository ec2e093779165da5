"""SerialLink on a real pseudo-terminal: I/O, an unplug taking the link down without raising,
the reconnection backoff, and an open that fails with the port's name."""

import os
import time

import pytest

from hand_servo_driver.link import LinkError, SerialLink


def test_io_unplug_and_backoff(tmp_path):
    master, slave = os.openpty()
    link_path = str(tmp_path / "tty")
    os.symlink(os.ttyname(slave), link_path)
    link = SerialLink(link_path, 115200, reconnect_min_s=0.2, reconnect_max_s=1.0)
    try:
        link.open()
        assert link.up and link.write(b"\xa5\x5a\x02")
        assert os.read(master, 16) == b"\xa5\x5a\x02"
        os.write(master, b"hello")
        time.sleep(0.02)
        assert link.read() == b"hello" and link.read() == b""
        # unplug: the device side goes away
        os.close(master)
        os.close(slave)
        os.unlink(link_path)
        assert link.read() == b"" or not link.write(b"x")
        assert not link.write(b"x")
        assert link.state == "down" and link.errors == 1 and link.port in link.last_error
        # backoff doubles while the device stays away: 0.4, 0.8, then capped at 1.0
        t = link.next_retry_t
        delays = []
        for _ in range(4):
            assert not link.maybe_reconnect(t)
            delays.append(round(link.backoff_s, 3))
            t = link.next_retry_t
        assert delays == [0.4, 0.8, 1.0, 1.0]
        assert not link.maybe_reconnect(t - 0.01)  # not before the backoff elapsed
        # the device comes back
        master, slave = os.openpty()
        os.symlink(os.ttyname(slave), link_path)
        assert link.maybe_reconnect(t) and link.up and link.reconnects == 1
        assert link.backoff_s == 0.2
        link.close()
        assert link.state == "closed" and not link.maybe_reconnect(t + 100)
    finally:
        link.close()
        for fd in (master, slave):
            try:
                os.close(fd)
            except OSError:
                pass


def test_open_failure_names_the_port(tmp_path):
    link = SerialLink(str(tmp_path / "missing"), reconnect_min_s=0.05, reconnect_max_s=0.1)
    with pytest.raises(LinkError, match="missing"):
        link.open_with_retry(0.2)
    assert link.state == "closed"
