"""The driver ↔ board serial protocol: frame encoder, streaming parser, message payloads. No rclpy.

The normative spec is the "Serial protocol" section of this package's README; the firmware's
``firmware/hand_servo_board/protocol.cpp`` implements the same rules in portable C++, and both are
checked against the shared vectors in ``firmware/test_vectors.txt``.

Frame (all multi-byte fields little-endian)::

    offset  size  field
    0       2     sync  0xA5 0x5A
    2       1     type  (MsgType)
    3       2     seq   uint16, sender's sequence number (wraps)
    5       1     len   payload length, 0..MAX_PAYLOAD
    6       len   payload
    6+len   2     crc   CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF) over type..payload

The :class:`Parser` hunts for the sync bytes, rejects a header whose ``len`` exceeds
:data:`MAX_PAYLOAD` (length error), checks the CRC (CRC error) and expires a frame whose next
byte does not come within :data:`FRAME_TIMEOUT_MS` (timeout). After any rejection it drops one
byte and re-scans what it already holds, so a torn frame never takes the next good frame with it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, IntFlag

SYNC0 = 0xA5
SYNC1 = 0x5A
SYNC = bytes((SYNC0, SYNC1))
HEADER_LEN = 6
CRC_LEN = 2
#: Largest payload a frame may carry (bytes); a header announcing more is a length error.
MAX_PAYLOAD = 48
MAX_FRAME = HEADER_LEN + MAX_PAYLOAD + CRC_LEN
#: A partial frame whose next byte is more than this late is dropped (ms).
FRAME_TIMEOUT_MS = 50
#: Pulse widths outside this range (µs) make a SET_PULSES frame invalid (rejected, never applied).
PULSE_MIN_US = 500
PULSE_MAX_US = 2500
#: Most channels a board may have (a PCA9685 has 16).
MAX_CHANNELS = 16


class MsgType(IntEnum):
    """Frame ``type`` byte. Host → board below 0x80, board → host from 0x80."""

    SET_PULSES = 0x01  #: payload: n, then n × (channel u8, pulse_us u16)
    HEARTBEAT = 0x02  #: empty payload: feeds the watchdog, asks for a STATUS
    SAFE = 0x03  #: payload: mode u8 (SAFE_POSE or SAFE_DETACH)
    STATUS = 0x81  #: payload: see :class:`Status`


SAFE_POSE = 0
SAFE_DETACH = 1


class Result(IntEnum):
    """STATUS ``result``: what the board did with the frame it acknowledges (or why it speaks)."""

    OK = 0
    CLAMPED = 1  #: applied, but at least one pulse was clamped to the channel's configured range
    BAD_RANGE = 2  #: rejected: pulse outside 500..2500 µs, unknown or repeated channel, bad mode
    BAD_LENGTH = 3  #: rejected: payload length does not match the message
    BAD_TYPE = 4  #: rejected: unknown message type
    WATCHDOG = 5  #: unsolicited: no valid frame for watchdog_ms, outputs went safe
    BOOT = 6  #: unsolicited: the board (re)started, outputs detached


class Flag(IntFlag):
    """STATUS ``flags`` bits."""

    ATTACHED = 0x01  #: at least one channel outputs pulses
    WATCHDOG = 0x02  #: the watchdog tripped since the last accepted SET_PULSES
    SAFE = 0x04  #: outputs are at the safe pose / detached (by SAFE or watchdog)


#: Board counters carried in STATUS, in wire order (each uint16, wrapping).
COUNTER_NAMES: tuple[str, ...] = (
    "frames", "crc_errors", "length_errors", "range_errors", "type_errors",
    "timeouts", "garbage_bytes", "clamped", "watchdog_trips",
)
_STATUS_HEAD = struct.Struct("<HBBBBH")
_STATUS = struct.Struct("<HBBBBH" + "H" * len(COUNTER_NAMES))
STATUS_LEN = _STATUS.size  # 26


class ProtocolError(ValueError):
    """A message that cannot be encoded or a payload that does not decode; ``kind`` is
    ``"length"`` or ``"range"`` (the board's counter it would increment)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def crc16(data: bytes | bytearray | memoryview, crc: int = 0xFFFF) -> int:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no xor-out).
    ``crc16(b"123456789") == 0x29B1``."""
    for b in bytes(data):
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


# A table-driven version of the same CRC for the hot path (identical results, tested).
_CRC_TABLE = []
for _i in range(256):
    _c = _i << 8
    for _ in range(8):
        _c = ((_c << 1) ^ 0x1021) & 0xFFFF if _c & 0x8000 else (_c << 1) & 0xFFFF
    _CRC_TABLE.append(_c)


def crc16_fast(data: bytes | bytearray | memoryview, crc: int = 0xFFFF) -> int:
    """Table-driven :func:`crc16`."""
    tbl = _CRC_TABLE
    for b in bytes(data):
        crc = ((crc << 8) & 0xFFFF) ^ tbl[((crc >> 8) ^ b) & 0xFF]
    return crc


@dataclass(frozen=True)
class Frame:
    """One decoded frame: message type byte, sequence number, payload bytes."""

    type: int
    seq: int
    payload: bytes = b""


def encode_frame(msg_type: int, seq: int, payload: bytes = b"") -> bytes:
    """Frame bytes for a message. Raises ProtocolError (length) if the payload is too long."""
    if len(payload) > MAX_PAYLOAD:
        raise ProtocolError("length", f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    if not 0 <= msg_type <= 0xFF:
        raise ProtocolError("range", f"message type {msg_type} is not a byte")
    body = struct.pack("<BHB", msg_type, seq & 0xFFFF, len(payload)) + bytes(payload)
    return SYNC + body + struct.pack("<H", crc16_fast(body))


def pack_pulses(pulses: Iterable[tuple[int, int]]) -> bytes:
    """SET_PULSES payload for ``[(channel, pulse_us), ...]`` without any validation
    (tests use it to build invalid frames; the driver uses :func:`encode_set_pulses`)."""
    items = list(pulses)
    return bytes([len(items) & 0xFF]) + b"".join(struct.pack("<BH", ch & 0xFF, us & 0xFFFF) for ch, us in items)


def encode_set_pulses(seq: int, pulses: Sequence[tuple[int, int]]) -> bytes:
    """SET_PULSES frame. pulses: ``(channel, pulse_us)`` pairs, distinct channels < 16, pulse
    widths in [PULSE_MIN_US, PULSE_MAX_US] µs (integers). Raises ProtocolError otherwise."""
    if not 1 <= len(pulses) <= MAX_CHANNELS:
        raise ProtocolError("length", f"{len(pulses)} channels; a frame carries 1..{MAX_CHANNELS}")
    seen = set()
    for ch, us in pulses:
        if not 0 <= ch < MAX_CHANNELS or ch in seen:
            raise ProtocolError("range", f"channel {ch} invalid or repeated")
        seen.add(ch)
        if not PULSE_MIN_US <= us <= PULSE_MAX_US:
            raise ProtocolError("range", f"channel {ch}: pulse {us} µs outside {PULSE_MIN_US}..{PULSE_MAX_US}")
    return encode_frame(MsgType.SET_PULSES, seq, pack_pulses((int(c), int(u)) for c, u in pulses))


def encode_heartbeat(seq: int) -> bytes:
    """HEARTBEAT frame (empty payload)."""
    return encode_frame(MsgType.HEARTBEAT, seq)


def encode_safe(seq: int, mode: int = SAFE_POSE) -> bytes:
    """SAFE frame: mode SAFE_POSE (board's safe pulses) or SAFE_DETACH (stop all pulses)."""
    if mode not in (SAFE_POSE, SAFE_DETACH):
        raise ProtocolError("range", f"safe mode {mode} is neither SAFE_POSE (0) nor SAFE_DETACH (1)")
    return encode_frame(MsgType.SAFE, seq, bytes([mode]))


def decode_set_pulses(payload: bytes, channels: int = MAX_CHANNELS) -> list[tuple[int, int]]:
    """Validate a SET_PULSES payload exactly like the firmware and return ``[(channel, us)]``.

    channels: the board's channel count. Raises ProtocolError kind ``length`` (empty payload,
    count 0 or above ``channels``, length ≠ 1 + 3·count) or ``range`` (channel ≥ ``channels``,
    repeated channel, pulse outside 500..2500 µs).
    """
    if len(payload) == 0:
        raise ProtocolError("length", "empty SET_PULSES payload")
    n = payload[0]
    if n == 0 or n > channels or len(payload) != 1 + 3 * n:
        raise ProtocolError("length", f"SET_PULSES with count {n} and {len(payload)} payload bytes "
                                      f"(board has {channels} channels)")
    out: list[tuple[int, int]] = []
    seen = set()
    for i in range(n):
        ch, us = struct.unpack_from("<BH", payload, 1 + 3 * i)
        if ch >= channels or ch in seen:
            raise ProtocolError("range", f"channel {ch} unknown (board has {channels}) or repeated")
        if not PULSE_MIN_US <= us <= PULSE_MAX_US:
            raise ProtocolError("range", f"channel {ch}: pulse {us} µs outside {PULSE_MIN_US}..{PULSE_MAX_US}")
        seen.add(ch)
        out.append((ch, us))
    return out


@dataclass(frozen=True)
class Status:
    """Board → host STATUS payload (26 bytes).

    ack_seq: seq of the frame acknowledged (for unsolicited WATCHDOG/BOOT: last accepted seq).
    ack_type: type of that frame (0 for unsolicited). result: :class:`Result`. flags: :class:`Flag`.
    channels: board channel count. watchdog_ms: board watchdog timeout (0 = disabled).
    counters: :data:`COUNTER_NAMES` → uint16 value.
    """

    ack_seq: int
    ack_type: int
    result: int
    flags: int
    channels: int
    watchdog_ms: int
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def rejected(self) -> int:
        """Frames/bytes the board refused: sum of every error counter."""
        return sum(self.counters.get(k, 0) for k in COUNTER_NAMES
                   if k not in ("frames", "clamped", "watchdog_trips"))


def encode_status_payload(s: Status) -> bytes:
    """STATUS payload bytes (counters wrap at 16 bits)."""
    return _STATUS.pack(s.ack_seq & 0xFFFF, s.ack_type, s.result, s.flags, s.channels, s.watchdog_ms & 0xFFFF,
                        *(s.counters.get(k, 0) & 0xFFFF for k in COUNTER_NAMES))


def decode_status(payload: bytes) -> Status:
    """Decode a STATUS payload; ProtocolError (length) if it is not exactly 26 bytes."""
    if len(payload) != STATUS_LEN:
        raise ProtocolError("length", f"STATUS payload of {len(payload)} bytes, expected {STATUS_LEN}")
    v = _STATUS.unpack(payload)
    return Status(ack_seq=v[0], ack_type=v[1], result=v[2], flags=v[3], channels=v[4], watchdog_ms=v[5],
                  counters=dict(zip(COUNTER_NAMES, v[6:])))


class Parser:
    """Streaming frame parser (same algorithm and counters as the firmware's ``hsb_parser``).

    Counters: ``frames`` (CRC-valid frames delivered), ``crc_errors``, ``length_errors`` (header
    ``len`` > MAX_PAYLOAD), ``timeouts`` (partial frame expired), ``garbage_bytes`` (bytes skipped
    while hunting for the sync). Times are milliseconds (any monotonic origin, wrapping at 2³²).
    """

    def __init__(self) -> None:
        self.buf = bytearray()
        self.last_byte_ms = 0
        self.frames = 0
        self.crc_errors = 0
        self.length_errors = 0
        self.timeouts = 0
        self.garbage_bytes = 0

    def reset(self) -> None:
        """Drop any partial frame (counters kept)."""
        self.buf.clear()

    def counters(self) -> dict[str, int]:
        return {"frames": self.frames, "crc_errors": self.crc_errors, "length_errors": self.length_errors,
                "timeouts": self.timeouts, "garbage_bytes": self.garbage_bytes}

    def feed(self, data: bytes | bytearray | memoryview, now_ms: int) -> list[Frame]:
        """Add received bytes (arrived at ``now_ms``); return the frames they complete, in order."""
        if not data:
            return []
        self.buf += data
        self.last_byte_ms = now_ms & 0xFFFFFFFF
        return self._process()

    def expire(self, now_ms: int) -> list[Frame]:
        """Drop a partial frame whose last byte is older than FRAME_TIMEOUT_MS (counted as a
        timeout) and re-scan the rest; returns frames found by the re-scan."""
        out: list[Frame] = []
        while self.buf and ((now_ms - self.last_byte_ms) & 0xFFFFFFFF) > FRAME_TIMEOUT_MS:
            self.timeouts += 1
            del self.buf[0]
            out += self._process()
        return out

    def _process(self) -> list[Frame]:
        out: list[Frame] = []
        buf = self.buf
        while buf:
            if buf[0] != SYNC0:
                del buf[0]
                self.garbage_bytes += 1
                continue
            if len(buf) < 2:
                break
            if buf[1] != SYNC1:
                del buf[0]
                self.garbage_bytes += 1
                continue
            if len(buf) < HEADER_LEN:
                break
            n = buf[5]
            if n > MAX_PAYLOAD:
                del buf[0]
                self.length_errors += 1
                continue
            need = HEADER_LEN + n + CRC_LEN
            if len(buf) < need:
                break
            rx = buf[need - 2] | (buf[need - 1] << 8)
            if crc16_fast(buf[2:need - 2]) != rx:
                del buf[0]
                self.crc_errors += 1
                continue
            out.append(Frame(type=buf[2], seq=buf[3] | (buf[4] << 8), payload=bytes(buf[6:6 + n])))
            del buf[:need]
            self.frames += 1
        return out


def flag_names(flags: int) -> str:
    """``"ATTACHED|SAFE"`` for a STATUS flags byte (``"none"`` for 0)."""
    names = [f.name for f in Flag if flags & f]
    return "|".join(names) if names else "none"


def describe(frame: Frame) -> str:
    """One-line human description of a frame (for logs and the ``decode`` CLI)."""
    try:
        name = MsgType(frame.type).name
    except ValueError:
        name = f"type 0x{frame.type:02X}"
    if frame.type == MsgType.SET_PULSES:
        try:
            body = " ".join(f"ch{c}={u}us" for c, u in decode_set_pulses(frame.payload))
        except ProtocolError as exc:
            body = f"invalid: {exc}"
    elif frame.type == MsgType.STATUS:
        try:
            s = decode_status(frame.payload)
            body = (f"ack={s.ack_seq} type=0x{s.ack_type:02X} result={Result(s.result).name} "
                    f"flags={flag_names(s.flags)} " + " ".join(f"{k}={v}" for k, v in s.counters.items()))
        except (ProtocolError, ValueError) as exc:
            body = f"invalid: {exc}"
    else:
        body = frame.payload.hex()
    return f"{name} seq={frame.seq} {body}".rstrip()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m hand_servo_driver.protocol HEX...``: decode frames from hex bytes (spaces ok)."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m hand_servo_driver.protocol <hex bytes...>", file=sys.stderr)
        return 2
    p = Parser()
    frames = p.feed(bytes.fromhex("".join(args)), 0)
    for f in frames:
        print(describe(f))
    print("parser:", p.counters(), f"{len(p.buf)} bytes pending")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
