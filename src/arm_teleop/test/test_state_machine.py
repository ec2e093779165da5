"""Arm state machine: arming, fist, hand loss, latched e-stop with two-step reset, manual control."""

from __future__ import annotations

import numpy as np
import pytest

from arm_teleop.gestures import Gesture
from arm_teleop.state_machine import ArmState, ArmStateMachine, StateMachineConfig

DT = 1 / 30
G = Gesture
S = ArmState


def feed(sm, gestures, t0=0.0, score=1.0, wrist=(0.5, 0.5)):
    t = t0
    for g in gestures:
        sm.step(t, g, score, wrist)
        t += DT
    return t


def test_arms_only_after_the_palm_is_held_steadily():
    sm = ArmStateMachine(StateMachineConfig(arm_hold_s=0.5))
    t = feed(sm, [G.OPEN_PALM] * 10 + [G.OTHER] + [G.OPEN_PALM] * 15)  # interrupted: count restarts
    assert sm.state == S.DISABLED and 0.9 < sm.arming_progress(t - DT) < 1.0
    feed(sm, [G.OPEN_PALM], t0=t)
    assert sm.state == S.ARMED
    assert sm.transitions[-1].reason.startswith("open palm held 0.5")


@pytest.mark.parametrize("kw", [{"score": 0.3}, {"moving": True}])
def test_unstable_tracking_does_not_arm(kw):
    sm = ArmStateMachine(StateMachineConfig(arm_hold_s=0.5, min_score=0.5, arm_max_wrist_speed=0.6))
    t = 0.0
    for i in range(60):
        wrist = (0.5 + (0.03 * (i % 2) if kw.get("moving") else 0.0), 0.5)  # 0.9 image heights/s jitter
        sm.step(t, G.OPEN_PALM, kw.get("score", 0.9), wrist)
        t += DT
    assert sm.state == S.DISABLED


@pytest.mark.parametrize("setup", ["armed", "hold", "manual"])
def test_fist_disables_from_any_state_but_estop(setup):
    sm = ArmStateMachine()
    t = feed(sm, [G.OPEN_PALM] * 20)
    if setup == "hold":
        t = feed(sm, [G.NONE], t)
        assert sm.state == S.HOLD
    if setup == "manual":
        assert sm.request_manual(t)
    feed(sm, [G.FIST], t)
    assert sm.state == S.DISABLED and sm.transitions[-1].reason == "fist"


def test_hand_loss_holds_then_disables():
    sm = ArmStateMachine(StateMachineConfig(lost_frames_disable=15))
    t = feed(sm, [G.OPEN_PALM] * 20)
    t = feed(sm, [G.NONE] * 5, t)
    assert sm.state == S.HOLD and not sm.accepts_gesture_commands
    t = feed(sm, [G.OTHER], t)
    assert sm.state == S.ARMED  # hand back within N frames
    t = feed(sm, [G.NONE] * 14, t)
    assert sm.state == S.HOLD
    feed(sm, [G.NONE], t)
    assert sm.state == S.DISABLED and "15 frames" in sm.transitions[-1].reason


def test_estop_is_latched_and_needs_a_two_step_reset_with_a_fresh_palm():
    sm = ArmStateMachine(StateMachineConfig(arm_hold_s=0.5))
    t = feed(sm, [G.OPEN_PALM] * 20)
    sm.estop(t, "operator")
    t = feed(sm, [G.OPEN_PALM] * 60 + [G.FIST, G.NONE] + [G.OPEN_PALM] * 60, t)
    assert sm.state == S.ESTOP
    assert not sm.request_manual(t) and not sm.disable(t) and sm.state == S.ESTOP
    assert sm.clear_estop(t)  # step 1
    assert sm.state == S.DISABLED and sm.waiting_for_fresh_palm
    t = feed(sm, [G.OPEN_PALM] * 60, t)  # the palm held through the clear is not fresh
    assert sm.state == S.DISABLED
    t = feed(sm, [G.OTHER], t)  # taken away ...
    t = feed(sm, [G.OPEN_PALM] * 14, t)
    assert sm.state == S.DISABLED
    feed(sm, [G.OPEN_PALM] * 2, t)  # ... and a fresh palm held 0.5 s: step 2
    assert sm.state == S.ARMED
    assert not sm.clear_estop(t)


def test_manual_control_never_returns_straight_to_gesture_control():
    sm = ArmStateMachine()
    t = feed(sm, [G.OPEN_PALM] * 20)
    assert sm.request_manual(t) and sm.accepts_manual_commands and not sm.accepts_gesture_commands
    t = feed(sm, [G.OPEN_PALM] * 60, t)  # a palm does not arm during manual control
    assert sm.state == S.MANUAL
    assert sm.release_manual(t)
    assert sm.state == S.DISABLED  # released: DISABLED, and arming takes a full hold again
    feed(sm, [G.OPEN_PALM] * 10, t)
    assert sm.state == S.DISABLED


def test_random_event_sequences_keep_every_invariant():
    rng = np.random.default_rng(7)
    events = ["frame"] * 6 + ["estop", "clear", "manual", "release", "disable"]
    gestures = list(Gesture)
    for _ in range(200):
        sm = ArmStateMachine(StateMachineConfig(arm_hold_s=0.1, lost_frames_disable=3))
        t = 0.0
        for _ in range(120):
            e = events[rng.integers(len(events))]
            before = sm.state
            if e == "frame":
                g = gestures[rng.integers(len(gestures))]
                sm.step(t, g)
            else:
                {"estop": sm.estop, "clear": sm.clear_estop, "manual": sm.request_manual,
                 "release": sm.release_manual, "disable": sm.disable}[e](t)
            after = sm.state
            if before == S.MANUAL:
                assert after in (S.MANUAL, S.DISABLED, S.ESTOP)
            if before == S.ESTOP:
                assert after == S.ESTOP or (e == "clear" and after == S.DISABLED)
            if after == S.ARMED and before != S.ARMED:
                assert before in (S.DISABLED, S.HOLD)
            t += DT
        for tr in sm.transitions:
            assert (tr.source, tr.target) != (S.MANUAL, S.ARMED)
            assert (tr.source, tr.target) != (S.ESTOP, S.ARMED)


def test_bad_times_and_configs_are_refused():
    with pytest.raises(ValueError, match="not finite"):
        ArmStateMachine().step(float("nan"), G.OPEN_PALM)
    with pytest.raises(ValueError, match="lost_frames_disable"):
        ArmStateMachine(StateMachineConfig(lost_frames_disable=0))


def test_operator_keys():
    from arm_teleop.keys import action

    assert action(" ") == action("E") == ("estop", None)
    assert action("c") == ("clear_estop", None) and action("m") == ("manual", True) and action("g") == ("manual", False)
    assert action("j") == ("control_mode", "joint") and action("x") is None
