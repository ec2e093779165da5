"""DriverCore against the Python board logic in one process, on a synthetic clock: what goes on
the wire and what the board ends up driving (activation, mapping, rate limit, deadband, stale
commands, lost frames, board watchdog, reconnection)."""

import math

import numpy as np
import pytest

from hand_common.contract import FINGER_NAMES
from hand_servo_driver import protocol as p
from hand_servo_driver.board import Board, BoardConfig
from hand_servo_driver.calibration import SG90_US_PER_DEGREE, ServoCalibration
from hand_servo_driver.core import LOSS_WINDOW, DriverConfig, DriverConfigError, DriverCore, ServoSettings
from hand_servo_driver.driver_config import SG90_HORN_DPS

RATE_DPS = 180.0
RATE_US = RATE_DPS * SG90_US_PER_DEGREE  # 2000 µs/s
DT = 0.02
#: the ramp to the safe pose: safe_speed_dps (default: an SG90 horn's 600 °/s) = 6667 µs/s, 133 µs a 20 ms step
SAFE_US = SG90_HORN_DPS * SG90_US_PER_DEGREE
SAFE_PULSE = 1000  # every servo's pulse at safe_flexion 0


def _split_steps(outputs) -> tuple[int, int]:
    """(largest change of a frame that moved some servo away from the safe pulse or not toward it,
    largest change of a frame that moved every changed servo toward it) over consecutive output
    lists (µs; None entries, detached outputs, skipped). Tracking is bounded by max_speed_dps, a
    ramp to the safe pose by safe_speed_dps."""
    track, safe, prev = 0, 0, None
    for out in outputs:
        if prev is not None and out is not None:
            pairs = [(a, b) for a, b in zip(prev, out) if a is not None and b is not None and a != b]
            if pairs:
                step = max(abs(b - a) for a, b in pairs)
                if all(abs(b - SAFE_PULSE) < abs(a - SAFE_PULSE) for a, b in pairs):
                    safe = max(safe, step)
                else:
                    track = max(track, step)
        prev = out
    return track, safe


def config(**kw) -> DriverConfig:
    servo_kw = {k: kw.pop(k) for k in ("max_speed_dps", "deadband_deg") if k in kw}
    servo_kw.setdefault("max_speed_dps", RATE_DPS)
    servo_kw.setdefault("deadband_deg", 2.0)
    servos = tuple(ServoSettings(ServoCalibration(n, i), **servo_kw) for i, n in enumerate(FINGER_NAMES))
    return DriverConfig(servos=servos, **kw)


def flex(*values):
    return dict(zip(FINGER_NAMES, values))


class Loop:
    """Core → bytes → board → STATUS → core, with a clock in seconds; ``corrupt`` marks seqs to
    flip a bit in before the board sees them."""

    def __init__(self, cfg: DriverConfig, board_cfg: BoardConfig | None = None):
        self.core = DriverCore(cfg)
        self.board = Board(board_cfg or BoardConfig(channels=5), 0)
        self.parser = p.Parser()
        self.t = 0.0
        self.sent: list[p.Frame] = []
        self.sent_t: list[float] = []
        self.corrupt: set[int] = set()
        self.connected = True
        self.waiting: list[bytes] = []
        self.core.on_link_up(self.t)
        self._deliver(self.board.boot_replies())

    def ms(self) -> int:
        return int(round(self.t * 1000))

    def _deliver(self, replies):
        for r in replies:
            for f in self.parser.feed(r, self.ms()):
                self.core.on_frame(f, self.t)

    def send(self, frames):
        for fr in frames:
            f = p.Parser().feed(fr, 0)[0]
            self.sent.append(f)
            self.sent_t.append(self.t)
            if not self.connected:
                continue
            if f.seq in self.corrupt:
                b = bytearray(fr)
                b[8] ^= 0x10
                fr = bytes(b)
            self._deliver(self.board.poll(self.ms()) + self.board.receive(fr, self.ms()))

    def run(self, seconds: float, command=None, board_only: bool = False):
        """Step both sides every DT; ``board_only``: the driver is frozen (replies wait for it)."""
        end = self.t + seconds
        while self.t < end - 1e-9:
            self.t = round(self.t + DT, 6)
            if board_only:
                self.waiting += self.board.poll(self.ms())
                continue
            self._deliver(self.waiting)
            self.waiting = []
            if command is not None:
                self.core.command(command, self.t)
            self.send(self.core.step(self.t))
            self._deliver(self.board.poll(self.ms()))

    def pulses_frames(self):
        return [f for f in self.sent if f.type == p.MsgType.SET_PULSES]


