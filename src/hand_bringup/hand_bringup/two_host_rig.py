"""The two-host setup on one machine: the ``operator`` runner (tracker on a video, paced like a
camera) in one network namespace, the ``robot`` runner (servo driver + simulated board) in another,
DDS only over the emulated link between them (:mod:`hand_bringup.netlink`), and the figures the
acceptance of issue 27 asks for, judged from stamps.

Used by ``test/test_two_host_netns.py`` (a short subset) and :mod:`hand_bringup.bench_link` (the
whole list, repeated). Every figure comes from logs with CLOCK_MONOTONIC stamps, the same clock in
every namespace of the machine: the link forwarder's (when each ``/hand/target_flexions`` sample
crossed, and its capture stamp), the simulated board's (every frame on the servo wire and the
outputs it left), the servo driver's log (when it declared the command stale; wall time, converted).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hand_bringup.netlink import LinkFaults, TwoNamespaces
from hand_common import contract
from hand_servo_driver import interface as servo_iface

US_PER_DEG = 2000.0 / 180.0
#: A stand-in operator (no MediaPipe): publishes /hand/target_flexions at ``hz`` with the paced
#: tracker's QoS (contract.STREAM: reliable keep-last 10, so an outage leaves a backlog that DDS
#: resends when the link returns), each stamped at publish and logged (wall stamp per line); ``mode`` "triangle" moves every digit 0.03 a command
#: (30 us of pulse: beyond the deadband, within one control tick of the rate limit, so every command
#: makes exactly one servo frame), or a constant flexion.
_PUBLISHER_SRC = r"""
import sys, time
import rclpy
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from hand_common import contract
rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
node = rclpy.create_node(sys.argv[1])
pub = node.create_publisher(JointState, contract.TOPIC_TARGET_FLEXIONS, contract.qos(contract.STREAM))
hz, mode, log = float(sys.argv[2]), sys.argv[3], open(sys.argv[4], "a", buffering=1)
i, nxt = 0, time.monotonic()
try:
    while True:
        v = abs(((i * 0.03) % 1.6) - 0.8) + 0.1 if mode == "triangle" else float(mode)
        msg = JointState(name=list(contract.FINGER_NAMES), position=[v] * 5)
        msg.header.stamp = node.get_clock().now().to_msg()
        msg.header.frame_id = node.get_fully_qualified_name()  # the source, as the tracker names itself
        pub.publish(msg)
        log.write(f"{msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9:.9f}\n")
        i += 1
        nxt += 1.0 / hz
        time.sleep(max(0.0, nxt - time.monotonic()))
except KeyboardInterrupt:
    pass
"""
_LOG_LINE = re.compile(r"\[(\w+)\] \[(\d+\.\d+)\] \[servo_driver\]: (.*)")
_LATE = re.compile(r"decided (-?\d+(?:\.\d+)?) ms after its deadline")


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            if line.endswith("\n"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
    return out


def pulse_changes(records: Sequence[dict[str, Any]]) -> list[int]:
    """Largest change of any channel (µs) made by each SET_PULSES frame the board applied, against
    the outputs just before it (the previous frame's, or what the board's watchdog left: its safe
    action is the firmware's, not the driver's, and is counted apart by :func:`watchdog_trips`); a
    channel that was detached keeps its last driven pulse (the limp horn stays where it was)."""
    channels = max((len(r["outputs"]) for r in records if r.get("outputs") is not None), default=0)
    return [change for change, _ in pulse_steps(records, [0] * channels)]  # the direction is not asked


def pulse_steps(records: Sequence[dict[str, Any]], safe_us: Sequence[int]) -> list[tuple[int, bool]]:
    """Per applied SET_PULSES frame (as :func:`pulse_changes`): (largest change in µs, whether every
    channel it changed moved toward its safe pulse). A ramp to the safe pose is bounded by the
    driver's ``safe_speed_dps``, tracking by ``max_speed_dps``: :func:`count_jumps` judges each by its own."""
    out, prev = [], None
    for r in records:
        cur = r.get("outputs")
        if cur is None:
            continue
        if prev is not None:
            if r.get("event", "frame") == "frame":
                moved = [(a, b, s) for a, b, s in zip(prev, cur, safe_us) if a is not None and b is not None and a != b]
                out.append((max([0] + [abs(b - a) for a, b, _ in moved]),
                            bool(moved) and all(abs(b - s) < abs(a - s) for a, b, s in moved)))
            cur = [b if b is not None else a for a, b in zip(prev, cur)]
        prev = cur
    return out


