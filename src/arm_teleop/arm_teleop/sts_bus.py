"""Host side of the STS3215 bus over the vendor SDK (``scservo_sdk`` = PyPI ``ftservo-python-sdk``).
No rclpy.

Why that library: MIT licence, published by Feetech itself (github.com/ftservo/FTServo_Python,
release 2.0.1 in 2026), only pyserial underneath, and its port handler discards stale input
before each instruction (``reset_input_buffer``), so a late status packet after a timeout is not
mistaken for the next answer — the older ``feetech-servo-sdk`` 1.0.0 (2022 copy of a 2020
archive, Unlicense) flushes the *output* there instead. What the SDK lacks, this wrapper adds:

- **retries**: a missing (``COMM_RX_TIMEOUT``) or corrupted (``COMM_RX_CORRUPT``: bad checksum,
  truncated) status packet is retried up to ``retries`` times, then :class:`BusError` names the
  servo, the register and the last result;
- a bounded wait: the SDK's status timeout is a module constant (50 ms); :class:`_Port` makes it
  ``timeout_ms`` and blocks in ``select`` for 1 ms steps instead of spinning on a zero-timeout
  read;
- **sign-magnitude** decoding of present position (bit 15);
- an exclusive open (a second driver on the same port fails instead of interleaving packets).
"""

from __future__ import annotations

import scservo_sdk as sdk
import serial

from arm_teleop import sts_protocol as p
from arm_teleop.bus_errors import BusError, BusStats

__all__ = ["BusError", "BusStats", "StsBus"]  # the errors and stats live in arm_teleop.bus_errors (DryRunBus shares them)

RESULT_NAMES = {sdk.COMM_SUCCESS: "success", sdk.COMM_PORT_BUSY: "port busy", sdk.COMM_TX_FAIL: "tx failed",
                sdk.COMM_RX_FAIL: "rx failed", sdk.COMM_TX_ERROR: "bad instruction", sdk.COMM_RX_WAITING: "rx waiting",
                sdk.COMM_RX_TIMEOUT: "no status packet", sdk.COMM_RX_CORRUPT: "corrupted status packet",
                sdk.COMM_NOT_AVAILABLE: "not available"}
RETRYABLE = (sdk.COMM_RX_TIMEOUT, sdk.COMM_RX_CORRUPT)


class _Port(sdk.PortHandler):
    """The SDK's port handler with a configurable status timeout, a blocking 1 ms read and an
    exclusive open."""

    def __init__(self, port_name: str, timeout_ms: float):
        super().__init__(port_name)
        self.timeout_ms = float(timeout_ms)

    def setupPort(self, cflag_baud):  # noqa: N802 - SDK name
        if self.is_open:
            self.closePort()
        self.ser = serial.Serial(port=self.port_name, baudrate=self.baudrate, bytesize=serial.EIGHTBITS,
                                 timeout=0.001, exclusive=True)
        self.is_open = True
        self.ser.reset_input_buffer()
        self.tx_time_per_byte = (1000.0 / self.baudrate) * 10.0
        return True

    def setPacketTimeout(self, packet_length):  # noqa: N802 - SDK name
        self.packet_start_time = self.getCurrentTime()
        self.packet_timeout = self.tx_time_per_byte * (packet_length + 3) + self.timeout_ms


class _Handler(sdk.sms_sts):
    """The SDK's packet handler, taking as the answer only a status packet that fits the
    instruction: the addressed servo's ID and, for a READ of n bytes, n parameters (else none).

    A status packet that does not fit is a late answer to an earlier attempt: it arrived after
    that attempt timed out and after this instruction's input flush (``clearPort``), so the SDK,
    which checks only the ID, took it as this one's answer. A ping's late status taken as the
    answer to the ping's model-number READ made the SDK index a parameter the packet does not
    have (IndexError out of ``StsBus.ping``; measured: a driver's configure under load ~20 with
    the simulated bus's thread starved). Such a packet is skipped and counted (``BusStats.stale``), and the
    wait goes on until this instruction's answer or its timeout, as for another servo's packet.
    A late answer to an earlier attempt of the *same* instruction still fits: the same register,
    read within the retries' timeouts (or the same write acknowledged).
    """

    def __init__(self, port_handler: sdk.PortHandler, stats: BusStats):
        super().__init__(port_handler)
        self.stats = stats

    def txRxPacket(self, txpacket):  # noqa: N802 - SDK name
        result = self.txPacket(txpacket)
        if result != sdk.COMM_SUCCESS:
            return None, result, 0
        if txpacket[sdk.PKT_ID] == sdk.BROADCAST_ID:  # no status packet
            self.portHandler.is_using = False
            return None, result, 0
        n = txpacket[sdk.PKT_PARAMETER0 + 1] if txpacket[sdk.PKT_INSTRUCTION] == sdk.INST_READ else 0
        self.portHandler.setPacketTimeout(n + 6)  # HEADER0 HEADER1 ID LENGTH ERROR params CHECKSUM
        while True:
            rxpacket, result = self.rxPacket()
            if result != sdk.COMM_SUCCESS:
                return rxpacket, result, 0
            if rxpacket[sdk.PKT_ID] == txpacket[sdk.PKT_ID] and rxpacket[sdk.PKT_LENGTH] == n + 2:
                return rxpacket, result, rxpacket[sdk.PKT_ERROR]
            if rxpacket[sdk.PKT_ID] == txpacket[sdk.PKT_ID]:
                self.stats.stale += 1  # (another servo's packet is skipped as the SDK does, not counted)


