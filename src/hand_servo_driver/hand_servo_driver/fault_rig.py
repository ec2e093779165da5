"""A servo driver and a simulated board in separate processes, with faults to inject and the
board's own log to judge by. Used by ``test_faults.py`` and ``bench_faults``.

Processes: ``sim_board`` (:class:`~hand_servo_driver.sim_board.SimBoardProcess`), the driver
under :mod:`hand_servo_driver.faults` (the ordinary node plus SIGUSR1 write stalls), and this
process's :class:`~hand_common.probe.RosProbe` (publishes ``/hand/target_flexions``, reads
``/diagnostics``, calls lifecycle and parameter services). A stand-in tracker
(:meth:`FaultRig.start_tracker`) is one more process that publishes at 30 Hz and logs the
CLOCK_MONOTONIC stamp of every publish, so a ``kill -9`` of it has a known last command.

Every figure is taken from stamps: the board log's ``mono`` (CLOCK_MONOTONIC, the same clock in
every process on the machine), the stall log, the stand-in tracker's publish log.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import yaml

from hand_common import contract
from hand_servo_driver.driver_node import DIAG_NAME
from hand_servo_driver.sim_board import SimBoardProcess

PKG_YAML = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "share", "hand_servo_driver", "config",
                        "servo_driver.yaml")
NODE = contract.SERVO_DRIVER_NODE
US_PER_DEG = 2000.0 / 180.0

_TRACKER_SRC = r"""
import sys, time, json
import rclpy
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from hand_common import contract
rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
node = rclpy.create_node("fault_rig_tracker")
pub = node.create_publisher(JointState, contract.TOPIC_TARGET_FLEXIONS, contract.qos(contract.LATEST))
log = open(sys.argv[1], "a", buffering=1)
values = [float(v) for v in sys.argv[2].split(",")]
period = 1.0 / float(sys.argv[3])
nxt = time.monotonic()
while True:
    pub.publish(JointState(name=list(contract.FINGER_NAMES), position=values))
    log.write(json.dumps({"mono": time.monotonic()}) + "\n")
    nxt += period
    time.sleep(max(0.0, nxt - time.monotonic()))
