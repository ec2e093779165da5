"""Fault injection, separate processes: the driver (under ``hand_servo_driver.faults``, which adds
SIGUSR1 write stalls), the simulated board, a stand-in tracker for kill -9, and this process's
probe. Every figure comes from stamps (the board's log, the stall log, the tracker's publish log;
all CLOCK_MONOTONIC), never from sleeps; the tests run in order on one rig.
"""

import math
import os
import time

import pytest

from hand_common import contract
from hand_common.testing import wait_until
from hand_servo_driver.fault_rig import FaultRig, pulse_jumps

NODE = contract.SERVO_DRIVER_NODE
CLOSED = [1.0] * 5
STALL_SPEED_DPS = 180.0


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    r = FaultRig(str(tmp_path_factory.mktemp("servo_faults")), speed_dps=5000.0)
    r.activate()
    yield r
    code = r.close()
    assert code == 0, r.node.tail(40)


def target_us(rig):
    return [int(rig.params[f]["max_pulse_us"]) for f in contract.FINGER_NAMES]


def test_cross_parameter_rules_are_refused_at_set_time_with_reasons(rig):
    rig.wait_diag(lambda lvl, m, v: "board_channels" in v, 10.0, "the board's first STATUS")  # its values rule
    for value in (0.6, 2.0):
        res = rig.probe.set_parameters(NODE, heartbeat_period_s=value)[0]
        assert not res.successful and "board watchdog of 0.5 s (the board reports)" in res.reason
    res = rig.probe.set_parameters(NODE, **{"thumb.channel": 7})[0]
    # a configure-time parameter is refused while configured (it used to be accepted and deferred)
    assert not res.successful and "thumb.channel is read at configure time" in res.reason
    assert rig.probe.get_parameters(NODE, ["heartbeat_period_s"])["heartbeat_period_s"] == 0.1


def test_stale_command_puts_the_board_at_its_safe_pulses_within_200_ms_10_trials(rig):
    """command_timeout_s at its default (0.15 s): the board at exactly its safe pulses within 200 ms
    of the last command, in each of 10 trials. Both ends are board-log stamps: each command moves
    the pose a little (1.0 / 0.97), so the driver sends a SET_PULSES the moment a command
    arrives, and the last of them marks the last command's arrival (no DDS or test-process
    scheduling in the figure). Never sooner than command_timeout_s after the last publish."""
    assert float(rig.params["command_timeout_s"]) == 0.15
    safe = rig.safe_us()
    lat, from_publish = [], []
    decided_before = len(_stale_lateness_s(rig))
    for _ in range(10):
        last = rig.stream(lambda t: [1.0 if int(t * 30) % 2 else 0.97] * 5, 0.4)
        sent = rig.last_publish_start
        wait_until(lambda last=last: rig.first_output(safe, last) is not None, 3.0, "safe pose")
        t_safe = rig.first_output(safe, last)["mono"]
        # it followed the commands, then ramped down (5000 °/s: 1000 µs in 18 ms)
        commanded = [r for r in rig.frames(last - 0.5) if r["mono"] < t_safe and r["outputs"][0] in (1970, 2000)]
        assert commanded
        lat.append(t_safe - commanded[-1]["mono"])
        from_publish.append(t_safe - sent)
        time.sleep(0.1)
    print(f"\nlast command frame -> safe pulses (board log): {', '.join(f'{1000 * x:.0f}' for x in lat)} ms; "
          f"from the last publish: {', '.join(f'{1000 * x:.0f}' for x in from_publish)} ms")
    # the timeout made it: the driver counts it from the command's DDS reception, after its publish (the
    # command frame marks when its callback ran, which a loaded executor delays: not a lower bound)
    assert all(x >= 0.15 for x in from_publish), from_publish
    # within 200 ms, less how late this machine's scheduler ran the driver's one-shot deadline (the driver
    # logs each decision's lateness past reception + command_timeout_s; bench_faults has the figures)
    late = _stale_lateness_s(rig)[decided_before:]
    assert len(late) == 10, late
    print(f"stale decisions after their deadline: {', '.join(f'{1000 * x:.1f}' for x in late)} ms")
    assert all(x - d <= 0.2 for x, d in zip(lat, late)), (lat, late)


def _stale_lateness_s(rig) -> list[float]:
    """Each stale decision the driver logged, how long after its deadline it was taken (s)."""
    import re

    with open(os.path.join(rig.workdir, "servo_driver.log"), errors="replace") as f:
        return [float(m.group(1)) / 1000.0 for m in re.finditer(r"decided (-?[0-9.]+) ms after its deadline", f.read())]


def test_kill_9_of_the_tracker_puts_the_board_safe_within_200_ms(rig):
    safe = rig.safe_us()
    rig.start_tracker(CLOSED)
    rig.wait_outputs(target_us(rig), 15.0)
    time.sleep(0.2)
    t_kill, last = rig.kill_tracker()
    wait_until(lambda: rig.first_output(safe, last) is not None, 3.0, "safe pose after kill -9")
    dt = rig.first_output(safe, last)["mono"] - last
    late = _stale_lateness_s(rig)[-1]  # how late the scheduler ran the driver's deadline (see above)
    print(f"\nkill -9 tracker: safe pulses {1000 * dt:.0f} ms after its last publish "
          f"(decided {1000 * late:.1f} ms after its deadline)")
    assert dt - late <= 0.2