def test_nothing_moves_before_activation():
    lp = Loop(config())
    assert not lp.core.command(flex(1, 1, 1, 1, 1), lp.t)
    lp.run(1.0)
    assert lp.pulses_frames() == []
    assert {f.type for f in lp.sent} == {p.MsgType.HEARTBEAT}
    assert 9 <= len(lp.sent) <= 11  # one per heartbeat_period_s (0.1 s)
    assert lp.board.outputs == [None] * 5
    assert lp.core.stats.commands_inactive == 1
    assert lp.core.stats.frames_acked == len(lp.sent) and lp.core.stats.frames_unacked == 0


def test_flexions_map_to_pulses_through_the_rate_limiter():
    lp = Loop(config())
    lp.core.activate()
    lp.run(1.0, flex(0.0, 0.25, 0.5, 0.75, 1.0))
    assert lp.board.outputs == [1000, 1250, 1500, 1750, 2000]
    frames = lp.pulses_frames()
    pulses = np.array([[us for _, us in p.decode_set_pulses(f.payload)] for f in frames])
    # the ramp starts from the safe pose (1000 µs) and moves <= 2000 µs/s · 0.02 s = 40 µs per step
    assert np.all(np.abs(np.diff(pulses, axis=0)) <= RATE_US * DT + 1)
    assert pulses[0].tolist() == [1000] * 5  # attached at the safe pose first
    # pinky travels 1000 µs at 2000 µs/s: 25 steps after that, and then nothing more is sent
    assert len(frames) == 26
    assert lp.core.stats.frames_unacked == 0


def test_deadband_suppresses_repeats_but_not_real_moves():
    lp = Loop(config(deadband_deg=2.0))  # 22.2 µs
    lp.core.activate()
    lp.run(1.0, flex(0.5, 0.5, 0.5, 0.5, 0.5))
    n = len(lp.pulses_frames())
    rng = np.random.default_rng(1)
    for _ in range(50):  # jitter of ±1.5 % flexion = ±15 µs, inside the deadband
        lp.run(DT, flex(*(0.5 + rng.uniform(-0.015, 0.015, 5))))
    assert len(lp.pulses_frames()) == n
    assert lp.board.outputs == [1500] * 5
    hb = [f for f in lp.sent[-60:] if f.type == p.MsgType.HEARTBEAT]
    assert len(hb) >= 9  # the watchdog is still fed
    lp.run(0.2, flex(0.5, 0.5, 0.53, 0.5, 0.5))  # +30 µs on middle: beyond the deadband
    assert lp.board.outputs == [1500, 1500, 1530, 1500, 1500]
    assert len(lp.pulses_frames()) > n


def _pulse_series(lp):
    return [(t, [u for _, u in p.decode_set_pulses(f.payload)])
            for f, t in zip(lp.sent, lp.sent_t) if f.type == p.MsgType.SET_PULSES]


def _largest_step(series):
    return max((max(abs(b - a) for a, b in zip(x, y)) for (_, x), (_, y) in zip(series, series[1:])), default=0)


def _within_limits(series_or_outputs, dt: float = DT) -> bool:
    """Every frame's change within its limit: tracking max_speed_dps x dt, toward the safe pose
    safe_speed_dps x dt (+1 µs of rounding each)."""
    outs = [x[1] if isinstance(x, tuple) else x for x in series_or_outputs]
    track, safe = _split_steps(outs)
    return track <= RATE_US * dt + 1 and safe <= SAFE_US * dt + 1


def test_stale_command_ramps_to_the_safe_pose_once():
    lp = Loop(config(command_timeout_s=0.5))
    lp.core.activate()
    lp.core.command(flex(1, 1, 1, 1, 1), 0.0)
    lp.run(1.2)  # no more commands; the ramp continues until the command is stale, then ramps back
    pulses = _pulse_series(lp)
    assert pulses[0] == (DT, [1000] * 5)  # attach at the safe pose, then ramp up
    assert max(us[0] for _, us in pulses) == 1000 + 24 * 40  # 24 ramp steps of 40 µs before 0.5 s
    down = [t for t, us in pulses if us[0] < 1960 and t > 0.5]
    assert down[0] == pytest.approx(0.52)  # the first step after command_timeout_s
    # never a jump: the safe pose is reached by a ramp at safe_speed_dps (133 µs a step), faster than
    # tracking (40 µs a step) and no faster than an SG90 horn
    track, safe = _split_steps([us for _, us in pulses])
    assert track == 40 and 133 <= safe <= SAFE_US * DT + 1
    safe = [t for t, us in pulses if us == [1000] * 5 and t > 0.5]
    assert safe == [pytest.approx(0.52 + 7 * DT)]  # 960 µs at 133.3 µs a step: the 8th step is there
    assert lp.core.stale and lp.board.outputs == [1000] * 5 and lp.core.stats.stale_events == 1
    assert lp.core.stats.safe_sent == 1 and lp.core.at_safe
    n = len(pulses)
    lp.run(1.0)
    assert len(lp.pulses_frames()) == n  # once only; heartbeats keep the board fed
    assert lp.board.watchdog_trips == 0
    # a fresh command ramps again from the safe pose
    lp.run(0.1, flex(1, 1, 1, 1, 1))
    assert not lp.core.stale
    assert 1000 < lp.board.outputs[0] <= 1000 + RATE_US * 0.1 + 1