def count_jumps(steps: Sequence[tuple[int, bool]], bound_us: float, safe_bound_us: float | None = None) -> int:
    """Frames of :func:`pulse_steps` whose change exceeds their limiter's bound: ``safe_bound_us``
    for a step toward the safe pose (default ``bound_us``), ``bound_us`` for any other."""
    sb = bound_us if safe_bound_us is None else safe_bound_us
    return sum(c > (sb if toward else bound_us) for c, toward in steps)


def watchdog_trips(records: Sequence[dict[str, Any]], t0: float, t1: float) -> int:
    """The board's watchdog trips in [t0, t1]: the driver's frames stopped for longer than the board's
    watchdog (a stalled driver process), and the firmware put the outputs safe at once."""
    return sum(1 for r in records if r.get("event") == "watchdog" and t0 <= r["mono"] <= t1)


def deliveries(records: Sequence[dict[str, Any]]) -> list[tuple[float, float]]:
    """(capture stamp s, first delivery CLOCK_MONOTONIC s) per JointState sample that crossed the
    link operator → robot, in delivery order (a sample goes once per remote reader: the first copy
    counts)."""
    seen: dict[float, float] = {}
    for r in records:
        if r.get("ev") == "js" and r.get("dir") == "ab" and r.get("out") is not None:
            s = r["stamp"]
            if s not in seen or r["out"] < seen[s]:
                seen[s] = r["out"]
    return sorted(((s, t) for s, t in seen.items()), key=lambda x: x[1])


@dataclass
class OutageFigures:
    """One link outage, times in ms. ``stale_ms``: the driver's stale decision after the last command
    that crossed; ``safe_ms``: the board at the safe pulses it then holds until the link returns (0 when the
    last command was already the open hand); ``ramp_ms``: the
    ramp that takes at the rate limit from the horns' pulses at the stale decision;
    ``resume_cmd_ms``/``resume_frame_ms``: the first command crossing / the first servo frame after
    it, counted from the link's return; ``largest_step_us``: the largest per-frame change in the
    window (``largest_track_step_us``: of the frames that did not move every changed servo toward the
    safe pose); ``jumps``: frames whose change exceeds their limiter's bound (the safe ramp's
    toward the safe pose, the tracking one otherwise). ``stale_ms`` is None when the
    driver was already stale (every command since its last decision refused as late: a loaded
    operator) — then the horns were at or ramping to the safe pulses before the outage."""

    down_s: float
    stale_ms: float | None
    safe_ms: float | None
    ramp_ms: float | None
    resume_cmd_ms: float | None
    resume_frame_ms: float | None
    largest_step_us: int
    jumps: int
    frames_in_window: int
    watchdog_trips: int = 0
    largest_track_step_us: int = 0


@dataclass
class PhaseFigures:
    """A fault phase on the link (loss, delay, reordering, clock offset), judged on the robot side."""

    name: str
    seconds: float
    crossed: int
    late_crossings: int  # samples whose transit exceeded the fastest one seen by > command_timeout_s
    stale_decisions: int
    largest_step_us: int
    jumps: int
    max_frames_per_s: int
    max_frames_per_10ms: int
    warn_seen: bool
    driver_late_refused: int | None = None
    driver_out_of_order: int | None = None
    levels: list[str] = field(default_factory=list)
    watchdog_trips: int = 0


