"""derive_joint_map on hands nobody here wrote (../shared/robots: LEAP, Allegro), with no edits:
the table it writes loads in the mapper; flexion 0 is the URDF's rest pose, flexion 1 closes every
fingertip towards the palm; every published value stays within the limits (the project's
checker); it says what it guessed."""

import pathlib

import numpy as np
import pytest
import yaml

from hand_common.contract import JOINT_NAMES
from hand_joint_mapper.derive_joint_map import _Kin, derive, main
from hand_joint_mapper.joint_mapping import JointMapper, load_urdf_file, parse_table
from hand_joint_mapper.joint_state_check import JointStateChecker

ROBOTS = pathlib.Path(__file__).resolve().parents[4] / "shared" / "robots"
URDFS = {"leap": ROBOTS / "leap_hand" / "leap_hand_right.urdf", "allegro": ROBOTS / "allegro_hand" / "allegro_hand_right.urdf"}


@pytest.fixture(scope="module", params=sorted(URDFS))
def derived(request, tmp_path_factory):
    urdf = str(URDFS[request.param])
    out = tmp_path_factory.mktemp("derive") / f"{request.param}.yaml"
    assert main([urdf, "-o", str(out)]) == 0
    table = parse_table(yaml.safe_load(out.read_text()), str(out))
    mapper = JointMapper.from_urdf(load_urdf_file(urdf), table)
    return request.param, urdf, mapper, derive(urdf), out.read_text()


def _tips(kin, derived, values):
    pos = kin.frames(values)
    return np.array([pos[derived.tips[d]] for d in ("thumb", "index", "middle", "ring")])


def test_chains_and_guesses(derived):
    name, urdf, mapper, d, text = derived
    assert set(d.chains) == {"thumb", "index", "middle", "ring"}
    if name == "leap":
        assert d.tips == {"thumb": "thumb_tip_head", "index": "index_tip_head", "middle": "middle_tip_head",
                          "ring": "ring_tip_head"}
        assert {r["joint"] for r in d.rows if r["human"] == "index_mcp"} == {"1"}
        assert any("0 (index)" in n and "abduction" in n for n in d.notes)
    else:
        assert d.tips["thumb"] == "link_15.0_tip" and d.tips["index"] == "link_3.0_tip"
        row = next(r for r in d.rows if r["joint"] == "joint_12.0")
        assert row["open"] == pytest.approx(0.263) and "nearest limit" in text
        assert any("joint_0.0" in n and "twist" in n for n in d.notes)
    assert "no pinky" in text and text.count("#   ") == len(d.notes)        # every guess is in the file


def test_flexion_0_is_rest_and_1_closes_every_fingertip(derived):
    name, urdf, mapper, d, _ = derived
    kin = _Kin(urdf)
    rest = _tips(kin, d, {})
    centre = np.mean([kin.joint_pos_axis(d.chains[f][0])[0] for f in ("index", "middle", "ring")] + [np.zeros(3)], axis=0)
    open_q = dict(zip(mapper.names, mapper.map(dict.fromkeys(JOINT_NAMES, 0.0)).positions))
    closed_q = dict(zip(mapper.names, mapper.map(dict.fromkeys(JOINT_NAMES, 1.0)).positions))
    assert np.linalg.norm(_tips(kin, d, open_q) - rest, axis=1).max() <= 0.005
    ratio = np.linalg.norm(_tips(kin, d, closed_q) - centre, axis=1) / np.linalg.norm(rest - centre, axis=1)
    print(f"{name}: flexion 1, tip-to-palm / rest (thumb, index, middle, ring): {np.round(ratio, 2)}")
    assert ratio.max() <= 0.6


def test_published_joint_states_stay_within_limits(derived):
    from sensor_msgs.msg import JointState

    name, urdf, mapper, _, _ = derived
    checker = JointStateChecker(load_urdf_file(urdf), max_age_s=None)
    for k, f in enumerate(np.linspace(-0.2, 1.2, 15)):       # even past the flexion range
        res = mapper.map(dict.fromkeys(JOINT_NAMES, float(f)))
        msg = JointState(name=list(mapper.names), position=[float(v) for v in res.positions])
        msg.header.stamp.sec = k + 1
        checker.check_msg(msg)
    assert checker.report.ok, checker.report.summary()


