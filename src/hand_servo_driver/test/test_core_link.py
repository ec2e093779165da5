"""DriverCore against the Python board logic on a synthetic clock, the command link's side: loss over the
window, command age and clock offsets, late and stale bursts, driver stalls, the frame cap, deactivation
and the safe pose, capture -> wire latency (split from test_core; harness: driver_loop)."""

import math
import os
import sys

import numpy as np
import pytest

from hand_servo_driver import protocol as p
from hand_servo_driver.board import BoardConfig
from hand_servo_driver.core import ARRIVALS, LOSS_WINDOW, DriverConfigError, DriverCore

sys.path.insert(0, os.path.dirname(__file__))
from driver_loop import DT, SAFE_US, Loop, _within_limits, config, flex  # noqa: E402


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


def _stepped_stream(step_s: float, single: bool) -> tuple[DriverCore, list[float]]:
    """30 Hz commands for 8 s, 5 ms on the link; from the 30th the sender's stamps move by ``step_s``
    (``single``: only the 30th, a command stamped in the future). Returns the core and the capture
    times (our clock) of the commands followed after the 30th."""
    core = DriverCore(config(command_timeout_s=0.15), expect_acks=False)
    core.on_link_up(0.0)
    core.activate()
    followed = []
    for k in range(240):
        t = 1.0 + k / 30.0
        rx = t + 0.005
        off = step_s if k >= 30 and (not single or k == 30) else 0.0
        if core.command(flex(0.5, 0.5, 0.5, 0.5, 0.5), rx, t + off, rx + 100.0, rx) and k > 30:
            followed.append(t)
        core.step(rx)
    return core, followed


@pytest.mark.parametrize("step_s, single", [(-60.0, False), (-5.0, False), (3600.0, True)])
def test_a_sender_clock_step_or_a_future_stamp_blocks_commands_only_until_the_rebase(step_s, single):
    """The sender's clock stepped back (60 s, 5 s), or one command stamped 1 h in the future: the
    commands after it are refused (late, and stamped before the newest followed) until CommandAge
    takes the new time base (rebase_s = 2 s of paced late commands), then followed again. Before: the
    newest followed stamp stayed from the old base, so every command was refused as out of order
    for as long as the step (60 s, 1 h): the hand held at the safe pose, the stream never followed."""
    core, followed = _stepped_stream(step_s, single)
    assert core.stats.clock_rebases == 1
    assert followed and 1.0 + 30 / 30.0 + 2.0 <= followed[0] <= 1.0 + 30 / 30.0 + 2.2
    assert len(followed) >= 240 - 31 - 2.2 * 30 and not core.stale
    assert core.stats.commands_out_of_order + core.stats.commands_late <= 2.2 * 30


def test_command_age_does_not_take_a_lossy_reliable_link_for_a_clock_step():
    """20 % loss on a reliable link: a lost command is retransmitted ~0.2-0.3 s later and the ones
    behind it are delivered with it (head-of-line blocking), for seconds. They arrive steadily late
    by a similar excess, but in bursts, not at the pace they were stamped: no rebase, every one of
    them stays refused (the two-host test's loss phase counted one rebase before the pace rule)."""
    from hand_servo_driver.core import CommandAge

    age = CommandAge()
    for k in range(30):
        age.excess(k / 30.0, k / 30.0 + 0.005, k / 30.0, 0.15)
    refused = 0
    t0 = 1.0
    for block in range(40):  # 4 s: every 0.1 s the 3 commands captured meanwhile arrive together
        release = t0 + 0.1 * (block + 1) + 0.2  # held behind a retransmission
        for i in range(3):
            stamp = t0 + 0.1 * block + i / 30.0
            arrival = release + 0.002 * i
            refused += age.excess(stamp, arrival, arrival, 0.15) > 0.15
    assert age.rebases == 0  # steadily late (gaps <= 0.1 s, excess 0.27-0.30 s) for 4 s, but not paced
    assert refused == 40 * 3
    # the same excess at the pace of the stamps is a clock step: followed again after rebase_s
    t = t0 + 5.0
    ex = [age.excess(t + k / 30.0 - 0.4, t + k / 30.0, t + k / 30.0, 0.15) for k in range(90)]
    assert age.rebases == 1 and ex[-1] == pytest.approx(0.0, abs=1e-6)


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


