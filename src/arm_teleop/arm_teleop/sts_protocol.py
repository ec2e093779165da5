"""Feetech STS/SMS serial bus servo protocol ("protocol 0", STS3215), packet layer. Pure: no I/O.

The host side of the driver talks through the vendor's SDK (``scservo_sdk`` from PyPI
``ftservo-python-sdk``); this module is the independent implementation the **simulated bus**
uses, so every test crosses two implementations over a real pty.

Packets (half duplex, little-endian words on STS/SMS servos)::

    instruction:  FF FF  ID  LEN  INSTR  P1 … Pn  CHK        LEN = n + 2
    status:       FF FF  ID  LEN  ERROR  P1 … Pn  CHK        LEN = n + 2
    CHK = ~(ID + LEN + INSTR/ERROR + P1 + … + Pn) & 0xFF

Instructions: PING 1, READ 2 (addr, length), WRITE 3 (addr, data…), REG_WRITE 4, ACTION 5,
SYNC_READ 0x82 (addr, length, id…), SYNC_WRITE 0x83 (addr, length, [id, data…]…). Broadcast ID
0xFE gets no status packet. Signed registers (present speed, load, goal/present position in
multi-turn use) are **sign-magnitude**: bit 15 (position, speed) or bit 10 (load) is the sign.
"""

from __future__ import annotations

from dataclasses import dataclass

BROADCAST_ID = 0xFE
HEADER = b"\xff\xff"

PING, READ, WRITE, REG_WRITE, ACTION, SYNC_READ, SYNC_WRITE = 0x01, 0x02, 0x03, 0x04, 0x05, 0x82, 0x83
INSTRUCTIONS = {PING: "PING", READ: "READ", WRITE: "WRITE", REG_WRITE: "REG_WRITE", ACTION: "ACTION",
                SYNC_READ: "SYNC_READ", SYNC_WRITE: "SYNC_WRITE"}

# STS3215 control table (addresses). EEPROM:
ADDR_MODEL = 3  # 2 bytes, STS3215 = 777
ADDR_ID = 5
ADDR_BAUD = 6
ADDR_MIN_ANGLE = 9  # 2 bytes
ADDR_MAX_ANGLE = 11  # 2 bytes
ADDR_OFFSET = 31  # 2 bytes, sign-magnitude bit 11
ADDR_MODE = 33
# SRAM:
ADDR_TORQUE_ENABLE = 40
ADDR_ACCELERATION = 41
ADDR_GOAL_POSITION = 42  # 2 bytes
ADDR_GOAL_TIME = 44  # 2 bytes
ADDR_GOAL_SPEED = 46  # 2 bytes
ADDR_LOCK = 55
ADDR_PRESENT_POSITION = 56  # 2 bytes, sign-magnitude bit 15
ADDR_PRESENT_SPEED = 58  # 2 bytes, sign-magnitude bit 15
ADDR_PRESENT_LOAD = 60  # 2 bytes, sign-magnitude bit 10
ADDR_PRESENT_VOLTAGE = 62
ADDR_PRESENT_TEMPERATURE = 63
ADDR_MOVING = 66
ADDR_PRESENT_CURRENT = 69  # 2 bytes
CONTROL_TABLE_SIZE = 71

STS3215_MODEL = 777
TICKS_PER_TURN = 4096
MAX_TICK = 4095

# status packet error bits
ERR_VOLTAGE, ERR_ANGLE, ERR_OVERHEAT, ERR_OVERCURRENT, ERR_OVERLOAD = 1, 2, 4, 8, 32


class PacketError(ValueError):
    """A malformed packet or value (the message names the problem)."""


def checksum(body: bytes | bytearray) -> int:
    """~(sum of ID, LEN, INSTR/ERROR and parameters) & 0xFF."""
    return (~sum(body)) & 0xFF


def _packet(servo_id: int, code: int, params: bytes | bytearray | list[int]) -> bytes:
    params = bytes(params)
    if not 0 <= servo_id <= 0xFE:
        raise PacketError(f"servo id {servo_id} outside 0..254")
    if len(params) > 250:
        raise PacketError(f"{len(params)} parameter bytes: too long for one packet")
    body = bytes([servo_id, len(params) + 2, code]) + params
    return HEADER + body + bytes([checksum(body)])


