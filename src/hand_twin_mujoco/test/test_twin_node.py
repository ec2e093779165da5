"""The hand_twin node as a separate process, driven like ``ros2 lifecycle set`` / ``ros2 param set``,
on hand_description's model.

Proves: every key of config/twin.yaml is declared; a missing model fails configure with the
reason and the node stays usable; published flexions are followed (joint states match the pure
simulation of the same model); malformed commands are rejected and never applied; when commands
stop, the hand leaves for the safe pose no earlier than command_timeout after the last command's
arrival and reaches it (how soon after is bench_watchdog's figure); /diagnostics reports the
real-time factor, command age and watchdog state; live parameters are validated; rendering
publishes images and records frames with the applied command's stamp; lifecycle to finalized.
"""

from __future__ import annotations

import csv
import math
import pathlib
import threading
import time

import numpy as np
import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from fixture_hand import real_scene
from rcl_interfaces.srv import ListParameters
from sensor_msgs.msg import Image, JointState

from hand_common import contract
from hand_common.testing import NodeProcess, RosProbe, wait_until
from hand_twin_mujoco.interface import KEY_COMMAND_RECEIVED_AT

HERE = pathlib.Path(__file__).resolve().parent
CONFIG = HERE.parent / "config" / "twin.yaml"
NODE = contract.TWIN_NODE
OPEN_TOL = math.radians(3.0)  # "at the safe pose": every joint within 3° of it


@pytest.fixture(scope="module")
def scene() -> str:
    path = real_scene()
    if path is None:
        pytest.fail("hand_description's mjcf/scene.xml is missing: the node tests run on the real model")
    return path


@pytest.fixture(scope="module")
def probe():
    p = RosProbe("twin_test_probe")
    yield p
    p.close()


@pytest.fixture
def start(tmp_path, scene):
    procs: list[NodeProcess] = []

    def _start(**params) -> NodeProcess:
        overrides = tmp_path / f"override{len(procs)}.yaml"
        overrides.write_text(yaml.safe_dump({NODE: {"ros__parameters": params}}))
        proc = NodeProcess.module("hand_twin_mujoco.twin_node", "--ros-args", "--params-file", str(CONFIG),
                                  "--params-file", str(overrides), log_path=str(tmp_path / f"twin{len(procs)}.log"))
        procs.append(proc)
        return proc

    yield _start
    for p in procs:
        p.stop()


def stamp_s(msg) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


class Commander:
    """Publishes /hand/target_flexions at 30 Hz from a thread, like the tracker.

    What to send is one ``(names, values)`` pair, swapped in one assignment and read once per
    message: a message never mixes the names of one ``send`` with the values of another (``send``
    used to set them one after the other, so a well-formed all-open command could go out between a
    malformed one's two assignments), and ``pause`` between the thread's check and its read cannot
    kill the thread."""

    def __init__(self, probe: RosProbe):
        self.probe = probe
        self.pub = probe.publisher(JointState, contract.TOPIC_TARGET_FLEXIONS, contract.qos(contract.STREAM))
        self.payload: tuple[list[str], list[float]] | None = None
        self.last_sent = None  # wall time of the last message
        self.stamps: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(1 / 30):
            payload = self.payload
            if payload is None:
                continue
            m = JointState()
            m.header.stamp = self.probe.node.get_clock().now().to_msg()
            m.name, m.position = list(payload[0]), [float(v) for v in payload[1]]
            self.pub.publish(m)
            self.last_sent = time.time()
            self.stamps.append(stamp_s(m))

    def send(self, values, names=None):
        self.payload = (list(names or contract.FINGER_NAMES), list(values))

    def pause(self) -> float:
        """Stop publishing; returns the wall time of the last message sent."""
        self.payload = None
        time.sleep(0.05)
        return self.last_sent

    def close(self):
        self._stop.set()
        self._thread.join(1)


#: a bound on a hung watchdog, not a figure of this machine (figures: bench_watchdog)
HUNG_S = 3.0


def diag_values(arr: DiagnosticArray) -> dict[str, str]:
    return {k.key: k.value for k in arr.status[0].values}


