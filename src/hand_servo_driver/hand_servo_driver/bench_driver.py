"""``bench_driver``: how long a command takes to become bytes on the wire. Prints figures.

Measures, per message (one flexion command → one SET_PULSES frame):

1. ``encode``: :func:`protocol.encode_set_pulses` alone.
2. ``core``: contract validation (``parse_flexions``) + :meth:`DriverCore.command` + :meth:`step`
   (mapping, deadband, rate limiter, framing).
3. ``wire``: the driver's whole path — validation, core, :meth:`SerialLink.write` (pyserial) on a
   pseudo-terminal — until the last byte is readable at the other end of the pty (what a board
   would receive). This is the figure held against the ≤ 2 ms target.
4. The UART time of the frame at common baud rates (bits on a real serial line, 10 bits/byte).

``bench_driver --messages 2000`` (default). Run it on a quiet machine; it prints, never asserts.
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import sys
import time
from collections.abc import Sequence

from hand_common.contract import FINGER_NAMES, parse_flexions
from hand_servo_driver import protocol as p
from hand_servo_driver.calibration import ServoCalibration
from hand_servo_driver.core import DriverConfig, DriverCore, ServoSettings
from hand_servo_driver.link import SerialLink


def _config() -> DriverConfig:
    # No rate limit, no deadband: every command must produce a frame.
    return DriverConfig(servos=tuple(ServoSettings(ServoCalibration(n, i), max_speed_dps=1e6, deadband_deg=0.0)
                                     for i, n in enumerate(FINGER_NAMES)), heartbeat_period_s=1e9)


def _commands(n: int) -> list[tuple[list[str], list[float]]]:
    out = []
    for k in range(n):
        base = (k % 100) / 100.0
        out.append((list(FINGER_NAMES), [min(1.0, base + 0.002 * i) for i in range(5)]))
    return out


def _figures(name: str, samples_s: Sequence[float]) -> str:
    ms = sorted(s * 1000.0 for s in samples_s)
    p95 = ms[int(0.95 * (len(ms) - 1))]
    return (f"{name:<7} n={len(ms):5d}  median {statistics.median(ms):.4f} ms  p95 {p95:.4f} ms  "
            f"max {ms[-1]:.4f} ms")


def bench(messages: int) -> dict[str, list[float]]:
    cmds = _commands(messages)
    res: dict[str, list[float]] = {"encode": [], "core": [], "wire": []}
    pulses = [(i, 1000 + 10 * i) for i in range(5)]
    for k in range(messages):
        t0 = time.perf_counter()
        p.encode_set_pulses(k & 0xFFFF, pulses)
        res["encode"].append(time.perf_counter() - t0)

    core = DriverCore(_config(), expect_acks=False)
    core.activate()
    now = time.monotonic()
    for names, pos in cmds:
        now += 0.01
        t0 = time.perf_counter()
        core.command(parse_flexions(names, pos), now)
        frames = core.step(now)
        res["core"].append(time.perf_counter() - t0)
        assert frames, "every command must produce a frame"

    master, slave = os.openpty()
    try:
        link = SerialLink(os.ttyname(slave), 115200)
        link.open()
        core = DriverCore(_config(), expect_acks=False)
        core.activate()
        for names, pos in cmds:
            t0 = time.perf_counter()
            now = time.monotonic()
            core.command(parse_flexions(names, pos), now)
            frames = core.step(now)
            for fr in frames:
                link.write(fr)
            want = sum(len(fr) for fr in frames)
            got = 0
            while got < want:
                select.select([master], [], [], 1.0)
                got += len(os.read(master, 4096))
            res["wire"].append(time.perf_counter() - t0)
        link.close()
    finally:
        os.close(master)
        os.close(slave)
    return res


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_driver", description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=2000)
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    res = bench(args.messages)
    frame_len = len(p.encode_set_pulses(0, [(i, 1500) for i in range(5)]))
    print(f"bench_driver: {args.messages} commands, 5 servos, SET_PULSES frame = {frame_len} bytes "
          f"(STATUS reply {p.HEADER_LEN + p.STATUS_LEN + p.CRC_LEN} bytes)")
    for name in ("encode", "core", "wire"):
        print(_figures(name, res[name]))
    wire = sorted(res["wire"])
    target = 2.0
    p95 = wire[int(0.95 * (len(wire) - 1))] * 1000.0
    print(f"target: command -> bytes at the far end of the pty <= {target} ms: median "
          f"{statistics.median(wire) * 1000.0:.3f} ms, p95 {p95:.3f} ms -> "
          f"{'met' if p95 <= target else 'NOT met'}")
    for baud in (115200, 250000, 500000, 1000000):
        print(f"UART time of one SET_PULSES at {baud:>7} baud: {frame_len * 10 / baud * 1000.0:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