class TwoHostRig:
    """Start with :meth:`start`, inject faults, read figures, :meth:`stop` (always; also on errors).

    ``single_host``: both runners in the operator's namespace with the single-host defaults (no
    ``--peer``: loopback discovery, shared memory), the baseline of the latency comparison.
    ``robot_params``/``operator_params``: ``-p`` overrides (``node.param=value``)."""

    #: after the operator stopped: seconds the robot runner gets to end by itself before SIGINT
    ROBOT_OWN_STOP_S = 15.0

    def __init__(self, workdir: str | os.PathLike, video: str, *, loop: bool = False, single_host: bool = False,
                 robot_params: Sequence[str] = (), operator_params: Sequence[str] = (), seed: int = 27,
                 stamp_offset_s: float = 0.0):
        self.workdir = pathlib.Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.video, self.loop, self.single_host = video, loop, single_host
        self.robot_params, self.operator_params = list(robot_params), list(operator_params)
        self.seed = seed
        #: the link's faults between phases: clean, with the operator's clock offset (if any) for the whole run
        self.base_faults = LinkFaults(stamp_offset_s=stamp_offset_s)
        self.net: TwoNamespaces | None = None
        self.robot: subprocess.Popen | None = None
        self.operator: subprocess.Popen | None = None
        self.codes: dict[str, int | None] = {}
        self.publishers: list[subprocess.Popen] = []
        self.wall_minus_mono = time.time() - time.monotonic()

    # --- processes --------------------------------------------------------------------------------
    def _runner(self, side: str, profile: str, extra: list[str]) -> subprocess.Popen:
        assert self.net is not None
        args = [sys.executable, "-m", "hand_bringup.runner", profile, "--out", str(self.workdir / profile)]
        if not self.single_host:
            args += ["--peer", self.net.addr["b" if side == "a" else "a"]]
        out = open(self.workdir / f"{profile}.out", "w")
        return subprocess.Popen(self.net.cmd(side, args + extra), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)

    def _wait_line(self, name: str, proc: subprocess.Popen, needle: str, timeout: float) -> None:
        path = self.workdir / f"{name}.out"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in path.read_text(errors="replace"):
                return
            if proc.poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError(f"{name}: no '{needle}' within {timeout} s (exit {proc.poll()}):\n"
                           + "\n".join(path.read_text(errors="replace").splitlines()[-25:]))

    def start_publisher(self, side: str, node_name: str, hz: float = 30.0, mode: str = "triangle") -> subprocess.Popen:
        """A stand-in publisher process (see ``_PUBLISHER_SRC``) in ``side``'s namespace, with that
        side's DDS environment; its stamps go to ``<workdir>/<node_name>.stamps``."""
        from hand_bringup.runner import two_host_environment

        env = dict(os.environ)
        if not self.single_host:
            env.update(two_host_environment([self.net.addr["b" if side == "a" else "a"]]))
        proc = subprocess.Popen(
            self.net.cmd(side, [sys.executable, "-c", _PUBLISHER_SRC, node_name, str(hz), mode,
                                str(self.workdir / f"{node_name}.stamps")]),
            env=env, stdout=open(self.workdir / f"{node_name}.out", "w"), stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL)
        self.publishers.append(proc)
        return proc

    def wait_publishing(self, node_name: str, timeout: float = 90.0) -> None:
        """Until the stand-in publisher published and a servo frame followed (RuntimeError if not)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            stamps = self.publisher_stamps(node_name)
            if stamps and any(r["t"] > stamps[0] for r in self.board_frames()):
                return
            time.sleep(0.3)
        raise RuntimeError(f"{node_name}: no servo frame followed its commands within {timeout} s")

    def stop_publisher(self, proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    def publisher_stamps(self, node_name: str) -> list[float]:
        path = self.workdir / f"{node_name}.stamps"
        return [float(x) for x in path.read_text().split()] if path.exists() else []

    def start(self, timeout: float = 120.0, operator: bool = True) -> None:
        """Namespaces and link, the robot side, then the operator side (``operator``: the tracker's
        runner; else only the robot side); returns once servo frames driven by the operator's
        commands reach the board."""
        self.net = TwoNamespaces(str(self.workdir), seed=self.seed)
        self.net.set_faults(self.base_faults)
        robot_side = "a" if self.single_host else "b"
        params = [a for p in self.robot_params for a in ("-p", p)]
        self.robot = self._runner(robot_side, "robot", params)
        self._wait_line("robot", self.robot, "servo_driver active", timeout)
        if not operator:
            return
        params = [a for p in self.operator_params for a in ("-p", p)]
        if self.loop:
            params += ["-p", "tracker.loop=true"]
        self.operator = self._runner("a", "operator", ["--video", self.video] + params)
        self._wait_line("operator", self.operator, "hand_tracker active", timeout)
        deadline = time.monotonic() + timeout
        while not self.board_frames():
            if time.monotonic() > deadline or self.operator.poll() is not None or self.robot.poll() is not None:
                raise RuntimeError("no servo frame reached the board from the operator's commands")
            time.sleep(0.2)

    def stop(self) -> dict[str, int | None]:
        """Operator first (its source ends or SIGINT), then the robot side (safe pose), then the
        namespaces and the link; returns the runners' exit codes."""
        for proc in self.publishers:
            self.stop_publisher(proc)
        operator_ended = self.operator is not None and self.operator.poll() is not None
        for name in ("operator", "robot"):
            proc = getattr(self, name)
            if proc is None:
                continue
            if name == "robot" and operator_ended:
                # the robot runner also ends by itself once the tracker reported its source finished:
                # let it (a second SIGINT during its shutdown would interrupt the safe-pose transition)
                try:
                    proc.wait(self.ROBOT_OWN_STOP_S)
                except subprocess.TimeoutExpired:
                    pass
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            try:
                self.codes[name] = proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                self.codes[name] = proc.wait(10)
        if self.net is not None:
            self.net.close()
        return self.codes

    def wait_operator(self, timeout: float) -> int | None:
        try:
            self.codes["operator"] = self.operator.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        return self.codes["operator"]

    # --- faults ---------------------------------------------------------------------------------------
    def outage(self, seconds: float, settle_s: float = 2.0) -> tuple[float, float]:
        """The operator's interface down for ``seconds`` (``ip link set … down``), then up, then
        ``settle_s`` of clean link; returns (t_down, t_up), CLOCK_MONOTONIC: the link was down for all
        of [t_down, t_up] (t_down after the down command returned, t_up before the up command)."""
        t_down = self.net.link("a", False)  # after the call: the link is down from here
        try:
            time.sleep(seconds)
        finally:
            t_up = time.monotonic()  # before the call: the link is down until here
            self.net.link("a", True)
        time.sleep(settle_s)
        return t_down, t_up

    def phase(self, faults: LinkFaults, seconds: float, settle_s: float = 1.5) -> tuple[float, float]:
        """``faults`` on the link for ``seconds``, then a clean link for ``settle_s``; returns (t0, t1)."""
        self.net.set_faults(dataclasses.replace(faults, stamp_offset_s=self.base_faults.stamp_offset_s))
        t0 = time.monotonic()
        try:
            time.sleep(seconds)
        finally:
            self.net.set_faults(self.base_faults)
            t1 = time.monotonic()
        time.sleep(settle_s)
        return t0, t1

    # --- observations -----------------------------------------------------------------------------------
    @property
    def robot_dir(self) -> pathlib.Path:
        return self.workdir / "robot"

    def board_frames(self) -> list[dict[str, Any]]:
        return [r for r in read_jsonl(self.robot_dir / "servo_board_pulses.jsonl")
                if r.get("event") == "frame" and r.get("msg") == "set_pulses"]

    def board_records(self) -> list[dict[str, Any]]:
        return [r for r in read_jsonl(self.robot_dir / "servo_board_pulses.jsonl")
                if r.get("event") in ("frame", "watchdog")]

    def stale_decisions(self) -> list[float]:
        """CLOCK_MONOTONIC times of the driver's 'ramping to the safe pose' decisions (its log)."""
        out = []
        path = self.robot_dir / "logs" / "servo_driver.log"
        if path.exists():
            for line in path.read_text(errors="replace").splitlines():
                m = _LOG_LINE.search(line)
                if m and "ramping to the safe pose" in m.group(3):
                    out.append(float(m.group(2)) - self.wall_minus_mono)
        return out

    def stale_lateness(self) -> list[tuple[float, float]]:
        """(CLOCK_MONOTONIC time, ms) of each stale decision the driver logged with how long after its
        deadline (the last followed command's reception + command_timeout_s) it was taken."""
        out = []
        path = self.robot_dir / "logs" / "servo_driver.log"
        if path.exists():
            for line in path.read_text(errors="replace").splitlines():
                m = _LOG_LINE.search(line)
                late = _LATE.search(m.group(3)) if m and "ramping to the safe pose" in m.group(3) else None
                if late:
                    out.append((float(m.group(2)) - self.wall_minus_mono, float(late.group(1))))
        return out

    def crossings(self) -> list[tuple[float, float]]:
        return deliveries(read_jsonl(self.workdir / "netlink.jsonl"))

    def operator_stamps(self) -> list[float]:
        """Capture stamps (s, wall) of every ``/hand/target_flexions`` the operator side recorded."""
        from hand_common.bag import read_messages

        bag = self.workdir / "operator" / "operator_bag"
        if not bag.exists():
            return []
        return [m.header.stamp.sec + m.header.stamp.nanosec * 1e-9
                for _, _, m in read_messages(bag, [contract.TOPIC_TARGET_FLEXIONS])]

    def driver_diagnostics(self, messages: bool = False) -> list[tuple]:
        """(CLOCK_MONOTONIC, level, values[, message]) of every servo driver status the robot side
        recorded."""
        from hand_common.bag import read_messages

        bag = self.robot_dir / "robot_bag"
        out = []
        if not bag.exists():
            return out
        for _, t_ns, msg in read_messages(bag, [contract.TOPIC_DIAGNOSTICS]):
            for s in msg.status:
                if s.name.startswith(servo_iface.NODE):
                    level = s.level[0] if isinstance(s.level, bytes) else int(s.level)
                    rec = (t_ns * 1e-9 - self.wall_minus_mono, level, {kv.key: kv.value for kv in s.values})
                    out.append(rec + (s.message,) if messages else rec)
        return out


