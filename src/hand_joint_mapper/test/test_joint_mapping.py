"""The pure mapping core: URDF limit parsing, table validation, flexion → angle, clamping, mimics.

Oracles: the fixture hands of ``fixtures/make_fixtures.py`` (limits known by construction) and
forward kinematics through yourdfpy (a real URDF library) for the direction checks.
"""

from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest
import yaml
import yourdfpy

from hand_common.contract import FINGER_JOINTS, JOINT_NAMES
from hand_joint_mapper.joint_mapping import (
    JointMapper,
    MappingError,
    load_table,
    load_urdf_file,
    parse_table,
    parse_urdf,
)

FIX = pathlib.Path(__file__).resolve().parent / "fixtures"
PKG = FIX.parent.parent

OPEN = dict.fromkeys(JOINT_NAMES, 0.0)
FIST = dict.fromkeys(JOINT_NAMES, 1.0)

UPPER = {"cmc": 1.0, "thumb_mcp": 1.0, "ip": 1.3, "mcp": 1.57, "pip": 1.75, "dip": 1.4}


def fixture_upper(joint: str) -> float:
    if joint == "thumb_mcp":
        return 1.0
    return UPPER[joint.split("_")[1]]


def mapper(urdf: str, table: str, **kw) -> JointMapper:
    return JointMapper.from_urdf(load_urdf_file(FIX / urdf), load_table(FIX / table), **kw)


def robot(urdf: str) -> yourdfpy.URDF:
    return yourdfpy.URDF.load(str(FIX / urdf), load_meshes=False)


def tips(urdf: yourdfpy.URDF, names, positions) -> dict[str, np.ndarray]:
    urdf.update_cfg(dict(zip(names, positions)))
    return {d: urdf.get_transform(f"{d}_tip", "palm")[:3, 3].copy() for d in FINGER_JOINTS}


def table_with(row: dict, **top) -> dict:
    return {"joints": [row], **top}


URDF_ONE = """<robot name="one">
  <link name="a"/><link name="b"/>
  <joint name="j" type="{type}"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>{limit}</joint>
</robot>"""


def one_joint(jtype: str = "revolute", limit: str = '<limit lower="-0.5" upper="1.5" effort="1" velocity="1"/>'):
    return URDF_ONE.format(type=jtype, limit=limit)


# --- URDF parsing -------------------------------------------------------------------------------
def test_parse_urdf_reads_limits_types_and_mimic():
    name, joints = parse_urdf(load_urdf_file(FIX / "hand15_mimic.urdf"))
    assert name == "hand15_mimic"
    movable = [n for n, j in joints.items() if j.single_dof]
    assert movable == list(JOINT_NAMES)
    assert joints["index_pip"].limits == (0.0, 1.75)
    assert joints["thumb_ip"].limits == (0.0, 1.3)
    assert joints["index_tip_joint"].type == "fixed"
    m = joints["ring_dip"].mimic
    assert (m.joint, m.multiplier, m.offset) == ("ring_pip", 0.75, 0.0)


def test_parse_urdf_follows_spec_defaults_and_continuous():
    _, j = parse_urdf(one_joint(limit='<limit effort="1" velocity="1"/>'))
    assert j["j"].limits == (0.0, 0.0) and j["j"].has_limit_element  # missing attributes default to 0
    _, j = parse_urdf(one_joint("continuous", '<limit lower="-1" upper="1" effort="1" velocity="1"/>'))
    assert j["j"].limits is None  # the URDF spec ignores position limits of continuous joints
    _, j = parse_urdf(one_joint(limit=""))
    assert j["j"].limits is None and not j["j"].has_limit_element


@pytest.mark.parametrize("text, words", [
    ("<robot><joint", "well-formed"),
    ("<sdf/>", "<sdf>"),
    (one_joint("hinge"), "unknown URDF joint type 'hinge'"),
    (one_joint(limit='<limit lower="abc" upper="1"/>'), "'j'"),
    (one_joint(limit='<limit lower="nan" upper="1"/>'), "not finite"),
])
def test_parse_urdf_rejects_malformed(text, words):
    with pytest.raises(MappingError, match=".*") as e:
        parse_urdf(text)
    assert words in str(e.value)


# --- table validation ---------------------------------------------------------------------------
def test_shipped_table_is_valid_and_covers_every_human_joint():
    table = load_table(PKG / "config" / "joint_map_hand.yaml")
    assert [r.joint for r in table.rows] == list(JOINT_NAMES)
    assert [r.human for r in table.rows] == list(JOINT_NAMES)
    assert {r.open for r in table.rows} == {"lower"}