def test_reception_times_take_the_wait_in_our_own_queue_off_both_clocks():
    from hand_servo_driver.command_age import reception_times

    # received 0.2 s before the callback ran (ROS time 1000.5, monotonic 20.0 now)
    assert reception_times(20.0, 1000.5, 1000_300_000_000) == pytest.approx((1000.3, 19.8))
    for missing in (0, None):  # the middleware gave no reception stamp: the callback time
        assert reception_times(20.0, 1000.5, missing) == (1000.5, 20.0)
    # a reception stamp after the callback's clock reading (our system clock stepped back): now
    assert reception_times(20.0, 1000.5, 1000_600_000_000) == (1000.5, 20.0)


def test_a_reception_stamp_from_another_clock_is_not_taken_for_a_backlog():
    """A reception stamp not on our system clock (an rmw giving the monotonic clock or the sender's
    time, our clock stepped forward between reception and callback) said the command waited for
    years: its arrival was put that far back, so every command was stale at once and the driver
    never followed one (the safe pose held with a healthy stream). Now such a stamp is ignored
    (the callback time), a plausible backlog (<= RECEPTION_WAIT_MAX_S) still taken off."""
    from hand_servo_driver.command_age import RECEPTION_WAIT_MAX_S, reception_times, reception_usable

    clock_now = 1.7e9
    for other in (20_000_000_000, int((clock_now - 3600.0) * 1e9)):  # monotonic ns; the sender 1 h behind
        assert not reception_usable(clock_now, other)
        assert reception_times(20.0, clock_now, other) == (clock_now, 20.0)
    waited = RECEPTION_WAIT_MAX_S - 0.01
    assert reception_times(20.0, clock_now, int((clock_now - waited) * 1e9)) == pytest.approx(
        (clock_now - waited, 20.0 - waited), abs=1e-6)
    core = DriverCore(config(command_timeout_s=0.15), expect_acks=False)
    core.on_link_up(0.0)
    core.activate()
    for k in range(30):  # a healthy 30 Hz stream whose reception stamps are on the monotonic clock
        now = 20.0 + k / 30.0
        arrival, received = reception_times(now, clock_now + k / 30.0, int(now * 1e9))
        assert core.command(flex(0.5, 0.5, 0.5, 0.5, 0.5), now, arrival - 0.005, arrival, received)
        core.step(now)
        assert not core.stale and core.stale_deadline() == pytest.approx(now + 0.15)


def _backlogged_stream(core, backlog_s: float, use_reception: bool, seconds: float = 4.0, offset: float = -2.0):
    """30 Hz commands, 5 ms on the link, each handled ``backlog_s`` after its reception (a steady
    executor backlog), the sender's clock ``offset`` from ours; returns how many were followed."""
    followed = 0
    for k in range(int(seconds * 30)):
        t = 1.0 + k / 30.0  # capture, on our clock
        rx = t + 0.005
        now = rx + (backlog_s if k >= 30 else 0.0)  # the backlog builds after 1 s
        if use_reception:
            followed += core.command(flex(0.5, 0.5, 0.5, 0.5, 0.5), now, t + offset, rx + 100.0, rx)
        else:  # the callback's time taken as the arrival (before: a false clock step)
            followed += core.command(flex(0.5, 0.5, 0.5, 0.5, 0.5), now, t + offset, now + 100.0)
    return followed


def test_a_steady_executor_backlog_is_not_taken_for_a_sender_clock_step():
    """The defect of test_two_host_netns (a clock rebase counted on a clean link): with the callback
    time as the arrival, a steady 0.2 s backlog in our own executor raises every transit alike, at the
    pace of the stamps: after rebase_s it is taken for the sender's clock stepped back (1 rebase, the
    commands refused as late until then). With the middleware's reception time the transit stays the
    link's: 0 rebases, every command followed, its age counted from its reception."""
    cfg = config(command_timeout_s=0.15)
    for use_reception, rebases in ((False, 1), (True, 0)):
        core = DriverCore(cfg, expect_acks=False)
        core.on_link_up(0.0)
        core.activate()
        followed = _backlogged_stream(core, 0.2, use_reception)
        assert core.stats.clock_rebases == rebases, use_reception
        assert (followed == 120) == use_reception and core.stats.commands_late == (0 if use_reception else 120 - followed)
    # the command followed is held for command_timeout_s after its reception, not after the late callback
    last_rx = 1.0 + 119 / 30.0 + 0.005
    assert core.cmd_time == pytest.approx(last_rx) and core.stale_deadline() == pytest.approx(last_rx + 0.15)