def test_fresh_commands_during_the_safe_ramp_take_over_from_where_it_got():
    lp = Loop(config(command_timeout_s=0.1))
    lp.core.activate()
    lp.run(1.0, flex(1, 1, 1, 1, 1))
    assert lp.board.outputs == [2000] * 5
    lp.run(0.2)  # stale after 0.1 s: the ramp down starts
    low = lp.board.outputs[0]
    assert lp.core.stale and 2000 - SAFE_US * 0.12 - 1 <= low < 2000
    lp.run(0.1, flex(1, 1, 1, 1, 1))
    assert not lp.core.stale and lp.board.outputs[0] > low
    assert _within_limits(_pulse_series(lp))


def test_detach_safe_mode_and_deactivate():
    lp = Loop(config(safe_mode="detach"))
    lp.core.activate()
    lp.run(0.5, flex(0.3, 0.3, 0.3, 0.3, 0.3))
    assert lp.board.outputs == [1300] * 5
    lp.send(lp.core.deactivate(lp.t))
    assert lp.sent[-1].type == p.MsgType.SAFE and lp.sent[-1].payload == bytes([p.SAFE_DETACH])
    assert lp.board.outputs == [None] * 5
    assert not lp.core.command(flex(1, 1, 1, 1, 1), lp.t)


def test_inverted_servo_and_curve():
    servos = (ServoSettings(ServoCalibration("thumb", 0, 1100, 1900, inverted=True), 1e5, 0.0),
              ServoSettings(ServoCalibration("index", 3, 1000, 2000, map_flexion=(0.0, 0.5, 1.0),
                                             map_fraction=(0.0, 0.8, 1.0)), 1e5, 0.0))
    lp = Loop(DriverConfig(servos=servos))
    lp.core.activate()
    lp.run(0.1, flex(0.25, 0.25, 0.9, 0.9, 0.9))
    # thumb inverted: 1900 - 0.25·800 = 1700; index (channel 3): 0.25 → 0.4 → 1400
    assert lp.board.outputs == [1700, None, None, 1400, None]
    lp.run(0.1, flex(0.25, 0.75, 0, 0, 0))
    assert lp.board.outputs == [1700, None, None, 1900, None]
    frame = lp.pulses_frames()[-1]
    assert p.decode_set_pulses(frame.payload) == [(0, 1700), (3, 1900)]


def test_lost_pulses_frame_is_sent_again():
    lp = Loop(config(max_speed_dps=1e5, command_timeout_s=0.5))  # no ramp: one frame per target
    lp.core.activate()
    lp.run(0.1, flex(0.2, 0.2, 0.2, 0.2, 0.2))
    assert lp.board.outputs == [1200] * 5
    lp.corrupt.add(lp.core.seq)  # the next frame is SET_PULSES for 0.6
    lp.core.command(flex(0.6, 0.6, 0.6, 0.6, 0.6), lp.t)
    lp.send(lp.core.step(lp.t + 0.001))
    assert lp.board.outputs == [1200] * 5  # corrupted: rejected, not applied
    assert lp.board.counters()["crc_errors"] == 1
    lp.run(0.3)  # the next heartbeat's ack reveals the loss → the pulses go out again
    assert lp.board.outputs == [1600] * 5
    assert lp.core.stats.resends == 1 and lp.core.stats.frames_unacked == 1


def test_board_watchdog_trip_makes_the_driver_ramp_from_the_safe_pose():
    lp = Loop(config(), BoardConfig(channels=5, watchdog_ms=300))
    lp.core.activate()
    lp.run(1.0, flex(1, 1, 1, 1, 1))
    assert lp.board.outputs == [2000] * 5
    lp.run(0.4, board_only=True)  # the driver stalls (e.g. a frozen process)
    assert lp.board.outputs == [1000] * 5 and lp.board.watchdog_trips == 1
    lp.run(0.1, flex(1, 1, 1, 1, 1))
    assert lp.core.stats.board_watchdog_trips == 1 and lp.core.stats.resyncs == 2  # boot + watchdog
    # ramps again from the safe pose instead of jumping back to 2000
    assert 1000 < lp.board.outputs[0] <= 1000 + RATE_US * 0.1 + 1