# --- figures (pure: from the records) ------------------------------------------------------------------------
def outage_figures(down_s: float, t_down: float, t_up: float, crossed: Sequence[tuple[float, float]],
                   frames: Sequence[dict[str, Any]], records: Sequence[dict[str, Any]], stale: Sequence[float],
                   safe_us: Sequence[int], rate_us_per_s: float, step_bound_us: float,
                   safe_step_bound_us: float | None = None) -> OutageFigures:
    """Figures of one outage from the crossings (:func:`deliveries`), the board's set_pulses
    ``frames`` and ``records`` (frames and watchdog events), the driver's stale decisions.
    ``rate_us_per_s``: the safe ramp's rate (for ``ramp_ms``); ``step_bound_us`` /
    ``safe_step_bound_us``: the largest per-frame change tracking / toward the safe pose (default:
    the same)."""
    arrivals = [t for _, t in crossed]
    before = [t for t in arrivals if t < t_up]  # the link was down for all of [t_down, t_up]
    last = max(before) if before else None
    after = [t for t in arrivals if t >= t_up]
    first = min(after) if after else None
    ms = 1e3
    stale_t = next((s for s in stale if last is not None and last < s <= t_up), None)
    safe_t = None  # when the board reached the safe pulses it then held until the link returned
    if last is not None:
        for r in (r for r in records if last - 5.0 < r["mono"] <= t_up and r.get("outputs")):
            if r["outputs"] != list(safe_us):
                safe_t = None
            elif safe_t is None:
                safe_t = max(r["mono"], last)
    ramp = None
    if stale_t is not None:
        prior = [r for r in records if r["mono"] <= stale_t and r.get("outputs")]
        if prior:
            pos = prior[-1]["outputs"]
            ramp = max(abs(p - s) for p, s in zip(pos, safe_us) if p is not None) / rate_us_per_s * ms
    resume = next((r["mono"] for r in frames if first is not None and r["mono"] >= first), None)
    t_end = (resume or t_up) + 2.0
    window = [r for r in records if t_down - 1.0 <= r["mono"] <= t_end]
    changes = pulse_changes(window)
    steps = pulse_steps(window, safe_us)
    return OutageFigures(
        down_s=down_s,
        stale_ms=None if stale_t is None else round((stale_t - last) * ms, 1),
        safe_ms=None if safe_t is None else round((safe_t - last) * ms, 1),
        ramp_ms=None if ramp is None else round(ramp, 1),
        resume_cmd_ms=None if first is None else round((first - t_up) * ms, 1),
        resume_frame_ms=None if resume is None else round((resume - t_up) * ms, 1),
        largest_step_us=max(changes, default=0), jumps=count_jumps(steps, step_bound_us, safe_step_bound_us),
        frames_in_window=len(changes), watchdog_trips=watchdog_trips(records, t_down - 1.0, t_end),
        largest_track_step_us=max((c for c, toward in steps if not toward), default=0))


