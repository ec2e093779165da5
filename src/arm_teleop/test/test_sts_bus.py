"""STS3215 protocol, simulated bus on a pty, the SDK-based host bus and the driver core's opt-ins.

The host side is the vendor SDK (scservo_sdk) through arm_teleop.sts_bus; the servo side is our
own packet layer (arm_teleop.sts_protocol) in arm_teleop.sim_bus: two implementations that must
agree byte for byte over a real pseudo-terminal.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import scservo_sdk as sdk

from arm_teleop import sts_protocol as p
from arm_teleop.arm_model import load_arm
from arm_teleop.driver_core import ArmDriverCore, Calibration, OptIn, opt_in_level
from arm_teleop.sim_bus import PtySimBus, SimBus
from arm_teleop.sts_bus import BusError, StsBus


# --- packet layer ------------------------------------------------------------------------------------
def test_packets_match_the_protocol_examples():
    # Feetech manual example: read 2 bytes at 0x38 (present position) from ID 1
    assert p.instruction(1, p.READ, [0x38, 0x02]) == bytes([0xFF, 0xFF, 0x01, 0x04, 0x02, 0x38, 0x02, 0xBE])
    assert p.status(1, 0, [0x00, 0x08]) == bytes([0xFF, 0xFF, 0x01, 0x04, 0x00, 0x00, 0x08, 0xF2])
    assert p.checksum(bytes([1, 2, 1])) == 0xFB  # ping ID 1


def test_parser_rejects_corruption_and_skips_noise():
    parser = p.PacketParser()
    good = p.status(3, 0, p.word(1234))
    bad = bytearray(good)
    bad[5] ^= 0x01
    pkts = parser.feed(b"\x00\x13" + bytes(bad) + good[:4])
    assert pkts == [] and parser.checksum_errors == 1
    pkts = parser.feed(good[4:])
    assert [(k.servo_id, p.unword(*k.params)) for k in pkts] == [(3, 1234)]
    assert parser.garbage_bytes >= 2


@pytest.mark.parametrize("value, raw", [(0, 0), (5, 5), (-5, 0x8005), (4095, 4095), (-4095, 0x8FFF)])
def test_sign_magnitude(value, raw):
    assert p.sign_magnitude_encode(value) == raw
    assert p.sign_magnitude_decode(raw) == value
    assert p.sign_magnitude_decode(p.sign_magnitude_encode(-300, 10), 10) == -300
    with pytest.raises(p.PacketError):
        p.sign_magnitude_encode(1 << 15)


def test_our_packets_equal_the_sdks():
    """What the SDK writes for SYNC_WRITE equals sts_protocol.sync_write (captured on the pty)."""
    bus = SimBus()
    srv = PtySimBus(bus)
    host = StsBus(srv.port)
    try:
        host.open()
        got = bytearray()
        real = bus.receive

        def spy(data):
            got.extend(data)
            return real(data)
        bus.receive = spy
        host.sync_write_positions({1: 1000, 2: 3000})
        deadline = time.monotonic() + 2
        while len(got) < 14 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert bytes(got) == p.sync_write(p.ADDR_GOAL_POSITION, 2, {1: p.word(1000), 2: p.word(3000)})
    finally:
        host.close()
        srv.close()


#: The host's status timeout against the simulated bus: long enough that the simulated bus's thread, starved
#: on a loaded machine, still answers in time (15 ms made a retry of an answered READ at load 18, and the
#: exact retry counts below failed); a dropped answer costs this much once per attempt.
REPLY_TIMEOUT_MS = 500.0


# --- host bus against the simulated bus ------------------------------------------------------------
@pytest.fixture()
def sim():
    bus = SimBus()
    srv = PtySimBus(bus)
    host = StsBus(srv.port, retries=2, timeout_ms=REPLY_TIMEOUT_MS)
    host.open()
    yield bus, host
    host.close()
    srv.close()


def test_ping_read_write_and_sign_magnitude_over_the_pty(sim):
    bus, host = sim
    assert [host.ping(i) for i in range(1, 7)] == [p.STS3215_MODEL] * 6
    bus.push(5, -5)
    assert host.read_position(5) == -5  # bit 15 = sign
    host.write_byte(2, p.ADDR_TORQUE_ENABLE, 1)
    host.sync_write_positions({2: 2500})
    deadline = time.monotonic() + 2
    while host.read_position(2) != 2500 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert host.read_position(2) == 2500


def test_a_missing_status_packet_is_retried(sim):
    bus, host = sim
    bus.inject("drop", 3, 1)
    assert host.read_position(3) == 2048
    assert host.stats.timeouts == 1 and host.stats.retries == 1 and bus.dropped == 1
    bus.inject("drop", 4, 1)
    host.write_byte(4, p.ADDR_TORQUE_ENABLE, 0)  # writes wait for their status packet too
    assert host.stats.retries == 2


def test_a_corrupted_status_packet_is_rejected_and_retried(sim):
    bus, host = sim
    bus.push(1, 1234)
    bus.inject("corrupt", 1, 1)
    assert host.read_position(1) == 1234  # the corrupted answer (bit flipped) was not believed
    assert host.stats.corrupted == 1 and bus.corrupted == 1


def test_a_servo_that_never_answers_is_an_error_naming_it(sim):
    bus, host = sim
    bus.inject("drop", 4, 10)
    with pytest.raises(BusError, match="servo 4: no status packet after 3 attempt"):
        host.read_position(4)
    assert host.read_position(1) == 2048  # the bus goes on


class _LateStatusBus(SimBus):
    """Sends, just before its answer to the next READ of ``late_for``, the parameterless status
    packet of that servo a timed-out ping or write would have got late: what the host reads when
    that late packet arrives after the READ's input flush (a starved bus thread under load)."""

    late_for: set[int] = set()

    def handle(self, pkt: p.Packet) -> bytes:
        answer = super().handle(pkt)
        if pkt.code == p.READ and pkt.servo_id in self.late_for:
            self.late_for.discard(pkt.servo_id)
            return p.status(pkt.servo_id) + answer
        return answer