def test_reconnect_to_a_rebooted_board_ramps_from_where_the_horns_were():
    """A reboot detaches the outputs: the limp horns stay about where the last pulses left them,
    so the first frame to the rebooted board is those pulses, not the safe pose (a 1000 µs jump)."""
    lp = Loop(config(command_timeout_s=2.0))
    lp.core.activate()
    lp.run(1.0, flex(1, 1, 1, 1, 1))
    lp.connected = False
    lp.core.on_link_down(lp.t)
    lp.run(0.5, flex(0.5, 0.5, 0.5, 0.5, 0.5))  # the hand moves on while the link is down
    lp.board = Board(BoardConfig(channels=5), lp.ms())  # replugged: rebooted, detached
    lp.connected = True
    lp.core.on_link_up(lp.t)
    n = len(lp.sent)
    lp.run(0.1, flex(0.5, 0.5, 0.5, 0.5, 0.5))
    first = [f for f in lp.sent[n:] if f.type == p.MsgType.SET_PULSES][0]
    assert [u for _, u in p.decode_set_pulses(first.payload)] == [2000] * 5
    assert 2000 - RATE_US * 0.1 - 1 <= lp.board.outputs[0] < 2000
    lp.run(1.0, flex(0.5, 0.5, 0.5, 0.5, 0.5))
    assert lp.board.outputs == [1500] * 5
    assert _board_jumps(lp.board.events, 0) <= RATE_US * DT + 1


def test_a_reboot_seen_by_its_boot_status_ramps_from_the_last_pulses_too():
    lp = Loop(config(command_timeout_s=2.0))
    lp.core.activate()
    lp.run(1.0, flex(1, 1, 1, 1, 1))
    lp.board = Board(BoardConfig(channels=5), lp.ms())  # a brown-out: the board restarts under us
    lp._deliver(lp.board.boot_replies())
    lp.run(0.2, flex(0, 0, 0, 0, 0))
    series = _pulse_series(lp)
    assert _largest_step(series) <= RATE_US * DT + 1
    assert lp.core.stats.board_boots == 2 and 2000 - RATE_US * 0.2 - 1 <= lp.board.outputs[0] < 2000


def test_safe_pose_is_resent_after_reconnect_while_stale():
    lp = Loop(config(command_timeout_s=0.2))
    lp.core.activate()
    lp.run(0.2, flex(0.5, 0.5, 0.5, 0.5, 0.5))
    lp.connected = False
    lp.core.on_link_down(lp.t)
    lp.run(0.5)  # goes stale while the link is down: the safe frame is lost
    assert lp.core.stale
    lp.connected = True
    lp.core.on_link_up(lp.t)
    lp.run(0.1)
    assert lp.board.outputs == [1000] * 5


def test_board_rejection_is_reported_not_retried():
    # the driver uses channel 4, the board has only 3 channels
    lp = Loop(config(max_speed_dps=1e5), BoardConfig(channels=3))
    lp.core.activate()
    lp.run(0.2, flex(0.5, 0.5, 0.5, 0.5, 0.5))
    assert lp.core.stats.board_rejects >= 1
    assert "BAD_LENGTH" in lp.core.stats.last_reject
    n = len(lp.pulses_frames())
    lp.run(0.5, flex(0.5, 0.5, 0.5, 0.5, 0.5))
    assert len(lp.pulses_frames()) == n  # the same pulses are not retried
    assert lp.board.outputs == [None] * 3


def test_update_config_live_and_guards():
    lp = Loop(config())
    lp.core.activate()
    lp.run(0.1, flex(0, 0, 0, 0, 0))
    faster = config(max_speed_dps=1e5)
    lp.core.update_config(faster)
    lp.run(0.04, flex(1, 1, 1, 1, 1))
    assert lp.board.outputs == [2000] * 5
    moved = DriverConfig(servos=tuple(ServoSettings(ServoCalibration(n, i + 1)) for i, n in enumerate(FINGER_NAMES)))
    with pytest.raises(DriverConfigError, match="channels"):
        lp.core.update_config(moved)