def phase_figures(name: str, t0: float, t1: float, crossed: Sequence[tuple[float, float]],
                  frames: Sequence[dict[str, Any]], stale: Sequence[float], command_timeout_s: float,
                  step_bound_us: float, wall_minus_mono: float,
                  diags: Sequence[tuple[float, int, dict[str, str]]] = (), safe_us: Sequence[int] | None = None,
                  safe_step_bound_us: float | None = None) -> PhaseFigures:
    """Figures of one fault phase [t0, t1] (+ 1 s after it for what was still in flight). ``frames``:
    the board's records (frames and watchdog events, :meth:`TwoHostRig.board_records`). Jumps: per
    :func:`count_jumps` (``safe_us`` default :func:`safe_pulses`)."""
    transit = [t - (s - wall_minus_mono) for s, t in crossed]
    base = min(transit) if transit else 0.0
    inside = [(s, t) for (s, t), tr in zip(crossed, transit) if t0 <= t <= t1 + 1.0]
    late = sum(1 for (s, t), tr in zip(crossed, transit) if t0 <= t <= t1 + 1.0 and tr - base > command_timeout_s)
    window = [r for r in frames if t0 - 0.5 <= r["mono"] <= t1 + 1.0]
    changes = pulse_changes(window)
    steps = pulse_steps(window, safe_pulses() if safe_us is None else safe_us)
    monos = np.array([r["mono"] for r in window if r.get("event", "frame") == "frame"])
    per_s = max((int(np.sum((monos >= m) & (monos < m + 1.0))) for m in monos), default=0)
    per_10ms = max((int(np.sum((monos >= m) & (monos < m + 0.01))) for m in monos), default=0)
    phase_diags = [d for d in diags if t0 <= d[0] <= t1 + 1.5]
    names = {0: "OK", 1: "WARN", 2: "ERROR", 3: "STALE"}

    def delta(key: str) -> int | None:
        vals = [int(d[2][key]) for d in diags if key in d[2] and t0 - 1.5 <= d[0] <= t1 + 1.5]
        return vals[-1] - vals[0] if len(vals) >= 2 else None

    return PhaseFigures(
        name=name, seconds=round(t1 - t0, 2), crossed=len(inside), late_crossings=late,
        stale_decisions=sum(1 for s in stale if t0 <= s <= t1 + 1.0),
        largest_step_us=max(changes, default=0), jumps=count_jumps(steps, step_bound_us, safe_step_bound_us),
        max_frames_per_s=per_s, max_frames_per_10ms=per_10ms,
        warn_seen=any(d[1] >= 1 for d in phase_diags),
        driver_late_refused=delta("commands_late"), driver_out_of_order=delta("commands_out_of_order"),
        levels=[names.get(d[1], str(d[1])) for d in phase_diags],
        watchdog_trips=watchdog_trips(frames, t0 - 0.5, t1 + 1.0))