def settled(m: JointState) -> bool:
    return bool(np.all(np.abs(m.velocity) < 0.2))


def curls(m: JointState) -> np.ndarray:
    """Mean joint angle of each digit (rad), FINGER_NAMES order."""
    return np.array(m.position).reshape(5, 3).mean(axis=1)


def is_open(m: JointState) -> bool:
    return bool(np.max(np.abs(m.position)) < OPEN_TOL)


def trip_sample(joints, arrival: float) -> JointState | None:
    """The first sample at the safe pose after the hand, following the command that arrived at
    ``arrival`` (wall s), was seen closed (every joint > 10°) after that arrival; None: not yet."""
    after = [m for m in list(joints) if stamp_s(m) > arrival]
    k = next((i for i, m in enumerate(after) if np.min(m.position) > math.radians(10)), None)
    return None if k is None else next((m for m in after[k:] if is_open(m)), None)


def expected_angles(scene: str, flexion: float, seconds: float) -> np.ndarray:
    """Joint angles of the pure simulation of the same model after ``seconds`` at ``flexion``."""
    from hand_twin_mujoco.sim import build_twin

    sim = build_twin(scene).sim()
    sim.set_flexions(np.full(5, flexion))
    sim.step(int(round(seconds / sim.hand.timestep)))
    return sim.state().position


