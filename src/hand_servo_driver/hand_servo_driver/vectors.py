"""Runs the shared protocol test vectors (``firmware/test_vectors.txt``) against the Python
implementation (:mod:`protocol`, :mod:`board`). No rclpy.

The firmware's host test (``firmware/host_test/host_test.cpp``) reads the same file with the same
rules; both print a line ``vectors: crc=.. frame=.. stream=.. board=.. checks=.. failed=..`` so a
test can compare the two runs. The file format is documented at its top.

``python -m hand_servo_driver.vectors [path]`` runs it from the command line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from hand_servo_driver import protocol as p
from hand_servo_driver.board import Board, BoardConfig


@dataclass
class VectorReport:
    """Totals of one run and a message per failed check (``file:line: what``)."""

    crc: int = 0
    frame: int = 0
    stream: int = 0
    board: int = 0
    checks: int = 0
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"vectors: crc={self.crc} frame={self.frame} stream={self.stream} board={self.board} "
                f"checks={self.checks} failed={len(self.failures)}")


def default_path() -> str:
    """The vectors file next to the package sources, else the installed share copy."""
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.join(here, "..", "firmware", "test_vectors.txt")
    if os.path.exists(src):
        return os.path.normpath(src)
    from ament_index_python.packages import get_package_share_directory

    return os.path.join(get_package_share_directory("hand_servo_driver"), "firmware", "test_vectors.txt")


def _hex(tok: str) -> bytes:
    return b"" if tok == "-" else bytes.fromhex(tok)


def build_bytes(tokens: Sequence[str]) -> bytes:
    """The ``<bytes>`` part of an ``at`` statement (segments joined with ``+``)."""
    out = b""
    seg: list[str] = []
    for tok in list(tokens) + ["+"]:
        if tok != "+":
            seg.append(tok)
            continue
        if not seg:
            raise ValueError("empty byte segment")
        mods = [t for t in seg if "=" in t]
        words = [t for t in seg if "=" not in t]
        kind, args = words[0], words[1:]
        if kind == "hex":
            data = _hex(args[0])
        elif kind == "pulses":
            pairs = [tuple(int(x) for x in a.split(":")) for a in args[1:]]
            data = p.encode_frame(p.MsgType.SET_PULSES, int(args[0]), p.pack_pulses(pairs))
        elif kind == "heartbeat":
            data = p.encode_frame(p.MsgType.HEARTBEAT, int(args[0]))
        elif kind == "safe":
            data = p.encode_frame(p.MsgType.SAFE, int(args[0]), bytes([int(args[1])]))
        elif kind == "msg":
            data = p.encode_frame(int(args[0], 16), int(args[1]), _hex(args[2]))
        else:
            raise ValueError(f"unknown byte source '{kind}'")
        b = bytearray(data)
        for m in mods:
            key, val = m.split("=", 1)
            if key == "flip":
                bit = int(val)
                b[bit // 8] ^= 1 << (bit % 8)
            elif key == "cut":
                del b[len(b) - int(val):]
            elif key == "slice":
                a, z = (int(x) for x in val.split(":"))
                b = b[a:z]
            else:
                raise ValueError(f"unknown modifier '{key}'")
        out += bytes(b)
        seg = []
    return out


def _board_config(opts: dict[str, str]) -> BoardConfig:
    n = int(opts.get("channels", "5"))

    def lst(key: str, default: int) -> tuple[int, ...]:
        vals = tuple(int(v) for v in opts.get(key, str(default)).split(","))
        return vals * n if len(vals) == 1 else vals

    return BoardConfig(channels=n, min_us=lst("min", 1000), max_us=lst("max", 2000), safe_us=lst("safe", 1000),
                       watchdog_ms=int(opts.get("watchdog_ms", "500")),
                       watchdog_action=p.SAFE_DETACH if opts.get("action", "pose") == "detach" else p.SAFE_POSE)


def run_file(path: str | None = None) -> VectorReport:
    """Run every statement of the vectors file; never raises for a failed check (see failures)."""
    path = path or default_path()
    rep = VectorReport()
    with open(path) as f:
        lines = f.read().splitlines()

    mode = None  # None | "stream" | "board"
    parser: p.Parser | None = None
    board: Board | None = None
    frames: list[p.Frame] = []
    replies: list[bytes] = []
    name = ""

    def fail(lineno: int, msg: str) -> None:
        rep.failures.append(f"{os.path.basename(path)}:{lineno}: [{name}] {msg}")

    def check(lineno: int, ok: bool, msg: str) -> None:
        rep.checks += 1
        if not ok:
            fail(lineno, msg)

    def counters_now() -> dict[str, int]:
        if mode == "stream":
            return parser.counters()
        return board.counters()

    for lineno, raw in enumerate(lines, 1):
        tok = raw.split("#", 1)[0].split()
        if not tok:
            continue
        cmd, args = tok[0], tok[1:]
        try:
            if cmd == "crc":
                rep.crc += 1
                data = _hex(args[0])
                want = int(args[1], 16)
                got_crc = (p.crc16(data), p.crc16_fast(data))
                check(lineno, got_crc == (want, want), f"crc16, crc16_fast {got_crc} != {want:04X}")
            elif cmd == "frame":
                rep.frame += 1
                name = args[0]
                t, seq, payload, want = int(args[1], 16), int(args[2]), _hex(args[3]), _hex(args[4])
                got = p.encode_frame(t, seq, payload)
                check(lineno, got == want, f"encoded {got.hex().upper()} != {want.hex().upper()}")
                pr = p.Parser()
                dec = pr.feed(want, 0)
                check(lineno, dec == [p.Frame(t, seq, payload)] and not pr.buf,
                      f"parsed {dec} (pending {bytes(pr.buf).hex()})")
            elif cmd == "stream":
                mode, name, parser, frames = "stream", args[0], p.Parser(), []
                rep.stream += 1
            elif cmd == "board":
                opts = dict(a.split("=", 1) for a in args[1:])
                mode, name = "board", args[0]
                try:
                    cfg = _board_config(opts)
                except ValueError as exc:
                    check(lineno, False, f"board configuration invalid: {exc}")
                    raise
                check(lineno, True, "")
                board = Board(cfg, 0)
                replies = board.boot_replies()
                rep.board += 1
            elif cmd == "at":
                t = int(args[0])
                data = build_bytes(args[1:])
                if mode == "stream":
                    frames += parser.expire(t)
                    frames += parser.feed(data, t)
                else:
                    replies += board.poll(t)
                    replies += board.receive(data, t)
            elif cmd == "tick":
                t = int(args[0])
                if mode == "stream":
                    frames += parser.expire(t)
                else:
                    replies += board.poll(t)
            elif cmd == "frame_out":
                want = p.Frame(int(args[0], 16), int(args[1]), _hex(args[2]))
                got = frames.pop(0) if frames else None
                check(lineno, got == want, f"frame {got} != {want}")
            elif cmd == "counters":
                have = counters_now()
                for kv in args:
                    k, v = kv.split("=")
                    check(lineno, have.get(k) == int(v), f"counter {k}={have.get(k)} != {v}")
            elif cmd == "outputs":
                want_out = [None if a == "-" else int(a) for a in args]
                check(lineno, board.outputs == want_out, f"outputs {board.outputs} != {want_out}")
            elif cmd == "status":
                if not replies:
                    check(lineno, False, "no reply pending")
                    continue
                pr = p.Parser()
                fr = pr.feed(replies.pop(0), 0)
                if len(fr) != 1 or fr[0].type != p.MsgType.STATUS:
                    check(lineno, False, f"reply is not one STATUS frame: {fr}")
                    continue
                s = p.decode_status(fr[0].payload)
                got = (s.ack_seq, s.ack_type, s.result, s.flags)
                want = (int(args[0]), int(args[1], 16), int(args[2]), int(args[3]))
                check(lineno, got == want, f"status (ack_seq, ack_type, result, flags) {got} != {want}")
                for kv in args[4:]:
                    k, v = kv.split("=")
                    check(lineno, s.counters.get(k) == int(v), f"status counter {k}={s.counters.get(k)} != {v}")
                check(lineno, s.channels == board.config.channels and s.watchdog_ms == board.config.watchdog_ms,
                      f"status channels/watchdog {s.channels}/{s.watchdog_ms}")
            elif cmd == "silent":
                check(lineno, not replies, f"{len(replies)} unexpected replies")
            elif cmd == "end":
                if mode == "stream":
                    check(lineno, not frames, f"{len(frames)} frames not checked: {frames}")
                else:
                    check(lineno, not replies, f"{len(replies)} replies not checked")
                mode = None
            else:
                fail(lineno, f"unknown statement '{cmd}'")
        except (ValueError, IndexError, AttributeError, TypeError) as exc:
            fail(lineno, f"cannot run '{raw.strip()}': {type(exc).__name__}: {exc}")
    return rep


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    rep = run_file(args[0] if args else None)
    for f in rep.failures:
        print("FAIL", f)
    print(rep.summary())
    return 1 if rep.failures else 0


if __name__ == "__main__":
    sys.exit(main())
