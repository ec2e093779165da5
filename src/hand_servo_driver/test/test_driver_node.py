"""The servo_driver node (its own process) against the simulated board (its own process), through
ROS topics, the lifecycle and parameter services, and the pty.

One driver + one board for the module; the tests run in order and each states what it starts
from. Board-side facts come from the board's pulse log (CLOCK_MONOTONIC stamps, comparable with
this process), driver-side facts from /diagnostics.
"""

import math
import os
import threading
import time

import numpy as np
import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.srv import ListParameters
from sensor_msgs.msg import JointState

from hand_common import contract
from hand_common.testing import NodeProcess, RosProbe, wait_until
from hand_servo_driver import protocol as p
from hand_servo_driver.sim_board import SimBoardProcess

NODE = contract.SERVO_DRIVER_NODE
PKG_YAML = os.path.join(os.path.dirname(__file__), "..", "config", "servo_driver.yaml")
RATE_DPS = 180.0
US_PER_DEG = 2000.0 / 180.0
RATE_US = RATE_DPS * US_PER_DEG  # 2000 µs/s
SAFE_RATE_US = 600.0 * US_PER_DEG  # the ramp to the safe pose: safe_speed_dps 600 (an SG90 horn's speed)
DEADBAND_DEG = 2.0  # 22 µs
COMMAND_TIMEOUT = 0.5
with open(PKG_YAML) as _f:
    MAX_STEP_S = float(yaml.safe_load(_f)[NODE]["ros__parameters"]["max_step_s"])  # the rig keeps it
TARGET = [0.0, 0.25, 0.5, 0.75, 1.0]
TARGET_US = [1000, 1250, 1500, 1750, 2000]
SAFE_US = [1000] * 5
OK, WARN, ERROR = 0, 1, 2  # diagnostic_msgs/DiagnosticStatus levels


def fine(level: int, v: dict) -> bool:
    """OK, or only the command stream's WARN (the lowest one: nothing else wrong): this test's own
    30 Hz publisher, starved on a loaded machine, makes gaps the driver rightly names."""
    return level == OK or (level == WARN and v.get("command_stream") == "degraded")


def flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        out.update(flatten(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


class Rig:
    def __init__(self, workdir: str):
        self.board = SimBoardProcess(workdir, "--watchdog-ms", "500", "--seed", "3")
        with open(PKG_YAML) as f:
            doc = yaml.safe_load(f)
        params = doc[NODE]["ros__parameters"]
        params.update(port=self.board.link, diagnostics_period_s=0.2, command_timeout_s=COMMAND_TIMEOUT)
        for name in contract.FINGER_NAMES:
            params[name].update(max_speed_dps=RATE_DPS, deadband_deg=DEADBAND_DEG)
        self.params_file = os.path.join(workdir, "servo_driver.yaml")
        with open(self.params_file, "w") as f:
            yaml.safe_dump(doc, f)
        self.node = NodeProcess.module("hand_servo_driver.driver_node", "--ros-args", "--params-file",
                                       self.params_file, log_path=os.path.join(workdir, "servo_driver.log"))
        self.probe = RosProbe("servo_driver_test_probe")
        self.diags = self.probe.collect(DiagnosticArray, contract.TOPIC_DIAGNOSTICS)
        self.pub = self.probe.publisher(JointState, contract.TOPIC_TARGET_FLEXIONS, contract.qos(contract.LATEST))
        self._streaming: threading.Thread | None = None
        self._stop_stream = threading.Event()

    def close(self):
        self.stop_stream()
        self.probe.close()
        code = self.node.stop()
        self.board.stop()
        return code

    # --- commands --------------------------------------------------------------------------------
    def publish(self, values, names=contract.FINGER_NAMES):
        self.pub.publish(JointState(name=list(names), position=[float(v) for v in values]))

    def stream(self, values, seconds, hz=30.0):
        """Publish ``values`` (a list, or a function of elapsed time) for ``seconds``; returns the
        time of the last publish."""
        t0 = last = time.monotonic()
        while (el := time.monotonic() - t0) < seconds:
            self.publish(values(el) if callable(values) else values)
            last = time.monotonic()
            time.sleep(1.0 / hz)
        return last

    def start_stream(self, values, hz=30.0):
        self._stop_stream.clear()

        def loop():
            while not self._stop_stream.is_set():
                self.publish(values)
                time.sleep(1.0 / hz)
        self._streaming = threading.Thread(target=loop, daemon=True)
        self._streaming.start()

    def stop_stream(self):
        if self._streaming is not None:
            self._stop_stream.set()
            self._streaming.join(2)
            self._streaming = None

    # --- observations ------------------------------------------------------------------------------
    def frames(self, since: float = 0.0, msg: str | None = None):
        return [r for r in self.board.records("frame") if r["mono"] >= since and (msg is None or r["msg"] == msg)]

    def outputs(self):
        recs = [r for r in self.board.records() if r["event"] in ("frame", "watchdog", "plug")]
        return recs[-1].get("outputs") if recs else None

    def diag(self) -> tuple[int, str, dict[str, str]]:
        s = self.diags[-1].status[0]
        return s.level[0] if isinstance(s.level, bytes) else s.level, s.message, {kv.key: kv.value for kv in s.values}

    def wait_diag(self, pred, timeout=5.0, what="diagnostics"):
        wait_until(lambda: bool(self.diags) and pred(*self.diag()), timeout, what)
        return self.diag()

    def wait_outputs(self, want, timeout=5.0):
        wait_until(lambda: self.outputs() == want, timeout, f"board outputs {want} (now {self.outputs()})")


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    r = Rig(str(tmp_path_factory.mktemp("servo_driver")))
    yield r
    code = r.close()
    assert code == 0, r.node.output()[-3000:]


def test_every_yaml_key_is_declared_by_the_running_node(rig):
    res = rig.probe.call(ListParameters, f"/{NODE}/list_parameters", ListParameters.Request(), timeout=20)
    declared = set(res.result.names)
    with open(PKG_YAML) as f:
        keys = set(flatten(yaml.safe_load(f)[NODE]["ros__parameters"]))
    assert keys - declared == set()
    got = rig.probe.get_parameters(NODE, ["port", "thumb.max_speed_dps", "pinky.channel"])
    assert got == {"port": rig.board.link, "thumb.max_speed_dps": RATE_DPS, "pinky.channel": 4}


def test_configure_opens_the_port_and_nothing_moves_before_activation(rig):
    assert rig.probe.change_state(NODE, "configure")
    rig.probe.wait_for_subscribers(rig.pub)
    t0 = time.monotonic()
    rig.stream(TARGET, 0.6)
    level, msg, v = rig.wait_diag(lambda lvl, m, v: int(v["commands_inactive"]) > 0 and int(v["frames_acked"]) > 2)
    assert level == OK and v["lifecycle"] == "inactive" and v["link"] == "up"
    assert rig.frames(t0, "set_pulses") == []
    assert len(rig.frames(t0, "heartbeat")) >= 4  # the link is supervised, the servos stay detached
    assert rig.outputs() == [None] * 5


def test_flexions_in_expected_pulses_out_rate_limited(rig):
    assert rig.probe.change_state(NODE, "activate")
    t0 = time.monotonic()
    t_last = rig.stream(TARGET, 1.3)
    rig.wait_outputs(TARGET_US)
    # What the board received, judged by content, not by when the board read it (a starved board reads
    # frames in bunches; the rate limiter's timing itself is tested on a fake clock in test_core):
    # attached at the safe pose, then every frame within the rate limit of the frame before it - the
    # tracking limit going up, the (faster) safe-ramp limit going down, should the test's own stream
    # have been starved past command_timeout - until the target.
    frames = rig.frames(t0, "set_pulses")
    assert frames[0]["outputs"] == SAFE_US
    outs = [r["outputs"] for r in frames]
    done = next(i for i, o in enumerate(outs) if o == TARGET_US)
    ramp = np.array(outs[: done + 1], dtype=float)
    steps = np.diff(ramp, axis=0)
    assert steps.max() <= RATE_US * MAX_STEP_S + 1, f"a step up of {steps.max():.0f} µs"
    assert -steps.min() <= SAFE_RATE_US * MAX_STEP_S + 1, f"a step down of {-steps.min():.0f} µs"
    # 1000 µs at <= RATE_US x MAX_STEP_S a frame: an unlimited driver would get there in one frame
    assert done >= int(np.ceil(1000.0 / (RATE_US * MAX_STEP_S))), f"pinky 1000 -> 2000 µs in {done} frames"
    print(f"\nramp 1000→2000 µs in {done} frames (board clock {frames[done]['mono'] - frames[0]['mono']:.3f} s, "
          f"stream ended {t_last - t0:.3f} s), largest step up {steps.max():.0f} µs "
          f"(limit {RATE_US * MAX_STEP_S:.0f})")
    level, msg, v = rig.wait_diag(lambda lvl, m, v: v["last_pulses_us"] == "1000 1250 1500 1750 2000")
    assert fine(level, v) and v["lifecycle"] == "active"


def test_a_degraded_command_stream_is_a_warn_while_commands_still_arrive(rig):
    """Commands 150 ms apart (a lossy link's gaps; < command_timeout_s: never stale): the driver keeps
    following and its diagnostics WARN, naming the gaps (gaps of at least the sleep: no timing bound)."""
    rig.stream(TARGET, 1.2, hz=1 / 0.15)
    level, msg, v = rig.wait_diag(lambda lvl, m, v: v.get("command_stream") == "degraded", 5.0,
                                  "the command stream's WARN")
    assert level == WARN and msg.startswith("command stream degraded over the last 2 s") and "arrival gaps > 100 ms" in msg
    assert int(v["command_window_gaps_over"]) >= 2 and v["stale"] == "False"
    assert rig.outputs() == TARGET_US  # followed all along


def test_deadband_suppresses_repeats(rig):
    # at TARGET first, the commands never pausing (a pause of command_timeout_s would ramp to
    # the safe pose, and the way back would put frames on the wire during the jitter below)
    rig.start_stream(TARGET)
    try:
        rig.wait_outputs(TARGET_US)
    finally:
        rig.stop_stream()
    t0 = time.monotonic()
    rng = np.random.default_rng(0)
    # ±1 % flexion = ±10 µs of jitter, inside the 22 µs deadband
    rig.stream(lambda el: np.clip(np.array(TARGET) + rng.uniform(-0.01, 0.01, 5), 0, 1), 1.0)
    t1 = time.monotonic()
    assert rig.frames(t0, "set_pulses") == []
    # heartbeats went out instead and kept the board's watchdog fed (how many depends on how
    # punctually this machine ran the driver's 100 Hz tick: not counted)
    assert rig.frames(t0, "heartbeat") != []
    assert [r for r in rig.board.records("watchdog") if r["mono"] >= t0] == []
    assert rig.outputs() == TARGET_US
    moved = [0.0, 0.30, 0.5, 0.75, 1.0]  # +50 µs on index: beyond the deadband
    moved_us = [1000, 1300, 1500, 1750, 2000]
    t_last = rig.stream(moved, 0.4)
    # the move's frames: all on the wire before the last command is command_timeout_s old (only
    # then may the driver start its ramp to the safe pose)
    time.sleep(max(0.0, t_last + COMMAND_TIMEOUT - time.monotonic()))
    moves = [r["outputs"] for r in rig.frames(t1, "set_pulses") if r["mono"] < t_last + COMMAND_TIMEOUT]
    # the move is followed, index alone, a ramp up to 1300 µs and no frame once there (no repeat);
    # each frame moves at most max_speed_dps x max_step_s = 40 µs, so 50 µs take 2 frames or more
    # (how many more depends on when the ticks and commands came)
    assert moves and moves[-1] == moved_us, moves
    index = np.array([1250] + [m[1] for m in moves])
    assert all(m[:1] + m[2:] == moved_us[:1] + moved_us[2:] for m in moves), moves
    assert (np.diff(index) > 0).all() and np.diff(index).max() <= RATE_US * MAX_STEP_S + 1, moves
    print(f"\ndeadband: 0 SET_PULSES for 1.0 s of ±10 µs jitter at 30 Hz, "
          f"{len(rig.frames(t0, 'heartbeat'))} heartbeats; the 50 µs move in {len(moves)} frames {index.tolist()}")


def test_held_pose_produces_no_repeated_frames_on_the_wire(rig):
    """Issue 11 deadband acceptance: a pose held by the operator (the same flexions again and again,
    as a tracker holding a still hand publishes them at 30 Hz) puts no SET_PULSES frame on the wire,
    only heartbeats; the first frame of every move carries new pulses, never a repeat."""
    held = [0.1, 0.3, 0.5, 0.7, 0.9]
    t_move = time.monotonic()
    rig.stream(held, 0.2)
    rig.wait_outputs([1100, 1300, 1500, 1700, 1900], timeout=5.0)
    t0 = time.monotonic()
    rig.stream(held, 1.5)  # 45 identical commands
    on_wire = rig.frames(t0)
    assert [r for r in on_wire if r["msg"] == "set_pulses"] == []
    assert len([r for r in on_wire if r["msg"] == "heartbeat"]) >= 10
    assert rig.outputs() == [1100, 1300, 1500, 1700, 1900]
    moves = [r["outputs"] for r in rig.frames(t_move, "set_pulses")]
    assert moves and all(a != b for a, b in zip(moves, moves[1:]))  # no frame repeats the previous one
    print(f"\nheld pose: 45 identical commands in 1.5 s → 0 SET_PULSES, "
          f"{len([r for r in on_wire if r['msg'] == 'heartbeat'])} heartbeats; the move before it: "
          f"{len(moves)} frames, none repeated")


def test_invalid_flexions_are_ignored_with_a_log(rig):
    rig.stream(TARGET, 0.4)
    rig.wait_outputs(TARGET_US)
    _, _, v0 = rig.diag()
    t0 = time.monotonic()
    for values, names in (([math.nan, 0.5, 0.5, 0.5, 0.5], contract.FINGER_NAMES),
                          ([1.5, 0.5, 0.5, 0.5, 0.5], contract.FINGER_NAMES),
                          ([0.5, 0.5, 0.5, 0.5], contract.FINGER_NAMES[:4]),
                          ([0.5] * 5, ["thumb", "index", "middle", "ring", "little"])):
        rig.publish(values, names)
        time.sleep(0.05)  # LATEST QoS keeps only the newest message: give each its turn
    rig.stream(TARGET, 0.3)
    _, _, v = rig.wait_diag(lambda lvl, m, v: int(v["commands_ignored"]) >= int(v0["commands_ignored"]) + 4)
    assert "non-finite" in v["last_ignored"] or "unknown names" in v["last_ignored"] or "missing" in v["last_ignored"]
    assert rig.frames(t0, "set_pulses") == [] and rig.outputs() == TARGET_US
    assert "ignored /hand/target_flexions" in rig.node.output()
    # live parameter changes: validated, refused with the reason
    res = rig.probe.set_parameters(NODE, **{"index.min_pulse_us": 2100})
    assert not res[0].successful and "index" in res[0].reason
    assert rig.probe.set_parameters(NODE, **{"index.deadband_deg": 2.5})[0].successful


def test_while_active_only_changes_toward_safety_are_accepted_and_each_is_logged_with_its_caller(rig):
    """The fault campaign's foreign sets (this test process is another process than the driver):
    safe_flexion 1.0 (the table's range), 0.2, command_timeout_s 60, max_speed_dps 5000, an
    inverted servo — all refused while active; a shorter heartbeat is accepted. The driver's log
    names the probe node for each, by the client GID of the request (service introspection)."""
    assert rig.probe.get_state(NODE) == "active"
    res = rig.probe.set_parameters(NODE, safe_flexion=1.0)[0]
    assert not res.successful and "safe_flexion" in res.reason
    res = rig.probe.set_parameters(NODE, safe_flexion=0.2)[0]
    assert not res.successful and res.reason.startswith("while active only changes toward safety are accepted")
    assert "thumb: the safe pulse would move from 1000 to 1200 µs, away from the open end (1000 µs)" in res.reason
    res = rig.probe.set_parameters(NODE, command_timeout_s=60.0)[0]
    assert not res.successful and f"command_timeout_s {COMMAND_TIMEOUT:g} -> 60 (only lower is safer)" in res.reason
    res = rig.probe.set_parameters(NODE, **{"ring.max_speed_dps": 5000.0})[0]
    assert not res.successful and "ring: the rate limit would rise from 2000 to 5555" in res.reason
    res = rig.probe.set_parameters(NODE, **{"index.inverted": True})[0]
    assert not res.successful and "index: the safe pulse would move from 1000 to 2000 µs" in res.reason
    assert rig.probe.set_parameters(NODE, heartbeat_period_s=0.09)[0].successful
    got = rig.probe.get_parameters(NODE, ["safe_flexion", "command_timeout_s", "ring.max_speed_dps", "index.inverted"])
    assert got == {"safe_flexion": 0.0, "command_timeout_s": COMMAND_TIMEOUT, "ring.max_speed_dps": RATE_DPS,
                   "index.inverted": False}
    by = " — by /servo_driver_test_probe (client gid "
    for line in ("parameter safe_flexion: 0.0 -> 1.0 refused", "parameter safe_flexion: 0.0 -> 0.2 refused: while "
                 "active", "parameter command_timeout_s: 0.5 -> 60.0 refused", "parameter ring.max_speed_dps: 180.0 "
                 "-> 5000.0 refused", "parameter index.inverted: False -> True refused",
                 "parameter heartbeat_period_s: 0.1 -> 0.09 set"):
        wait_until(lambda line=line: any(f"]: {line}" in ln and by in ln for ln in rig.node.output().splitlines()),
                   5.0, f"the log line '{line}...{by}'")
    assert rig.probe.set_parameters(NODE, heartbeat_period_s=0.1)[0].successful is False  # longer: not while active


def test_stale_command_ramps_to_the_safe_pose_from_the_timeout(rig):
    t_last = rig.stream([0.6] * 5, 0.8)
    wait_until(lambda: rig.outputs() == SAFE_US, 3.0, "safe pose after the commands stop")
    frames = rig.frames(t_last - 0.05, "set_pulses")
    down = [r for r in frames if r["outputs"][0] < 1600]
    safe = [r for r in frames if r["outputs"] == SAFE_US]
    dt, dt_safe = down[0]["mono"] - t_last, safe[0]["mono"] - t_last
    print(f"\nstale: the ramp down starts {dt * 1000:.0f} ms after the last command (command_timeout "
          f"{COMMAND_TIMEOUT * 1000:.0f} ms), the safe pose reached {dt_safe * 1000:.0f} ms after it")
    # never before command_timeout (a safety property load cannot break: a late delivery only delays it);
    # how soon after it is a speed figure (bench_link, bench_watchdog), here only bounded as "not hung"
    assert COMMAND_TIMEOUT - 0.05 <= dt <= dt_safe < 3.0
    steps = np.abs(np.diff([r["outputs"][0] for r in frames]))
    assert steps.max() <= SAFE_RATE_US * MAX_STEP_S + 1  # reached by ramp (133 µs a frame at most), never one frame
    level, msg, v = rig.wait_diag(lambda lvl, m, v: v["stale"] == "True")
    assert level == WARN and "safe pose" in msg
    time.sleep(0.7)
    assert rig.frames(safe[0]["mono"] + 1e-6, "set_pulses") == []  # there once, then heartbeats
    # the driver's own ramp got there: the board's watchdog (500 ms without a frame) had not acted before
    # the safe frame (a trip after it - the driver's heartbeat tick starved on a loaded machine - found the
    # board at the safe pose already: a fresh-clone run at load 10)
    assert [r for r in rig.board.records("watchdog") if r["mono"] <= safe[0]["mono"]] == []


def test_corrupted_frames_on_the_wire_are_rejected_counted_and_never_applied(rig):
    before = rig.board.stats()
    rig.board.control("flip 3")
    rig.board.control("truncate 3")
    t0 = time.monotonic()
    # a moving command so that SET_PULSES frames flow
    rig.stream(lambda el: [0.5 + 0.4 * math.sin(2 * math.pi * el + k) for k in range(5)], 1.5)
    st = wait_until(lambda: len(rig.board.stats()["injected"]) == 6, 5.0, "6 injected faults") or rig.board.stats()
    # the test injects its own garbage too: line noise and a corrupted frame asking for 1234 µs
    fd = os.open(rig.board.link, os.O_WRONLY | os.O_NOCTTY)
    try:
        poison = bytearray(p.encode_set_pulses(60000, [(c, 1234) for c in range(5)]))
        poison[10] ^= 0x04
        os.write(fd, bytes(range(0x20, 0x60)) + bytes(poison))
    finally:
        os.close(fd)
    rig.stream(TARGET, 1.0)
    rig.wait_outputs(TARGET_US)
    st = rig.board.stats()
    bad = {i["seq"] for i in st["injected"]}
    frames = rig.frames(t0)
    applied = {r["seq"] for r in frames}
    assert len(bad) == 6 and bad.isdisjoint(applied)
    assert 60000 not in applied and all(r["outputs"] != [1234] * 5 for r in frames)
    # the next intact frame after each corrupted one got through (the parser re-scans: a torn
    # frame never takes a good one with it)
    for s in bad:
        n = (s + 1) & 0xFFFF
        while n in bad:
            n = (n + 1) & 0xFFFF
        assert n in applied, f"frame {n} after corrupted {s} lost"
    rejected = {k: st["totals"][k] - before["totals"][k]
                for k in ("crc_errors", "length_errors", "timeouts", "garbage_bytes")}
    assert rejected["crc_errors"] + rejected["length_errors"] + rejected["timeouts"] >= 6
    assert rejected["garbage_bytes"] >= 0x40
    level, msg, v = rig.wait_diag(lambda lvl, m, v: int(v["frames_unacked"]) >= 6)
    assert rig.node.alive() and fine(level, v)
    assert int(v["board_crc_errors"]) >= 1 and int(v["board_rejected_total"]) >= 6
    print(f"\ncorruption: injected {sorted(i['kind'] for i in st['injected'])}, board rejected {rejected}, "
          f"driver frames_unacked={v['frames_unacked']} resends={v['resends']}, final pose exact")


def test_unplug_survives_with_error_and_reconnects(rig):
    rig.start_stream(TARGET)
    try:
        rig.wait_outputs(TARGET_US)
        rig.board.control("unplug")
        t_unplug = time.monotonic()
        level, msg, v = rig.wait_diag(lambda lvl, m, v: lvl == ERROR, 3.0, "diagnostics ERROR")
        t_error = time.monotonic()
        assert "serial link down" in msg and v["link"] == "down"
        time.sleep(1.0)
        assert rig.node.alive() and rig.probe.get_state(NODE) == "active"
        rig.board.control("plug")
        t_plug = time.monotonic()
        level, msg, v = rig.wait_diag(lambda lvl, m, v: fine(lvl, v) and v["link"] == "up", 5.0,
                                      "diagnostics OK again")
        rig.wait_outputs(TARGET_US, 5.0)
        after = rig.frames(t_plug, "set_pulses")
    finally:
        rig.stop_stream()
    assert int(v["reconnects"]) >= 1
    # the rebooted board is detached: the limp horns stay where the last pulses left them (the
    # target), so the driver attaches there — the safe pose would be a 1000 µs jump
    assert after[0]["outputs"] == TARGET_US and after[-1]["outputs"] == TARGET_US
    print(f"\nunplug: diagnostics ERROR after {t_error - t_unplug:.2f} s; first frame on the replugged "
          f"board {after[0]['mono'] - t_plug:.2f} s after plug, target again after "
          f"{after[-1]['mono'] - t_plug:.2f} s")


def test_live_range_wider_than_the_firmware_is_clamped_by_the_board(rig):
    assert rig.probe.set_parameters(NODE, **{"pinky.max_pulse_us": 2200})[0].successful
    t0 = time.monotonic()
    rig.stream(TARGET, 0.8)
    clamped = [r for r in rig.frames(t0, "set_pulses") if r["result"] == p.Result.CLAMPED]
    assert clamped and all(r["outputs"][4] == 2000 for r in clamped)  # the firmware's 1000..2000 µs clamp
    level, msg, v = rig.wait_diag(lambda lvl, m, v: lvl == WARN and "clamped" in m)
    assert int(v["clamped_acks"]) >= 1 and int(v["board_clamped"]) >= 1
    assert rig.probe.set_parameters(NODE, **{"pinky.max_pulse_us": 2000})[0].successful


def test_deactivate_sends_the_safe_pose_and_shutdown_from_active_too(rig):
    rig.stream(TARGET, 0.8)
    rig.wait_outputs(TARGET_US)
    t_deact = time.monotonic()
    assert rig.probe.change_state(NODE, "deactivate")
    rig.wait_outputs(SAFE_US, 2.0)
    wait_until(lambda: "lifecycle transition 'deactivate' requested from state 'active': done — by one of the clients "
               "on the graph: /servo_driver_test_probe" in rig.node.output(), 5.0, "the deactivate logged with its caller")
    steps = np.abs(np.diff([r["outputs"][4] for r in rig.frames(t_deact - 0.2, "set_pulses")]))
    assert steps.max() <= SAFE_RATE_US * MAX_STEP_S + 1  # the safe pose by ramp
    t0 = time.monotonic()
    rig.stream(TARGET, 0.4)
    assert rig.frames(t0, "set_pulses") == []
    assert rig.probe.change_state(NODE, "cleanup")
    assert rig.probe.get_state(NODE) == "unconfigured"
    assert rig.probe.change_state(NODE, "configure") and rig.probe.change_state(NODE, "activate")
    rig.probe.wait_for_subscribers(rig.pub)
    rig.stream(TARGET, 0.8)
    rig.wait_outputs(TARGET_US)
    t_stop = time.monotonic()
    assert rig.node.stop() == 0  # SIGINT: lifecycle shutdown from active
    last = rig.frames(t_stop)
    assert last and last[-1]["outputs"] == SAFE_US and last[-1]["msg"] == "set_pulses"
    assert "shutdown: safe pose sent" in rig.node.output()


def test_dry_run_without_a_port_and_configure_failure(tmp_path):
    missing = str(tmp_path / "no_such_board")
    node = NodeProcess.module("hand_servo_driver.driver_node", "--ros-args", "--params-file", PKG_YAML,
                              "-p", f"port:={missing}", "-p", "connect_timeout_s:=0.3",
                              log_path=str(tmp_path / "dry.log"))
    probe = RosProbe("servo_driver_dry_probe")
    try:
        assert not probe.change_state(NODE, "configure")
        assert node.alive() and probe.get_state(NODE) == "unconfigured"
        assert f"cannot open {missing}" in node.output()
        assert probe.set_parameters(NODE, dry_run=True)[0].successful
        assert probe.change_state(NODE, "configure") and probe.change_state(NODE, "activate")
        pub = probe.publisher(JointState, contract.TOPIC_TARGET_FLEXIONS, contract.qos(contract.LATEST))
        probe.wait_for_subscribers(pub)
        end = time.monotonic() + 1.2
        while time.monotonic() < end:
            pub.publish(JointState(name=list(contract.FINGER_NAMES), position=[1.0] * 5))
            time.sleep(0.03)
        wait_until(lambda: "ch4=2000us" in node.output(), 3.0, "dry run log of the target pulses")
        assert "dry run: would send SET_PULSES" in node.output()
        ramp = [line for line in node.output().splitlines() if "dry run: would send SET_PULSES" in line]
        assert ramp[-1].endswith("ch0=2000us ch1=2000us ch2=2000us ch3=2000us ch4=2000us")
        assert probe.change_state(NODE, "deactivate")
        wait_until(lambda: "ch0=1000us ch1=1000us ch2=1000us ch3=1000us ch4=1000us" in node.output(), 3.0,
                   "safe pose in the dry-run log")
    finally:
        probe.close()
        assert node.stop() == 0