def test_config_validation_messages():
    with pytest.raises(DriverConfigError, match="both use channel 1"):
        DriverConfig(servos=(ServoSettings(ServoCalibration("a", 1)), ServoSettings(ServoCalibration("b", 1))))
    with pytest.raises(DriverConfigError, match="safe_mode"):
        config(safe_mode="limp")
    with pytest.raises(DriverConfigError, match="max_speed_dps"):
        ServoSettings(ServoCalibration("a", 1), max_speed_dps=0.0)
    with pytest.raises(DriverConfigError, match="command_timeout_s"):
        config(command_timeout_s=math.nan)


def _board_jumps(board_events, limit):
    """Largest per-frame output change between accepted frames (µs), detached outputs skipped."""
    worst, prev = 0, None
    for ev in board_events:
        out = ev.outputs
        if prev is not None and out is not None:
            worst = max([worst] + [abs(b - a) for a, b in zip(prev, out) if a is not None and b is not None])
        prev = out
    return worst


def test_reconnect_to_a_board_that_kept_its_pulses_resumes_without_a_jump():
    """A false link loss (the board did not reboot, e.g. no DTR reset): the first STATUS says
    the board is attached and not safe, so the ramp resumes from the pulses it acknowledged."""
    lp = Loop(config(command_timeout_s=1.0))
    lp.core.activate()
    lp.run(1.0, flex(0.9, 0.9, 0.9, 0.9, 0.9))
    assert lp.board.outputs == [1900] * 5 and lp.core.acked_pulses == (1900,) * 5
    lp.board.events.clear()
    lp.core.on_link_down(lp.t)
    lp.core.on_link_up(lp.t)  # reopened at once: the board still outputs 1900
    first = [p.Parser().feed(fr, 0)[0].type for fr in lp.core.step(lp.t)]
    assert first == [p.MsgType.HEARTBEAT]  # nothing but a heartbeat until the board answers
    lp.send([])
    lp.run(0.5, flex(0.3, 0.3, 0.3, 0.3, 0.3))  # and the hand moves on meanwhile
    outs = [ev.outputs for ev in lp.board.events if ev.kind == "frame" and ev.msg == "set_pulses"]
    assert outs and 1000 not in outs[0]  # never the safe pose in one frame
    assert _board_jumps(lp.board.events, 0) <= RATE_US * DT + 1  # one control period of the rate limit
    assert lp.board.outputs == [1300] * 5
    assert lp.core.stats.resumes == 1 and lp.core.stats.board_boots == 1  # the first boot only


def test_reconnect_after_a_board_watchdog_trip_ramps_from_its_safe_pose():
    lp = Loop(config(command_timeout_s=2.0), BoardConfig(channels=5, watchdog_ms=300))
    lp.core.activate()
    lp.run(1.0, flex(1, 1, 1, 1, 1))
    lp.core.on_link_down(lp.t)
    lp.connected = False
    lp.run(0.4, board_only=True)  # link down long enough for the board's watchdog
    lp.waiting = []  # its WATCHDOG status was lost with the link
    assert lp.board.outputs == [1000] * 5
    lp.connected = True
    lp.core.on_link_up(lp.t)
    lp.board.events.clear()
    lp.run(0.1, flex(1, 1, 1, 1, 1))
    assert lp.core.stats.resumes == 0  # flags SAFE|WATCHDOG: not resumed from 2000
    assert 1000 < lp.board.outputs[0] <= 1000 + RATE_US * 0.1 + 1
    assert _board_jumps(lp.board.events, 0) <= RATE_US * DT + 1


def test_a_boot_whose_status_was_flushed_is_counted_from_the_frame_counter():
    lp = Loop(config(command_timeout_s=2.0))
    lp.core.activate()
    lp.run(0.5, flex(1, 1, 1, 1, 1))
    assert lp.core.stats.board_boots == 1
    for k in range(2):
        lp.core.on_link_down(lp.t)
        lp.board = Board(BoardConfig(channels=5), lp.ms())  # replugged; its BOOT status is never read
        lp.core.on_link_up(lp.t)
        lp.run(0.3, flex(1, 1, 1, 1, 1))
        assert lp.core.stats.board_boots == 2 + k
    # a reopen without a reboot is not a boot
    lp.core.on_link_down(lp.t)
    lp.core.on_link_up(lp.t)
    lp.run(0.3, flex(1, 1, 1, 1, 1))
    assert lp.core.stats.board_boots == 3 and lp.board.outputs == [2000] * 5


