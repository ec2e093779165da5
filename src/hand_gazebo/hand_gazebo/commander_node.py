"""``gz_hand_commander``: operator flexions → the Gazebo hands' proximal joint commands (lifecycle node).

Subscribes (QoS LATEST) ``/hand/left/target_flexions`` and ``/hand/right/target_flexions`` (the
tracker's ``hands: two`` topics; with ``hands: one``, ``/hand/target_flexions`` for the
``one_hand_side`` hand), validates them with ``contract.parse_flexions`` and publishes, per hand
and digit, ``std_msgs/Float64`` = proximal joint angle (rad) on ``/hand_gz/<side>/<joint>/cmd_pos``
— the topics that ``config/gz_bridge.yaml`` bridges to the world's JointPositionControllers
(``hand_gazebo.world.command_topic``). Per-finger deadband, stale → safe pose, and the safe pose
on deactivate/shutdown: :mod:`hand_gazebo.commander`. ``/diagnostics`` once per
``diagnostics_period_s``.

Run (stock Jazzy, with the world and the bridge: ``ros2 launch hand_gazebo gazebo.launch.py``):
``ros2 run hand_gazebo gz_commander --ros-args --params-file config/gz_commander.yaml``, then
``ros2 lifecycle set /gz_hand_commander configure`` and ``activate``.
"""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.lifecycle import State, TransitionCallbackReturn
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64

from hand_common import contract
from hand_common.node_tools import SafeLifecycleNode, run
from hand_common.param_spec import ParamSpec
from hand_gazebo.commander import DRIVEN_JOINTS, CommanderConfig, HandCommander, proximal_limits
from hand_gazebo.world import command_topic

NODE_NAME = "gz_hand_commander"
HANDS_MODES = ("one", "two")

PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("hands", "two", "two: both hands from /hand/<side>/target_flexions; one: the one_hand_side "
              "hand from /hand/target_flexions. Read at configure.", choices=HANDS_MODES),
    ParamSpec("one_hand_side", "right", "Gazebo hand driven with hands: one (left or right). Read at configure.",
              choices=contract.HAND_SIDES),
    ParamSpec("urdf_path", "", "URDF with the joint limits (flexion 1 = the proximal joint's upper limit); "
              "empty = hand_description's urdf/hand.urdf (the left hand has the same limits). Read at configure."),
    ParamSpec("deadband", [0.005] * 5, "Per finger (thumb..pinky), flexion units in [0, 1): a command within "
              "this of the value last sent for that finger is not re-sent; exact 0 and 1 always are.",
              live=True, array_type=float),
    ParamSpec("command_timeout_s", 0.15, "s without a command for a hand before its safe pose is sent (once).",
              (0.02, 60.0), live=True),
    ParamSpec("safe_flexions", [0.0] * 5, "Safe pose per finger (0 = open), sent when commands go stale "
              "and on deactivate/shutdown.", live=True, array_type=float),
    ParamSpec("diagnostics_period_s", 1.0, "s between /diagnostics messages.", (0.1, 60.0), live=True),
)
#: Old names (before the unit-suffix rule, issue 25), refused with the new one.
RENAMED: dict[str, str] = {"command_timeout": "command_timeout_s", "diagnostics_period": "diagnostics_period_s"}