def test_the_stale_decision_counts_from_the_reception():
    """A command handled 0.1 s after it arrived goes stale 0.15 s after its arrival: at the deadline
    stale_deadline() names, not 0.15 s after the callback; the window sees its arrival, not the callback."""
    core = DriverCore(config(command_timeout_s=0.15), expect_acks=False)
    core.on_link_up(0.0)
    core.activate()
    assert core.stale_deadline() is None  # nothing followed yet
    assert core.command(flex(0.5, 0.5, 0.5, 0.5, 0.5), 10.1, 50.0, 50.005, 10.0)
    assert core.stale_deadline() == pytest.approx(10.15)
    core.step(10.149)
    assert not core.stale
    assert math.isnan(core.stats.last_stale_late_s)
    core.step(10.151)
    assert core.stale and core.stale_deadline() is None
    assert core.stats.last_stale_late_s == pytest.approx(0.001)  # decided 1 ms after its deadline
    assert core.quality._events[-1][0] == pytest.approx(10.0)
    # received "after" it is handled (clocks read in another order): counted as handled now
    assert core.command(flex(0.5, 0.5, 0.5, 0.5, 0.5), 11.0, 51.0, 51.005, 11.2)
    assert core.cmd_time == 11.0


def test_the_first_command_after_a_stale_period_has_its_own_deadline():
    """After a stale decision, the next command followed (a link that comes back for one command,
    then drops again) has a deadline at its reception + command_timeout_s: the node arms its
    one-shot from stale_deadline() right after command(). Before, the stale flag of the previous
    command hid it (None): no deadline armed, the decision left to the control tick (up to
    1/rate_hz late: 1 s at the lowest rate_hz)."""
    core = DriverCore(config(command_timeout_s=0.15), expect_acks=False)
    core.on_link_up(0.0)
    core.activate()
    assert core.command(flex(0.5, 0.5, 0.5, 0.5, 0.5), 1.0, 50.0, 50.005, 1.0)
    core.step(1.0)
    core.step(1.2)
    assert core.stale and core.stale_deadline() is None and core.stats.stale_events == 1
    assert core.command(flex(0.6, 0.6, 0.6, 0.6, 0.6), 2.01, 51.0, 51.005, 2.0)
    assert core.stale_deadline() == pytest.approx(2.15)
    core.step(2.01)  # followed: the ramp leaves the safe pose towards it
    assert not core.stale and not core.going_safe
    core.step(2.149)
    assert not core.stale
    core.step(2.151)
    assert core.stale and core.stats.stale_events == 2
    assert core.stats.last_stale_late_s == pytest.approx(0.001)


def test_a_command_just_after_a_step_from_rest_is_due_when_its_first_microsecond_is():
    """At rest, a command 0.2 ms after a control tick: the step it gets moves the limiter 0.3 us
    (300 deg/s), which rounds to the pulses the board has, so no frame; next_frame_at() named the
    frame interval after the last frame, already past, and the node armed no wake: the command
    waited for the next tick (9.8 ms at 100 Hz). Now it is due when the limiter has moved 1 us."""
    core = DriverCore(config(command_timeout_s=0.15, min_frame_interval_s=0.01), expect_acks=False)
    core.on_link_up(0.0)
    core.activate()
    core.command(flex(0.5, 0.5, 0.5, 0.5, 0.5), 0.0, 10.0, 10.005, 0.0)
    for k in range(1, 101):  # at rest after the ramp; the last step (a tick) at 1.0
        core.step(k / 100.0)
    assert core.next_frame_at() is None
    now = 1.0002
    assert core.command(flex(0.6, 0.6, 0.6, 0.6, 0.6), now, 11.0, 11.005, now)
    assert core.step(now) == []
    due = core.next_frame_at()
    one_us = 1.0 / float(np.max(core.config.rates_us()))
    assert due == pytest.approx(now + one_us) and now < due < now + 0.001
    frames = core.step(due)
    assert [p.Parser().feed(f, 0)[0].type for f in frames] == [p.MsgType.SET_PULSES]
    assert core.wire_latency[-1] == pytest.approx(0.005 + one_us)