# ---- any hand tree (issue 24): underactuated hands, a wrist above the palm, malformed files ----
from hand_joint_mapper.derive_check import check, leap_with_wrist  # noqa: E402

TREES = {"inspire_right": ROBOTS / "inspire_hand" / "inspire_hand_right.urdf",
         "inspire_left": ROBOTS / "inspire_hand" / "inspire_hand_left.urdf",
         "ability_right": ROBOTS / "ability_hand" / "ability_hand_right.urdf",
         "ability_left": ROBOTS / "ability_hand" / "ability_hand_left.urdf"}


@pytest.mark.parametrize("name", sorted(TREES) + ["leap", "allegro"])
def test_flexion_0_rest_1_closed_within_limits_and_mimic_consistent(name):
    """The acceptance figures of derive_check on every shared hand: flexion 0 -> every tip within
    5 mm of rest, 1 -> every tip >= 40 % closer to the palm centre, the sweep -0.2..1.2 within the
    URDF limits with every <mimic> on its equation."""
    r = check(str({**TREES, **URDFS}[name]))
    print(f"{name}: open {np.round(r.open_mm, 2)} mm, closed/rest {np.round(r.closed_ratio, 2)}")
    assert r.open_mm.max() <= 5.0 and r.closed_ratio.max() <= 0.6
    assert r.limit_excess <= 1e-9 and r.mimic_error <= 1e-9
    assert len(r.digits) == (5 if name in TREES else 4)


def test_underactuated_hands_map_the_independent_joints_and_the_opposition():
    d = derive(str(TREES["ability_right"]))
    assert {r["joint"] for r in d.rows} == {"thumb_q1", "thumb_q2", "index_q1", "middle_q1", "ring_q1", "pinky_q1"}
    assert d.opposition == ["thumb_q1"]
    row = next(r for r in d.rows if r["joint"] == "thumb_q1")
    assert row["human"] == "thumb_cmc" and row["open"] == 0.0 and row["closed"] == "lower"   # q = 0 is its upper limit
    assert any("index_q2: <mimic>" in n for n in d.notes)
    d = derive(str(TREES["inspire_right"]))
    assert d.opposition == ["thumb_proximal_yaw_joint"]
    assert {r["human"] for r in d.rows} == {"thumb_cmc", "thumb_mcp", "index_mcp", "middle_mcp", "ring_mcp", "pinky_mcp"}


def test_wrist_joints_above_the_palm_stay_at_rest(tmp_path, capsys):
    urdf = leap_with_wrist(URDFS["leap"], tmp_path / "leap_wrist.urdf")
    d = derive(str(urdf))
    assert d.wrist == ["wrist_flexion", "wrist_deviation"] and d.palm == "base"
    assert d.tips == derive(str(URDFS["leap"])).tips
    assert not {r["joint"] for r in d.rows} & set(d.wrist)
    r = check(str(urdf))
    assert r.wrist == ("wrist_flexion", "wrist_deviation") and r.wrist_moved == 0.0 and r.ok
    assert main([str(urdf), "-o", str(tmp_path / "m.yaml")]) == 0
    assert "guess: wrist/forearm: wrist_flexion, wrist_deviation above the palm" in capsys.readouterr().err


def test_malformed_xml_is_a_one_line_error(tmp_path, capsys):
    bad = tmp_path / "bad.urdf"
    bad.write_text('<robot name="x"><link name="a"></robot>')
    assert main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("derive_joint_map: error:") and "not well-formed XML" in err and "Traceback" not in err
    one = tmp_path / "one.urdf"
    one.write_text('<robot name="x"><link name="a"/></robot>')
    assert main([str(one)]) == 2
    assert "found 0 digit chains" in capsys.readouterr().err