def test_shipped_table_on_hand_description_urdf():
    """The shipped table configures against hand_description's URDF: flexion 0 = lower, 1 = upper."""
    paths = pytest.importorskip("hand_description.paths", reason="hand_description not built yet")
    if not paths.urdf_path().is_file():
        pytest.skip(f"{paths.urdf_path()} not generated yet")
    urdf = load_urdf_file(paths.urdf_path())
    m = JointMapper.from_urdf(urdf, load_table(PKG / "config" / "joint_map_hand.yaml"))
    assert m.names == JOINT_NAMES and m.warnings == [] and m.mimics == ()
    _, joints = parse_urdf(urdf)
    assert m.map(OPEN).positions == [joints[n].lower for n in JOINT_NAMES]
    assert m.map(FIST).positions == [joints[n].upper for n in JOINT_NAMES]
    assert all(joints[n].upper > joints[n].lower == 0.0 for n in JOINT_NAMES)


@pytest.mark.parametrize("data, joint, words", [
    (table_with({"joint": "j", "human": "index_knuckle"}), "j", "human joint 'index_knuckle'"),
    (table_with({"joint": "j", "human": "index_mcp", "open": "closed"}), "j", "open must be"),
    (table_with({"joint": "j", "human": "index_mcp", "scal": 2.0}), "j", "unknown keys ['scal']"),
    (table_with({"joint": "j", "human": "index_mcp", "scale": float("nan")}), "j", "scale must be a finite"),
    (table_with({"joint": "j", "human": "index_mcp", "limits": [1.0, 0.0]}), "j", "lower < upper"),
    (table_with({"joint": "j", "human": "index_mcp", "bounds": [0.0]}), "j", "bounds must be [lower, upper]"),
    ({"joints": [{"joint": "j", "human": "index_mcp"}, {"joint": "j", "human": "index_pip"}]}, "j", "two rows"),
    ({"joints": []}, None, "non-empty list"),
    ({"joints": [{"human": "index_mcp"}]}, None, "needs a 'joint'"),
    ({"joint": [], "joints": [{"joint": "j", "human": "index_mcp"}]}, None, "unknown top-level keys"),
    (table_with({"joint": "j", "human": "index_mcp"}, limit_tolerance=-1), None, "limit_tolerance"),
])
def test_parse_table_rejects_mistakes_naming_the_joint(data, joint, words):
    with pytest.raises(MappingError) as e:
        parse_table(data)
    assert words in str(e.value)
    assert e.value.joint == joint


# --- configuration failures against a URDF (the loud ones) --------------------------------------
def test_renamed_joint_fails_naming_it():
    with pytest.raises(MappingError) as e:
        mapper("hand15_renamed.urdf", "map_hand15.yaml")
    assert e.value.joint == "middle_pip"
    assert "no joint named 'middle_pip'" in str(e.value)
    assert "middle_joint2" in str(e.value)  # the message lists what the URDF has instead


def test_changed_limit_fails_naming_it_and_both_ranges():
    with pytest.raises(MappingError) as e:
        mapper("hand15_limit_changed.urdf", "map_hand15.yaml")
    assert e.value.joint == "index_pip"
    assert "[0, 1.2]" in str(e.value) and "[0, 1.75]" in str(e.value)


def test_limit_within_tolerance_passes():
    text = load_urdf_file(FIX / "hand15.urdf").replace('upper="1.75"', 'upper="1.7505"', 1)
    m = JointMapper.from_urdf(text, load_table(FIX / "map_hand15.yaml"))
    assert m.mapped[4].name == "index_pip" and m.mapped[4].closed_pos == pytest.approx(1.7505)


@pytest.mark.parametrize("urdf, row, words", [
    (one_joint(limit=""), {}, "has no <limit>"),
    (one_joint(limit='<limit effort="1" velocity="1"/>'), {}, "is empty"),
    (one_joint("continuous", ""), {}, "continuous (no position limits)"),
    (one_joint("continuous", ""), {"bounds": [0, 1], "limits": [0, 1]}, "use bounds"),
    (one_joint("fixed", ""), {}, "fixed joint"),
    (one_joint(), {"bounds": [-1.0, 1.0]}, "leave the URDF limit"),
])
def test_unusable_joint_fails_naming_it(urdf, row, words):
    table = parse_table(table_with({"joint": "j", "human": "index_mcp", **row}))
    with pytest.raises(MappingError) as e:
        JointMapper.from_urdf(urdf, table)
    assert e.value.joint == "j"
    assert words in str(e.value)


