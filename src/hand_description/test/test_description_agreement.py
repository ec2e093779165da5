"""URDF <-> MJCF agreement: passes on the generated pair, fails on a hand-edited copy of either file."""

import re

import pytest

from hand_description import paths
from hand_description.agreement import compare


@pytest.mark.parametrize("side", ["right", "left"])
def test_generated_urdf_and_mjcf_agree(side):
    assert compare(paths.urdf_path(side), paths.mjcf_path(side)) == []


def test_right_urdf_does_not_agree_with_left_mjcf():
    problems = compare(paths.urdf_path("right"), paths.mjcf_path("left"))
    assert any("thumb_cmc" in p and "origin" in p for p in problems)


def _edit(text: str, anchor: str, old: str, new: str) -> str:
    """Replace the first ``old`` after ``anchor`` (both must exist)."""
    start = text.index(anchor)
    end = text.index(old, start)
    return text[:end] + new + text[end + len(old):]


URDF_EDITS = {  # name: (anchor, old, new, words expected in a reported problem)
    "limit": ('<joint name="index_pip"', 'upper="1.8326"', 'upper="2.2340"', ("index_pip", "limits")),
    "axis": ('<joint name="ring_dip"', '<axis xyz="0 1 0"/>', '<axis xyz="0 -1 0"/>', ("ring_dip", "axis")),
    "origin": ('<joint name="middle_pip"', 'xyz="0 0 0.045"', 'xyz="0 0 0.047"', ("middle_pip", "origin position")),
    "parent": ('<joint name="pinky_dip"', '<parent link="pinky_middle"/>', '<parent link="pinky_proximal"/>',
               ("pinky_dip", "parent/child")),
    "mass": ('<link name="thumb_distal"', '<mass value="', '<mass value="1', ("thumb_distal", "mass")),
    "collision": ('<collision name="index_distal_0"', '<cylinder radius="0.0073"', '<cylinder radius="0.0093"',
                  ("index_distal", "collision")),
}
MJCF_EDITS = {
    "range": ('<joint name="thumb_ip"', 'range="0 1.309"', 'range="0 1.7"', ("thumb_ip", "limits")),
    "axis": ('<body name="thumb_proximal"', '<joint name="thumb_mcp"', '<joint axis="1 0 0" name="thumb_mcp"',
             ("thumb_mcp", "axis")),
    "body pos": ('<body name="ring_middle"', 'pos="0 0 0.043"', 'pos="0 0 0.041"', ("ring_pip", "origin position")),
    "damping": ('<joint name="index_mcp"', 'damping="', 'damping="1', ("index_mcp", "damping")),
    "geom size": ('<body name="middle_distal"', 'size="0.0074"', 'size="0.0064"', ("middle_distal", "collision")),
}


@pytest.mark.parametrize("edit", sorted(URDF_EDITS))
def test_a_hand_edited_urdf_fails(tmp_path, edit):
    anchor, old, new, words = URDF_EDITS[edit]
    text = paths.urdf_path().read_text()
    bad = tmp_path / "hand.urdf"
    bad.write_text(_edit(text, anchor, old, new))
    problems = compare(bad, paths.mjcf_path())
    assert problems, f"edit '{edit}' was not detected"
    assert any(all(w in p for w in words) for p in problems), problems


@pytest.mark.parametrize("edit", sorted(MJCF_EDITS))
def test_a_hand_edited_mjcf_fails(tmp_path, edit):
    anchor, old, new, words = MJCF_EDITS[edit]
    text = paths.mjcf_path().read_text()
    bad = tmp_path / "hand.xml"
    bad.write_text(_edit(text, anchor, old, new))
    problems = compare(paths.urdf_path(), bad)
    assert problems, f"edit '{edit}' was not detected"
    assert any(all(w in p for w in words) for p in problems), problems


def test_unparsable_files_raise_clearly(tmp_path):
    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><body name='a'></worldbody></mujoco>")
    with pytest.raises(ValueError, match="MuJoCo cannot compile"):
        compare(paths.urdf_path(), broken)
    assert re.search("palm", paths.urdf_path().read_text())
