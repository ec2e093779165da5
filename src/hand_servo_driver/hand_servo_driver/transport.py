"""One transport for the servo board, behind one factory (:func:`open_transport`). No rclpy.

Like LeRobot's ``MotorsBus`` or ros2_control's mock hardware, the driver talks to one interface
whatever is at the other end:

- a **real serial** board (the firmware): :class:`~hand_servo_driver.link.SerialLink` (pyserial,
  non-blocking writes, reconnection);
- the **simulated** board (``sim_board``: the firmware's protocol on a pty): the same
  :class:`~hand_servo_driver.link.SerialLink` on the pty's path, so the simulation exercises the
  real byte path, acknowledgements included;
- a **dry run** (``dry_run: true``): :class:`DryRunLink`, no port at all; every frame is decoded
  and the intended pulses are logged (the newest SET_PULSES at most every :data:`LOG_PERIOD_S`,
  a SAFE at once, the last one always on :meth:`DryRunLink.flush_log` with ``force``).

Both links answer the same calls (``up``, ``read``, ``write``, ``flush``, ``flush_log``,
``stalled_s``, ``fail``, ``maybe_reconnect``, ``close`` and the counters the diagnostics show);
``acknowledges`` says whether the far end answers with STATUS frames (the driver then expects
acknowledgements).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import serial

from hand_servo_driver import protocol as p
from hand_servo_driver.link import SerialLink

#: A dry run logs the newest intended SET_PULSES at most this often (s).
LOG_PERIOD_S = 0.25
#: The diagnostics message of a dry run.
DRY_RUN_STATUS = "dry run: no port, intended pulses logged"


class DryRunLink:
    """The link of a dry run: always up, nothing opened, nothing read; ``write`` decodes each frame
    and logs what would be sent through ``log`` (one string a line). ``clock``: monotonic s."""

    acknowledges = False
    state = "dry_run"
    port = "dry_run"
    last_error = ""
    write_timeout_s = 0.0
    reconnects = errors = bytes_out = bytes_in = write_stalls = tx_dropped = 0
    pending = b""

    def __init__(self, log: Callable[[str], None], clock: Callable[[], float] = time.monotonic):
        self._log = log
        self._clock = clock
        self._pending_line = ""
        self._logged_t = -LOG_PERIOD_S
        self.frames_written = 0  #: frames the driver handed over (a counter: nothing is kept)

    @property
    def up(self) -> bool:
        return True

    def read(self) -> bytes:
        return b""

    def write(self, data: bytes) -> bool:
        """Decode one frame and log it: a SAFE at once, a SET_PULSES as the newest pending line."""
        self.frames_written += 1
        for f in p.Parser().feed(data, 0):
            if f.type == p.MsgType.SET_PULSES:
                self._pending_line = f"dry run: would send {p.describe(f)}"
            elif f.type == p.MsgType.SAFE:
                self._log(f"dry run: would send {p.describe(f)}")
        return True

    def flush(self) -> int:
        return 0

    def flush_log(self, force: bool = False) -> None:
        """Log the newest intended SET_PULSES if :data:`LOG_PERIOD_S` passed since the last line
        (or ``force``): the log of a ramp ends on the pose actually reached."""
        now = self._clock()
        if self._pending_line and (force or now - self._logged_t >= LOG_PERIOD_S):
            self._log(self._pending_line)
            self._pending_line = ""
            self._logged_t = now

    def stalled_s(self, now: float | None = None) -> float:
        return 0.0

    def fail(self, why: str) -> None:
        """Nothing can fail without a port."""

    def maybe_reconnect(self, now: float) -> bool:
        return False

    def close(self) -> None:
        """Nothing to close."""


def open_transport(settings, log: Callable[[str], None],
                   opener: Callable[..., serial.Serial] = serial.Serial) -> SerialLink | DryRunLink:
    """The link ``settings`` (:class:`~hand_servo_driver.parameters.LinkSettings`) ask for: a
    :class:`DryRunLink` with ``dry_run``, else a :class:`SerialLink` on ``settings.port`` opened
    within ``connect_timeout_s`` (a board or ``sim_board``'s pty). ``log``: where a dry run's
    intended pulses go; ``opener``: how a port is opened (the fault-injection harness wraps it).
    LinkError (naming the port, the attempts and the time tried) if the port never opened."""
    if settings.dry_run:
        return DryRunLink(log)
    link = SerialLink(settings.port, settings.baud, settings.write_timeout_s, settings.reconnect_min_s,
                      settings.reconnect_max_s, opener=opener)
    link.open_with_retry(settings.connect_timeout_s)
    return link
