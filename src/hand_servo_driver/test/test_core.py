"""DriverCore against the Python board logic in one process, on a synthetic clock: what goes on
the wire and what the board ends up driving (activation, mapping, rate limit, deadband, stale
commands, lost frames, board watchdog, reconnection)."""

import math
import os
import sys

import numpy as np
import pytest

from hand_common.contract import FINGER_NAMES
from hand_servo_driver import protocol as p
from hand_servo_driver.board import Board, BoardConfig
from hand_servo_driver.calibration import ServoCalibration
from hand_servo_driver.core import DriverConfig, DriverConfigError, ServoSettings

sys.path.insert(0, os.path.dirname(__file__))
from driver_loop import (  # noqa: E402
    DT,
    RATE_US,
    SAFE_US,
    Loop,
    _board_jumps,
    _largest_step,
    _pulse_series,
    _split_steps,
    _within_limits,
    config,
    flex,
)


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
