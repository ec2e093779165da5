"""``arm_driver``: the SO-101's Feetech STS3215 bus (1 Mbaud, IDs 1-6) as a ROS 2 lifecycle node.

Two opt-ins, both false by default (see :mod:`arm_teleop.driver_core`): ``real_hardware`` false
= **dry run** (the port is never opened; intended writes are logged once per
``dry_run_log_period_s``); ``real_hardware`` alone = **read-only** (connects, torque off, publishes
the measured joints, logs what it would write); ``real_hardware`` + ``allow_motion`` = **motion**.
The opt-ins and the calibration can only change while unconfigured.

Subscribes ``/arm/joint_commands`` (LATEST): a new command is written **when it arrives** (the bus
follows the command, not the loop's tick), at most ``max_write_rate_hz`` writes a second (a token
bucket, :class:`~arm_teleop.driver_core.WriteCap`; a command held back by it is written as soon as
the cap allows, by a one-shot timer on the steady clock, if still the newest and fresh - not at the
next tick). The tick (``rate_hz``) reads and publishes the measured joints
and applies the ``command_timeout_s`` check. Publishes ``/arm/joint_states`` (measured, rad;
not in dry run) and ``/diagnostics`` (level, opt-in, bus retries/timeouts/corrupted packets, last
error). Lifecycle: configure opens the bus (ping every ID, torque off); activate (motion) sets
goal = present and turns torque on; a command older than ``command_timeout_s`` is not sent
(servos hold); deactivate/cleanup/shutdown open the gripper and turn torque off (from any state).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType
from rclpy.lifecycle import State, TransitionCallbackReturn
from sensor_msgs.msg import JointState

from arm_teleop import topics
from arm_teleop.arm_model import ALL_JOINTS, ModelError, load_arm
from arm_teleop.bus import BusError, open_bus
from arm_teleop.driver_core import ArmDriverCore, Calibration, OptIn, WriteCap, opt_in_level
from hand_common import contract
from hand_common.node_tools import SafeLifecycleNode, run
from hand_common.param_spec import ParamSpec, field_defaults

_CAL = field_defaults(Calibration)  # the calibration's defaults live in its dataclass

#: Every parameter; the opt-ins and the calibration (not live) can only change while unconfigured.
PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("real_hardware", False, "opt-in 1: open the bus (alone: read-only, torque off)"),
    ParamSpec("allow_motion", False, "opt-in 2 (with real_hardware): torque on and move"),
    ParamSpec("port", "/dev/ttyACM0", "serial device of the bus adapter"),
    ParamSpec("baud", 1000000, "bus baud rate", (9600, 1000000)),
    ParamSpec("ids", list(_CAL["ids"]), "bus IDs of shoulder_pan .. gripper", array_type=int),
    ParamSpec("zero_ticks", list(_CAL["zero_ticks"]), "tick reading at joint angle 0, per servo (calibration)",
              array_type=int),
    ParamSpec("signs", list(_CAL["signs"]), "+1/-1 per servo: tick direction of a positive joint angle",
              array_type=int),
    ParamSpec("gripper_min_ticks", _CAL["gripper_min_ticks"], "calibrated gripper tick range: lower end", (0, 4095)),
    ParamSpec("gripper_max_ticks", _CAL["gripper_max_ticks"], "calibrated gripper tick range: upper end", (0, 4095)),
    ParamSpec("retries", 3, "retries of a missing or corrupted status packet", (0, 10)),
    ParamSpec("timeout_ms", 20.0, "wait for a status packet (ms)", (1.0, 500.0)),
    ParamSpec("rate_hz", 30.0, "read loop rate (Hz): measured joints, stale check, held commands", (1.0, 200.0),
              live=True),
    ParamSpec("max_write_rate_hz", 100.0, "commands are written when they arrive, at most this many a "
              "second, Hz (a 60 fps camera's commands fit; 0 = no cap). One write (SYNC_WRITE of 5 goals + "
              "the gripper's) is ~40 bytes, ~0.4 ms at 1 Mbaud", (0.0, 1000.0), live=True),
    ParamSpec("command_timeout_s", 0.15, "commands older than this are not sent (s; 4.5 frames at 30 Hz)", (0.05, 10.0),
              live=True),
    ParamSpec("model_path", "", "MJCF for limits and the gripper ctrlrange ('' = arm_description)"),
    ParamSpec("dry_run_log_period_s", 1.0, "log intended writes at most this often (s)", (0.1, 60.0), live=True),
    ParamSpec("diagnostics_period_s", 1.0, "diagnostics period (s)", (0.1, 60.0), live=True),
)
#: Old names (before the unit-suffix rule, issue 25), refused with the new one.
RENAMED: dict[str, str] = {"rate": "rate_hz", "command_timeout": "command_timeout_s",
                           "dry_run_log_period": "dry_run_log_period_s", "diagnostics_period": "diagnostics_period_s"}


class DriverNode(SafeLifecycleNode):
    def __init__(self, **kwargs):
        super().__init__(topics.DRIVER_NODE, **kwargs)
        self.declare_params(PARAMS, renamed=RENAMED)  # the base refuses the opt-ins and the calibration while configured
        self.core: ArmDriverCore | None = None
        self._reset()

    def _reset(self) -> None:
        self._timers: list = []
        self._write_timer = None  # one shot: a command the write cap held, written when it allows
        self._released = 0  # held commands written by it
        self._sub = None
        self._js_pub = self._diag_pub = None
        self._cmd: np.ndarray | None = None
        self._cmd_t = 0.0
        self._sent = 0
        self._last_sent: np.ndarray | None = None
        self._received = self._rejected = self._expired_total = 0
        self._expired: np.ndarray | None = None  # the last command counted as expired unwritten
        self._last_dry_log = 0.0
        self._errors = 0
        self._last_error = ""
        self._cap = WriteCap()

    def _p(self, name):
        return self.get_parameter(name).value

    # --- lifecycle ---------------------------------------------------------------------------------
    def on_configure(self, state: State) -> TransitionCallbackReturn:
        level = opt_in_level(self._p("real_hardware"), self._p("allow_motion"))
        if self._p("allow_motion") and not self._p("real_hardware"):
            self.get_logger().warning("allow_motion without real_hardware: dry run")
        try:
            arm = load_arm(self._p("model_path") or None)
            cal = Calibration(tuple(self._p("ids")), tuple(self._p("zero_ticks")), tuple(self._p("signs")),
                              self._p("gripper_min_ticks"), self._p("gripper_max_ticks"))
            problem = cal.problem()
            if problem:
                raise ValueError(problem)
            bus = open_bus(level != OptIn.DRY_RUN, self._p("port"), self._p("baud"), self._p("retries"),
                           self._p("timeout_ms"))
            self.core = ArmDriverCore(level, cal, arm.lower, arm.upper, bus, gripper_open=arm.gripper_open)
            models = self.core.connect()
        except (ValueError, ModelError, BusError) as exc:
            self.get_logger().error(f"configure failed ({level.value}): {exc}")
            if self.core is not None:
                self.core.bus.close()
            self.core = None
            return TransitionCallbackReturn.FAILURE
        # measured joints come from the loop timer (active only); /diagnostics also while inactive
        self._js_pub = self.create_lifecycle_publisher(JointState, topics.DRIVER_JOINT_STATES,
                                                       contract.qos(contract.STREAM))
        self._diag_pub = self.create_publisher(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, contract.qos(contract.STREAM))
        self._timers.append(self.create_timer(self._p("diagnostics_period_s"), self._diagnostics))
        self.get_logger().info(f"configured: {level.value}" + (f", servos {models}" if models else
                                                               " (no bus opened; intended writes are logged)"))
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        try:
            q = self.core.enable()
        except Exception as exc:  # noqa: BLE001 - bus errors: refuse activation, arm stays limp
            self.get_logger().error(f"activate failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        if q is not None:
            self.get_logger().info(f"torque on at {np.round(q, 3).tolist()} rad")
        self._sub = self.create_subscription(JointState, topics.JOINT_COMMANDS, self._on_command,
                                             contract.qos(contract.LATEST))
        self._timers.append(self.create_timer(1.0 / self._p("rate_hz"), self._tick))
        self._write_timer = self.create_timer(1.0, self._on_write_due, clock=Clock(clock_type=ClockType.STEADY_TIME),
                                              autostart=False)
        self._timers.append(self._write_timer)
        return super().on_activate(state)

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        self._stop_io()
        if self.core is not None and self.core.level == OptIn.MOTION:
            self._safe(lambda: (self.core._write_gripper(self.core.gripper_open), self.core.torque_off()))
        return super().on_deactivate(state)

    def _safe(self, fn) -> None:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001
            self.get_logger().error(f"safe-pose step failed: {exc}")

    def _stop_io(self) -> None:
        if self._sub is not None:
            self.destroy_subscription(self._sub)
            self._sub = None
        for t in self._timers[1:]:
            self.destroy_timer(t)
        self._timers = self._timers[:1]
        self._write_timer = None

    def _release(self) -> None:
        """The release hook (cleanup, shutdown from any state, error): the safe pose first (MOTION:
        gripper open, torque off; READ_ONLY: torque off), then the port, timers and publishers."""
        self._stop_io()
        if self.core is not None:
            self.core.shutdown()  # MOTION: gripper open, torque off; READ_ONLY: torque off; closes the port
            if self.core.last_error:
                self.get_logger().error(f"shutdown: {self.core.last_error}")
            else:
                self.get_logger().info(f"shutdown: {self.core.level.value}, torque off")
        for t in self._timers:
            self.destroy_timer(t)
        if self._js_pub is not None:
            self.destroy_lifecycle_publisher(self._js_pub)
        if self._diag_pub is not None:
            self.destroy_publisher(self._diag_pub)
        self.core = None
        self._reset()

    # --- commands and the loop ---------------------------------------------------------------------
    def _on_command(self, msg: JointState) -> None:
        d = dict(zip(msg.name, msg.position))
        q = np.array([d.get(j, math.nan) for j in ALL_JOINTS])
        if len(msg.name) != len(msg.position) or not np.all(np.isfinite(q)):
            self._rejected += 1
            self.get_logger().warning(f"command rejected: needs finite {list(ALL_JOINTS)}, got {list(msg.name)}",
                                      throttle_duration_sec=5.0)
            return
        self._received += 1
        self._cmd = q
        self._cmd_t = time.monotonic()
        self._send(self._cmd_t)  # at once: the bus follows the command, not the tick

    def _send(self, now: float) -> None:
        """Write the newest command if it is fresh, not yet written and the write cap allows it
        (else it waits for the next arrival or tick). Bus errors are counted, never raised; a
        command that went stale before it could be written (a bus error, the write cap) is counted
        (``commands_expired``) and logged, never dropped silently."""
        core = self.core
        if core is None or self._cmd is None:
            return
        if self._last_sent is not None and np.array_equal(self._cmd, self._last_sent):
            return  # on the bus already
        if now - self._cmd_t > self._p("command_timeout_s"):
            if self._cmd is not self._expired:
                self._expired = self._cmd
                self._expired_total += 1
                self.get_logger().warning(f"a command expired unwritten ({self._expired_total} so far)",
                                          throttle_duration_sec=2.0)
            return
        rate = float(self._p("max_write_rate_hz"))
        if not self._cap.take(now, rate):
            self._arm_write(self._cap.ready_at(now, rate))
            return
        try:
            writes = core.command(self._cmd)
        except (BusError, OSError) as exc:
            self._errors += 1
            self._last_error = str(exc)
            self.get_logger().error(f"bus: {exc}", throttle_duration_sec=2.0)
            return
        self._last_sent = self._cmd
        self._sent += 1
        if core.level != OptIn.MOTION and now - self._last_dry_log >= self._p("dry_run_log_period_s"):
            self._last_dry_log = now
            self.get_logger().info(f"{core.level.value}: would write " + "; ".join(str(w) for w in writes))

    def _arm_write(self, at: float) -> None:
        """Wake at ``at`` (monotonic s) to write the command the cap held."""
        timer = self._write_timer
        if timer is not None:
            timer.timer_period_ns = max(int((at - time.monotonic()) * 1e9), 100_000)  # >= 0.1 ms: never spins
            timer.reset()

    def _on_write_due(self) -> None:
        """The one shot: the cap allows a write again; the newest command goes if still fresh."""
        if self._write_timer is not None:
            self._write_timer.cancel()
        sent = self._sent
        self._send(time.monotonic())
        self._released += self._sent - sent

    def _tick(self) -> None:
        core = self.core
        if core is None:
            return
        try:
            if core.bus.real:
                q = core.read()
                js = JointState()
                js.header.stamp = self.get_clock().now().to_msg()
                js.name = list(ALL_JOINTS)
                js.position = [float(x) for x in q]
                self._js_pub.publish(js)
        except (BusError, OSError) as exc:
            self._errors += 1
            self._last_error = str(exc)
            self.get_logger().error(f"bus: {exc}", throttle_duration_sec=2.0)
        if self._write_timer is None or self._write_timer.is_canceled():  # else the wake writes it
            self._send(time.monotonic())  # a command a bus error kept off the bus, if still fresh

    def _diagnostics(self) -> None:
        core = self.core
        if core is None or self._diag_pub is None:
            return
        st = DiagnosticStatus(name=f"{topics.DRIVER_NODE}: sts3215 bus", hardware_id=self._p("port"))
        st.level = DiagnosticStatus.ERROR if self._last_error and self._errors else (
            DiagnosticStatus.WARN if core.level != OptIn.MOTION else DiagnosticStatus.OK)
        st.message = f"{core.level.value}, {self.lifecycle_state}" + (f", {self._last_error}" if self._last_error else "")
        vals = {"opt_in": core.level.value, "torque_on": core.torque_on, "commands_received": self._received,
                "commands_rejected": self._rejected, "commands": self._sent,
                "commands_expired": self._expired_total,
                "writes_held": self._cap.held, "writes_released": self._released,
                "intended_writes": core.intended_total, "errors": self._errors}
        if core.bus.real:
            s = core.bus.stats
            vals.update(transactions=s.transactions, retries=s.retries, timeouts=s.timeouts,
                        corrupted=s.corrupted, stale=s.stale, failures=s.failures)
        st.values = [KeyValue(key=k, value=str(v)) for k, v in vals.items()]
        arr = DiagnosticArray(status=[st])
        arr.header.stamp = self.get_clock().now().to_msg()
        self._diag_pub.publish(arr)


def main(args=None) -> None:
    sys.exit(run(DriverNode, args))


if __name__ == "__main__":
    main()
