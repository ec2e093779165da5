"""The serial port with reconnection: pyserial, non-blocking reads, bounded writes, backoff. No rclpy.

States: ``closed`` (not opened, or closed on purpose), ``up`` (open and working), ``down`` (an
I/O error or an unplug closed it; :meth:`SerialLink.maybe_reconnect` retries with exponential
backoff from ``reconnect_min_s`` to ``reconnect_max_s``). A vanished device is an error to
survive, never a crash: every pyserial/OS error is caught, recorded in ``last_error`` and turns
the link ``down``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import serial


class LinkError(RuntimeError):
    """The port could not be opened (message names the port and the reason)."""


class SerialLink:
    """One serial port. ``port``: device path (a symlink to a pty works); ``baud``: bits/s;
    ``write_timeout_s``: a write that cannot complete within this fails (board not reading)."""

    def __init__(self, port: str, baud: int = 115200, write_timeout_s: float = 0.05,
                 reconnect_min_s: float = 0.2, reconnect_max_s: float = 2.0,
                 opener: Callable[..., serial.Serial] = serial.Serial):
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

    @property
    def up(self) -> bool:
        return self.state == "up"

    def open(self) -> None:
        """Open the port once; LinkError if it cannot be opened."""
        self._close_port()
        try:
            self._ser = self._opener(port=self.port, baudrate=self.baud, timeout=0,
                                     write_timeout=self.write_timeout_s, exclusive=True)
        except (serial.SerialException, OSError, ValueError) as exc:
            self._ser = None
            self.last_error = f"cannot open {self.port}: {exc}"
            raise LinkError(self.last_error) from exc
        try:
            self._ser.reset_input_buffer()
        except (serial.SerialException, OSError):
            pass
        self.state = "up"
        self.backoff_s = self.reconnect_min_s

    def open_with_retry(self, timeout_s: float, clock: Callable[[], float] = time.monotonic,
                        sleep: Callable[[float], None] = time.sleep) -> None:
        """Keep trying to open for up to ``timeout_s`` (the device may still be appearing)."""
        end = clock() + timeout_s
        delay = self.reconnect_min_s
        while True:
            try:
                self.open()
                return
            except LinkError:
                if clock() + delay > end:
                    raise
                sleep(delay)
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
        """Write all of ``data``; False (link down) on any error or a write timeout."""
        if not self.up:
            return False
        try:
            n = self._ser.write(data)
            if n != len(data):
                raise serial.SerialException(f"short write {n}/{len(data)}")
        except (serial.SerialException, serial.SerialTimeoutException, OSError, TypeError, AttributeError) as exc:
            self._fail(f"write failed: {exc}")
            return False
        self.bytes_out += len(data)
        return True

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
        self.state = "down"
        self.backoff_s = self.reconnect_min_s
        self.next_retry_t = time.monotonic() + self.backoff_s

    def _close_port(self) -> None:
        if self._ser is not None:
            try:
                self._ser.close()
            except (serial.SerialException, OSError):
                pass
            self._ser = None
