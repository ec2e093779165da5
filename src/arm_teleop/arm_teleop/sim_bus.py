"""Simulated Feetech STS3215 bus on a pseudo-terminal. No rclpy.

:class:`SimBus` is the servos' side of the protocol (:mod:`arm_teleop.sts_protocol`): a control
table per servo (model 777, torque, goal/present position, …), status packets with checksums,
PING/READ/WRITE/SYNC_WRITE/SYNC_READ, and **fault injection** per servo: ``drop`` the next N
status packets (a servo that does not answer), ``corrupt`` the next N (one bit flipped after the
checksum was computed), ``error`` bits in the status. Present position follows the goal while
torque is on (at ``speed_ticks_s``), stays where it is (or where :meth:`SimBus.push` moves it by
hand) while torque is off. Every instruction that **writes** is logged (:attr:`SimBus.writes`: the
latest :data:`WRITE_HISTORY`, with :attr:`SimBus.writes_total` counting all of them; with
``log_path``, every one as JSON lines), so tests can prove what reached the bus and a long session
keeps flat memory.

:class:`PtySimBus` serves a SimBus on a pty (``os.openpty``) in a thread; its slave path (or a
symlink ``link``) is the "serial port" the driver opens with pyserial. ``sim_sts_bus --link
/tmp/so101_bus`` runs one as a process (the demo and ``arm_driver`` tests use it).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import sys
import threading
import time
import tty
from collections import deque
from dataclasses import dataclass, field

from arm_teleop import sts_protocol as p

#: Writes a SimBus keeps in memory (a ring; ``writes_total`` counts every one, the JSON-lines log keeps all).
WRITE_HISTORY = 10000


@dataclass
class SimServo:
    servo_id: int
    position: float = 2048.0  # ticks (float: moves continuously)
    table: bytearray = field(default_factory=lambda: bytearray(p.CONTROL_TABLE_SIZE))

    def __post_init__(self) -> None:
        self.table[p.ADDR_MODEL:p.ADDR_MODEL + 2] = p.word(p.STS3215_MODEL)
        self.table[p.ADDR_ID] = self.servo_id
        self.table[p.ADDR_MAX_ANGLE:p.ADDR_MAX_ANGLE + 2] = p.word(p.MAX_TICK)
        self.table[p.ADDR_GOAL_POSITION:p.ADDR_GOAL_POSITION + 2] = p.word(int(self.position))
        self.table[p.ADDR_PRESENT_VOLTAGE] = 120  # 12.0 V
        self.table[p.ADDR_PRESENT_TEMPERATURE] = 30
        self._sync_present()

    @property
    def torque(self) -> bool:
        return bool(self.table[p.ADDR_TORQUE_ENABLE])

    @property
    def goal(self) -> int:
        return p.sign_magnitude_decode(p.unword(*self.table[p.ADDR_GOAL_POSITION:p.ADDR_GOAL_POSITION + 2]))

    def _sync_present(self) -> None:
        pos = int(round(self.position))
        self.table[p.ADDR_PRESENT_POSITION:p.ADDR_PRESENT_POSITION + 2] = p.word(p.sign_magnitude_encode(pos))

    def advance(self, dt: float, speed_ticks_s: float) -> None:
        if self.torque:
            step = speed_ticks_s * dt
            self.position += max(-step, min(step, self.goal - self.position))
        self._sync_present()


class SimBus:
    """The servos of one bus (see module docstring). Not thread-safe: PtySimBus serialises."""

    def __init__(self, ids=(1, 2, 3, 4, 5, 6), speed_ticks_s: float = 3000.0, log_path: str | None = None,
                 clock=time.monotonic):
        self.servos = {i: SimServo(i) for i in ids}
        self.speed = speed_ticks_s
        self.clock = clock
        self._t = clock()
        self.drop: dict[int, int] = {}
        self.corrupt: dict[int, int] = {}
        self.error_bits: dict[int, int] = {}
        self._writes: deque[dict] = deque(maxlen=WRITE_HISTORY)
        self.writes_total = 0
        self.instructions = 0
        self.dropped = 0
        self.corrupted = 0
        self.parser = p.PacketParser()
        self._log = open(log_path, "w", buffering=1) if log_path else None

    def close(self) -> None:
        if self._log:
            self._log.close()
            self._log = None

    @property
    def writes(self) -> list[dict]:
        """The latest :data:`WRITE_HISTORY` logged writes, oldest first (a copy)."""
        return list(self._writes)

    # --- test controls -------------------------------------------------------------------------------
    def inject(self, kind: str, servo_id: int, count: int = 1) -> None:
        """``drop`` or ``corrupt`` the next ``count`` status packets of ``servo_id``."""
        target = {"drop": self.drop, "corrupt": self.corrupt}[kind]
        target[servo_id] = target.get(servo_id, 0) + count

    def push(self, servo_id: int, ticks: float) -> None:
        """Move a servo by hand (only sticks while its torque is off)."""
        s = self.servos[servo_id]
        s.position = float(ticks)
        s._sync_present()

    def motion_writes(self) -> list[dict]:
        """Logged writes that could move the arm: goal position/time/speed, torque on."""
        return [w for w in self.writes if w["addr"] in (p.ADDR_GOAL_POSITION, p.ADDR_GOAL_TIME, p.ADDR_GOAL_SPEED)
                or (w["addr"] == p.ADDR_TORQUE_ENABLE and any(w["data"]))]

    # --- protocol --------------------------------------------------------------------------------------
    def _advance(self) -> None:
        now = self.clock()
        dt, self._t = now - self._t, now
        for s in self.servos.values():
            s.advance(dt, self.speed)

    def receive(self, data: bytes) -> bytes:
        """Bytes from the host → bytes the servos answer (status packets, possibly faulty)."""
        out = bytearray()
        for pkt in self.parser.feed(data):
            out += self.handle(pkt)
        return bytes(out)

    def _record(self, kind: str, pkt_name: str, servo_id: int, addr: int, data: bytes) -> None:
        rec = {"t": round(time.time(), 6), "instr": pkt_name, "id": servo_id, "addr": addr, "data": list(data)}
        self._writes.append(rec)
        self.writes_total += 1
        if self._log:
            self._log.write(json.dumps(rec) + "\n")

    def _write(self, s: SimServo, addr: int, data: bytes, name: str) -> bool:
        if addr + len(data) > p.CONTROL_TABLE_SIZE or addr < 0:
            return False
        s.table[addr:addr + len(data)] = data
        self._record("write", name, s.servo_id, addr, data)
        if addr <= p.ADDR_TORQUE_ENABLE < addr + len(data) and not s.torque:
            s.table[p.ADDR_GOAL_POSITION:p.ADDR_GOAL_POSITION + 2] = p.word(p.sign_magnitude_encode(
                int(round(s.position))))  # torque off: a later torque on holds where it is
        return True

    def _status(self, servo_id: int, params: bytes = b"", error: int = 0) -> bytes:
        if self.drop.get(servo_id, 0) > 0:
            self.drop[servo_id] -= 1
            self.dropped += 1
            return b""
        pkt = bytearray(p.status(servo_id, error | self.error_bits.get(servo_id, 0), params))
        if self.corrupt.get(servo_id, 0) > 0:
            self.corrupt[servo_id] -= 1
            self.corrupted += 1
            pkt[-2 if len(pkt) > 6 else 4] ^= 0x10  # a parameter (or the error byte) flipped in transit
        return bytes(pkt)

    def handle(self, pkt: p.Packet) -> bytes:
        self.instructions += 1
        self._advance()
        if pkt.code == p.SYNC_WRITE and pkt.servo_id == p.BROADCAST_ID and len(pkt.params) >= 2:
            addr, n = pkt.params[0], pkt.params[1]
            blob = pkt.params[2:]
            for k in range(0, len(blob) - n, n + 1):
                s = self.servos.get(blob[k])
                if s is not None:
                    self._write(s, addr, bytes(blob[k + 1:k + 1 + n]), "SYNC_WRITE")
            return b""
        if pkt.code == p.SYNC_READ and pkt.servo_id == p.BROADCAST_ID and len(pkt.params) >= 2:
            addr, n = pkt.params[0], pkt.params[1]
            out = bytearray()
            for sid in pkt.params[2:]:
                s = self.servos.get(sid)
                if s is not None:
                    out += self._status(sid, bytes(s.table[addr:addr + n]))
            return bytes(out)
        s = self.servos.get(pkt.servo_id)
        if s is None:
            return b""  # nobody answers an absent ID (and broadcast gets no status)
        if pkt.code == p.PING:
            return self._status(s.servo_id)
        if pkt.code == p.READ and len(pkt.params) == 2:
            addr, n = pkt.params
            if addr + n > p.CONTROL_TABLE_SIZE:
                return self._status(s.servo_id, error=p.ERR_ANGLE)
            return self._status(s.servo_id, bytes(s.table[addr:addr + n]))
        if pkt.code in (p.WRITE, p.REG_WRITE) and len(pkt.params) >= 2:
            ok = self._write(s, pkt.params[0], bytes(pkt.params[1:]), pkt.name)
            return self._status(s.servo_id, error=0 if ok else p.ERR_ANGLE)
        return self._status(s.servo_id, error=p.ERR_ANGLE)


class PtySimBus:
    """Serve a :class:`SimBus` on a pty in a background thread. ``port`` is the slave path (or
    ``link`` when given: a symlink to it, replaced only if it is a symlink)."""

    def __init__(self, bus: SimBus, link: str | None = None):
        self.bus = bus
        self.master, self.slave = os.openpty()
        tty.setraw(self.master)
        tty.setraw(self.slave)
        self.pty_name = os.ttyname(self.slave)
        self.link = os.path.abspath(link) if link else None
        if self.link:
            if os.path.lexists(self.link):
                if not os.path.islink(self.link):
                    raise FileExistsError(f"{self.link} exists and is not a symlink")
                os.unlink(self.link)
            os.symlink(self.pty_name, self.link)
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def port(self) -> str:
        return self.link or self.pty_name

    def _serve(self) -> None:
        while not self._stop.is_set():
            r, _, _ = select.select([self.master], [], [], 0.05)
            if not r:
                with self.lock:
                    self.bus._advance()
                continue
            try:
                data = os.read(self.master, 4096)
            except OSError:
                return
            with self.lock:
                reply = self.bus.receive(data)
            if reply:
                os.write(self.master, reply)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(1.0)
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.link and os.path.islink(self.link):
            os.unlink(self.link)
        self.bus.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sim_sts_bus", description="Simulated STS3215 bus (6 servos) on a pty.")
    ap.add_argument("--link", required=True, help="symlink to create at the pty (the driver's port)")
    ap.add_argument("--log", help="JSON-lines log of every write that reached the servos")
    ap.add_argument("--ids", default="1,2,3,4,5,6")
    args = ap.parse_args(argv)
    bus = SimBus(tuple(int(x) for x in args.ids.split(",")), log_path=args.log)
    srv = PtySimBus(bus, args.link)
    print(f"sim_sts_bus: {srv.pty_name} linked at {srv.link}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        srv.close()
        print(f"sim_sts_bus: {bus.instructions} instructions, {bus.writes_total} writes", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