class StsBus:
    """One STS bus: ``port`` (device or pty path), 1 Mbaud by default (see :mod:`arm_teleop.bus`)."""

    real = True  #: bytes reach servos (or sim_sts_bus's); arm_teleop.bus.DryRunBus: False

    def __init__(self, port: str, baud: int = 1_000_000, retries: int = 3, timeout_ms: float = 20.0):
        self.port = port
        self.baud = int(baud)
        self.retries = int(retries)
        self.stats = BusStats()
        self._port = _Port(port, timeout_ms)
        self._ph = _Handler(self._port, self.stats)

    # --- connection -----------------------------------------------------------------------------
    def open(self) -> None:
        """Open the port; BusError names the port and the reason."""
        try:
            if not self._port.setBaudRate(self.baud):
                raise BusError(f"{self.port}: baud rate {self.baud} not supported by the SDK")
        except (serial.SerialException, OSError) as exc:
            raise BusError(f"cannot open {self.port}: {exc}") from exc

    @property
    def is_open(self) -> bool:
        return bool(self._port.is_open)

    def close(self) -> None:
        if self._port.is_open:
            self._port.closePort()

    # --- transactions with retries ----------------------------------------------------------------
    def _transact(self, what: str, servo_id: int, fn):
        last = None
        for attempt in range(self.retries + 1):
            self.stats.transactions += 1
            if attempt:
                self.stats.retries += 1
            try:
                value, result, error = fn()
            except (serial.SerialException, OSError) as exc:
                self.stats.failures += 1
                raise BusError(f"{what} servo {servo_id}: port error {exc}") from exc
            if result == sdk.COMM_SUCCESS:
                return value, error
            last = result
            if result == sdk.COMM_RX_TIMEOUT:
                self.stats.timeouts += 1
            elif result == sdk.COMM_RX_CORRUPT:
                self.stats.corrupted += 1
            if result not in RETRYABLE:
                break
        self.stats.failures += 1
        raise BusError(f"{what} servo {servo_id}: {RESULT_NAMES.get(last, last)} "
                       f"after {self.retries + 1} attempt(s)")

    def ping(self, servo_id: int) -> int:
        """Model number of the servo (777 for an STS3215)."""
        value, _ = self._transact("ping", servo_id, lambda: self._ph.ping(servo_id))
        return int(value)

    def read_byte(self, servo_id: int, addr: int) -> int:
        value, _ = self._transact(f"read @{addr}", servo_id, lambda: self._ph.read1ByteTxRx(servo_id, addr))
        return int(value)

    def read_word(self, servo_id: int, addr: int) -> int:
        value, _ = self._transact(f"read @{addr}", servo_id, lambda: self._ph.read2ByteTxRx(servo_id, addr))
        return int(value)

    def read_position(self, servo_id: int) -> int:
        """Present position, ticks (sign-magnitude decoded: bit 15 is the sign)."""
        return p.sign_magnitude_decode(self.read_word(servo_id, p.ADDR_PRESENT_POSITION), 15)

    def write_byte(self, servo_id: int, addr: int, value: int) -> int:
        """Write one byte and wait for the status packet (retried); returns its error byte."""
        def fn():
            result, error = self._ph.write1ByteTxRx(servo_id, addr, value)
            return None, result, error
        return self._transact(f"write @{addr}", servo_id, fn)[1]

    def write_word(self, servo_id: int, addr: int, value: int) -> int:
        def fn():
            result, error = self._ph.write2ByteTxRx(servo_id, addr, value)
            return None, result, error
        return self._transact(f"write @{addr}", servo_id, fn)[1]

    def sync_write_positions(self, ticks: dict[int, int]) -> None:
        """Goal positions of several servos in one SYNC_WRITE (no status packets)."""
        group = sdk.GroupSyncWrite(self._ph, p.ADDR_GOAL_POSITION, 2)
        for sid, t in ticks.items():
            group.addParam(sid, list(p.word(p.sign_magnitude_encode(int(t)))))
        result = group.txPacket()
        self.stats.transactions += 1
        if result != sdk.COMM_SUCCESS:
            self.stats.failures += 1
            raise BusError(f"sync write to {sorted(ticks)}: {RESULT_NAMES.get(result, result)}")
