"""The joint_mapper node as a separate process, driven like ``ros2 lifecycle set`` / ``ros2 param set``.

Proves: every key of config/joint_mapper.yaml is declared; configure FAILS (with the joint named
in the node's log) for a renamed URDF joint and for a limit that differs from the table; the
node is then still usable (parameter fix + configure); flexions map to clamped URDF angles with
the capture stamp; a negative-bending URDF closes on a fist; the /robot_description topic is
used; bad input and stale stamps are dropped with a message.
"""

from __future__ import annotations

import math
import pathlib
import time

import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.srv import ListParameters
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from hand_common import contract
from hand_common.testing import NodeProcess, RosProbe, wait_until
from hand_joint_mapper.joint_state_check import JointStateChecker

HERE = pathlib.Path(__file__).resolve().parent
FIX = HERE / "fixtures"
CONFIG = HERE.parent / "config" / "joint_mapper.yaml"
NODE = contract.JOINT_MAPPER_NODE
UPPER = {"thumb_cmc": 1.0, "thumb_mcp": 1.0, "thumb_ip": 1.3}
for _f in ("index", "middle", "ring", "pinky"):
    UPPER.update({f"{_f}_mcp": 1.57, f"{_f}_pip": 1.75, f"{_f}_dip": 1.4})


@pytest.fixture(scope="module")
def probe():
    p = RosProbe("joint_mapper_test_probe")
    yield p
    p.close()


@pytest.fixture
def start(tmp_path):
    """start(**params) → NodeProcess of the mapper with config/joint_mapper.yaml + overrides."""
    procs: list[NodeProcess] = []

    def _start(**params) -> NodeProcess:
        overrides = tmp_path / f"override{len(procs)}.yaml"
        base = {"urdf_path": str(FIX / "hand15.urdf"), "mapping_file": str(FIX / "map_hand15.yaml"),
                "description_timeout_s": 0.0}
        overrides.write_text(yaml.safe_dump({NODE: {"ros__parameters": {**base, **params}}}))
        proc = NodeProcess.module("hand_joint_mapper.joint_mapper_node", "--ros-args", "--params-file", str(CONFIG),
                                  "--params-file", str(overrides), log_path=str(tmp_path / f"mapper{len(procs)}.log"))
        procs.append(proc)
        return proc

    yield _start
    for p in procs:
        p.stop()


def flexion_msg(value: float | dict, stamp_ns: int) -> JointState:
    m = JointState()
    m.header.stamp.sec, m.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    m.name = list(contract.JOINT_NAMES)
    vals = value if isinstance(value, dict) else dict.fromkeys(contract.JOINT_NAMES, value)
    m.position = [float(vals[n]) for n in contract.JOINT_NAMES]
    return m


def stamp_ns(msg) -> int:
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


class Link:
    """Probe-side publisher of flexions and collector of /joint_states."""

    def __init__(self, probe: RosProbe):
        self.probe = probe
        self.pub = probe.publisher(JointState, contract.TOPIC_JOINT_FLEXIONS, contract.qos(contract.STREAM))
        self.out = probe.collect(JointState, contract.TOPIC_JOINT_STATES, contract.qos(contract.STREAM))
        self.t = 1_700_000_000 * 1_000_000_000

    def warm_up(self) -> None:
        """Publish open-hand flexions until the first /joint_states arrives (discovery done)."""
        self.probe.wait_for_subscribers(self.pub)
        end = time.monotonic() + 15
        while not self.out and time.monotonic() < end:
            self.send(0.0)
            time.sleep(0.1)
        assert self.out, "no /joint_states from the mapper"
        time.sleep(0.2)
        self.out.clear()

    def send(self, value, stamp: int | None = None) -> int:
        if stamp is None:
            self.t += 33_000_000
            stamp = self.t
        self.pub.publish(flexion_msg(value, stamp))
        return stamp

    def expect(self, n: int) -> list[JointState]:
        wait_until(lambda: len(self.out) >= n, 10, f"{n} /joint_states messages")
        return list(self.out)


def wait_log(proc: NodeProcess, text: str, timeout: float = 5.0) -> str:
    wait_until(lambda: text in proc.output(), timeout, f"'{text}' in the mapper log")
    return proc.output()