"""


def package_yaml() -> str:
    """The installed ``servo_driver.yaml`` (falls back to the source tree)."""
    if os.path.exists(PKG_YAML):
        return os.path.abspath(PKG_YAML)
    return os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "config", "servo_driver.yaml"))


def read_jsonl(path: str) -> list[dict[str, Any]]:
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by kill -9
    return out


def pulse_jumps(frames: Sequence[dict[str, Any]], limit_us: float,
                across_detach: bool = False) -> list[tuple[float, int, int, int]]:
    """Consecutive accepted SET_PULSES whose output moved more than ``limit_us`` on a channel:
    ``(mono, channel, from_us, to_us)``. A frame after a detached output is not a jump, unless
    ``across_detach``: then a channel's last pulses before it was detached (a reboot, a detach)
    are where its limp horn still is, and the first pulses after are compared with them."""
    jumps = []
    prev: list[int | None] | None = None
    for r in frames:
        out = r.get("outputs")
        if prev is not None and out is not None:
            for ch, (a, b) in enumerate(zip(prev, out)):
                if a is not None and b is not None and abs(b - a) > limit_us:
                    jumps.append((r["mono"], ch, a, b))
        if across_detach and out is not None and prev is not None:
            out = [b if b is not None else a for a, b in zip(prev, out)]
        prev = out
    return jumps


def largest_step(frames: Sequence[dict[str, Any]]) -> int:
    """The largest change of one channel between consecutive frames that both drive it (µs)."""
    worst, prev = 0, None
    for r in frames:
        out = r.get("outputs")
        if prev is not None and out is not None:
            worst = max([worst] + [abs(b - a) for a, b in zip(prev, out) if a is not None and b is not None])
        prev = out
    return worst


class FaultRig:
    """sim_board + driver (with the stall injector) + a probe. ``params``: driver parameter
    overrides (top level or ``finger.field``). ``speed_dps``: every servo's rate limit."""

    def __init__(self, workdir: str, speed_dps: float = 180.0, board_args: Sequence[str] = ("--watchdog-ms", "500"),
                 stall_ms: float = 60.0, **params: Any):
        from diagnostic_msgs.msg import DiagnosticArray
        from sensor_msgs.msg import JointState

        from hand_common.testing import NodeProcess, RosProbe

        self.JointState = JointState
        self.workdir = workdir
        self.speed_dps = speed_dps
        self.rate_us = speed_dps * US_PER_DEG
        self.board = SimBoardProcess(workdir, *board_args, "--seed", "7")
        with open(package_yaml()) as f:
            doc = yaml.safe_load(f)
        prm = doc[NODE]["ros__parameters"]
        prm.update(port=self.board.link, diagnostics_period_s=0.2)
        for name in contract.FINGER_NAMES:
            prm[name].update(max_speed_dps=speed_dps, deadband_deg=0.5)
        for k, v in params.items():
            if "." in k:
                f, field = k.split(".", 1)
                prm[f][field] = v
            else:
                prm[k] = v
        self.params = prm
        self.params_file = os.path.join(workdir, "servo_driver.yaml")
        with open(self.params_file, "w") as f:
            yaml.safe_dump(doc, f)
        self.stall_log = os.path.join(workdir, "stalls.jsonl")
        self._node_cls = NodeProcess
        self.stall_ms = stall_ms
        self.node = self._start_driver()
        self.probe = RosProbe("fault_rig_probe")
        self.diags = self.probe.collect(DiagnosticArray, contract.TOPIC_DIAGNOSTICS)
        self.pub = self.probe.publisher(JointState, contract.TOPIC_TARGET_FLEXIONS, contract.qos(contract.LATEST))
        self._stream: threading.Thread | None = None
        self._stop_stream = threading.Event()
        self.last_publish = 0.0
        self.last_publish_start = 0.0
        #: header.frame_id of the probe's commands (the command source it claims; '' = unnamed)
        self.frame_id = ""
        self.tracker = None
        self.tracker_log = os.path.join(workdir, "tracker.jsonl")

    def _start_driver(self):
        return self._node_cls.module(
            "hand_servo_driver.faults", "--stall-ms", str(self.stall_ms), "--stall-log", self.stall_log,
            "--ros-args", "--params-file", self.params_file, log_path=os.path.join(self.workdir, "servo_driver.log"))

    def restart_driver(self) -> None:
        """Start a new driver process (after a kill) and bring it to active."""
        self.node = self._start_driver()
        self.activate()

    def activate(self, timeout: float = 30.0) -> None:
        from hand_common.testing import wait_until

        wait_until(lambda: self._try(lambda: self.probe.get_state(NODE, timeout=2.0) == "unconfigured"), timeout,
                   "servo_driver up")
        if not (self.probe.change_state(NODE, "configure") and self.probe.change_state(NODE, "activate")):
            raise RuntimeError(f"servo_driver did not activate:\n{self.node.tail(30)}")
        self.probe.wait_for_subscribers(self.pub)

    def set_safety(self, **values: Any) -> None:
        """Set safety parameters the driver refuses to loosen while active (e.g. a longer
        ``command_timeout_s``, a faster ``max_speed_dps``): deactivate (the servos ramp to the safe
        pose), set, activate again."""
        from hand_common.testing import wait_until

        if not self.probe.change_state(NODE, "deactivate"):
            raise RuntimeError(f"servo_driver did not deactivate:\n{self.node.tail(30)}")
        wait_until(lambda: self.diag()[2].get("going_safe") == "False", 5.0, "the ramp to the safe pose")
        results = self.probe.set_parameters(NODE, **values)
        if not all(r.successful for r in results):
            raise RuntimeError(f"refused while inactive: {[r.reason for r in results]}")
        if not self.probe.change_state(NODE, "activate"):
            raise RuntimeError(f"servo_driver did not activate:\n{self.node.tail(30)}")

    @staticmethod
    def _try(fn: Callable[[], bool]) -> bool:
        try:
            return fn()
        except (TimeoutError, RuntimeError):
            return False

    def close(self) -> int:
        self.stop_stream()
        self.stop_tracker()
        self.probe.close()
        code = self.node.stop() if self.node.alive() else 0
        self.board.stop()
        return code

    # --- commands --------------------------------------------------------------------------------
    def publish(self, values: Sequence[float]) -> None:
        msg = self.JointState(name=list(contract.FINGER_NAMES), position=[float(v) for v in values])
        msg.header.frame_id = self.frame_id
        #: CLOCK_MONOTONIC just before the last publish call: no subscriber received it sooner
        self.last_publish_start = time.monotonic()
        self.pub.publish(msg)
        self.last_publish = time.monotonic()

    def stream(self, values: Sequence[float] | Callable[[float], Sequence[float]], seconds: float,
               hz: float = 30.0) -> float:
        """Publish for ``seconds`` at ``hz`` (``values`` may be a function of elapsed time);
        returns the CLOCK_MONOTONIC time of the last publish."""
        t0 = time.monotonic()
        nxt = t0
        while time.monotonic() - t0 < seconds:
            self.publish(values(time.monotonic() - t0) if callable(values) else values)
            nxt += 1.0 / hz
            time.sleep(max(0.0, nxt - time.monotonic()))
        return self.last_publish

    def start_stream(self, values, hz: float = 30.0) -> None:
        self._stop_stream.clear()

        def loop():
            t0 = time.monotonic()
            nxt = t0
            while not self._stop_stream.is_set():
                self.publish(values(time.monotonic() - t0) if callable(values) else values)
                nxt += 1.0 / hz
                self._stop_stream.wait(max(0.0, nxt - time.monotonic()))

        self._stream = threading.Thread(target=loop, daemon=True)
        self._stream.start()

    def stop_stream(self) -> float:
        """Stop the background stream; returns the time of its last publish."""
        if self._stream is not None:
            self._stop_stream.set()
            self._stream.join(2)
            self._stream = None
        return self.last_publish

    def start_tracker(self, values: Sequence[float], hz: float = 30.0) -> None:
        """A stand-in tracker process publishing ``values`` at ``hz`` (for kill -9)."""
        self.tracker = self._node_cls([sys.executable, "-c", _TRACKER_SRC, self.tracker_log,
                                       ",".join(str(float(v)) for v in values), str(hz)],
                                      log_path=os.path.join(self.workdir, "tracker.out"))

    def kill_tracker(self) -> tuple[float, float]:
        """kill -9 the stand-in tracker; returns (kill time, its last logged publish time)."""
        t_kill = time.monotonic()
        os.kill(self.tracker.pid, signal.SIGKILL)
        self.tracker.proc.wait(5)
        pubs = read_jsonl(self.tracker_log)
        return t_kill, (pubs[-1]["mono"] if pubs else t_kill)

    def stop_tracker(self) -> None:
        if self.tracker is not None and self.tracker.alive():
            self.tracker.stop()

    def kill_driver(self) -> float:
        t = time.monotonic()
        os.kill(self.node.pid, signal.SIGKILL)
        self.node.proc.wait(5)
        return t

    def stall(self) -> None:
        """Arm one write stall in the driver (its next serial write takes stall_ms longer)."""
        os.kill(self.node.pid, signal.SIGUSR1)

    def stalls(self) -> list[dict[str, Any]]:
        return read_jsonl(self.stall_log)

    # --- observations ------------------------------------------------------------------------------
    def frames(self, since: float = 0.0, msg: str | None = "set_pulses") -> list[dict[str, Any]]:
        return [r for r in self.board.records("frame") if r["mono"] >= since and (msg is None or r["msg"] == msg)]

    def outputs(self) -> list[int | None] | None:
        recs = [r for r in self.board.records() if r["event"] in ("frame", "watchdog", "plug")]
        return recs[-1].get("outputs") if recs else None

    def first_output(self, want: Sequence[int], since: float, events=("frame", "watchdog")) -> dict | None:
        """The first board record after ``since`` whose outputs equal ``want``."""
        for r in self.board.records():
            if r["mono"] >= since and r["event"] in events and r.get("outputs") == list(want):
                return r
        return None

    def _driver_diags(self) -> list:
        return [m for m in self.diags if m.status and m.status[0].name == DIAG_NAME]

    def diag(self) -> tuple[int, str, dict[str, str]]:
        """(level, message, values) of the driver's newest /diagnostics status."""
        s = self._driver_diags()[-1].status[0]
        level = s.level[0] if isinstance(s.level, bytes) else s.level
        return level, s.message, {kv.key: kv.value for kv in s.values}

    def wait_diag(self, pred, timeout: float = 5.0, what: str = "diagnostics"):
        from hand_common.testing import wait_until

        wait_until(lambda: bool(self._driver_diags()) and pred(*self.diag()), timeout, what)
        return self.diag()

    def wait_outputs(self, want, timeout: float = 5.0) -> None:
        from hand_common.testing import wait_until

        wait_until(lambda: self.outputs() == list(want), timeout, f"board outputs {list(want)} (now {self.outputs()})")

    def safe_us(self) -> list[int]:
        """Each servo's safe pulse (safe_flexion 0 = open: min_pulse_us, servos not inverted)."""
        return [int(self.params[f]["min_pulse_us"]) for f in contract.FINGER_NAMES]