def test_twin_node_follows_times_out_and_reports(probe, start, scene):
    # every YAML key is declared by the node
    proc = start(model_path="/nonexistent/scene.xml", render_rate_hz=0.0, command_timeout_s=0.5)
    listed = probe.call(ListParameters, f"/{NODE}/list_parameters", ListParameters.Request())
    declared = set(listed.result.names)
    yaml_keys = set(yaml.safe_load(CONFIG.read_text())[NODE]["ros__parameters"])
    assert yaml_keys <= declared, yaml_keys - declared

    # a model that is not there: configure fails with the reason, the node stays usable
    assert probe.change_state(NODE, "configure") is False
    wait_until(lambda: "/nonexistent/scene.xml does not exist" in proc.output(), 5, "configure failure log")
    assert probe.get_state(NODE) == "unconfigured"
    assert all(r.successful for r in probe.set_parameters(NODE, model_path=scene))

    joints = probe.collect(JointState, contract.TOPIC_TWIN_JOINT_STATES, contract.qos(contract.STREAM))
    tendons = probe.collect(JointState, "/hand_twin/tendons", contract.qos(contract.STREAM))
    diags = probe.collect(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, contract.qos(contract.STREAM))
    assert probe.change_state(NODE, "configure") is True
    assert probe.change_state(NODE, "activate") is True
    cmd = Commander(probe)
    try:
        probe.wait_for_subscribers(cmd.pub)
        wait_until(lambda: len(joints) > 5, 10, "twin joint states")
        js = joints[-1]
        assert list(js.name) == list(contract.JOINT_NAMES)
        assert np.max(np.abs(js.position)) < OPEN_TOL  # safe pose before any command
        wait_until(lambda: any(d.status[0].values and dict((k.key, k.value) for k in d.status[0].values)
                               .get("watchdog") == "waiting" for d in diags), 5, "waiting diagnostics")

        # follow: 0.6 on every finger → the same angles as the pure simulation of this model (waits
        # are bounds on a hung run, never on this machine's speed)
        cmd.send([0.6] * 5)
        want = expected_angles(scene, 0.6, 1.5)
        wait_until(lambda: settled(joints[-1]) and np.allclose(joints[-1].position, want, atol=math.radians(1.5)),
                   10, "the hand at 0.6")
        js = joints[-1]
        np.testing.assert_allclose(js.position, want, atol=math.radians(1.5))
        assert np.all(np.array(js.effort) > 0)  # the flexors hold every joint against its springs
        ts = tendons[-1]
        assert list(ts.name) == [f"{f}_flexor" for f in contract.FINGER_NAMES]
        assert np.all(np.array(ts.effort) > 1.0)  # tension, N

        # per-finger proportionality: thumb 0.2 ... pinky 1.0 → increasing mean curl
        cmd.send([0.2, 0.4, 0.6, 0.8, 1.0])
        wait_until(lambda: settled(joints[-1]) and np.all(np.diff(curls(joints[-1])[1:]) > 0.1), 10,
                   "mean curls increasing from index to pinky")

        # malformed commands are rejected, never applied (they would open the hand). While only
        # malformed ones arrive the watchdog would open the hand after command_timeout (0.5 s),
        # which 4 x 0.1 s of them can exceed on a loaded machine: it is raised for this phase
        # (a live parameter), so what is judged is the rejection, not the machine's speed.
        assert all(r.successful for r in probe.set_parameters(NODE, command_timeout_s=30.0))
        held = np.array(joints[-1].position)
        for names, values in ((None, [0.0, 0.0, math.nan, 0.0, 0.0]), (None, [0.0, 0.0, 0.0, 0.0, 1.5]),
                              (["thumb", "index", "middle", "ring", "little"], [0.0] * 5), (None, [0.0] * 4)):
            cmd.send(values, names)
            time.sleep(0.1)
        cmd.pause()
        np.testing.assert_allclose(joints[-1].position, held, atol=math.radians(1.0))
        assert all(r.successful for r in probe.set_parameters(NODE, command_timeout_s=0.5))
        wait_until(lambda: "rejected /hand/target_flexions message (not applied)" in proc.output(), 5, "reject log")
        assert "non-finite flexion" in proc.output()

        # stop publishing → safe pose (open) after command_timeout. The twin judges staleness by
        # arrival, so the delay is counted from the newest command's arrival the twin reports
        # (command_received_at), not from this process's last send: a test process starved for
        # more than command_timeout while "sending" (load 30+ on 2 cores) rightly tripped the twin
        # mid-hold, the one message sent on waking made it follow again from the open pose, and
        # the still-open samples just after that message read as a trip 3 ms after the last
        # command (fresh-clone failure). Exact: the hand, following the last command, leaves for
        # the safe pose no earlier than command_timeout after that arrival (the wall clock is read
        # before the watchdog's monotonic one); how soon after is the scheduler's, printed here and
        # measured by bench_watchdog, bounded here only against a hung watchdog.
        t_phase = time.time()
        cmd.send([0.6] * 5)
        wait_until(lambda: np.min(joints[-1].position) > math.radians(10), 10, "the hand following 0.6")
        last = cmd.pause()
        wait_until(lambda: diags and stamp_s(diags[-1]) > last and diag_values(diags[-1])["watchdog"] == "timed_out",
                   10, "a timed_out status after the last command")
        arrival = float(diag_values(diags[-1])[KEY_COMMAND_RECEIVED_AT])
        assert t_phase < arrival  # one of this phase's messages
        wait_until(lambda: trip_sample(joints, arrival) is not None, 10, "the safe pose after the last command")
        at_open = stamp_s(trip_sample(joints, arrival))
        delay = at_open - arrival
        print(f"safe pose reached {delay * 1e3:.0f} ms after the last command arrived (timeout 500 ms)")
        assert 0.5 <= delay <= 0.5 + HUNG_S
        assert all(is_open(m) for m in list(joints) if stamp_s(m) >= at_open)
        wait_until(lambda: "no flexion command for" in proc.output(), 3, "watchdog WARN")

        # diagnostics: stale → WARN with real-time factor and command age
        wait_until(lambda: diags and stamp_s(diags[-1]) > last + 1.0, 5, "diagnostics after the timeout")
        status = diags[-1].status[0]
        values = {k.key: k.value for k in status.values}
        assert status.level == b"\x01" and status.name == "hand_twin: physics"
        assert values["watchdog"] == "timed_out" and float(values["command_age_s"]) > 0.5
        # never ahead of the wall clock by more than a step; how far behind is this machine's load
        # (bench_twin's figure), not asserted
        assert 0.0 < float(values["real_time_factor"]) <= 1.01
        assert 0.0 < float(values["real_time_factor_total"]) <= 1.01
        assert int(values["commands_rejected"]) >= 4 and values["resets"] == "0"

        # fresh commands resume
        cmd.send([0.5] * 5)
        wait_until(lambda: np.min(joints[-1].position) > math.radians(10), 10, "the hand following 0.5")
        wait_until(lambda: "fresh flexion commands" in proc.output(), 3, "resume log")
        wait_until(lambda: any(d.status[0].level == b"\x00" for d in list(diags)), 3, "OK diagnostics")

        # live parameters: validated, configure-time ones refused while configured
        assert probe.set_parameters(NODE, command_timeout_s=0.2)[0].successful
        res = probe.set_parameters(NODE, model_path="/x.xml")[0]
        assert not res.successful and "configure time" in res.reason
        res = probe.set_parameters(NODE, safe_flexions=[0.0, 0.0, 2.0, 0.0, 0.0])[0]
        assert not res.successful and "[0, 1]" in res.reason
        res = probe.set_parameters(NODE, render_rate_hz=10.0)[0]
        assert not res.successful and "no renderer" in res.reason
        assert not probe.set_parameters(NODE, render_rate_hz=45.0)[0].successful
    finally:
        cmd.close()

    # the safe pose is configurable per finger, live (commands stopped above: the watchdog holds it)
    assert probe.set_parameters(NODE, safe_flexions=[0.0, 0.5, 0.5, 0.0, 0.0])[0].successful

    def at_new_safe_pose(m) -> bool:
        q = np.array(m.position).reshape(5, 3)
        return bool(np.all(q[1:3].mean(axis=1) > math.radians(20)) and np.all(np.abs(q[[0, 3, 4]]) < OPEN_TOL))

    wait_until(lambda: at_new_safe_pose(joints[-1]), 10, "index and middle at the new safe pose 0.5")

    # lifecycle: deactivate stops the stream, cleanup and shutdown release everything
    assert probe.change_state(NODE, "deactivate") is True
    t_off = time.time()  # the physics thread (which publishes) is joined before deactivate answers
    time.sleep(0.5)
    assert joints and all(stamp_s(m) < t_off for m in list(joints))
    assert probe.change_state(NODE, "cleanup") is True
    assert probe.get_state(NODE) == "unconfigured"
    assert probe.change_state(NODE, "shutdown") is True
    assert probe.get_state(NODE) == "finalized"
    assert proc.stop() == 0


