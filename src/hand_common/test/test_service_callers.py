"""Pairing of described service responses with the request events that name their callers (pure)."""

from hand_common.service_callers import CallerMatcher


def test_a_response_is_logged_once_its_event_named_the_caller_in_either_order():
    m = CallerMatcher(wait_s=1.0)
    m.response("set_parameters", 3, ["parameter a: 1 -> 2 set"], 0.0)
    assert m.ready(0.1) == []  # waits for its event
    m.event("set_parameters", 3, "/foreign", 0.1)
    assert m.ready(0.1) == [("parameter a: 1 -> 2 set", "/foreign")]
    m.event("set_parameters", 4, "/other", 0.2)  # the event first
    m.response("set_parameters", 4, ["x", "y"], 0.21)
    assert m.ready(0.21) == [("x", "/other"), ("y", "/other")]


def test_sequence_numbers_pair_per_service_and_in_order_and_a_missing_event_is_said():
    m = CallerMatcher(wait_s=1.0)
    m.response("set_parameters", 1, ["first"], 0.0)
    m.response("set_parameters_atomically", 1, ["atomic"], 0.0)
    m.response("set_parameters", 1, ["second"], 0.1)  # another client, its own numbering
    m.event("set_parameters", 1, "/a", 0.1)
    m.event("set_parameters_atomically", 1, "/c", 0.1)
    m.event("set_parameters", 1, "/b", 0.1)
    assert m.ready(0.1) == [("first", "/a"), ("atomic", "/c"), ("second", "/b")]
    m.response("set_parameters", 9, ["lost"], 1.0)
    assert m.ready(1.5) == []
    (line, caller), = m.ready(2.01)
    assert line == "lost" and caller.startswith("caller unknown (no request event within 1 s)")