@pytest.mark.parametrize("call, expected", [("ping", p.STS3215_MODEL), ("read_position", 1234)])
def test_a_late_status_that_does_not_fit_the_instruction_is_not_its_answer(call, expected):
    """Before: the SDK took a late parameterless status of the same servo as the READ's answer and
    raised IndexError (a driver's configure failed so under load: ping = PING + READ of the model)."""
    bus = _LateStatusBus()
    bus.late_for = {3}
    srv = PtySimBus(bus)
    host = StsBus(srv.port, retries=2, timeout_ms=REPLY_TIMEOUT_MS)
    try:
        host.open()
        bus.push(3, 1234)
        assert getattr(host, call)(3) == expected
        assert host.stats.stale == 1 and host.stats.retries == 0 and host.stats.failures == 0
        assert host.read_position(3) == 1234 and host.stats.stale == 1  # the next answer is read as usual
    finally:
        host.close()
        srv.close()


def test_an_exclusive_port_cannot_be_opened_twice(sim):
    bus, host = sim
    with pytest.raises(BusError, match="cannot open"):
        StsBus(host.port).open()


# --- driver core: opt-in levels ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def arm():
    return load_arm()


def _driver(level, arm, port=None):
    bus = StsBus(port, retries=2, timeout_ms=REPLY_TIMEOUT_MS) if port else None
    return ArmDriverCore(level, Calibration(), arm.lower, arm.upper, bus, gripper_open=arm.gripper_open)


def test_opt_in_levels():
    assert opt_in_level(False, False) == opt_in_level(False, True) == OptIn.DRY_RUN
    assert opt_in_level(True, False) == OptIn.READ_ONLY and opt_in_level(True, True) == OptIn.MOTION