def test_mapping_a_mimic_joint_or_a_mimic_cycle_fails():
    with pytest.raises(MappingError) as e:
        mapper("hand15_mimic.urdf", "map_hand15.yaml")  # table maps index_dip, a mimic of index_pip
    assert e.value.joint == "index_dip" and "map 'index_pip' instead" in str(e.value)
    text = load_urdf_file(FIX / "hand15_mimic.urdf").replace(
        '<limit lower="0.0" upper="1.75" effort="1.0" velocity="6.0"/>',
        '<limit lower="0.0" upper="1.75" effort="1.0" velocity="6.0"/><mimic joint="index_dip"/>', 1)
    with pytest.raises(MappingError) as e:
        JointMapper.from_urdf(text, parse_table(table_with({"joint": "thumb_cmc", "human": "thumb_cmc"})))
    assert "cycle" in str(e.value) and e.value.joint in ("index_pip", "index_dip")


# --- mapping values -----------------------------------------------------------------------------
def test_positive_hand_open_fist_half():
    m = mapper("hand15.urdf", "map_hand15.yaml")
    assert m.names == JOINT_NAMES and m.warnings == []
    assert m.map(OPEN).positions == [0.0] * 15
    fist = m.map(FIST)
    assert fist.positions == pytest.approx([fixture_upper(j) for j in JOINT_NAMES])
    assert fist.clamped == ()
    half = m.map(dict.fromkeys(JOINT_NAMES, 0.5)).positions
    assert half == pytest.approx([fixture_upper(j) / 2 for j in JOINT_NAMES])


def test_negative_hand_still_closes_the_finger_on_a_fist():
    """CAD export with every axis flipped: open = upper = 0, closed = lower < 0. The mapped fist
    must curl the fingertips exactly as the positive hand does (same physical pose)."""
    pos, neg = mapper("hand15.urdf", "map_hand15.yaml"), mapper("hand15_negative.urdf", "map_hand15_negative.yaml")
    fist_neg = neg.map(FIST).positions
    assert fist_neg == pytest.approx([-fixture_upper(j) for j in JOINT_NAMES])
    assert neg.map(OPEN).positions == [0.0] * 15
    r_pos, r_neg = robot("hand15.urdf"), robot("hand15_negative.urdf")
    open_tips = tips(r_neg, neg.names, neg.map(OPEN).positions)
    t_neg = tips(r_neg, neg.names, fist_neg)
    t_pos = tips(r_pos, pos.names, pos.map(FIST).positions)
    for d in FINGER_JOINTS:
        np.testing.assert_allclose(t_neg[d], t_pos[d], atol=1e-9)
        # closing brings every fingertip towards the palm (-y side) and down from its open height
        assert t_neg[d][1] < open_tips[d][1] - 0.01, d
        assert np.linalg.norm(t_neg[d]) < np.linalg.norm(open_tips[d]) - 0.03, d
    # the same table on the negative URDF would be caught by the expected limits, not run backwards
    with pytest.raises(MappingError) as e:
        mapper("hand15_negative.urdf", "map_hand15.yaml")
    assert e.value.joint == "thumb_cmc"


def test_scale_offset_are_in_flexion_units_and_clamped():
    urdf = one_joint()  # limits [-0.5, 1.5], range 2.0
    def m(**row):
        return JointMapper.from_urdf(urdf, parse_table(table_with({"joint": "j", "human": "index_mcp", **row})))
    assert m().map({"index_mcp": 0.25}).positions == pytest.approx([0.0])
    assert m(open="upper").map({"index_mcp": 0.25}).positions == pytest.approx([1.0])
    assert m(scale=0.5, offset=0.1).map({"index_mcp": 1.0}).positions == pytest.approx([-0.5 + 0.6 * 2.0])
    r = m(scale=2.0).map({"index_mcp": 0.9})
    assert r.positions == [1.5] and r.clamped == ("j",)
    r = m(offset=-0.2, open="upper").map({"index_mcp": 0.0})  # s = -0.2: past the open end
    assert r.positions == [1.5] and r.clamped == ("j",)
    bounded = m(bounds=[0.0, 1.0])
    assert bounded.map({"index_mcp": 0.0}).positions == [0.0]
    assert bounded.map({"index_mcp": 1.0}).positions == [1.0]
    cont = JointMapper.from_urdf(one_joint("continuous", ""), parse_table(
        table_with({"joint": "j", "human": "index_mcp", "bounds": [-math.pi, 0.0], "open": "upper"})))
    assert cont.map({"index_mcp": 1.0}).positions == pytest.approx([-math.pi])