def test_twin_node_renders_images_and_records_frames(probe, start, tmp_path):
    rec = tmp_path / "frames"
    proc = start(render_rate_hz=10.0, image_width_px=320, image_height_px=240, record_dir=str(rec), record_format="jpg")
    images = probe.collect(Image, contract.TOPIC_TWIN_IMAGE, contract.qos(contract.IMAGE))
    assert probe.change_state(NODE, "configure") is True
    assert probe.change_state(NODE, "activate") is True
    cmd = Commander(probe)
    try:
        probe.wait_for_subscribers(cmd.pub)
        cmd.send([0.7] * 5)
        wait_until(lambda: len(images) >= 8, 15, "8 rendered images")
    finally:
        cmd.close()
    img = images[-1]
    assert (img.width, img.height, img.encoding, img.step) == (320, 240, "rgb8", 960)
    pixels = np.frombuffer(bytes(img.data), np.uint8).reshape(240, 320, 3)
    assert pixels.std() > 10
    assert proc.stop() == 0  # SIGINT while active: shutdown transition, files closed
    assert "shutdown transition failed" not in proc.output()
    rows = list(csv.DictReader(open(rec / "frames.csv")))
    assert len(rows) >= 8
    assert all((rec / r["file"]).is_file() for r in rows)
    applied = [r for r in rows if r["watchdog"] == "ok"]
    assert applied, rows[:3]
    sent = set(round(s, 6) for s in cmd.stamps)
    assert all(round(float(r["command_stamp"]), 6) in sent for r in applied)
    # latency capture → applied is measurable: received after stamped, within a second
    lat = [float(r["command_received"]) - float(r["command_stamp"]) for r in applied]
    assert all(0.0 <= x < 1.0 for x in lat), lat
    assert all(float(r["index"]) == pytest.approx(0.7) for r in applied)
