"""The simulated board as its own process, driven through its pty by the test: it applies and
records valid frames, rejects and counts corrupted ones exactly like the board logic, clamps,
runs the watchdog, unplugs and replugs, and injects faults on the wire."""

import json
import os
import subprocess
import sys
import time

import pytest
import serial

from hand_servo_driver import protocol as p
from hand_servo_driver.board import Board, BoardConfig
from hand_servo_driver.sim_board import SimBoardProcess, summarize_log


def wait_for(pred, timeout=5.0, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.01)
    raise TimeoutError(f"timed out waiting for {what}")


class Host:
    """The test's end of the pty: writes frames, collects STATUS replies."""

    def __init__(self, port):
        self.ser = serial.Serial(port, 115200, timeout=0, write_timeout=0.5, exclusive=True)
        self.parser = p.Parser()
        self.statuses: list[p.Status] = []

    def pump(self):
        for f in self.parser.feed(self.ser.read(4096), 0):
            self.statuses.append(p.decode_status(f.payload))

    def exchange(self, data: bytes, ack_seq: int, timeout=3.0) -> p.Status:
        """Write bytes, wait for the STATUS acknowledging ``ack_seq``."""
        self.ser.write(data)

        def acked():
            self.pump()
            return next((s for s in self.statuses if s.ack_seq == ack_seq and s.ack_type), None)
        s = wait_for(acked, timeout, f"ack of seq {ack_seq}")
        self.statuses.remove(s)
        return s

    def close(self):
        self.ser.close()


@pytest.fixture
def board(tmp_path):
    sb = SimBoardProcess(str(tmp_path), "--watchdog-ms", "300", "--seed", "5")
    yield sb
    sb.stop()


def test_valid_frames_applied_and_recorded_with_clamping(board):
    host = Host(board.link)
    try:
        s = host.exchange(p.encode_set_pulses(1, [(0, 1500), (1, 1250), (4, 1999)]), 1)
        assert (s.result, s.flags, s.channels, s.watchdog_ms) == (p.Result.OK, p.Flag.ATTACHED, 5, 300)
        s = host.exchange(p.encode_set_pulses(2, [(2, 2400), (3, 600)]), 2)  # outside 1000..2000: clamped
        assert s.result == p.Result.CLAMPED and s.counters["clamped"] == 2
        s = host.exchange(p.encode_heartbeat(3), 3)
        assert s.counters["frames"] == 3
    finally:
        host.close()
    frames = wait_for(lambda: len(board.records("frame")) == 3 and board.records("frame"))
    assert [(r["seq"], r["msg"], r["result"], r["outputs"]) for r in frames] == [
        (1, "set_pulses", 0, [1500, 1250, None, None, 1999]),
        (2, "set_pulses", 1, [1500, 1250, 2000, 1000, 1999]),
        (3, "heartbeat", 0, [1500, 1250, 2000, 1000, 1999]),
    ]
    st = wait_for(lambda: (s := board.stats())["frames_applied"] == 2 and s)
    assert st["outputs"] == [1500, 1250, 2000, 1000, 1999] and st["heartbeats"] == 1


