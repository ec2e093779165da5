"""The serial port with reconnection: pyserial, non-blocking reads and writes, backoff. No rclpy.

Writes never block and a slow write is not a lost link. pyserial 3.5's ``Serial.write`` with a
``write_timeout`` raises ``SerialTimeoutException('Write timeout')`` whenever the call took longer
than the timeout, *even after ``os.write`` accepted every byte* (it checks ``timeout.expired()``
after the write): a descheduled process or a busy USB bus looks like a dead port, and the
reopen that followed reset an Arduino UNO. Here the port is opened with ``write_timeout=0`` and
bytes go out with one ``os.write`` on the (non-blocking) descriptor; what the OS does not take
waits in a bounded outgoing buffer (:attr:`SerialLink.max_pending_bytes`; whole frames that do
not fit are dropped and counted in :attr:`SerialLink.tx_dropped`). The link is lost only when
the port itself fails (an OS/serial error, the device gone) or when the caller decides so from
the board's acknowledgements (:meth:`SerialLink.fail`, e.g. bytes stuck for ``write_timeout_s``
*and* no STATUS from the board). :attr:`SerialLink.write_stalls` counts writes that found bytes
still pending for longer than ``write_timeout_s``.

States: ``closed`` (not opened, or closed on purpose), ``up`` (open and working), ``down`` (an
I/O error or an unplug closed it; :meth:`SerialLink.maybe_reconnect` retries with exponential
backoff from ``reconnect_min_s`` to ``reconnect_max_s``). A vanished device is an error to
survive, never a crash: every pyserial/OS error is caught, recorded in ``last_error`` and turns
the link ``down``.
"""

from __future__ import annotations

import errno
import os
import select
import time
from collections.abc import Callable

import serial


class LinkError(RuntimeError):
    """The port could not be opened (message names the port and the reason)."""