def test_dry_run_never_touches_the_bus(arm):
    bus = SimBus()
    srv = PtySimBus(bus)
    try:
        d = _driver(OptIn.DRY_RUN, arm)
        d.connect()
        d.enable()
        writes = d.command(arm.keyframe("ready"))
        d.shutdown()
        assert bus.instructions == 0 and bus.writes == []
        assert [w.kind for w in writes] == ["arm_goals", "gripper_goal"] and d.intended
    finally:
        srv.close()


def test_read_only_reads_and_writes_nothing_but_torque_off(arm):
    bus = SimBus()
    srv = PtySimBus(bus)
    try:
        d = _driver(OptIn.READ_ONLY, arm, srv.port)
        assert d.connect() == {i: p.STS3215_MODEL for i in range(1, 7)}
        assert d.enable() is None
        bus.push(2, 2048 + 512)  # moved by hand: read back as +π/4
        q = d.read()
        assert q[1] == pytest.approx(np.pi / 4, abs=1e-3)
        d.command(arm.keyframe("ready"))
        d.shutdown()
        assert bus.motion_writes() == []
        assert bus.writes and all(w["addr"] == p.ADDR_TORQUE_ENABLE and w["data"] == [0] for w in bus.writes)
        assert all(not s.torque for s in bus.servos.values())
        assert len(d.intended) == 2 and not any(w.kind != "torque" for w in d.performed)
    finally:
        srv.close()


def test_motion_moves_with_gripper_separate_and_clamped_then_shuts_down_safely(arm):
    bus = SimBus()
    srv = PtySimBus(bus)
    try:
        d = _driver(OptIn.MOTION, arm, srv.port)
        d.connect()
        q0 = d.enable()
        assert np.allclose(q0, 0.0, atol=1e-3)  # sim servos boot at 2048 = 0 rad
        # torque went on only after goal = present (no jump)
        first_goal = next(i for i, w in enumerate(bus.writes) if w["addr"] == p.ADDR_GOAL_POSITION)
        first_on = next(i for i, w in enumerate(bus.writes) if w["addr"] == p.ADDR_TORQUE_ENABLE and w["data"] == [1])
        assert first_goal < first_on
        n = len(bus.writes)
        cmd = arm.keyframe("ready")
        cmd[5] = 5.0  # far beyond the gripper's range: pre-clamped
        d.command(cmd)
        new = bus.writes[n:]
        assert [w["instr"] for w in new] == ["SYNC_WRITE"] * 5 + ["WRITE"]
        assert [w["id"] for w in new] == [1, 2, 3, 4, 5, 6]
        grip_tick = p.unword(*new[-1]["data"])
        assert grip_tick == Calibration().to_ticks(np.r_[np.zeros(5), arm.gripper_open])[-1]
        assert Calibration().gripper_min_ticks <= grip_tick <= Calibration().gripper_max_ticks
        time.sleep(0.3)
        assert d.read()[:5] == pytest.approx(cmd[:5], abs=2e-3)
        d.shutdown()
        tail = bus.writes[-7:]
        assert tail[0]["id"] == 6 and tail[0]["addr"] == p.ADDR_GOAL_POSITION  # gripper opened first
        assert all(w["addr"] == p.ADDR_TORQUE_ENABLE and w["data"] == [0] for w in tail[1:])
        assert all(not s.torque for s in bus.servos.values())
        with pytest.raises(ValueError, match="finite"):
            d.command(np.full(6, np.nan))
    finally:
        srv.close()


def test_calibration_maps_zero_sign_and_refuses_bad_tables():
    cal = Calibration(zero_ticks=(1000, 2048, 3000, 2048, 2048, 2048), signs=(1, -1, 1, 1, 1, 1))
    q = np.array([0.5, 0.5, -0.2, 0.0, 0.0, 0.3])
    assert cal.to_rad(cal.to_ticks(q)) == pytest.approx(q, abs=2e-3)
    assert cal.to_ticks(np.zeros(6))[:3].tolist() == [1000, 2048, 3000]
    assert cal.to_ticks(np.array([0, 0.5, 0, 0, 0, 0]))[1] < 2048  # sign −1
    assert "distinct" in Calibration(ids=(1, 1, 2, 3, 4, 5)).problem()
    assert sdk.COMM_SUCCESS == 0


