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


class _Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t

    def sleep(self, dt):
        self.t += dt


def test_open_with_retry_tries_for_the_whole_timeout(tmp_path):
    """connect_timeout_s 3.0 used to give up after 1.47 s: attempts now go on until the deadline,
    and the error says how many over how long (fake clock: no wall-clock dependence)."""
    clock = _Clock()
    link = SerialLink(str(tmp_path / "missing"), reconnect_min_s=0.2, reconnect_max_s=2.0)
    with pytest.raises(LinkError) as err:
        link.open_with_retry(3.0, clock=clock, sleep=clock.sleep)
    assert clock.t - 100.0 == pytest.approx(3.0)  # 0, 0.2, 0.6, 1.4, 3.0 (the last capped at the deadline)
    assert "5 attempt(s) over 3.00 s" in str(err.value)


def _pty_link(tmp_path, **kw):
    master, slave = os.openpty()
    path = str(tmp_path / "tty")
    os.symlink(os.ttyname(slave), path)
    link = SerialLink(path, 115200, **kw)
    link.open()
    return link, master, slave


def test_pyserial_raises_write_timeout_after_sending_everything_and_the_link_does_not(tmp_path):
    """pyserial 3.5 semantics (serialposix.Serial.write): with write_timeout 0.05 a write whose
    os.write took 60 ms raises SerialTimeoutException although every byte went out. The link
    writes the same way under the same stall and stays up."""
    import serial

    from hand_servo_driver import faults

    master, slave = os.openpty()
    proxy = faults.install(0.06)
    try:
        ser = serial.Serial(os.ttyname(slave), 115200, timeout=0, write_timeout=0.05)
        proxy.arm()
        with pytest.raises(serial.SerialTimeoutException, match="Write timeout"):
            ser.write(b"0123456789")
        assert os.read(master, 64) == b"0123456789"  # ... yet every byte was sent
        ser.close()
        link, m2, s2 = _pty_link(tmp_path)
        proxy.arm()
        assert link.write(b"abcdefghij") and link.up and link.errors == 0
        assert os.read(m2, 64) == b"abcdefghij" and proxy.done == 2
        link.close()
        for fd in (m2, s2):
            os.close(fd)
    finally:
        from hand_servo_driver import link as link_mod
        serial.serialposix.os = os
        link_mod.os = os
        for fd in (master, slave):
            os.close(fd)


def test_a_full_port_buffers_bounded_drops_counted_and_drains(tmp_path):
    """Nobody reads the far end: the OS buffer fills, the link keeps at most max_pending_bytes,
    counts what it dropped, stays up; once the far end reads, everything pending goes out."""
    link, master, slave = _pty_link(tmp_path, max_pending_bytes=256)
    os.set_blocking(master, False)
    try:
        frame = bytes(range(32))
        sent = 0
        while link.tx_dropped == 0 and sent < 100000:
            link.write(frame)
            sent += 1
        assert link.up and link.errors == 0 and 0 < len(link.pending) <= 256
        assert link.stalled_s() >= 0.0
        got = b""
        for _ in range(2000):
            try:
                got += os.read(master, 65536)
            except BlockingIOError:
                pass
            link.flush()
            if not link.pending:
                break
        assert not link.pending and link.up
        assert link.bytes_out == (sent - link.tx_dropped) * len(frame)
    finally:
        link.close()
        for fd in (master, slave):
            os.close(fd)


def test_fail_takes_the_link_down_for_a_reconnect(tmp_path):
    link, master, slave = _pty_link(tmp_path)
    try:
        link.fail("write stalled and the board is silent")
        assert link.state == "down" and "board is silent" in link.last_error and link.errors == 1
    finally:
        link.close()
        for fd in (master, slave):
            os.close(fd)