def instruction(servo_id: int, instr: int, params: bytes | bytearray | list[int] = b"") -> bytes:
    """An instruction packet."""
    if instr not in INSTRUCTIONS:
        raise PacketError(f"unknown instruction 0x{instr:02x}")
    return _packet(servo_id, instr, params)


def status(servo_id: int, error: int = 0, params: bytes | bytearray | list[int] = b"") -> bytes:
    """A status packet (servo → host)."""
    if not 0 <= error <= 0x7F:
        raise PacketError(f"status error byte {error} outside 0..127")
    return _packet(servo_id, error, params)


def word(value: int) -> bytes:
    """A 16-bit register value, little-endian (STS/SMS byte order)."""
    if not 0 <= value <= 0xFFFF:
        raise PacketError(f"{value} does not fit in 16 bits")
    return bytes([value & 0xFF, value >> 8])


def unword(lo: int, hi: int) -> int:
    return (lo & 0xFF) | ((hi & 0xFF) << 8)


def sign_magnitude_decode(raw: int, sign_bit: int = 15) -> int:
    """Register value with the sign in ``sign_bit`` → signed int (0x8005 → −5 for bit 15)."""
    magnitude = raw & ((1 << sign_bit) - 1)
    return -magnitude if raw & (1 << sign_bit) else magnitude


def sign_magnitude_encode(value: int, sign_bit: int = 15) -> int:
    """Signed int → register value with the sign in ``sign_bit``. PacketError when |value| does
    not fit below the sign bit."""
    if abs(value) >= (1 << sign_bit):
        raise PacketError(f"|{value}| does not fit below sign bit {sign_bit}")
    return (abs(value) | (1 << sign_bit)) if value < 0 else value


def sync_write(addr: int, length: int, data: dict[int, bytes]) -> bytes:
    """SYNC_WRITE to the broadcast ID: ``data`` = {servo id: ``length`` bytes}."""
    params = bytearray([addr, length])
    for sid, d in data.items():
        if len(d) != length:
            raise PacketError(f"servo {sid}: {len(d)} data bytes, expected {length}")
        params += bytes([sid]) + bytes(d)
    return instruction(BROADCAST_ID, SYNC_WRITE, params)


@dataclass(frozen=True)
class Packet:
    """A decoded packet: ``code`` is the instruction (host → servo) or the error byte (status)."""

    servo_id: int
    code: int
    params: bytes

    @property
    def name(self) -> str:
        return INSTRUCTIONS.get(self.code, f"0x{self.code:02x}")


class PacketParser:
    """Stream decoder: :meth:`feed` bytes as they arrive, get whole packets. Bytes before a header
    are skipped (``garbage_bytes``); a packet whose checksum does not match is **rejected**
    (``checksum_errors``) and decoding resumes after its first header byte."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.checksum_errors = 0
        self.garbage_bytes = 0
        self.packets = 0

    def feed(self, data: bytes | bytearray) -> list[Packet]:
        self.buf += data
        out: list[Packet] = []
        while True:
            i = self.buf.find(HEADER)
            if i < 0:
                keep = 1 if self.buf.endswith(b"\xff") else 0
                self.garbage_bytes += len(self.buf) - keep
                del self.buf[: len(self.buf) - keep]
                return out
            if i:
                self.garbage_bytes += i
                del self.buf[:i]
            # FF FF FF ...: the first FF is noise
            if len(self.buf) >= 3 and self.buf[2] == 0xFF:
                self.garbage_bytes += 1
                del self.buf[0]
                continue
            if len(self.buf) < 4:
                return out
            length = self.buf[3]
            if length < 2:
                self.garbage_bytes += 2
                del self.buf[:2]
                continue
            total = 4 + length
            if len(self.buf) < total:
                return out
            body = bytes(self.buf[2: total - 1])
            if checksum(body) != self.buf[total - 1]:
                self.checksum_errors += 1
                del self.buf[:1]
                continue
            out.append(Packet(body[0], body[2], body[3:]))
            self.packets += 1
            del self.buf[:total]