def test_random_flexions_never_leave_the_limits():
    rng = np.random.default_rng(7)
    m = mapper("hand15_negative.urdf", "map_hand15_negative.yaml")
    _, joints = parse_urdf(load_urdf_file(FIX / "hand15_negative.urdf"))
    for _ in range(200):
        flex = dict(zip(JOINT_NAMES, rng.uniform(-0.5, 1.5, 15)))
        for n, v in zip(m.names, m.map(flex).positions):
            lo, hi = joints[n].limits
            assert lo <= v <= hi and math.isfinite(v)


def test_mimic_joints_follow_their_source_within_limits():
    m = mapper("hand15_mimic.urdf", "map_hand15_mimic.yaml")
    assert m.names == JOINT_NAMES  # document order, mimics included
    assert {x.name for x in m.mimics} == {"index_dip", "middle_dip", "ring_dip", "pinky_dip"}
    pos = dict(zip(m.names, m.map(FIST).positions))
    assert pos["index_dip"] == pytest.approx(0.75 * 1.75)
    assert pos["ring_dip"] == pytest.approx(0.75 * 1.75)
    pos = dict(zip(m.names, m.map({**OPEN, "middle_pip": 0.4}).positions))
    assert pos["middle_dip"] == pytest.approx(0.75 * 0.4 * 1.75)
    # a mimic whose multiplier would push it past its own limit is clamped and reported
    text = load_urdf_file(FIX / "hand15_mimic.urdf").replace('multiplier="0.75"', 'multiplier="2.0"')
    r = JointMapper.from_urdf(text, load_table(FIX / "map_hand15_mimic.yaml")).map(FIST)
    assert dict(zip(m.names, r.positions))["pinky_dip"] == 1.4
    assert set(r.clamped) == {"index_dip", "middle_dip", "ring_dip", "pinky_dip"}


def test_mimic_chain_composes():
    text = """<robot name="chain"><link name="a"/><link name="b"/><link name="c"/><link name="d"/>
      <joint name="p" type="revolute"><parent link="a"/><child link="b"/><limit lower="0" upper="1"/></joint>
      <joint name="q" type="continuous"><parent link="b"/><child link="c"/><mimic joint="p" multiplier="2" offset="0.1"/></joint>
      <joint name="r" type="continuous"><parent link="c"/><child link="d"/><mimic joint="q" multiplier="3" offset="0.5"/></joint>
    </robot>"""
    m = JointMapper.from_urdf(text, parse_table(table_with({"joint": "p", "human": "index_mcp"})))
    p, q, r = m.map({"index_mcp": 0.5}).positions
    assert (p, q, r) == pytest.approx((0.5, 1.1, 3.8))


def test_unmapped_joints_warned_once_and_held_at_rest():
    table = parse_table(yaml.safe_load((FIX / "map_hand15.yaml").read_text()))
    table = type(table)(tuple(r for r in table.rows if r.joint != "ring_dip"), table.limit_tolerance)
    m = JointMapper.from_urdf(load_urdf_file(FIX / "hand15_negative.urdf").replace(
        'lower="-1.4" upper="0.0"', 'lower="-1.4" upper="-0.2"'), parse_table(
        {"joints": [{"joint": n, "human": n, "open": "upper"} for n in JOINT_NAMES if n != "ring_dip"]}))
    assert len(m.warnings) == 1 and "ring_dip=-0.2" in m.warnings[0]
    assert "index_dip" not in m.warnings[0]
    pos = dict(zip(m.names, m.map(FIST).positions))
    assert pos["ring_dip"] == -0.2  # 0 clamped into [-1.4, -0.2]
    hidden = JointMapper.from_urdf(load_urdf_file(FIX / "hand15.urdf"), table, publish_unmapped=False)
    assert "ring_dip" not in hidden.names and len(hidden.names) == 14


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_or_missing_flexion_is_an_error_naming_the_joint(bad):
    m = mapper("hand15.urdf", "map_hand15.yaml")
    with pytest.raises(ValueError, match="index_pip"):
        m.map({**OPEN, "index_pip": bad})
    flex = dict(OPEN)
    del flex["thumb_ip"]
    with pytest.raises(ValueError, match="thumb_ip"):
        m.map(flex)
    with pytest.raises(ValueError, match="15 names but 14"):
        m.map_sequence([0.0] * 14)