def test_a_fist_reaches_the_safe_pose_within_the_ramp_bound_after_the_decision():
    """From a fist (2000 µs) the ramp to the safe pose (1000 µs) at safe_speed_dps 600 takes
    DriverConfig.safe_ramp_bound_s() (0.15 s) after the stale decision, within one 10 ms tick (its
    first step integrates the time since the previous one): the safe pose is reached
    command_timeout_s + ~0.15 s after the last command, never sooner than the horn allows."""
    cfg = config(command_timeout_s=0.15, max_step_s=0.02)
    bound = cfg.safe_ramp_bound_s()
    assert bound == pytest.approx(0.15, rel=1e-3)
    for phase in (0.0, 0.003, 0.0071):
        core = DriverCore(cfg, expect_acks=False)
        core.on_link_up(0.0)
        core.activate()
        t, last_cmd = 0.0, None
        while t < 1.0:  # commands at 30 Hz up to 1 s: the horns reach the fist (rate limit 300 °/s)
            if last_cmd is None or t - last_cmd >= 1 / 30 - 1e-9:
                core.command(flex(1, 1, 1, 1, 1), t)
                last_cmd = t
            core.step(t)
            t = round(t + 0.01, 6)
        assert core.last_sent == (2000,) * 5
        decided = reached = None
        t = last_cmd + phase
        while reached is None and t < last_cmd + 1.0:
            t = round(t + 0.01, 6)
            core.step(t)
            if core.stale and decided is None:
                decided = t
            if decided is not None and core.at_safe and core.last_sent == (1000,) * 5:
                reached = t
        assert decided - last_cmd <= 0.15 + 0.01 + 1e-9
        assert bound - 0.02 - 1e-9 <= reached - decided <= bound + 0.01 + 1e-9, (phase, decided, reached)


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
                lp.send(lp.core.step(t))
            next_cmd = cap + 1 / 30.0
            continue
        while next_cmd <= t:  # the commands due by now, each arriving 4 ms after capture
            lp.t = next_cmd + 0.004
            if lp.core.command(hand(next_cmd), lp.t, next_cmd, lp.t):
                lp.send(lp.core.step(lp.t))
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
        lp.send(lp.core.step(lp.t))
        if k % 10 == 0:
            lp.send(lp.core.step(lp.t))
    sent = lp.pulses_frames()[n0:]
    assert 90 <= len(sent) <= 101  # <= rate_hz
    times = np.array(lp.sent_t)
    assert np.diff(times).min() >= 0.01 - 1e-9  # every frame >= 10 ms after the one before
    assert lp.core.stats.frames_capped > 800