def unexplained_stale(stale: Sequence[float], crossed: Sequence[tuple[float, float]], command_timeout_s: float,
                      tolerance_s: float = 0.01) -> list[float]:
    """Stale decisions NOT explained by the arrivals: a command crossed less than ``command_timeout_s``
    (− ``tolerance_s``) before the decision. The driver's staleness counts from the arrival of the
    last command it followed, so with every command followed this list is empty whatever the
    clocks say; a command refused for its stamp (judged late) makes a decision "unexplained"."""
    arrivals = np.sort(np.asarray([t for _, t in crossed], dtype=float))
    out = []
    for s in stale:
        k = int(np.searchsorted(arrivals, s, side="right")) - 1
        if k >= 0 and s - arrivals[k] < command_timeout_s - tolerance_s:
            out.append(s)
    return out


def wire_latencies(crossed_stamps: Sequence[float], frames: Sequence[dict[str, Any]], t0: float = 0.0,
                   t1: float = float("inf")) -> list[float]:
    """capture → servo frame on the wire (s) per board frame in [t0, t1] (CLOCK_MONOTONIC): the
    frame's arrival (wall ``t``) minus the newest capture stamp at or before it (a lower bound: a
    frame carries no stamp; the servo driver's own per-command figure is ``capture_to_wire_ms_*``
    in its /diagnostics)."""
    caps = np.sort(np.asarray(crossed_stamps, dtype=float))
    out = []
    for r in frames:
        if not t0 <= r["mono"] <= t1 or caps.size == 0:
            continue
        k = int(np.searchsorted(caps, r["t"], side="right")) - 1
        if k >= 0 and r["t"] - caps[k] < 2.0:
            out.append(r["t"] - caps[k])
    return out


