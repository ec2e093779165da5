"""Every package README documents every parameter its nodes declare (issue 25 step 3), read from
the nodes themselves (hand_bringup.param_tables): the name in backticks, a per-finger parameter
also as ``<finger>`` in place of the digit (``<finger>.channel``, ``<finger>_curled_angle``). A
parameter added or renamed in a node and not in its README fails here; an old name left in a
README after a rename fails too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hand_bringup.bringup import NODES
from hand_bringup.param_tables import all_tables
from hand_common.contract import FINGER_NAMES

SRC = Path(__file__).resolve().parents[2]
#: rclpy's own parameters of every node (not the node's interface)
RCLPY_PARAMS = {"use_sim_time", "start_type_description_service"}


@pytest.fixture(scope="module")
def tables():
    return all_tables()


def documented(name: str, readme: str) -> bool:
    """``name`` in backticks in ``readme``, or with its digit written ``<finger>``."""
    ticked = set(re.findall(r"`([^`\n]+)`", readme))
    forms = {name} | {re.sub(rf"(?<![a-z]){f}(?![a-z])", "<finger>", name) for f in FINGER_NAMES}
    return bool(forms & ticked)


def test_the_check_reads_backticks_and_the_finger_placeholder():
    text = "| `<finger>.channel` | 0 | | `rate_hz` and `index_curled_angle`... rate_hz_s |"
    assert documented("thumb.channel", text) and documented("rate_hz", text) and documented("index_curled_angle", text)
    assert not documented("rate", text) and not documented("channel", text) and not documented("pinky_curled", text)


@pytest.mark.parametrize("key", sorted(NODES))
def test_every_declared_parameter_is_in_the_package_readme(key, tables):
    spec = NODES[key]
    readme = (SRC / spec.package / "README.md").read_text()
    rows, renamed = tables[spec.name]
    missing = [r.name for r in rows if r.name not in RCLPY_PARAMS and not documented(r.name, readme)]
    stale = [old for old in renamed if f"`{old}`" in readme]  # a README still naming the old parameter
    assert (missing, stale) == ([], []), f"{spec.package}/README.md for {spec.name}"


def test_the_bringup_readme_lists_every_profile_with_its_nodes():
    from hand_bringup.bringup import PROFILES

    readme = (SRC / "hand_bringup" / "README.md").read_text()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([a-z_]+)` \| ([^|\n]+) \|", readme, re.M)}
    problems = [f"{profile}: no row" if profile not in rows else
                f"{profile}: {[NODES[k].name for k in keys if NODES[k].name not in rows[profile]]} not named"
                for profile, keys in PROFILES.items()
                if profile not in rows or any(NODES[k].name not in rows[profile] for k in keys)]
    assert problems == []


def test_every_diagnostic_key_and_topic_of_an_interface_is_in_its_readme():
    """The diagnostic keys (``KEY_*``) and topics (``TOPIC*``) each package's interface.py defines
    (what hand_bringup and the console read of the node) appear in its README, in backticks (a
    backticked list may wrap lines)."""
    from hand_joint_mapper import interface as mapper
    from hand_servo_driver import interface as servo
    from hand_tracking import interface as tracker
    from hand_twin_mujoco import interface as twin

    problems = []
    for mod in (tracker, twin, servo, mapper):
        package = mod.__name__.split(".")[0]
        readme = re.sub(r"```.*?```", "", (SRC / package / "README.md").read_text(), flags=re.S)  # fenced blocks out
        words = {w.strip(",.;:()") for span in re.findall(r"`([^`]+)`", readme) for w in span.split()}
        problems += [f"{package}: {name} = {value!r}" for name, value in vars(mod).items()
                     if name.startswith(("KEY_", "TOPIC")) and isinstance(value, str) and value not in words]
    assert problems == []
