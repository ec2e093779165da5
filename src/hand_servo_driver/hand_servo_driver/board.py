"""The board's behaviour in Python, rule for rule the firmware's ``board_logic.cpp``. No rclpy.

:class:`Board` validates every frame exactly like the firmware (a parser error, a wrong
length, an out-of-range value, an unknown type: rejected and counted, never applied), clamps
accepted pulses to each channel's configured range, answers every CRC-valid frame with a STATUS,
and runs the watchdog. The simulated board (:mod:`hand_servo_driver.sim_board`) drives it from a
pseudo-terminal; the shared vectors (``firmware/test_vectors.txt``) hold both implementations to
the same outputs, counters and replies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hand_servo_driver import protocol as p

#: Conservative SG90 defaults: 1000-2000 µs is ~90° of horn travel around centre, well inside
#: the mechanical stops of every SG90 we know (full range ~500-2500 µs varies per unit).
DEFAULT_MIN_US = 1000
DEFAULT_MAX_US = 2000
DEFAULT_SAFE_US = 1000
DEFAULT_WATCHDOG_MS = 500


class BoardConfigError(ValueError):
    """A board configuration that the firmware would not accept."""


@dataclass(frozen=True)
class BoardConfig:
    """Per-channel limits and watchdog of a board (``config.h`` in the firmware).

    min_us/max_us: clamp range per channel (µs), PULSE_MIN_US ≤ min < max ≤ PULSE_MAX_US.
    safe_us: the safe pose per channel (µs), within [min, max]. watchdog_ms: 0 disables, else the
    silence (ms without an accepted frame) after which the outputs go safe; watchdog_action:
    SAFE_POSE (drive safe_us) or SAFE_DETACH (stop pulses).
    """

    channels: int = 5
    min_us: tuple[int, ...] = ()
    max_us: tuple[int, ...] = ()
    safe_us: tuple[int, ...] = ()
    watchdog_ms: int = DEFAULT_WATCHDOG_MS
    watchdog_action: int = p.SAFE_POSE

    def __post_init__(self) -> None:
        n = self.channels
        if not 1 <= n <= p.MAX_CHANNELS:
            raise BoardConfigError(f"channels={n}: a board has 1..{p.MAX_CHANNELS}")
        for name, default in (("min_us", DEFAULT_MIN_US), ("max_us", DEFAULT_MAX_US), ("safe_us", DEFAULT_SAFE_US)):
            v = tuple(int(x) for x in getattr(self, name)) or (default,)
            if len(v) == 1:
                v = v * n
            if len(v) != n:
                raise BoardConfigError(f"{name} has {len(v)} values for {n} channels")
            object.__setattr__(self, name, v)
        for ch in range(n):
            lo, hi, safe = self.min_us[ch], self.max_us[ch], self.safe_us[ch]
            if not p.PULSE_MIN_US <= lo < hi <= p.PULSE_MAX_US:
                raise BoardConfigError(f"channel {ch}: need {p.PULSE_MIN_US} <= min_us {lo} < max_us {hi} "
                                       f"<= {p.PULSE_MAX_US}")
            if not lo <= safe <= hi:
                raise BoardConfigError(f"channel {ch}: safe_us {safe} outside [{lo}, {hi}]")
        if not 0 <= self.watchdog_ms <= 0xFFFF:
            raise BoardConfigError(f"watchdog_ms={self.watchdog_ms} outside 0..65535")
        if self.watchdog_action not in (p.SAFE_POSE, p.SAFE_DETACH):
            raise BoardConfigError(f"watchdog_action={self.watchdog_action}: 0 (pose) or 1 (detach)")


@dataclass
class BoardEvent:
    """Something the outputs did: ``kind`` is ``frame`` (an accepted frame; ``msg`` its type
    name), ``watchdog`` or ``boot``; ``outputs`` the pulses after it (None = detached)."""

    kind: str
    seq: int
    msg: str
    result: int
    outputs: list[int | None] = field(default_factory=list)


class Board:
    """One board: parser + validation + outputs + watchdog. Times in ms (wrapping at 2³²).

    ``outputs[ch]``: pulse width in µs, or None when the channel is detached (no pulses; the
    state at boot). Every call returns the reply frames (bytes) to send back, in order.
    """

    def __init__(self, config: BoardConfig, now_ms: int = 0):
        self.config = config
        self.parser = p.Parser()
        self.outputs: list[int | None] = [None] * config.channels
        self.flags = 0
        self.length_errors = 0
        self.range_errors = 0
        self.type_errors = 0
        self.clamped = 0
        self.watchdog_trips = 0
        self.tx_seq = 0
        self.last_seq = 0
        self.last_valid_ms = now_ms & 0xFFFFFFFF
        self.events: list[BoardEvent] = []
        self._boot = [self._status(0, 0, p.Result.BOOT)]
        self.events.append(BoardEvent("boot", 0, "", p.Result.BOOT, list(self.outputs)))

    # --- the public surface, same as hsb_board_* -------------------------------------------------
    def boot_replies(self) -> list[bytes]:
        """The BOOT status the board sends when it starts (once)."""
        out, self._boot = self._boot, []
        return out

    def receive(self, data: bytes, now_ms: int) -> list[bytes]:
        """Bytes from the host at ``now_ms``: parse, validate, apply; return STATUS replies."""
        replies: list[bytes] = []
        for frame in self.parser.feed(data, now_ms):
            replies.append(self._handle(frame, now_ms))
        return replies

    def poll(self, now_ms: int) -> list[bytes]:
        """Time passes: expire a stale partial frame, run the watchdog. Call before receive()."""
        replies = [self._handle(f, now_ms) for f in self.parser.expire(now_ms)]
        now = now_ms & 0xFFFFFFFF
        cfg = self.config
        if (cfg.watchdog_ms > 0 and self.attached and not self.flags & p.Flag.WATCHDOG
                and ((now - self.last_valid_ms) & 0xFFFFFFFF) > cfg.watchdog_ms):
            if cfg.watchdog_action == p.SAFE_POSE:
                self.outputs = list(cfg.safe_us)
            else:
                self.outputs = [None] * cfg.channels
            self.watchdog_trips += 1
            self.flags |= p.Flag.WATCHDOG | p.Flag.SAFE
            self.events.append(BoardEvent("watchdog", self.last_seq, "", p.Result.WATCHDOG, list(self.outputs)))
            replies.append(self._status(self.last_seq, 0, p.Result.WATCHDOG))
        return replies

    @property
    def attached(self) -> bool:
        return any(o is not None for o in self.outputs)

    def counters(self) -> dict[str, int]:
        """The STATUS counters (parser + board), unwrapped."""
        pc = self.parser
        return {
            "frames": pc.frames, "crc_errors": pc.crc_errors,
            "length_errors": pc.length_errors + self.length_errors, "range_errors": self.range_errors,
            "type_errors": self.type_errors, "timeouts": pc.timeouts, "garbage_bytes": pc.garbage_bytes,
            "clamped": self.clamped, "watchdog_trips": self.watchdog_trips,
        }

    def status_flags(self) -> int:
        f = self.flags & ~p.Flag.ATTACHED
        return f | (p.Flag.ATTACHED if self.attached else 0)

    # --- rules -------------------------------------------------------------------------------------
    def _handle(self, frame: p.Frame, now_ms: int) -> bytes:
        cfg = self.config
        result = p.Result.OK
        if frame.type == p.MsgType.SET_PULSES:
            try:
                pulses = p.decode_set_pulses(frame.payload, cfg.channels)
            except p.ProtocolError as exc:
                result = self._reject(exc.kind)
            else:
                for ch, us in pulses:
                    c = min(max(us, cfg.min_us[ch]), cfg.max_us[ch])
                    if c != us:
                        self.clamped += 1
                        result = p.Result.CLAMPED
                    self.outputs[ch] = c
                self.flags &= ~(p.Flag.WATCHDOG | p.Flag.SAFE)
        elif frame.type == p.MsgType.HEARTBEAT:
            if frame.payload:
                result = self._reject("length")
        elif frame.type == p.MsgType.SAFE:
            if len(frame.payload) != 1:
                result = self._reject("length")
            elif frame.payload[0] == p.SAFE_POSE:
                self.outputs = list(cfg.safe_us)
                self.flags |= p.Flag.SAFE
            elif frame.payload[0] == p.SAFE_DETACH:
                self.outputs = [None] * cfg.channels
                self.flags |= p.Flag.SAFE
            else:
                result = self._reject("range")
        else:
            self.type_errors += 1
            result = p.Result.BAD_TYPE
        if result in (p.Result.OK, p.Result.CLAMPED):
            self.last_valid_ms = now_ms & 0xFFFFFFFF
            self.last_seq = frame.seq
            name = p.MsgType(frame.type).name.lower()
            self.events.append(BoardEvent("frame", frame.seq, name, result, list(self.outputs)))
        return self._status(frame.seq, frame.type, result)

    def _reject(self, kind: str) -> p.Result:
        if kind == "length":
            self.length_errors += 1
            return p.Result.BAD_LENGTH
        self.range_errors += 1
        return p.Result.BAD_RANGE

    def _status(self, ack_seq: int, ack_type: int, result: int) -> bytes:
        s = p.Status(ack_seq=ack_seq, ack_type=ack_type, result=int(result), flags=int(self.status_flags()),
                     channels=self.config.channels, watchdog_ms=self.config.watchdog_ms, counters=self.counters())
        frame = p.encode_frame(p.MsgType.STATUS, self.tx_seq, p.encode_status_payload(s))
        self.tx_seq = (self.tx_seq + 1) & 0xFFFF
        return frame


def parse_channel_list(text: str | Sequence[int], channels: int) -> tuple[int, ...]:
    """``"1000"`` or ``"1000,1100,..."`` (or a sequence) → one int per channel."""
    if isinstance(text, str):
        vals = tuple(int(v) for v in text.split(",") if v.strip())
    else:
        vals = tuple(int(v) for v in text)
    if len(vals) == 1:
        vals = vals * channels
    if len(vals) != channels:
        raise BoardConfigError(f"{len(vals)} values for {channels} channels: {text!r}")
    return vals
