"""Fault injection into a servo_driver process: OS-level write stalls. Tests and ``bench_faults``.

``python -m hand_servo_driver.faults --stall-ms 60 --stall-log FILE [--ros-args ...]`` runs the
ordinary ``servo_driver`` node (same parameters, same lifecycle) with one difference: every
``SIGUSR1`` arms one stall, and the next ``os.write`` on the serial port writes *all* its bytes
and then keeps the process in the call for ``--stall-ms`` — what a descheduled process or a busy
USB-serial adapter does. The stall is installed under both the driver's link and pyserial's
``serialposix`` (the same ``os`` module object seen through a proxy), so it hits whichever of them
writes: with pyserial's timed ``write_timeout`` 0.05 s it raises ``Write timeout`` although the
bytes went out (the defect of issue 18); the link's non-blocking write must shrug it off.

Each stall is recorded as a JSON line in ``--stall-log``: ``start``/``end`` (CLOCK_MONOTONIC,
comparable with the sim board's log), ``bytes`` written by the stalled call, ``n`` (its index).
No rclpy at import; the node is imported in :func:`main`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any


class StallingOs:
    """A stand-in for the ``os`` module whose ``write`` can be made slow (everything else is
    ``os`` itself). ``arm()`` makes the next write stall for ``stall_s`` after writing all bytes."""

    def __init__(self, stall_s: float, log_path: str | None = None):
        self._os = os
        self.stall_s = float(stall_s)
        self.armed = 0
        self.done = 0
        self._log = open(log_path, "a", buffering=1) if log_path else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._os, name)

    def arm(self, count: int = 1) -> None:
        self.armed += count

    def write(self, fd: int, data: bytes) -> int:
        n = self._os.write(fd, data)
        if self.armed > 0:
            self.armed -= 1
            start = time.monotonic()
            time.sleep(self.stall_s)  # the bytes are out; the call just does not return yet
            self.done += 1
            if self._log:
                self._log.write(json.dumps({"n": self.done, "start": round(start, 6),
                                            "end": round(time.monotonic(), 6), "bytes": n}) + "\n")
        return n


def install(stall_s: float, log_path: str | None = None) -> StallingOs:
    """Put a :class:`StallingOs` under the driver's link and pyserial's POSIX backend."""
    import serial.serialposix

    from hand_servo_driver import link

    proxy = StallingOs(stall_s, log_path)
    link.os = proxy
    serial.serialposix.os = proxy
    return proxy


def build_arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="hand_servo_driver.faults", description=__doc__.split("\n\n")[0])
    ap.add_argument("--stall-ms", type=float, default=60.0, help="length of one write stall (ms)")
    ap.add_argument("--stall-log", default=None, help="JSON lines, one per stall")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ros_args = argv[argv.index("--ros-args"):] if "--ros-args" in argv else []
    ours = argv[:len(argv) - len(ros_args)]
    args = build_arg_parser().parse_args(ours)
    proxy = install(args.stall_ms / 1000.0, args.stall_log)
    signal.signal(signal.SIGUSR1, lambda *_: proxy.arm())
    from hand_common.node_tools import run
    from hand_servo_driver.driver_node import ServoDriverNode

    return run(ServoDriverNode, [sys.argv[0], *ros_args])


if __name__ == "__main__":
    sys.exit(main())
