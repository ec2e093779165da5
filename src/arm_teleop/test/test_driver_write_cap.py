"""The arm driver's write cap (driver_core.WriteCap): commands are written on arrival, at most
rate_hz a second on average; exact numbers on a given clock (no timing)."""

import pytest

from arm_teleop.driver_core import WriteCap


def test_write_cap_lets_a_60_hz_stream_through_at_100_hz():
    cap = WriteCap()
    assert all(cap.take(k / 60.0, 100.0) for k in range(600))  # 10 s of a 60 fps camera's commands
    assert cap.held == 0


def test_write_cap_holds_a_flood_to_its_rate():
    cap = WriteCap(burst=2.0)
    # 1000 commands a second for 1 s against a 100 Hz cap: the burst, then one write per 10 ms
    taken = sum(cap.take(k / 1000.0, 100.0) for k in range(1000))
    assert taken == pytest.approx(2 + 100, abs=1)
    assert cap.held == 1000 - taken
    # the refill integrates elapsed time and saturates at the burst
    assert cap.tokens(100.0, 100.0) == 2.0
    assert cap.take(100.0, 100.0) and cap.take(100.0, 100.0) and not cap.take(100.0, 100.0)
    assert cap.take(100.0101, 100.0)


def test_write_cap_follows_a_live_rate_and_zero_lifts_it():
    cap = WriteCap(burst=1.0)
    assert cap.take(0.0, 10.0) and not cap.take(0.05, 10.0) and cap.take(0.1, 10.0)
    assert cap.take(0.11, 100.0)  # the new rate acts at once
    assert all(cap.take(0.11, 0.0) for _ in range(50))  # 0 = no cap
    with pytest.raises(ValueError, match="burst"):
        WriteCap(burst=0.5)


def test_a_held_write_is_ready_when_the_bucket_has_a_token_again():
    cap = WriteCap(burst=2.0)
    assert cap.ready_at(0.0, 100.0) == 0.0 and cap.take(0.0, 100.0) and cap.take(0.0, 100.0)
    assert not cap.take(0.002, 100.0)  # empty: a token every 10 ms
    ready = cap.ready_at(0.002, 100.0)
    assert ready == pytest.approx(0.010)
    assert not cap.take(ready - 1e-4, 100.0) and cap.take(ready, 100.0)
    assert cap.ready_at(0.0105, 100.0) == pytest.approx(0.020)  # the next token, 10 ms after
    assert cap.ready_at(0.0105, 0.0) == 0.0105  # no cap: now