def test_loss_rate_over_the_window():
    lp = Loop(config(max_speed_dps=1e5, command_timeout_s=5.0, ack_timeout_s=0.05))
    lp.core.activate()
    assert lp.core.loss_rate() == (0.0, 0)
    lp.run(0.2, flex(0.5, 0.5, 0.5, 0.5, 0.5))
    for i in range(40):  # 40 moves, every 4th SET_PULSES corrupted on the wire
        v = 0.3 + 0.05 * (i % 2)
        lp.core.command(flex(v, v, v, v, v), lp.t)
        if i % 4 == 0:
            lp.corrupt.add(lp.core.seq)
        lp.send(lp.core.step(lp.t + 0.001))
        lp.run(0.1, flex(v, v, v, v, v))
    rate, n = lp.core.loss_rate()
    lost = lp.core.stats.frames_unacked
    assert n == min(LOSS_WINDOW, lp.core.stats.frames_acked + lost)
    assert lost >= 10 and 0.05 < rate < 0.5


def test_safe_pose_frame_leaves_within_timeout_plus_one_period_over_10_phases():
    """10 trials, the last command at different phases of the 50 Hz control tick: the safe pose
    goes out no later than command_timeout_s + 1/rate_hz (0.15 + 0.02 s) after it."""
    cfg = config(command_timeout_s=0.15)
    for k in range(10):
        core = DriverCore(cfg, expect_acks=False)
        core.on_link_up(0.0)
        core.activate()
        last = 0.1 + 0.002 * k
        core.command(flex(1, 1, 1, 1, 1), last)
        t, sent_at = 0.0, None
        while sent_at is None and t < 1.0:
            t = round(t + 0.02, 6)
            for fr in core.step(t):
                f = p.Parser().feed(fr, 0)[0]
                if f.type == p.MsgType.SET_PULSES and core.stale:
                    sent_at = t
        assert sent_at is not None and 0.15 < sent_at - last <= 0.15 + 0.02 + 1e-9


# --- issue 27: stalls without jumps, stamps, the frame cap, the safe pose ---------------------------------
def test_command_age_cancels_a_clock_offset_and_sees_delays():
    from hand_servo_driver.core import CommandAge

    for offset in (-2.0, 0.0, 2.0):  # the sender's clock ahead/behind ours: the same judgements
        age = CommandAge()
        exs = []
        for k in range(60):  # 30 Hz, 5 ms transit, every 10th delayed by 0.2 s
            t = k / 30.0
            delay = 0.005 + (0.2 if k % 10 == 9 else 0.0)
            exs.append(age.excess(t + offset, t + delay, t + delay, 0.15))
        assert [round(e, 2) for e in exs if e > 0.01] == [0.2] * 6  # (the base drifts up 1 ms/s)
        assert max(e for e in exs if e < 0.1) <= 0.002


def test_command_age_rebases_after_a_clock_step_but_not_for_a_burst():
    from hand_servo_driver.core import CommandAge

    age = CommandAge()
    for k in range(30):
        age.excess(k / 30.0, k / 30.0 + 0.005, k / 30.0, 0.15)
    # a burst of 5 commands captured 1 s ago, delivered at once (a stall): refused, no rebase
    t = 2.0
    assert all(age.excess(t - 1.0 + 0.01 * i, t, t, 0.15) > 0.9 for i in range(5))
    # the sender's clock steps back 2 s: every command is 2 s "late", steadily at 30 Hz
    ex = [age.excess(t + k / 30.0 - 2.0, t + k / 30.0, t + k / 30.0, 0.15) for k in range(1, 91)]
    late = [e for e in ex if e > 0.15]
    assert 55 <= len(late) <= 61 and age.rebases == 1  # 2 s of steady flow, then the base follows
    assert ex[-1] == pytest.approx(0.0, abs=1e-6)


def test_a_command_late_by_its_stamp_is_refused_and_a_stale_burst_never_replayed():
    cfg = config(command_timeout_s=0.15)
    core = DriverCore(cfg, expect_acks=False)
    core.on_link_up(0.0)
    core.activate()
    offset = 1234.5  # the sender's clock: unrelated to ours
    for k in range(10):
        t = k / 30.0
        assert core.command(flex(0.5, 0.5, 0.5, 0.5, 0.5), t + 0.004, t + offset, t + 0.004)
    t = 0.3
    # queued behind a 0.2 s stall: captured at 0.3, arriving at 0.5
    assert not core.command(flex(1, 1, 1, 1, 1), 0.5, t + offset, 0.5)
    assert core.stats.commands_late == 1 and "late by its stamp" in core.last_refused
    # reordered: older than the newest followed
    assert core.command(flex(0.5, 0.5, 0.5, 0.5, 0.5), 0.52, 0.515 + offset, 0.52)
    assert not core.command(flex(1, 1, 1, 1, 1), 0.53, 0.51 + offset, 0.53)
    assert core.stats.commands_out_of_order == 1
    # a command 0.1 s late by its stamp is followed, and held for command_timeout_s after it arrived
    assert core.command(flex(0.5, 0.5, 0.5, 0.5, 0.5), 0.7, 0.6 + offset, 0.705)
    core.step(0.84)
    assert not core.stale
    core.step(0.86)
    assert core.stale