def command_wire_latencies(stamps: Sequence[float], frames: Sequence[dict[str, Any]], t0: float = 0.0,
                           t1: float = float("inf"), wall_minus_mono: float = 0.0) -> list[float]:
    """Per command (its stamp, wall s): the first servo frame on the wire after it and before the next
    command, minus the stamp (s); commands whose stamp (as CLOCK_MONOTONIC) is outside [t0, t1] or
    that no frame followed are left out. For a stand-in publisher whose every command makes a frame."""
    st = np.sort(np.asarray(stamps, dtype=float))
    ft = np.sort(np.asarray([r["t"] for r in frames], dtype=float))
    out = []
    for i, s in enumerate(st):
        if not t0 <= s - wall_minus_mono <= t1:
            continue
        k = int(np.searchsorted(ft, s, side="left"))
        nxt = st[i + 1] if i + 1 < st.size else np.inf
        if k < ft.size and ft[k] < nxt:
            out.append(float(ft[k] - s))
    return out


def step_bound_us(speed_dps: float = 300.0, max_step_s: float = 0.02) -> float:
    """The rate limiter's largest per-frame change (µs): ``max_speed_dps × us_per_degree × max_step_s``
    (+1 µs of rounding)."""
    return speed_dps * US_PER_DEG * max_step_s + 1.0


def safe_pulses(safe_flexion: float = 0.0, min_us: int = 1000, max_us: int = 2000) -> list[int]:
    return [int(round(min_us + safe_flexion * (max_us - min_us)))] * len(contract.FINGER_NAMES)


def problem() -> str | None:
    """Why the rig cannot run here (None: it can)."""
    from hand_bringup.netlink import netns_problem

    return netns_problem()


__all__ = ["LinkFaults", "OutageFigures", "PhaseFigures", "TwoHostRig", "count_jumps", "deliveries", "outage_figures",
           "phase_figures", "problem", "pulse_changes", "pulse_steps", "safe_pulses", "step_bound_us",
           "wire_latencies"]
