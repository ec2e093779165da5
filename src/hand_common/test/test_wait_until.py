"""hand_common.probe.wait_until: what a timeout reports, and that the condition is always asked."""

from __future__ import annotations

import pytest

from hand_common.testing import wait_until


def test_a_callable_what_reports_the_state_at_the_timeout_not_before_the_wait():
    polls = []

    def pred() -> bool:
        polls.append(1)
        return False

    with pytest.raises(TimeoutError, match=r"timed out after 0.05 s waiting for [1-9]\d* polls, none true"):
        wait_until(pred, 0.05, lambda: f"{len(polls)} polls, none true", period=0.01)
    with pytest.raises(TimeoutError, match="waiting for a fixed text"):
        wait_until(lambda: False, 0.0, "a fixed text")


def test_the_condition_is_asked_even_when_the_deadline_has_passed():
    asked = []
    wait_until(lambda: asked.append(1) or True, 0.0, "asked once")  # a zero timeout still asks
    assert asked == [1]