def _stall_run(stall_s: float, rate_hz: float = 50.0):
    """30 Hz stamped commands following a moving hand, the driver ticking at rate_hz; at 1.0 s the
    driver stalls for ``stall_s`` (no tick, no command); afterwards the timer runs first, then the
    newest queued command (keep-last-1), then fresh ones. Returns the board's output series."""
    # the board's watchdog (1 s) outlasts the stall: the board does not go safe by itself
    lp = Loop(config(command_timeout_s=0.15, min_frame_interval_s=1.0 / rate_hz),
              BoardConfig(channels=5, watchdog_ms=1000))
    lp.core.activate()
    tick = 1.0 / rate_hz

    def hand(t):
        v = 0.5 + 0.45 * math.sin(2 * math.pi * 0.5 * t)
        return flex(v, v, v, v, v)

    t, next_cmd, stalled = 0.0, 0.0, False
    while t < 3.0:
        t = round(t + tick, 6)
        lp.t = t
        if not stalled and t >= 1.0:
            stalled = True
            t = round(t + stall_s, 6)
            lp.t = t
            lp.send(lp.core.step(t))  # the control timer runs before the queued command
            cap = math.floor(t * 30) / 30.0
            if lp.core.command(hand(cap), t, cap, t):
                lp.send(lp.core.step(t, urgent=True))
            next_cmd = cap + 1 / 30.0
            continue
        while next_cmd <= t:  # the commands due by now, each arriving 4 ms after capture
            lp.t = next_cmd + 0.004
            if lp.core.command(hand(next_cmd), lp.t, next_cmd, lp.t):
                lp.send(lp.core.step(lp.t, urgent=True))
            next_cmd += 1 / 30.0
        lp.t = t
        lp.send(lp.core.step(t))
    return lp


@pytest.mark.parametrize("stall_s", [0.2, 0.5])
def test_a_driver_stall_never_jumps_the_servos(stall_s):
    lp = _stall_run(stall_s)
    # the rate limits (tracking; toward the safe pose at safe_speed_dps), never the safe pose at once
    assert _within_limits([ev.outputs for ev in lp.board.events], lp.core.config.max_step_s)
    # the timer ran before the queued command (keep-last-1: the newest, fresh one): one step
    # toward the safe pose, then back to following
    assert lp.core.stats.stale_events == 1 and not lp.core.stale
    assert lp.board.watchdog_trips == 0


def test_the_frame_cap_holds_a_1khz_command_flood_to_the_control_rate():
    lp = Loop(config(max_speed_dps=1e5, deadband_deg=0.0, min_frame_interval_s=0.01))
    lp.core.activate()
    n0 = len(lp.pulses_frames())
    for k in range(1000):  # 1 s of commands at 1 kHz, each a new pose, the control tick at 100 Hz
        lp.t = round(k * 0.001, 6)
        v = 0.2 + 0.6 * ((k * 7) % 100) / 100.0
        lp.core.command(flex(v, v, v, v, v), lp.t)
        lp.send(lp.core.step(lp.t, urgent=True))
        if k % 10 == 0:
            lp.send(lp.core.step(lp.t))
    sent = lp.pulses_frames()[n0:]
    assert 90 <= len(sent) <= 102  # <= rate_hz (+ the bucket's 2 tokens)
    times = np.array([t for f, t in zip(lp.sent, lp.sent_t) if f.type == p.MsgType.SET_PULSES][n0:])
    assert max(np.sum((times >= t) & (times < t + 0.01)) for t in times) <= 2  # at most 2 in any 10 ms
    assert lp.core.stats.frames_capped > 800


def test_a_command_at_30_fps_goes_out_at_once_under_the_cap():
    lp = Loop(config(min_frame_interval_s=0.01, deadband_deg=0.0))
    lp.core.activate()
    late = 0
    for k in range(90):
        t = round(k / 30.0, 6)
        for j in range(1, 4):  # the ticks between commands ramp toward the last target
            lp.t = round(t - 0.0333 + j * 0.01, 6)
            if lp.t > 0:
                lp.send(lp.core.step(lp.t))
        lp.t = t
        v = 0.5 + 0.4 * math.sin(k / 5.0)
        lp.core.command(flex(v, v, v, v, v), t)
        frames = lp.core.step(t, urgent=True)
        late += not frames
        lp.send(frames)
    assert late <= 1  # the first command: attach at the safe pose, nothing moved yet