def test_a_steady_command_stream_goes_out_at_once_a_held_one_when_the_interval_ends_the_newest_wins():
    lp = Loop(config(min_frame_interval_s=0.01, deadband_deg=0.0))
    lp.core.activate()
    at_once = 0
    for k in range(90):
        t = round(k / 30.0, 6)
        for j in range(1, 4):  # the ticks between commands ramp toward the last target
            lp.t = round(t - 0.0333 + j * 0.01, 6)
            if lp.t > 0:
                lp.send(lp.core.step(lp.t))
        last_tx = lp.core.last_tx_t
        lp.t = t
        v = 0.5 + 0.4 * math.sin(k / 5.0)
        lp.core.command(flex(v, v, v, v, v), t)
        frames = lp.core.step(t)
        assert not frames or t - last_tx >= 0.01 - 1e-9  # never within 10 ms of the last frame
        at_once += bool(frames) and k >= ARRIVALS
        lp.send(frames)
    assert np.diff(lp.sent_t).min() >= 0.01 - 1e-9
    # from the ARRIVALS-th command on, the ramp frame of the tick 3.3 ms before each command is
    # deferred (unstamped commands: to the expected arrival + YIELD_JITTER_S)
    assert at_once >= 90 - ARRIVALS - 5 and lp.core.stats.ramp_frames_deferred >= 50
    t = lp.t = round(90 / 30.0, 6)  # the next command, on time, far away: the ramp takes > 33 ms
    lp.core.command(flex(0.95, 0.95, 0.95, 0.95, 0.95), t)
    lp.send(lp.core.step(t))
    assert lp.core.last_tx_t == t
    for lp.t in (round(t + 0.01, 6), round(t + 0.02, 6)):  # ramp frames, 10 ms apart
        lp.send(lp.core.step(lp.t))
        assert lp.core.last_tx_t == lp.t
    lp.t = round(t + 0.03, 6)  # the tick before the next command: nothing due before t + 1/30 + 2 ms
    assert lp.core.step(lp.t) == [] and lp.core.next_frame_at() == pytest.approx(t + 1 / 30 + 0.002)
    # the next command, 0.3 ms late, goes at once; one 0.1 ms after it is held: it is due 10 ms
    # after that frame (the node wakes then, not at its next tick), as the newest one
    lp.t = round(t + 0.0336, 6)
    lp.core.command(flex(0.8, 0.8, 0.8, 0.8, 0.8), lp.t)
    lp.send(lp.core.step(lp.t))
    assert lp.core.last_tx_t == lp.t
    lp.t = round(lp.t + 0.0001, 6)
    lp.core.command(flex(0.9, 0.9, 0.9, 0.9, 0.9), lp.t)
    assert lp.core.step(lp.t) == [] and lp.core.stats.frames_capped >= 1
    assert lp.core.next_frame_at() == pytest.approx(lp.core.last_tx_t + 0.01)
    lp.t = round(lp.core.last_tx_t + 0.01, 6)
    lp.send(lp.core.step(lp.t))
    assert lp.sent_t[-1] == lp.t and lp.pulses_frames()[-1] is lp.sent[-1]


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
    + 0), after a frame the cap held (10 ms after that frame), never for a command the deadband kept off
    the wire; a newer command replacing a held one counts from its own stamp."""
    lp = Loop(config(min_frame_interval_s=0.01, deadband_deg=2.0, command_timeout_s=1.0, max_speed_dps=1e5))
    lp.core.activate()
    lp.t = 0.9  # an unstamped command (not measured) and ticks: the horns at 1500 µs
    lp.core.command(flex(0.5, 0.5, 0.5, 0.5, 0.5), lp.t)
    lp.send(lp.core.step(lp.t))
    for lp.t in (0.92, 0.94):
        lp.send(lp.core.step(lp.t))
    assert lp.core.last_sent == (1500,) * 5 and len(lp.core.wire_latency) == 0
    # stamps on another clock (offset +100 s): 12 ms of transit, sent at once
    lp.t = 1.0
    lp.core.command(flex(0.6, 0.6, 0.6, 0.6, 0.6), lp.t, stamp_s=100.988, arrival_s=101.0)
    lp.send(lp.core.step(lp.t))
    assert lp.core.last_sent == (1600,) * 5
    assert list(lp.core.wire_latency) == pytest.approx([0.012])
    # the deadband keeps a 0.001 change off the wire: no frame, nothing counted
    lp.t = 1.02
    lp.core.command(flex(0.601, 0.6, 0.6, 0.6, 0.6), lp.t, stamp_s=101.010, arrival_s=101.02)
    n_sent = len(lp.sent)
    lp.send(lp.core.step(lp.t))
    assert len(lp.sent) == n_sent and len(lp.core.wire_latency) == 1
    # three commands 1 ms apart: the first goes at once (10 ms), the second is held by the frame
    # interval and replaced by the third, which leaves with the tick 10 ms after the first frame
    # (1.05): 1.05 - 1.042 + (101.042 - 101.036) = 14 ms
    for k, (t, stamp) in enumerate(((1.04, 101.030), (1.041, 101.033), (1.042, 101.036))):
        lp.t = t
        v = 0.7 + 0.05 * k
        lp.core.command(flex(v, v, v, v, v), lp.t, stamp_s=stamp, arrival_s=100.0 + t)
        lp.send(lp.core.step(lp.t))
    assert lp.core.stats.frames_capped == 2 and lp.core.last_sent == (1700,) * 5
    lp.t = 1.049  # 9 ms after the last frame: still held
    lp.send(lp.core.step(lp.t))
    assert lp.core.last_sent == (1700,) * 5
    lp.t = 1.05
    lp.send(lp.core.step(lp.t))
    assert lp.core.last_sent == (1800,) * 5
    assert list(lp.core.wire_latency) == pytest.approx([0.012, 0.010, 0.014])
    # the next tick repeats nothing; an unstamped command is not measured
    lp.t = 1.2
    lp.send(lp.core.step(lp.t))
    lp.core.command(flex(0.2, 0.2, 0.2, 0.2, 0.2), lp.t)
    lp.send(lp.core.step(lp.t))
    assert len(lp.core.wire_latency) == 3
