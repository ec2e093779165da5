"""CommandWatchdog decisions and RealTimePacer arithmetic, on an injected clock."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hand_twin_mujoco.watchdog import (
    Command,
    CommandWatchdog,
    RealTimePacer,
    WatchdogState,
    validate_flexions,
)


def cmd(value: float, received: float, stamp: float = 0.0) -> Command:
    return Command(np.full(5, value), received, stamp)


def test_watchdog_states_and_safe_pose():
    wd = CommandWatchdog(0.5, safe_flexions=[0.0, 0.2, 0.0, 0.0, 0.0])
    d = wd.decide(0.0)
    assert d.state is WatchdogState.WAITING and d.changed and d.command is None
    np.testing.assert_array_equal(d.flexions, [0.0, 0.2, 0.0, 0.0, 0.0])
    assert math.isinf(d.age)
    assert not wd.decide(0.1).changed
    wd.feed(cmd(0.7, received=1.0, stamp=123.5))
    d = wd.decide(1.2)
    assert d.state is WatchdogState.OK and d.changed and d.command.stamp == 123.5
    np.testing.assert_array_equal(d.flexions, 0.7)
    assert d.age == pytest.approx(0.2)
    assert wd.decide(1.5).state is WatchdogState.OK  # exactly at the timeout: still fresh
    d = wd.decide(1.5001)
    assert d.state is WatchdogState.TIMED_OUT and d.changed
    np.testing.assert_array_equal(d.flexions, [0.0, 0.2, 0.0, 0.0, 0.0])
    assert not wd.decide(3.0).changed
    wd.feed(cmd(0.4, received=3.1))
    d = wd.decide(3.1)
    assert d.state is WatchdogState.OK and d.changed
    np.testing.assert_array_equal(d.flexions, 0.4)
    # an older command arriving late does not replace the newer one
    wd.feed(cmd(0.9, received=3.0))
    np.testing.assert_array_equal(wd.decide(3.2).flexions, 0.4)


def test_watchdog_live_changes_and_validation():
    wd = CommandWatchdog(1.0)
    wd.feed(cmd(0.5, received=0.0))
    assert wd.decide(0.8).state is WatchdogState.OK
    wd.set_timeout(0.5)
    assert wd.decide(0.8).state is WatchdogState.TIMED_OUT
    np.testing.assert_array_equal(wd.decide(0.8).flexions, 0.0)
    wd.set_safe_flexions([1.0, 1.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(wd.decide(0.9).flexions, 1.0)
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="command_timeout"):
            wd.set_timeout(bad)
    for bad in ([0.0] * 4, [0.0, 0.0, 0.0, 0.0, 1.2], [0.0, math.nan, 0.0, 0.0, 0.0]):
        with pytest.raises(ValueError, match="safe_flexions"):
            wd.set_safe_flexions(bad)
    with pytest.raises(ValueError, match="non-finite"):
        validate_flexions([0.0, 0.0, math.inf, 0.0, 0.0])


def test_pacer_keeps_simulation_at_most_one_step_ahead():
    p = RealTimePacer(0.002, max_lag=0.1, window=1.0)
    p.begin(10.0)
    assert p.due(10.0) == 0
    n = p.due(10.0031)
    assert n == 2  # ceil(3.1 ms / 2 ms): sim at 4 ms, ahead by < 1 step
    p.done(n, 10.0031)
    assert p.due(10.0035) == 0
    assert p.next_due() == pytest.approx(10.004)
    for k in range(1, 1001):
        now = 10.0031 + k * 0.001
        p.done(p.due(now), now)
        assert 0.0 <= p.steps * p.dt - (now - 10.0) < p.dt
    assert p.real_time_factor() == pytest.approx(1.0, abs=0.003)
    assert p.total_real_time_factor() >= 1.0
    assert p.dropped_time == 0.0


def test_pacer_drops_lag_beyond_max_lag():
    p = RealTimePacer(0.002, max_lag=0.1)
    p.begin(0.0)
    n = p.due(1.0)  # a 1 s stall
    assert n == 50  # 0.1 s of catch-up, the rest dropped
    assert p.dropped_time == pytest.approx(0.9)
    p.done(n, 1.0)
    assert p.due(1.0) == 0
    assert p.total_real_time_factor() == pytest.approx(0.1)