def test_deactivate_ramps_to_the_safe_pose():
    lp = Loop(config(command_timeout_s=1.0))
    lp.core.activate()
    lp.run(1.0, flex(1, 1, 1, 1, 1))
    lp.send(lp.core.deactivate(lp.t))
    assert not lp.core.at_safe and lp.board.outputs[0] >= 2000 - SAFE_US * DT - 1
    lp.run(1.0)
    assert lp.core.at_safe and lp.board.outputs == [1000] * 5
    assert _within_limits([ev.outputs for ev in lp.board.events])
    # a process that must end now: the safe frame at once
    lp.core.activate()
    lp.run(0.2, flex(0.5, 0.5, 0.5, 0.5, 0.5))
    lp.send(lp.core.finish_safe(lp.t))
    assert lp.board.outputs == [1000] * 5


def test_the_safe_pose_stays_on_the_open_side():
    from hand_servo_driver.core import SAFE_FLEXION_MAX

    assert config(safe_flexion=SAFE_FLEXION_MAX).safe_flexion == SAFE_FLEXION_MAX
    for bad in (0.31, 1.0):
        with pytest.raises(DriverConfigError, match="open side"):
            config(safe_flexion=bad)


def test_capture_to_wire_latency_per_command_exact():
    """Each followed command's capture stamp → the frame that carries it: at once (arrival − stamp
    + 0), after a frame the cap held (the next tick's), never for a command the deadband kept off
    the wire; a newer command replacing a held one counts from its own stamp."""
    lp = Loop(config(min_frame_interval_s=0.01, deadband_deg=2.0, command_timeout_s=1.0, max_speed_dps=1e5))
    lp.core.activate()
    lp.t = 0.9  # an unstamped command (not measured) and ticks: the horns at 1500 µs
    lp.core.command(flex(0.5, 0.5, 0.5, 0.5, 0.5), lp.t)
    lp.send(lp.core.step(lp.t, urgent=True))
    for lp.t in (0.92, 0.94):
        lp.send(lp.core.step(lp.t))
    assert lp.core.last_sent == (1500,) * 5 and len(lp.core.wire_latency) == 0
    # stamps on another clock (offset +100 s): 12 ms of transit, sent at once
    lp.t = 1.0
    lp.core.command(flex(0.6, 0.6, 0.6, 0.6, 0.6), lp.t, stamp_s=100.988, arrival_s=101.0)
    lp.send(lp.core.step(lp.t, urgent=True))
    assert lp.core.last_sent == (1600,) * 5
    assert list(lp.core.wire_latency) == pytest.approx([0.012])
    # the deadband keeps a 0.001 change off the wire: no frame, nothing counted
    lp.t = 1.02
    lp.core.command(flex(0.601, 0.6, 0.6, 0.6, 0.6), lp.t, stamp_s=101.010, arrival_s=101.02)
    n_sent = len(lp.sent)
    lp.send(lp.core.step(lp.t, urgent=True))
    assert len(lp.sent) == n_sent and len(lp.core.wire_latency) == 1
    # three commands 1 ms apart: the bucket (2 tokens) lets two go at once (10 and 8 ms), the third
    # is held by the cap and leaves with the first tick that has a full bucket again (1.06):
    # 1.06 - 1.042 + (101.042 - 101.036) = 24 ms
    for k, (t, stamp) in enumerate(((1.04, 101.030), (1.041, 101.033), (1.042, 101.036))):
        lp.t = t
        v = 0.7 + 0.05 * k
        lp.core.command(flex(v, v, v, v, v), lp.t, stamp_s=stamp, arrival_s=100.0 + t)
        lp.send(lp.core.step(lp.t, urgent=True))
    assert lp.core.stats.frames_capped == 1 and lp.core.last_sent == (1750,) * 5
    lp.t = 1.05
    lp.send(lp.core.step(lp.t))
    assert lp.core.last_sent == (1750,) * 5  # a tick needs a full bucket
    lp.t = 1.06
    lp.send(lp.core.step(lp.t))
    assert lp.core.last_sent == (1800,) * 5
    assert list(lp.core.wire_latency) == pytest.approx([0.012, 0.010, 0.008, 0.024])
    # the next tick repeats nothing; an unstamped command is not measured
    lp.t = 1.2
    lp.send(lp.core.step(lp.t))
    lp.core.command(flex(0.2, 0.2, 0.2, 0.2, 0.2), lp.t)
    lp.send(lp.core.step(lp.t, urgent=True))
    assert len(lp.core.wire_latency) == 4