def test_corrupted_frames_rejected_counted_and_never_applied(board):
    """Each bad chunk is followed by a heartbeat, whose ack proves the board read it all; the
    board's counters must equal the in-process board logic fed the same bytes with the same
    timing (a chunk that leaves a partial frame waits for FRAME_TIMEOUT_MS, then the re-scan
    finds the heartbeat)."""
    good = p.encode_set_pulses(1, [(0, 1100), (1, 1100), (2, 1100), (3, 1100), (4, 1100)])
    poison = p.encode_set_pulses(100, [(0, 1777), (1, 1777), (2, 1777), (3, 1777), (4, 1777)])
    chunks = []
    for bit in (20, 61, 99, 150, 190):  # type, payload, payload, pulse, crc
        b = bytearray(poison)
        b[bit // 8] ^= 1 << (bit % 8)
        chunks.append(bytes(b))
    chunks += [poison[:7], poison[:-1], poison[:-5]]  # truncated
    chunks.append(p.encode_frame(p.MsgType.SET_PULSES, 101, p.pack_pulses([(0, 1777)])[:-1]))  # wrong length
    chunks.append(p.encode_frame(p.MsgType.SET_PULSES, 102, p.pack_pulses([(0, 2600)])))  # out of range
    chunks.append(p.encode_frame(p.MsgType.SET_PULSES, 103, p.pack_pulses([(7, 1777)])))  # no channel 7
    chunks.append(bytes(range(0x30, 0x70)))  # line noise
    ref = Board(BoardConfig(channels=5, watchdog_ms=300), 0)
    host = Host(board.link)
    try:
        host.exchange(good, 1)
        ref.receive(good, 0)
        for i, chunk in enumerate(chunks):
            hb = p.encode_heartbeat(10 + i)
            s = host.exchange(chunk + hb, 10 + i)
            t = 100 * (i + 1)
            ref.poll(t)
            ref.receive(chunk + hb, t)
            ref.poll(t + 60)
            assert s.result == p.Result.OK
    finally:
        host.close()
    want = ref.counters()
    assert s.counters == want
    # the exact figures: 5 bit flips and 2 truncations (the heartbeat completes the candidate)
    # are CRC errors, the 7-byte stub waits for bytes that never come (1 timeout), 1 wrong
    # length, 2 out of range; every heartbeat and the good frame accepted
    assert (want["crc_errors"], want["timeouts"], want["length_errors"], want["range_errors"]) == (7, 1, 1, 2)
    assert want["frames"] == 1 + len(chunks) + 3
    frames = board.records("frame")
    assert all(1777 not in r["outputs"] and 2600 not in r["outputs"] for r in frames)
    assert {r["seq"] for r in frames if r["msg"] == "set_pulses"} == {1}
    assert board.stats()["outputs"] == [1100] * 5
    rejects = wait_for(lambda: summarize_log(board.log_path)["rejected"])
    assert rejects["crc_errors"] == 7 and rejects["range_errors"] == 2 and rejects["length_errors"] == 1


def test_watchdog_goes_to_safe_pose_within_its_timeout(board):
    host = Host(board.link)
    try:
        host.exchange(p.encode_set_pulses(1, [(0, 1800), (1, 1800)]), 1)
        t_last = board.records("frame")[-1]["mono"]
        trip = wait_for(lambda: board.records("watchdog"), 3.0, "watchdog")[0]
        host.pump()
    finally:
        host.close()
    dt = trip["mono"] - t_last
    # Never early; how late a process that polls every few ms trips depends on the machine's load, so the
    # exact trip time is asserted on the board logic below, not on this process's wall clock.
    assert dt >= 0.300, f"watchdog after {dt * 1000:.0f} ms (configured 300 ms)"
    print(f"\nsimulated board's watchdog tripped {dt * 1000:.0f} ms after the last frame (configured 300 ms)")
    assert trip["outputs"] == [1000] * 5  # the board's safe pose
    assert any(s.result == p.Result.WATCHDOG and s.flags & p.Flag.WATCHDOG for s in host.statuses)


def test_board_watchdog_trips_on_the_first_poll_past_its_timeout():
    b = Board(BoardConfig(channels=5, watchdog_ms=300), 0)
    b.receive(p.encode_set_pulses(1, [(0, 1800), (1, 1800)]), 1000)
    assert b.poll(1300) == [] and b.outputs[0] == 1800  # exactly the timeout: not yet
    replies = b.poll(1301)
    assert len(replies) == 1 and b.outputs == list(b.config.safe_us) and b.watchdog_trips == 1
    assert b.poll(5000) == [] and b.watchdog_trips == 1  # trips once until a valid frame


def test_unplug_and_replug(board):
    host = Host(board.link)
    host.exchange(p.encode_set_pulses(1, [(0, 1600)]), 1)
    first_pty = os.readlink(board.link)
    board.control("unplug")
    wait_for(lambda: not os.path.lexists(board.link), what="link removed")
    with pytest.raises(serial.SerialException):
        for _ in range(3):
            host.ser.write(p.encode_heartbeat(2))
            host.ser.read(10)
            time.sleep(0.02)
    host.ser.close()
    with pytest.raises(serial.SerialException):
        serial.Serial(board.link, 115200)
    board.control("plug")
    wait_for(lambda: os.path.lexists(board.link), what="link back")
    host = Host(board.link)
    try:
        s = host.exchange(p.encode_heartbeat(3), 3)
        assert s.flags == 0 and s.counters["frames"] == 1  # rebooted: detached, counters fresh
    finally:
        host.close()
    st = wait_for(lambda: (s := board.stats())["totals"]["frames"] == 2 and s, what="stats after replug")
    assert st["boots"] == 2 and st["outputs"] == [None] * 5
    events = [r["event"] for r in board.records() if r["event"] in ("plug", "unplug")]
    assert events == ["plug", "unplug", "plug"]
    assert os.readlink(board.link).startswith("/dev/pts/") and first_pty.startswith("/dev/pts/")
    # signals do the same as the control FIFO
    os.kill(board.proc.pid, 10)  # SIGUSR1
    wait_for(lambda: not os.path.lexists(board.link), what="unplug by SIGUSR1")
    os.kill(board.proc.pid, 12)  # SIGUSR2
    wait_for(lambda: os.path.lexists(board.link), what="plug by SIGUSR2")


def test_fault_injection_on_the_wire(board):
    board.control("flip 2")
    board.control("truncate 2")
    wait_for(lambda: len(board.stats()["pending_injections"]) == 4, what="injections queued")
    host = Host(board.link)
    try:
        for seq in range(1, 9):
            host.ser.write(p.encode_set_pulses(seq, [(0, 1000 + 100 * seq)]))
            time.sleep(0.06)  # > FRAME_TIMEOUT_MS: a truncated frame expires on its own
        s = host.exchange(p.encode_heartbeat(9), 9)
    finally:
        host.close()
    st = wait_for(lambda: (s := board.stats())["injected"] and len(s["injected"]) == 4 and s)
    bad = {i["seq"] for i in st["injected"]}
    assert bad == {1, 2, 3, 4} and [i["kind"] for i in st["injected"]] == ["flip", "flip", "truncate", "truncate"]
    applied = {r["seq"] for r in board.records("frame") if r["msg"] == "set_pulses"}
    assert applied == {5, 6, 7, 8}
    c = s.counters
    assert c["crc_errors"] + c["length_errors"] + c["timeouts"] >= 4
    assert st["outputs"][0] == 1800


def test_command_line_ros_args_and_summary(tmp_path):
    link = str(tmp_path / "b")
    proc = subprocess.Popen([sys.executable, "-m", "hand_servo_driver.sim_board", "--link", link, "--quiet",
                             "--ros-args", "-r", "__node:=sim_board"], start_new_session=True)
    try:
        wait_for(lambda: os.path.lexists(link) and os.path.exists(link + ".stats.json"), 10, "sim_board up")
        host = Host(link)
        host.exchange(p.encode_set_pulses(1, [(0, 1500)]), 1)
        host.close()
    finally:
        proc.send_signal(2)
        proc.wait(5)
    assert proc.returncode == 0 and not os.path.lexists(link)
    out = subprocess.run([sys.executable, "-m", "hand_servo_driver.sim_board", "--summarize", link + ".log.jsonl"],
                         capture_output=True, text=True, timeout=30).stdout
    summary = json.loads(out)
    assert summary["frames_applied"]["set_pulses"] == 1 and summary["last_outputs"][0] == 1500
    bad = subprocess.run([sys.executable, "-m", "hand_servo_driver.sim_board", "--link", link, "--min-us", "2100"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "invalid configuration" in bad.stderr
    device = tmp_path / "ttyACM0"  # stands for a real device node: never replaced
    device.write_text("")
    res = subprocess.run([sys.executable, "-m", "hand_servo_driver.sim_board", "--link", str(device), "--quiet"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode != 0 and "refusing to replace" in res.stderr and device.is_file()


def test_board_files_go_beside_a_writable_link_else_to_the_temp_folder(tmp_path, monkeypatch):
    """hardware.launch.py sim_board:=true on a /dev port: a user may not write /dev/ttyACM0.log.jsonl."""
    import tempfile

    from hand_servo_driver.sim_board import _beside

    assert _beside(str(tmp_path / "board"), ".log.jsonl") == str(tmp_path / "board.log.jsonl")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if path == "/dev" else real_access(path, mode))
    assert _beside("/dev/ttyACM0", ".log.jsonl") == os.path.join(tempfile.gettempdir(), "ttyACM0.log.jsonl")


def test_horns_reach_their_targets_at_the_sg90_speed(tmp_path):
    """The log's ``horn`` records: the first pulse places a horn (position unknown before), a
    600 us move at 600 deg/s (6667 us/s) arrives 90 ms after the frame set it, a 300 deg/s horn
    (--horn-speed-dps) twice as late; a target within the dead band is no move."""
    from hand_servo_driver.horn import US_PER_DEG

    for speed in (600.0, 300.0):
        (tmp_path / f"s{int(speed)}").mkdir()
        sb = SimBoardProcess(str(tmp_path / f"s{int(speed)}"), "--watchdog-ms", "0", "--horn-speed-dps", str(speed))
        host = Host(sb.link)
        try:
            host.exchange(p.encode_set_pulses(1, [(0, 1200), (1, 1500)]), 1)
            wait_for(lambda sb=sb: len(sb.records("horn")) == 2, what="horns placed")
            host.exchange(p.encode_set_pulses(2, [(0, 1800), (1, 1503)]), 2)  # ch 1: within the dead band
            horns = wait_for(lambda sb=sb: len(r := sb.records("horn")) == 3 and r, what="horn 0 at 1800 us")
        finally:
            host.close()
            sb.stop()
        assert [(h["seq"], h["channel"], h["pulse_us"]) for h in horns] == [(1, 0, 1200.0), (1, 1, 1500.0),
                                                                             (2, 0, 1800.0)]
        move = horns[2]
        set_frame = next(r for r in sb.records("frame") if r["seq"] == 2)
        assert move["set_mono"] == pytest.approx(set_frame["mono"], abs=0.002)  # set when applied
        assert move["at_mono"] - move["set_mono"] == pytest.approx(600.0 / (speed * US_PER_DEG), abs=1e-5)
    with pytest.raises(subprocess.CalledProcessError):
        subprocess.run([sys.executable, "-m", "hand_servo_driver.sim_board", "--horn-speed-dps", "0",
                        "--link", str(tmp_path / "bad")], check=True, capture_output=True, timeout=30)