class SerialLink:
    """One serial port. ``port``: device path (a symlink to a pty works); ``baud``: bits/s;
    ``write_timeout_s``: bytes the OS has not taken for this long make a *stall* (counted, see
    :meth:`stalled_s`), not a failure; ``max_pending_bytes``: bound of the outgoing buffer."""

    def __init__(self, port: str, baud: int = 115200, write_timeout_s: float = 0.05,
                 reconnect_min_s: float = 0.2, reconnect_max_s: float = 2.0,
                 opener: Callable[..., serial.Serial] = serial.Serial, max_pending_bytes: int = 1024,
                 clock: Callable[[], float] = time.monotonic):
        self.port = port
        self.baud = int(baud)
        self.write_timeout_s = float(write_timeout_s)
        self.reconnect_min_s = float(reconnect_min_s)
        self.reconnect_max_s = float(reconnect_max_s)
        self._opener = opener
        self._ser: serial.Serial | None = None
        self.state = "closed"
        self.last_error = ""
        self.errors = 0
        self.reconnects = 0
        self.backoff_s = self.reconnect_min_s
        self.next_retry_t = 0.0
        self.bytes_out = 0
        self.bytes_in = 0
        self.max_pending_bytes = int(max_pending_bytes)
        self.pending = b""
        self.pending_since: float | None = None  #: when the oldest pending byte was queued (clock)
        self.tx_dropped = 0  #: whole frames dropped because the outgoing buffer was full
        self.write_stalls = 0  #: writes that found bytes pending longer than write_timeout_s
        self._clock = clock

    #: the far end (firmware or sim_board) answers with STATUS frames (see transport.DryRunLink)
    acknowledges = True

    @property
    def up(self) -> bool:
        return self.state == "up"

    def flush_log(self, force: bool = False) -> None:
        """Nothing to log: a real port's bytes are its record (transport.DryRunLink logs instead)."""

    def open(self) -> None:
        """Open the port once; LinkError if it cannot be opened."""
        self._close_port()
        try:
            # write_timeout=0: pyserial's non-blocking write (one os.write, returns the count);
            # a timed write raises "Write timeout" after all bytes went out (see the module doc)
            self._ser = self._opener(port=self.port, baudrate=self.baud, timeout=0,
                                     write_timeout=0, exclusive=True)
        except (serial.SerialException, OSError, ValueError) as exc:
            self._ser = None
            self.last_error = f"cannot open {self.port}: {exc}"
            raise LinkError(self.last_error) from exc
        # no extra reset_input_buffer() (pyserial's open() already flushes the input, which throws
        # away a BOOT sent before the open: DriverCore counts such a boot from the board's frame
        # counter instead)
        self.pending = b""
        self.pending_since = None
        self.state = "up"
        self.backoff_s = self.reconnect_min_s

    def open_with_retry(self, timeout_s: float, clock: Callable[[], float] = time.monotonic,
                        sleep: Callable[[float], None] = time.sleep) -> None:
        """Keep trying to open for ``timeout_s`` (the device may still be appearing): attempts
        back off from ``reconnect_min_s`` and the last one is made when ``timeout_s`` has passed,
        so a failure really tried for the whole time. LinkError (naming the port, the attempts
        and the time tried) if it never opened."""
        start = clock()
        end = start + max(0.0, float(timeout_s))
        delay = self.reconnect_min_s
        attempts = 0
        while True:
            attempts += 1
            try:
                self.open()
                return
            except LinkError as exc:
                now = clock()
                if now >= end:
                    self.last_error = f"{exc} ({attempts} attempt(s) over {now - start:.2f} s)"
                    raise LinkError(self.last_error) from exc
                sleep(min(delay, end - now))
                delay = min(delay * 2, self.reconnect_max_s)

    def read(self) -> bytes:
        """Whatever bytes arrived (maybe none). An error takes the link down and returns b""."""
        if not self.up:
            return b""
        try:
            data = self._ser.read(4096)
        except (serial.SerialException, OSError, TypeError, AttributeError) as exc:
            self._fail(f"read failed: {exc}")
            return b""
        self.bytes_in += len(data)
        return data

    def write(self, data: bytes) -> bool:
        """Queue ``data`` (one whole frame) and send what the OS takes now, without blocking.

        Returns False if the link is not up, if an OS/serial error took it down, or if the frame
        was dropped because ``max_pending_bytes`` were already waiting (counted in
        :attr:`tx_dropped`; the driver's acknowledgement check then resends what matters). A
        slow or partial write is *not* an error: the rest goes out at the next :meth:`write` or
        :meth:`flush`."""
        if not self.up:
            return False
        if self.pending and len(self.pending) + len(data) > self.max_pending_bytes:
            self.flush()
            if not self.up:
                return False
            if self.pending and len(self.pending) + len(data) > self.max_pending_bytes:
                self.tx_dropped += 1
                return False
        if not self.pending:
            self.pending_since = self._clock()
        elif self.stalled_s() > self.write_timeout_s:
            self.write_stalls += 1
        self.pending += data
        self.flush()
        return self.up

    def flush(self) -> int:
        """Send pending bytes the OS accepts now (never blocks); returns how many went out. An
        OS/serial error other than "would block" takes the link down."""
        if not self.up or not self.pending:
            return 0
        try:
            n = self._raw_write(self.pending)
        except (serial.SerialException, OSError, TypeError, AttributeError, ValueError) as exc:
            self._fail(f"write failed: {exc}")
            return 0
        if n:
            self.bytes_out += n
            self.pending = self.pending[n:]
            self.pending_since = self._clock() if self.pending else None
        return n

    def stalled_s(self, now: float | None = None) -> float:
        """How long the oldest pending byte has waited for the OS (s; 0 when nothing waits)."""
        if self.pending_since is None or not self.pending:
            return 0.0
        return max(0.0, (self._clock() if now is None else now) - self.pending_since)

    def _raw_write(self, data: bytes) -> int:
        ser = self._ser
        try:
            fd = ser.fileno()
        except (AttributeError, serial.SerialException, OSError, ValueError):
            fd = None
        if fd is None or not isinstance(fd, int):
            return int(ser.write(data) or 0)  # a port without a descriptor: pyserial's write_timeout=0 path
        _, ready, _ = select.select([], [fd], [], 0)
        if not ready:
            return 0
        try:
            return os.write(fd, data)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR):
                return 0
            raise

    def fail(self, why: str) -> None:
        """Declare the link lost (the caller's judgement, e.g. bytes stuck and the board silent):
        the port is closed and reconnection starts with the backoff."""
        if self.up:
            self._fail(why)

    def maybe_reconnect(self, now: float) -> bool:
        """While down, retry the open when the backoff allows; True if the link just came back."""
        if self.state != "down" or now < self.next_retry_t:
            return False
        try:
            self.open()
        except LinkError:
            self.backoff_s = min(self.backoff_s * 2, self.reconnect_max_s)
            self.next_retry_t = now + self.backoff_s
            return False
        self.reconnects += 1
        return True

    def close(self) -> None:
        """Close on purpose (state ``closed``, no reconnection)."""
        self._close_port()
        self.state = "closed"

    def _fail(self, why: str) -> None:
        self.errors += 1
        self.last_error = f"{self.port}: {why}"
        self._close_port()
        self.pending = b""
        self.pending_since = None
        self.state = "down"
        self.backoff_s = self.reconnect_min_s
        self.next_retry_t = self._clock() + self.backoff_s

    def _close_port(self) -> None:
        if self._ser is not None:
            try:
                self._ser.close()
            except (serial.SerialException, OSError):
                pass
            self._ser = None