class GzCommanderNode(SafeLifecycleNode):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        self.declare_params(PARAMS, renamed=RENAMED)
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._hands: dict[str, HandCommander] = {}
        self._pubs: dict[str, list] = {}
        self._subs: list = []
        self._timer = None
        self._diag_pub = None
        self._rejected = 0
        self._last_diag = 0.0

    # --- parameters -----------------------------------------------------------------------------------
    def _config(self, values: dict | None = None) -> CommanderConfig:
        v = {n: self.get_parameter(n).value for n in ("urdf_path", "deadband", "command_timeout_s", "safe_flexions")}
        v.update(values or {})
        path = v["urdf_path"]
        if not path:
            from hand_description.paths import urdf_path

            path = str(urdf_path())
        with open(path) as f:
            upper = proximal_limits(f.read())
        return CommanderConfig(upper=upper, deadband=tuple(v["deadband"]), command_timeout=float(v["command_timeout_s"]),
                               safe_flexions=tuple(v["safe_flexions"]))

    def check_parameters(self, changes, values) -> str | None:
        """On-set: the commander config must still build (URDF readable, arrays valid). The base
        refuses hands, one_hand_side and urdf_path while configured."""
        try:
            self._config(values)
        except (OSError, ValueError) as exc:
            return str(exc)
        return None

    def apply_parameters(self, changes) -> None:
        """Post-set: every configured hand takes the new deadband, timeout and safe pose."""
        if not self._hands:
            return
        cfg = self._config()
        with self._lock:
            for h in self._hands.values():
                h.config = cfg
                h.deadband.tolerance = np.asarray(cfg.deadband, float)

    # --- lifecycle ----------------------------------------------------------------------------------------
    def on_configure(self, state: State) -> TransitionCallbackReturn:
        try:
            cfg = self._config()
        except (OSError, ValueError) as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        two = self.get_parameter("hands").value == "two"
        sides = contract.HAND_SIDES if two else (self.get_parameter("one_hand_side").value,)
        stream = contract.qos(contract.STREAM)
        self._hands = {s: HandCommander(cfg) for s in sides}
        self._pubs = {s: [self.create_lifecycle_publisher(Float64, command_topic(s, j), stream) for j in DRIVEN_JOINTS]
                      for s in sides}
        # /diagnostics comes from the timer that exists only while active
        self._diag_pub = self.create_lifecycle_publisher(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, stream)
        self.get_logger().info(f"configured for the {', '.join(sides)} hand(s): proximal limits "
                               f"{[round(u, 3) for u in cfg.upper]} rad")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        latest = contract.qos(contract.LATEST)
        two = len(self._hands) == 2
        for side in self._hands:
            topic = contract.side_topic(contract.TOPIC_TARGET_FLEXIONS, side) if two else contract.TOPIC_TARGET_FLEXIONS
            self._subs.append(self.create_subscription(
                JointState, topic, lambda msg, s=side, t=topic: self._on_command(msg, s, t), latest))
        self._timer = self.create_timer(0.05, self._on_timer)
        return super().on_activate(state)

    def _stop(self, send_safe: bool) -> None:
        # the safe pose first: nothing that follows (tearing down subscriptions and the timer,
        # possibly in the middle of an interrupted spin) may keep it from going out
        if send_safe:
            with self._lock:
                sends = {s: h.safe_pose() for s, h in self._hands.items() if h.last_command is not None}
            for s, out in sends.items():
                self._send(s, out)
        for sub in self._subs:
            self.destroy_subscription(sub)
        self._subs = []
        if self._timer is not None:
            self.destroy_timer(self._timer)
            self._timer = None

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        self._stop(send_safe=True)
        return super().on_deactivate(state)

    def _release(self) -> None:
        """The release hook (cleanup, shutdown, error): subscriptions, timer, publishers, hands."""
        self._stop(send_safe=False)
        for pubs in self._pubs.values():
            for p in pubs:
                self.destroy_lifecycle_publisher(p)
        if self._diag_pub is not None:
            self.destroy_lifecycle_publisher(self._diag_pub)
        self._reset()

    def on_shutdown(self, state: State) -> TransitionCallbackReturn:
        # state is the state the shutdown started from (lifecycle_state is 'shuttingdown' here);
        # from active the command publishers are still enabled and the safe pose goes out.
        if state.label == "active":
            self._stop(send_safe=True)
        return super().on_shutdown(state)

    # --- data ------------------------------------------------------------------------------------------
    def _send(self, side: str, out: list[tuple[int, float]]) -> None:
        for i, angle in out:
            self._pubs[side][i].publish(Float64(data=angle))

    def _on_command(self, msg: JointState, side: str, topic: str) -> None:
        try:
            values = contract.parse_flexions(msg.name, msg.position)
        except contract.FlexionContractError as exc:
            self._rejected += 1
            self.get_logger().warning(f"rejected {topic} message: {exc}", throttle_duration_sec=2.0)
            return
        with self._lock:
            out = self._hands[side].command([values[f] for f in contract.FINGER_NAMES], time.monotonic())
        self._send(side, out)

    def _on_timer(self) -> None:
        now = time.monotonic()
        for side, h in self._hands.items():
            with self._lock:
                out = h.tick(now)
            if out:
                self.get_logger().warning(f"{side} hand: no flexion command for {h.config.command_timeout:.2f} s: "
                                          "safe pose sent")
            self._send(side, out)
        if now - self._last_diag >= self.get_parameter("diagnostics_period_s").value:
            self._last_diag = now
            self._diagnostics()

    def _diagnostics(self) -> None:
        stale = [s for s, h in self._hands.items() if h.stale]
        values = {"hands": " ".join(self._hands), "commands_rejected": str(self._rejected)}
        for s, h in self._hands.items():
            values[f"{s}_state"] = "waiting" if h.last_command is None else "stale" if h.stale else "ok"
            values[f"{s}_joint_commands_sent"] = str(h.sent)
            values[f"{s}_values_deadbanded"] = str(h.deadband.suppressed)
        level = DiagnosticStatus.WARN if stale else DiagnosticStatus.OK
        msg = f"safe pose: {', '.join(stale)} (no commands)" if stale else "forwarding flexions to Gazebo"
        arr = DiagnosticArray(status=[DiagnosticStatus(level=level, name=f"{NODE_NAME}: commands", message=msg,
                                                       hardware_id="gz sim",
                                                       values=[KeyValue(key=k, value=v) for k, v in values.items()])])
        arr.header.stamp = self.get_clock().now().to_msg()
        self._diag_pub.publish(arr)


def main(args=None) -> None:
    sys.exit(run(GzCommanderNode, args))


if __name__ == "__main__":
    main()