def test_write_stalls_of_60_ms_cause_no_reconnect_and_no_jump(rig):
    """20 writes that each take 60 ms (all bytes sent, then stuck in the call: what made pyserial
    raise "Write timeout") while the driver follows a moving hand: no link error, no reconnect,
    no boot, and no output step beyond the rate limit on the board."""
    rig.set_safety(command_timeout_s=1.0, **{f"{f}.max_speed_dps": STALL_SPEED_DPS for f in contract.FINGER_NAMES})
    _, _, v0 = rig.wait_diag(lambda lvl, m, v: True)
    plugs0 = len(rig.board.records("plug"))
    n0 = len(rig.stalls())
    t0 = time.monotonic()
    rig.start_stream(lambda t: [0.5 + 0.45 * math.sin(math.pi * t + i) for i in range(5)])
    try:
        time.sleep(0.3)
        for i in range(20):
            rig.stall()
            wait_until(lambda i=i: len(rig.stalls()) >= n0 + i + 1, 5.0, f"stall {i + 1}")
            time.sleep(0.1)
        time.sleep(0.3)
    finally:
        rig.stop_stream()
    time.sleep(0.3)
    stalls = rig.stalls()[n0:]
    assert len(stalls) == 20 and all(s["end"] - s["start"] >= 0.06 and s["bytes"] > 0 for s in stalls)
    _, _, v = rig.wait_diag(lambda lvl, m, v: True)
    assert int(v["reconnects"]) == int(v0["reconnects"]) and int(v["link_errors"]) == int(v0["link_errors"])
    assert v["link"] == "up" and len(rig.board.records("plug")) == plugs0
    frames = rig.frames(t0)
    limit = STALL_SPEED_DPS * (2000.0 / 180.0) * float(rig.params["max_step_s"]) + 1
    assert len(frames) > 100 and pulse_jumps(frames, limit) == []
    # the stalls fell into the stream: frames were applied during each stall's window or right after
    assert sum(any(s["start"] <= f["mono"] <= s["end"] + 0.1 for f in frames) for s in stalls) >= 15
    rig.set_safety(command_timeout_s=0.15, **{f"{f}.max_speed_dps": 5000.0 for f in contract.FINGER_NAMES})


def test_unplug_and_plug_counts_the_boot_and_ramps_from_where_the_horns_were(rig):
    closed = target_us(rig)
    _, _, v0 = rig.wait_diag(lambda lvl, m, v: True)
    rig.start_stream(CLOSED)
    try:
        rig.wait_outputs(closed, 5.0)
        rig.board.control("unplug")
        rig.wait_diag(lambda lvl, m, v: v["link"] == "down" and lvl == 2, 3.0, "link down ERROR")
        plugs = len(rig.board.records("plug"))
        t_plug = time.monotonic()
        rig.board.control("plug")
        wait_until(lambda: len(rig.board.records("plug")) > plugs, 5.0, "plugged again")
        wait_until(lambda: rig.first_output(closed, t_plug) is not None, 10.0, "target after the replug")
        _, _, v = rig.wait_diag(lambda lvl, m, v: v["link"] == "up" and int(v["board_boots"]) > int(v0["board_boots"]),
                                5.0, "boot counted")
    finally:
        rig.stop_stream()
    assert int(v["board_boots"]) == int(v0["board_boots"]) + 1
    assert int(v["reconnects"]) == int(v0["reconnects"]) + 1
    after = rig.frames(t_plug)
    # the rebooted board is detached: the limp horns stay where they were (closed): attach there
    assert after[0]["outputs"] == closed, [(r["mono"] - t_plug, r["outputs"][0]) for r in rig.frames(t_plug - 1)]
    assert pulse_jumps(after, 5000.0 * 2000 / 180 * 0.1 + 1) == []
    first, reached = after[0]["mono"] - t_plug, rig.first_output(closed, t_plug)["mono"] - t_plug
    print(f"\nreplug: first frame {1000 * first:.0f} ms after plug, target {1000 * reached:.0f} ms after plug")


def test_kill_9_of_the_driver_leaves_the_board_to_its_watchdog_and_a_new_driver_resumes(rig):
    closed = target_us(rig)
    rig.start_stream(CLOSED)
    try:
        rig.wait_outputs(closed, 5.0)
        t_kill = rig.kill_driver()
        wait_until(lambda: [r for r in rig.board.records("watchdog") if r["mono"] >= t_kill], 3.0, "board watchdog")
        wd = [r for r in rig.board.records("watchdog") if r["mono"] >= t_kill][0]
        assert wd["outputs"] == rig.safe_us() and wd["mono"] - t_kill <= 0.5 + 0.1
        rig.restart_driver()
        t_up = time.monotonic()
        wait_until(lambda: rig.first_output(closed, t_up) is not None, 10.0, "target with the new driver")
    finally:
        rig.stop_stream()
    # the board tripped its watchdog (flags SAFE): the new driver ramps from the safe pose
    after = rig.frames(t_up)
    assert pulse_jumps([{"outputs": rig.safe_us(), "mono": t_up}, *after], 5000.0 * 2000 / 180 * 0.1 + 1) == []
    stats = rig.board.stats()
    assert stats["totals"]["watchdog_trips"] >= 1
