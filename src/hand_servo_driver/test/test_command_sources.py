"""One command source followed, the others reported (pure)."""

from hand_servo_driver.command_sources import RECENT_S, UNNAMED, CommandSources

TOPIC = "/hand/target_flexions"


def test_a_configured_source_is_the_only_one_followed_and_the_others_are_named():
    s = CommandSources("hand_tracker")
    assert s.source == "/hand_tracker"
    s.set_publishers(["/hand_tracker"])
    assert s.admit("/hand_tracker", 0.0) and s.warning(0.0, TOPIC) is None
    s.set_publishers(["/hand_tracker", "/foreign_flood"])  # the graph names it before it sends
    assert s.warning(0.1, TOPIC) == ("second command source on /hand/target_flexions: /foreign_flood "
                                     "(following only /hand_tracker; 0 refused)")
    assert [s.admit("", 0.2 + i * 0.001) for i in range(1000)] == [False] * 1000
    assert not s.admit("/other", 0.3)
    assert s.followed == 1 and s.refused == 1001 and s.last_refused_source == "/other"
    assert s.others(0.3) == ["(unnamed)", "/foreign_flood", "/other"]
    s.set_publishers(["/hand_tracker"])
    assert s.others(1.2 + RECENT_S + 0.01) == []  # gone from the graph and silent


def test_unset_follows_everyone_and_reports_more_than_one():
    s = CommandSources("")
    s.set_publishers(["/old_sender"])
    assert s.admit("", 0.0) and s.warning(0.0, TOPIC) is None  # one unnamed publisher: no report
    s.set_publishers(["/old_sender", "/foreign"])
    assert s.admit("", 0.1)
    assert s.warning(0.1, TOPIC) == ("several command sources on /hand/target_flexions: /foreign, /old_sender "
                                     "(command_source unset: following all)")
    s.set_publishers(["/hand_tracker"])
    assert s.admit("/hand_tracker", 10.0) and s.admit("/spoofer", 10.0)  # a second name in the messages
    assert s.others(10.0) == ["/hand_tracker", "/spoofer"] and UNNAMED not in s.others(10.0)


def test_the_seen_table_is_bounded():
    s = CommandSources("/a")
    for i in range(1000):
        s.admit(f"/n{i}", float(i))
    assert len(s._seen) == 64 and s.refused == 1000