def test_write_history_is_a_ring_with_running_totals(arm):
    from arm_teleop.driver_core import WRITE_HISTORY

    d = _driver(OptIn.DRY_RUN, arm)
    q = arm.keyframe("ready")
    for _ in range(WRITE_HISTORY):  # two writes per command: the ring wraps half-way
        d.command(q)
    assert len(d.intended) == WRITE_HISTORY and d.intended_total == 2 * WRITE_HISTORY
    assert [w.kind for w in list(d.intended)[-2:]] == ["arm_goals", "gripper_goal"]
    assert d.performed_total == 0 and not d.performed


def test_sim_bus_keeps_a_ring_of_writes_and_counts_them_all(monkeypatch, tmp_path):
    """A long session keeps flat memory: the latest WRITE_HISTORY writes, a total of all, every
    one in the JSON-lines log."""
    import json

    from arm_teleop import sim_bus

    monkeypatch.setattr(sim_bus, "WRITE_HISTORY", 5)
    log = tmp_path / "writes.jsonl"
    bus = SimBus(log_path=str(log))
    for k in range(12):
        bus.receive(p.instruction(1, p.WRITE, [p.ADDR_GOAL_POSITION, *p.word(2000 + k)]))
    bus.close()
    assert bus.writes_total == 12 and len(bus.writes) == 5
    assert [p.unword(*w["data"][:2]) for w in bus.writes] == [2007, 2008, 2009, 2010, 2011]  # the latest, in order
    assert [p.unword(*json.loads(line)["data"][:2]) for line in log.read_text().splitlines()] == list(range(2000, 2012))


def test_one_factory_for_the_bus_a_dry_run_refuses_every_transaction(arm):
    """arm_teleop.bus.open_bus: real_hardware -> StsBus (here on sim_sts_bus's pty: the same byte
    path as an adapter), else a DryRunBus that opens nothing and raises on any transaction."""
    from arm_teleop.bus import DryRunBus, open_bus

    dry = open_bus(False, "/dev/ttyACM0")
    assert isinstance(dry, DryRunBus) and not dry.real and dry.port == "/dev/ttyACM0"
    dry.open()
    dry.close()
    for call in (lambda: dry.ping(1), lambda: dry.read_position(2), lambda: dry.write_byte(3, p.ADDR_TORQUE_ENABLE, 1),
                 lambda: dry.write_word(4, p.ADDR_GOAL_POSITION, 2048), lambda: dry.sync_write_positions({5: 2048})):
        with pytest.raises(BusError, match="dry run: no bus"):
            call()
    srv = PtySimBus(SimBus())
    real = open_bus(True, srv.port, retries=2, timeout_ms=REPLY_TIMEOUT_MS)
    assert isinstance(real, StsBus) and real.real
    core = ArmDriverCore(OptIn.READ_ONLY, Calibration(), arm.lower, arm.upper, real, gripper_open=arm.gripper_open)
    try:
        assert core.connect() == {i: p.STS3215_MODEL for i in range(1, 7)}
    finally:
        core.shutdown()
        srv.close()
    with pytest.raises(ValueError, match="read_only needs a bus"):
        ArmDriverCore(OptIn.READ_ONLY, Calibration(), arm.lower, arm.upper, dry)
    core = ArmDriverCore(OptIn.DRY_RUN, Calibration(), arm.lower, arm.upper, real)  # a dry run never uses it
    assert not core.bus.real and core.connect() == {} and [w.kind for w in core.command(arm.keyframe("ready"))] == [
        "arm_goals", "gripper_goal"]
