"""The two-hand twin (hands: two) on hand_description's scene_two_hands.xml: each twin hand follows
its own operator hand. Pure: the same physics as a single-hand twin, per-hand watchdogs, and the
whole recorded two-hand clip through the tracker's identity core into the sim. Node: its own
process, per-hand topics, one hand stale → only that hand goes to the safe pose, deadband."""

from __future__ import annotations

import math
import pathlib
import sys
import threading
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from sensor_msgs.msg import JointState

from hand_common import contract
from hand_common.contract import FINGER_JOINTS, FINGER_NAMES, HAND_SIDES, JOINT_NAMES
from hand_common.testing import NodeProcess, RosProbe, wait_until
from hand_twin_mujoco.loop import PhysicsLoop
from hand_twin_mujoco.model import default_two_hands_scene_path
from hand_twin_mujoco.sim import build_twin
from hand_twin_mujoco.watchdog import Command, HandsWatchdog, WatchdogState

HERE = pathlib.Path(__file__).resolve().parent
CONFIG = HERE.parent / "config" / "twin.yaml"
PREFIXES = tuple(f"{s}_" for s in HAND_SIDES)


@pytest.fixture(scope="module")
def two():
    return build_twin(default_two_hands_scene_path(), prefixes=PREFIXES)


def digit_fractions(position: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """(5,) mean joint angle / upper limit of each digit, for one hand's 15 joint angles."""
    return np.array([np.mean([position[JOINT_NAMES.index(j)] / upper[JOINT_NAMES.index(j)]
                              for j in FINGER_JOINTS[f]]) for f in FINGER_NAMES])


def test_two_hand_build_sizes_each_hand_and_matches_the_single_hand_twin(two):
    assert [h.prefix for h in two.hands] == list(PREFIXES) and len(two.gain_reports) == 2
    assert two.hand.joint_ids.shape == (30,) and two.tmap.l_open.shape == (10,)
    for r in two.gain_reports:
        assert not r.warnings
    sim = two.sim()
    cmd = np.array([0.0, 0.6, 0.0, 0.3, 0.0, 0.8, 0.0, 0.0, 0.0, 1.0])  # left, then right
    sim.set_flexions(cmd)
    assert sim.step(600) is None
    st = sim.state()
    for k, side in enumerate(HAND_SIDES):  # each hand as the single-hand twin of its own scene
        single = build_twin(str(pathlib.Path(default_two_hands_scene_path()).with_name(
            "scene.xml" if side == "right" else "scene_left.xml"))).sim()
        single.set_flexions(cmd[5 * k:5 * k + 5])
        single.step(600)
        np.testing.assert_allclose(st.position[15 * k:15 * k + 15], single.state().position, atol=math.radians(0.5),
                                   err_msg=side)


def test_hands_watchdog_puts_only_the_stale_hand_in_the_safe_pose():
    w = HandsWatchdog(0.5, [0.0] * 5, 2)
    assert w.decide(0.0).state is WatchdogState.WAITING
    w.feed(Command(np.full(5, 0.7), 1.0, 1.0), 0)
    w.feed(Command(np.full(5, 0.4), 1.0, 1.0), 1)
    d = w.decide(1.2)
    assert d.state is WatchdogState.OK and not d.urgent.any()
    np.testing.assert_array_equal(d.flexions, [0.7] * 5 + [0.4] * 5)
    w.feed(Command(np.full(5, 0.6), 1.5, 1.5), 0)  # only the left hand keeps commanding
    d = w.decide(1.9)
    assert d.state is WatchdogState.TIMED_OUT and d.changed
    np.testing.assert_array_equal(d.flexions, [0.6] * 5 + [0.0] * 5)
    np.testing.assert_array_equal(d.urgent, [False] * 5 + [True] * 5)
    assert [h.state for h in w.hands] == [WatchdogState.OK, WatchdogState.TIMED_OUT]


def test_recorded_two_hand_clip_each_twin_hand_follows_its_own_operator_hand(two, video_path):
    """Acceptance: the whole clip (621 frames) through TwoHandCore (identity + flexions per side)
    into the two-hand sim, paced at the clip's 30 fps on a simulated clock."""
    sys.path.insert(0, str(HERE.parent.parent / "hand_tracking" / "test"))
    from two_hand_clip import physical_side, two_hand_landmarks

    from hand_tracking.hand_identity import TwoHandCore

    clip = two_hand_landmarks(video_path)
    sim = two.sim()
    clock = [0.0]
    loop = PhysicsLoop(sim, HandsWatchdog(0.5, None, 2), publish_rate=30.0, clock=lambda: clock[0])
    core = TwoHandCore()
    commands = {s: [] for s in HAND_SIDES}
    measured = {s: [] for s in HAND_SIDES}
    wrong = 0
    for k, (hands, t) in enumerate(zip(clip.hands, clip.media_time)):
        out = core.update(list(hands), t, clip.width, clip.height)
        clock[0] = k / clip.fps
        for i, s in enumerate(HAND_SIDES):
            h = out.identity.hands[s]
            wrong += int(h is not None and physical_side(h) != s)
            o = out.sides[s]
            assert o.publishable, f"frame {k}: no {s} hand"
            loop.command(o.finger_flexions, t, received=clock[0], hand=i)
            commands[s].append(o.finger_flexions)
        loop.iterate(clock[0])
        st = sim.state()
        for i, s in enumerate(HAND_SIDES):
            measured[s].append(digit_fractions(st.position[15 * i:15 * i + 15], two.hands[i].joint_upper))
    assert wrong == 0 and core.identity.swaps == 0
    cmd = {s: np.array(v) for s, v in commands.items()}
    meas = {s: np.array(v) for s, v in measured.items()}
    r = {(tw, op): [float(np.corrcoef(meas[tw][:, f], cmd[op][:, f])[0, 1]) for f in range(5)]
         for tw in HAND_SIDES for op in HAND_SIDES}
    mae = {s: np.abs(meas[s] - cmd[s]).mean(axis=0) for s in HAND_SIDES}
    print("\ntwin hand vs operator hand, per finger r (thumb..pinky):")
    for (tw, op), v in r.items():
        print(f"  twin {tw:5s} vs operator {op:5s}: {np.round(v, 3).tolist()}")
    for s in HAND_SIDES:
        print(f"  twin {s} digit fraction - commanded flexion, mean |error|: {np.round(mae[s], 3).tolist()}")
    for s in HAND_SIDES:
        other = "left" if s == "right" else "right"
        assert min(r[(s, s)]) > 0.97, (s, r[(s, s)])
        assert max(abs(v) for v in r[(s, other)]) < 0.5, (s, r[(s, other)])
        assert mae[s].max() < 0.05


# --- the node ----------------------------------------------------------------------------------------

class SideCommander:
    """Publishes /hand/<side>/target_flexions at 30 Hz per side from a thread (like the tracker)."""

    def __init__(self, probe: RosProbe):
        self.pubs = {s: probe.publisher(JointState, contract.side_topic(contract.TOPIC_TARGET_FLEXIONS, s),
                                        contract.qos(contract.STREAM)) for s in HAND_SIDES}
        self.values: dict[str, object] = dict.fromkeys(HAND_SIDES)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        k = 0
        while not self._stop.wait(1 / 30):
            k += 1
            for s, v in list(self.values.items()):
                if v is not None:
                    vals = v(k) if callable(v) else v
                    self.pubs[s].publish(JointState(name=list(FINGER_NAMES), position=[float(x) for x in vals]))

    def close(self):
        self._stop.set()
        self._thread.join(1)


def test_two_hand_twin_node(tmp_path):
    node = NodeProcess.module("hand_twin_mujoco.twin_node", "--ros-args", "--params-file", str(CONFIG),
                              "-p", "hands:=two", "-p", "render_rate_hz:=0.0", "-p", "command_timeout_s:=0.5",
                              "-p", "publish_rate_hz:=50.0", "-p", "diagnostics_rate_hz:=5.0",
                              log_path=str(tmp_path / "twin.log"))
    probe = RosProbe("twin_two_hands_probe")
    commander = None
    try:
        joints = {s: probe.collect(JointState, contract.side_topic(contract.TOPIC_TWIN_JOINT_STATES, s), 50)
                  for s in HAND_SIDES}
        single = probe.collect(JointState, contract.TOPIC_TWIN_JOINT_STATES, 50)
        diags = probe.collect(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, 50)
        assert probe.get_state(contract.TWIN_NODE, timeout=30) == "unconfigured"
        assert probe.change_state(contract.TWIN_NODE, "configure", timeout=60)
        assert probe.change_state(contract.TWIN_NODE, "activate")
        commander = SideCommander(probe)
        for pub in commander.pubs.values():
            probe.wait_for_subscribers(pub)
        rng = np.random.default_rng(1)
        # left: 0.7 with ±0.003 jitter (inside the 0.005 deadband); right: index and pinky 0.5
        commander.values["left"] = lambda k: np.clip(0.7 + rng.uniform(-0.003, 0.003, 5), 0, 1)
        commander.values["right"] = [0.0, 0.5, 0.0, 0.0, 0.5]
        upper = None

        def fractions(side):
            m = joints[side][-1]
            return digit_fractions(np.array(m.position), upper)

        from hand_twin_mujoco.model import load_hand

        upper = load_hand(default_two_hands_scene_path(), prefix="left_").joint_upper
        time.sleep(1.5)
        left, right = fractions("left"), fractions("right")
        print(f"\nnode: left digit fractions {np.round(left, 3).tolist()}, right {np.round(right, 3).tolist()}")
        assert np.all(np.abs(left - 0.7 * 0.94) < 0.06)
        assert np.all(np.abs(right - np.array([0, 0.5, 0, 0, 0.5]) * 0.94) < 0.06)
        assert single == []  # no single-hand topic in two-hand mode
        # the right operator hand is lost: only the right twin hand opens (safe pose)
        commander.values["right"] = None
        time.sleep(1.2)
        assert np.all(fractions("right") < 0.03)
        assert np.all(np.abs(fractions("left") - 0.7 * 0.94) < 0.06)
        wait_until(lambda: any(kv.key == "watchdog_right" and kv.value == "timed_out"
                               for kv in diags[-1].status[0].values), 5, "right watchdog timed out")
        values = {kv.key: kv.value for kv in diags[-1].status[0].values}
        assert values["watchdog_left"] == "ok" and diags[-1].status[0].level == DiagnosticStatus.WARN
        assert int(values["command_values_deadbanded"]) > 100  # the left hand's jitter was not re-applied
        assert probe.change_state(contract.TWIN_NODE, "deactivate")
        assert probe.change_state(contract.TWIN_NODE, "cleanup")
    finally:
        if commander is not None:
            commander.close()
        probe.close()
        code = node.stop()
    assert code == 0, node.output()[-3000:]
