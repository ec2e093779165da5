"""The driver config's safety rule for changes while the servos are driven (pure)."""

import pytest

from hand_common.contract import FINGER_NAMES
from hand_servo_driver.calibration import ServoCalibration
from hand_servo_driver.driver_config import DriverConfig, ServoSettings, safety_problems
from hand_servo_driver.parameters import build_config


def config(cal=None, speed=300.0, **kw) -> DriverConfig:
    cal = cal or {}
    servos = tuple(ServoSettings(ServoCalibration(n, i, **cal.get(n, {})), speed) for i, n in enumerate(FINGER_NAMES))
    return DriverConfig(servos=servos, **kw)


def test_changes_toward_safety_are_accepted():
    old = config(safe_flexion=0.2, command_timeout_s=0.5)
    assert safety_problems(old, old) == []
    assert safety_problems(old, config(safe_flexion=0.0, command_timeout_s=0.15, speed=100.0, max_step_s=0.05)) == []
    # the closed end and the map's far end do not move a safe pose at flexion 0
    assert safety_problems(config(), config(cal={"pinky": {"max_us": 2200}})) == []


def test_a_safe_pose_toward_a_fist_is_refused_whatever_parameter_moves_it():
    old = config()  # safe pulses 1000 µs (flexion 0, non-inverted)
    problems = safety_problems(old, config(safe_flexion=0.3))
    assert [w.split(":")[0] for w in problems] == list(FINGER_NAMES)  # every servo named
    assert problems[0].startswith("thumb: the safe pulse would move from 1000 to 1300 µs, away from the open end")
    (why,) = safety_problems(old, config(cal={"index": {"inverted": True}}))  # flexion 0 at 2000 µs now
    assert why.startswith("index: the safe pulse would move from 1000 to 2000 µs")
    (why,) = safety_problems(old, config(cal={"ring": {"min_us": 1500}}))
    assert why.startswith("ring: the safe pulse would move from 1000 to 1500 µs")
    (why,) = safety_problems(old, config(cal={"middle": {"map_fraction": (0.5, 1.0)}}))
    assert why.startswith("middle: the safe pulse would move from 1000 to 1500 µs")
    # an inverted servo's open end is its max pulse: moving its safe pulse down is toward a fist
    inv = config(cal={"thumb": {"inverted": True}})
    (why,) = safety_problems(inv, config(cal={"thumb": {"inverted": True, "max_us": 1600}}))
    assert why.startswith("thumb: the safe pulse would move from 2000 to 1600 µs, away from the open end (2000 µs)")


def test_faster_longer_or_another_mode_is_refused_naming_the_parameter():
    old = config()
    problems = safety_problems(old, config(speed=5000.0, command_timeout_s=60.0, safe_mode="detach",
                                           heartbeat_period_s=0.2, max_step_s=0.5))
    text = "; ".join(problems)
    assert "safe_mode 'pose' -> 'detach'" in text
    assert "command_timeout_s 0.15 -> 60" in text and "max_step_s 0.1 -> 0.5" in text
    assert "heartbeat_period_s 0.1 -> 0.2" in text
    assert "pinky: the rate limit would rise from 3333 to 55556 µs/s (pinky.max_speed_dps 300 -> 5000" in text
    assert len(problems) == 3 + 1 + 5


def test_the_campaign_foreign_set_is_refused_through_the_parameter_table():
    """The issue's fault campaign: safe_flexion=1.0 (out of the table's range: refused before the
    rule), command_timeout_s=60, max_speed_dps=5000 while active."""
    old, _ = build_config({})
    new, _ = build_config({"command_timeout_s": 60.0, **{f"{f}.max_speed_dps": 5000.0 for f in FINGER_NAMES}})
    assert len(safety_problems(old, new)) == 6
    assert all(p == 1000 for p in old.safe_pulses())


def test_the_safe_ramp_speed_is_bounded_by_the_horn_and_only_lowered_while_driven():
    """safe_speed_dps: the ramp to the safe pose at most an SG90 horn's 600 °/s (faster pulses are a
    jump the horn slams behind), never slower than a servo tracks; raising it while driven refused."""
    import pytest

    from hand_servo_driver.driver_config import SG90_HORN_DPS, DriverConfigError

    cfg = config()
    assert cfg.safe_speed_dps == SG90_HORN_DPS == 600.0
    assert cfg.safe_rates_us().tolist() == pytest.approx([600.0 * cfg.us_per_degree] * 5)  # 6667 µs/s
    assert config(speed=900.0).safe_rates_us()[0] == pytest.approx(900.0 * cfg.us_per_degree)  # never slower
    for bad in (0.0, 601.0, float("nan")):
        with pytest.raises(DriverConfigError, match="safe_speed_dps"):
            config(safe_speed_dps=bad)
    assert safety_problems(config(safe_speed_dps=400.0), config(safe_speed_dps=300.0)) == []
    problems = safety_problems(config(safe_speed_dps=300.0), config(safe_speed_dps=600.0))
    assert len(problems) == 5 and problems[0] == ("thumb: the safe ramp's rate would rise from 3333 to 6667 µs/s "
                                                  "(safe_speed_dps 300 -> 600, us_per_degree)")
    with pytest.raises(DriverConfigError, match="safe_speed_dps"):
        build_config({"safe_speed_dps": 700.0})


def test_the_longest_ramp_to_the_safe_pose_from_the_pulse_ranges():
    # 1000-2000 µs, safe at 1000 µs, 600 °/s x 11.111 µs/° = 6667 µs/s: a fist's 1000 µs takes 0.15 s
    assert config().safe_ramp_bound_s() == pytest.approx(0.15, rel=1e-3)
    assert config(safe_flexion=0.3).safe_ramp_bound_s() == pytest.approx(0.105, rel=1e-3)  # 700 µs
    assert config(safe_speed_dps=300.0).safe_ramp_bound_s() == pytest.approx(0.30, rel=1e-3)
    # a servo tracking faster than safe_speed_dps ramps at its own speed; the slowest far one decides
    assert config(speed=600.0, cal={"ring": {"max_us": 2500}}).safe_ramp_bound_s() == pytest.approx(0.225, rel=1e-3)
    assert config(safe_mode="detach").safe_ramp_bound_s() == 0.0