def test_config_keys_declared_and_fixture_hand_mapped(probe, start):
    proc = start()
    declared = probe.call(ListParameters, f"/{NODE}/list_parameters", ListParameters.Request()).result.names
    keys = yaml.safe_load(CONFIG.read_text())[NODE]["ros__parameters"]
    assert set(keys) <= set(declared), f"undeclared keys {set(keys) - set(declared)}"
    assert probe.get_state(NODE) == "unconfigured"
    assert probe.change_state(NODE, "configure")
    assert probe.change_state(NODE, "activate")
    diags = probe.collect(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, contract.qos(contract.STREAM))
    link = Link(probe)
    link.warm_up()
    s_open = link.send(0.0)
    s_fist = link.send(1.0)
    s_half = link.send(0.5)
    out = link.expect(3)
    assert [stamp_ns(m) for m in out] == [s_open, s_fist, s_half]  # capture stamps carried through
    for m in out:
        assert list(m.name) == list(contract.JOINT_NAMES)
        assert len(m.position) == len(m.name) and len(m.velocity) == 0 and len(m.effort) == 0
    assert list(out[0].position) == [0.0] * 15
    assert list(out[1].position) == pytest.approx([UPPER[n] for n in contract.JOINT_NAMES])
    assert list(out[2].position) == pytest.approx([UPPER[n] / 2 for n in contract.JOINT_NAMES])
    checker = JointStateChecker((FIX / "hand15.urdf").read_text(), max_age_s=None)
    assert all(checker.check_msg(m) == [] for m in out) and checker.report.ok

    # bad input: dropped with a message naming the problem; stale stamp dropped; no NaN out
    link.send({**dict.fromkeys(contract.JOINT_NAMES, 0.2), "ring_pip": math.nan})
    link.send(1.7)  # outside the flexion contract
    link.send(0.3, stamp=s_open)  # older than what was published
    s_ok = link.send(0.25)
    out = link.expect(4)
    assert len(out) == 4 and stamp_ns(out[3]) == s_ok
    assert list(out[3].position) == pytest.approx([UPPER[n] / 4 for n in contract.JOINT_NAMES])
    wait_log(proc, "ring_pip: non-finite flexion")  # further rejections within 2 s are throttled in the log
    wait_log(proc, "stamp does not advance")

    def counters():
        return [{kv.key: kv.value for kv in d.status[0].values} for d in diags]
    wait_until(lambda: any(c["rejected"] == "2" and c["stale_stamps_dropped"] == "1" for c in counters()), 5,
               "diagnostics counting 2 rejected and 1 stale message")
    last = [d.status[0] for d in diags][-1]
    assert last.message.startswith("stale stamp") and last.level == last.WARN

    # inactive: nothing published
    assert probe.change_state(NODE, "deactivate")
    link.send(0.5)
    time.sleep(0.5)
    assert len(link.out) == 4
    assert probe.change_state(NODE, "cleanup")
    assert probe.get_state(NODE) == "unconfigured"
    assert proc.stop() == 0


@pytest.mark.parametrize("urdf, joint, words", [
    ("hand15_renamed.urdf", "middle_pip", "the URDF has no joint named 'middle_pip'"),
    ("hand15_limit_changed.urdf", "index_pip", "URDF limit [0, 1.2] differs from the mapping's expected [0, 1.75]"),
])
def test_configure_fails_loudly_naming_the_joint(probe, start, urdf, joint, words):
    proc = start(urdf_path=str(FIX / urdf))
    assert probe.change_state(NODE, "configure") is False
    assert probe.get_state(NODE) == "unconfigured"  # not half-configured
    log = wait_log(proc, f"configure failed [joint {joint}]")
    assert words in log
    assert probe.node.count_publishers(contract.TOPIC_JOINT_STATES) == 0
    # fixed through the robot_description parameter (highest priority), the same process configures
    res = probe.set_parameters(NODE, robot_description=(FIX / "hand15.urdf").read_text())
    assert res[0].successful
    assert probe.change_state(NODE, "configure")
    wait_log(proc, "from parameter robot_description")


def test_negative_bending_hand_closes_on_fist(probe, start):
    proc = start(urdf_path=str(FIX / "hand15_negative.urdf"), mapping_file=str(FIX / "map_hand15_negative.yaml"))
    assert probe.change_state(NODE, "configure")
    assert probe.change_state(NODE, "activate")
    link = Link(probe)
    link.warm_up()
    link.send(1.0)
    link.send({**dict.fromkeys(contract.JOINT_NAMES, 0.0), "index_pip": 1.0, "index_dip": 1.0})
    fist, index = link.expect(2)
    assert list(fist.position) == pytest.approx([-UPPER[n] for n in contract.JOINT_NAMES])
    got = dict(zip(index.name, index.position))
    assert got["index_pip"] == pytest.approx(-1.75) and got["index_dip"] == pytest.approx(-1.4)
    assert got["index_mcp"] == 0.0 and got["middle_pip"] == 0.0
    assert probe.change_state(NODE, "shutdown")
    assert proc.stop() == 0


def test_robot_description_topic_beats_the_file(probe, start):
    pub = probe.publisher(String, contract.TOPIC_ROBOT_DESCRIPTION, contract.qos(contract.LATCHED))
    pub.publish(String(data=(FIX / "hand15_mimic.urdf").read_text()))
    # the file would fail (renamed joint); the latched topic carries a usable URDF
    proc = start(urdf_path=str(FIX / "hand15_renamed.urdf"), mapping_file=str(FIX / "map_hand15_mimic.yaml"),
                 description_timeout_s=10.0)
    assert probe.change_state(NODE, "configure")
    wait_log(proc, "robot 'hand15_mimic' from topic /robot_description")
    assert probe.change_state(NODE, "activate")
    link = Link(probe)
    link.warm_up()
    link.send(1.0)
    got = dict(zip(link.expect(1)[0].name, link.out[0].position))
    assert list(got) == list(contract.JOINT_NAMES)
    assert got["ring_dip"] == pytest.approx(0.75 * 1.75)  # mimic of ring_pip, published for every link
    probe.node.destroy_publisher(pub)
    assert proc.stop() == 0
