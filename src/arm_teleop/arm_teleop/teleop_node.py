"""``arm_teleop``: gesture teleoperation of the SO-101 as a ROS 2 lifecycle node.

Subscribes ``/hand/landmarks`` (hand_msgs/HandLandmarksArray, STREAM) and ``/arm/manual_command``
(sensor_msgs/JointState, LATEST: the keyboard/manual path, used only in MANUAL). Publishes
``/arm/joint_commands`` (sensor_msgs/JointState, STREAM: names = the 6 joints, position = rad,
stamp = the camera frame's capture stamp; only while ARMED or MANUAL) and ``/arm/teleop_state``
(std_msgs/String, STREAM, one JSON object per frame: state, mode, gesture, gripper, arming,
pinch ratio, IK error/iterations, frame index). Services (std_srvs): ``~/estop`` (Trigger, latched),
``~/clear_estop`` (Trigger, step 1 of the reset), ``~/manual`` (SetBool: true = take over,
false = release to DISABLED), ``~/disable`` (Trigger). They exist in every lifecycle state; an
e-stop before configure is latched and applied when the core is built.

All logic is in :mod:`arm_teleop.teleop_core`; this node converts parameters and messages.
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np
from hand_msgs.msg import HandLandmarksArray
from rclpy.lifecycle import State, TransitionCallbackReturn
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger

from arm_teleop import topics
from arm_teleop.arm_model import ALL_JOINTS, ModelError, load_arm
from arm_teleop.gestures import GestureConfig
from arm_teleop.ik import IkConfig
from arm_teleop.mapping import CartesianConfig
from arm_teleop.state_machine import StateMachineConfig
from arm_teleop.teleop_core import MODES, HandFrame, TeleopConfig, TeleopCore
from hand_common import contract
from hand_common.node_tools import SafeLifecycleNode, run
from hand_common.param_spec import ParamSpec

#: Every parameter; all live but model_path (read at configure).
PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("control_mode", "cartesian", f"control mode: {' | '.join(MODES)} (switchable live)", live=True),
    ParamSpec("image_mirrored", False, "the camera image is already mirrored (selfie view)", live=True),
    ParamSpec("hand_preference", "any", "which hand drives the arm: any (most confident), right, left", live=True,
              choices=("any", "right", "left")),
    ParamSpec("model_path", "", "MJCF of the arm ('' = arm_description's mjcf/so101.xml); read at configure"),
    ParamSpec("arm_hold_s", 0.5, "open palm must be held this long (s) with stable tracking to arm",
              (0.0, 10.0), live=True),
    ParamSpec("min_score", 0.5, "minimum handedness score for stable tracking", (0.0, 1.0), live=True),
    ParamSpec("arm_max_wrist_speed", 0.6, "stable tracking: wrist slower than this (image heights/s)",
              (0.01, 100.0), live=True),
    ParamSpec("lost_frames_disable", 15, "frames without a hand before HOLD becomes DISABLED",
              (1, 10000), live=True),
    ParamSpec("finger_extended_angle", 2.40, "finger extended above this mean joint angle (rad)",
              (0.1, 3.1), live=True),
    ParamSpec("thumb_extended_angle", 2.65, "thumb extended above this mean joint angle (rad)",
              (0.1, 3.1), live=True),
    ParamSpec("open_min_extended", 4, "digits extended for an open palm", (1, 5), live=True),
    ParamSpec("pinch_close", 0.34, "pinch engages below this thumb-index distance / palm length",
              (0.01, 2.0), live=True),
    ParamSpec("pinch_open", 0.45, "pinch releases above this thumb-index distance / palm length",
              (0.01, 2.0), live=True),
    ParamSpec("pinch_min_other_extended", 2, "middle/ring/pinky extended for a pinch to engage",
              (0, 3), live=True),
    ParamSpec("smoothing_time_s", 0.15, "exponential smoothing time constant of the targets (s)",
              (0.0, 5.0), live=True),
    ParamSpec("max_joint_speed", 2.0, "rate limit of the arm joint commands (rad/s)",
              (0.01, 20.0), live=True),
    ParamSpec("max_gripper_speed", 4.5, "rate limit of the gripper command (rad/s)", (0.01, 50.0), live=True),
    ParamSpec("ik_max_iterations", 12, "IK iterations per frame", (1, 100), live=True),
    ParamSpec("ik_tolerance", 0.005, "IK position tolerance (m)", (0.0001, 0.1), live=True),
    ParamSpec("ik_step", 0.5, "IK step (fraction of the damped least-squares update)",
              (0.01, 1.0), live=True),
    ParamSpec("ik_damping", 0.02, "IK damping lambda (m)", (0.0, 1.0), live=True),
    ParamSpec("workspace_x", [-0.20, 0.20], "soft workspace x bounds (m), base frame",
              live=True, array_type=float),
    ParamSpec("workspace_y", [-0.32, -0.06], "soft workspace y bounds (m), base frame (the arm reaches to -y)",
              live=True, array_type=float),
    ParamSpec("workspace_z", [0.05, 0.30], "soft workspace z bounds (m), base frame",
              live=True, array_type=float),
)
_BY_NAME = {s.name: s for s in PARAMS}


class TeleopNode(SafeLifecycleNode):
    def __init__(self, **kwargs):
        super().__init__(topics.TELEOP_NODE, **kwargs)
        self.declare_params(PARAMS)
        self.core: TeleopCore | None = None
        self._estop_pending = ""
        self._subs: list = []
        self._cmd_pub = self._state_pub = None
        self._last_t: float | None = None
        self.create_service(Trigger, "~/estop", self._srv_estop)
        self.create_service(Trigger, "~/clear_estop", self._srv_clear)
        self.create_service(SetBool, "~/manual", self._srv_manual)
        self.create_service(Trigger, "~/disable", self._srv_disable)

    # --- parameters -------------------------------------------------------------------------------
    def _values(self, overrides: dict | None = None) -> dict:
        return self.param_values(overrides)

    def _config(self, v: dict) -> TeleopConfig:
        for k in ("workspace_x", "workspace_y", "workspace_z"):
            if len(v[k]) != 2:
                raise ValueError(f"{k} needs [min, max], got {list(v[k])}")
        if why := _BY_NAME["hand_preference"].problem(v["hand_preference"]):
            raise ValueError(why)
        return TeleopConfig(
            gesture=GestureConfig(v["finger_extended_angle"], v["thumb_extended_angle"], v["open_min_extended"],
                                  v["pinch_close"], v["pinch_open"], v["pinch_min_other_extended"]),
            state=StateMachineConfig(v["arm_hold_s"], v["min_score"], v["arm_max_wrist_speed"],
                                     v["lost_frames_disable"]),
            ik=IkConfig(v["ik_max_iterations"], v["ik_tolerance"], v["ik_step"], v["ik_damping"]),
            cartesian=CartesianConfig(x_bounds=tuple(v["workspace_x"]), y_bounds=tuple(v["workspace_y"]),
                                      z_bounds=tuple(v["workspace_z"])),
            mode=v["control_mode"], image_mirrored=v["image_mirrored"], smoothing_time_s=v["smoothing_time_s"],
            max_joint_speed=v["max_joint_speed"], max_gripper_speed=v["max_gripper_speed"])

    def check_parameters(self, changes, values) -> str | None:
        """On-set: the whole teleop config must still be valid (model_path, the one configure-time
        parameter, is refused by the base while configured)."""
        try:
            problem = self._config(values).problem()
        except ValueError as exc:
            return str(exc)
        return problem or None

    def apply_parameters(self, changes) -> None:
        """Post-set: a configured core takes the new config at once."""
        if self.core is not None:
            self.core.reconfigure(self._config(self._values()))

    # --- lifecycle ---------------------------------------------------------------------------------
    def on_configure(self, state: State) -> TransitionCallbackReturn:
        try:
            cfg = self._config(self._values())
            arm = load_arm(self.get_parameter("model_path").value or None)
            self.core = TeleopCore(arm, cfg)
        except (ValueError, ModelError) as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        if self._estop_pending:
            self.core.estop(0.0, self._estop_pending)
        # both are published from the subscriptions, which exist only while active
        self._cmd_pub = self.create_lifecycle_publisher(JointState, topics.JOINT_COMMANDS, contract.qos(contract.STREAM))
        self._state_pub = self.create_lifecycle_publisher(String, topics.TELEOP_STATE, contract.qos(contract.STREAM))
        self.get_logger().info(f"configured: gripper range [{arm.gripper_closed:.4f}, {arm.gripper_open:.4f}] rad "
                               f"(actuator ctrlrange), mode {cfg.mode}")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        self._subs = [
            self.create_subscription(HandLandmarksArray, contract.TOPIC_LANDMARKS, self._on_landmarks,
                                     contract.qos(contract.STREAM)),
            self.create_subscription(JointState, topics.MANUAL_COMMAND, self._on_manual, contract.qos(contract.LATEST)),
        ]
        return super().on_activate(state)

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        for s in self._subs:
            self.destroy_subscription(s)
        self._subs = []
        if self.core is not None:
            self.core.sm.disable(self._now(), "deactivated")
        return super().on_deactivate(state)

    def _release(self) -> None:
        """The release hook (cleanup, shutdown, error): subscriptions, publishers, the core (an
        e-stop it latched stays pending for the next configure)."""
        for s in self._subs:
            self.destroy_subscription(s)
        self._subs = []
        for pub in (self._cmd_pub, self._state_pub):
            if pub is not None:
                self.destroy_lifecycle_publisher(pub)
        self._cmd_pub = self._state_pub = None
        if self.core is not None and self.core.sm.state.value == "ESTOP":
            self._estop_pending = self.core.sm.estop_reason or "e-stop"
        self.core = None

    # --- services ----------------------------------------------------------------------------------
    def _now(self) -> float:
        return self._last_t if self._last_t is not None else self.get_clock().now().nanoseconds * 1e-9

    def _srv_estop(self, req, resp):
        if self.core is None:
            self._estop_pending = "e-stop (service)"
        else:
            self.core.estop(self._now(), "e-stop (service)")
        self.get_logger().warning("E-STOP latched: all arm commands blocked until ~/clear_estop and a fresh open palm")
        resp.success, resp.message = True, "e-stop latched"
        return resp

    def _srv_clear(self, req, resp):
        if self.core is None:
            ok = bool(self._estop_pending)
            self._estop_pending = ""
        else:
            ok = self.core.clear_estop(self._now())
        resp.success = ok
        resp.message = "e-stop cleared: show a fresh open palm to arm" if ok else "not in ESTOP"
        return resp

    def _srv_manual(self, req, resp):
        if self.core is None:
            resp.success, resp.message = False, "not configured"
            return resp
        t = self._now()
        ok = self.core.request_manual(t) if req.data else self.core.release_manual(t)
        resp.success = ok
        resp.message = f"state {self.core.sm.state.value}" if ok else f"refused in state {self.core.sm.state.value}"
        return resp

    def _srv_disable(self, req, resp):
        ok = self.core is not None and self.core.sm.disable(self._now(), "disable (service)")
        resp.success, resp.message = bool(ok), "disabled" if ok else "refused (not configured or ESTOP)"
        return resp

    # --- topics ------------------------------------------------------------------------------------
    def _pick(self, msg: HandLandmarksArray):
        pref = self.get_parameter("hand_preference").value
        hands = [h for h in msg.hands if pref == "any" or h.handedness == pref]
        return max(hands, key=lambda h: h.handedness_score) if hands else None

    def _on_landmarks(self, msg: HandLandmarksArray) -> None:
        core = self.core
        if core is None:
            return
        t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        if t <= 0 or not math.isfinite(t):
            t = self.get_clock().now().nanoseconds * 1e-9
        if self._last_t is not None and t < self._last_t - 1.0:
            core.sm.disable(t, "time went backwards")  # a looped or replayed stream restarts safely
        self._last_t = t
        h = self._pick(msg)
        if h is not None and not h.accepted and h.rejection not in ("", "not_followed"):
            # the tracker's frame-quality gate refused this skeleton: no hand for the teleop either
            frame = HandFrame(t)
            index = int(h.frame_index)
        elif h is None:
            frame = HandFrame(t)
            index = -1
        else:
            world = np.array([(p.x, p.y, p.z) for p in h.world_landmarks])
            image = np.array([(p.x, p.y, p.z) for p in h.image_landmarks])
            ok = world.shape == (21, 3) and image.shape == (21, 3)
            frame = HandFrame(t, world if ok else None, image if ok else None, float(h.handedness_score),
                              int(h.image_width) or 1280, int(h.image_height) or 720)
            index = int(h.frame_index)
        out = core.process(frame)
        if out.command is not None:
            self._publish_command(msg.header.stamp, out.command)
        self._publish_state(out, index)

    def _on_manual(self, msg: JointState) -> None:
        if self.core is None:
            return
        d = dict(zip(msg.name, msg.position))
        if set(ALL_JOINTS) - set(d):
            self.get_logger().warning(f"manual command ignored: needs joints {list(ALL_JOINTS)}, got {list(msg.name)}",
                                      throttle_duration_sec=5.0)
            return
        try:
            cmd = self.core.manual_command(self._now(), np.array([d[j] for j in ALL_JOINTS]))
        except ValueError as exc:
            self.get_logger().warning(f"manual command rejected: {exc}", throttle_duration_sec=5.0)
            return
        if cmd is not None:
            self._publish_command(self.get_clock().now().to_msg(), cmd)

    def _publish_command(self, stamp, q: np.ndarray) -> None:
        if self._cmd_pub is None or not np.all(np.isfinite(q)):
            return
        js = JointState()
        js.header.stamp = stamp
        js.name = list(ALL_JOINTS)
        js.position = [float(x) for x in q]
        self._cmd_pub.publish(js)

    def _publish_state(self, out, index: int) -> None:
        if self._state_pub is None:
            return
        f = self.core.classifier.last
        d = {"t": round(out.t, 6), "frame": index, "state": out.state.value, "mode": out.mode,
             "gesture": out.gesture.value, "gripper_closed": out.gripper_closed,
             "gripper": round(float(self.core.q[5]), 4), "arming": round(out.arming, 3),
             "pinch_ratio": round(f.pinch_ratio, 4) if f else None,
             "commanding": out.command is not None}
        if out.ik is not None:
            d.update(ik_error_mm=round(out.ik.error * 1000, 2), ik_iterations=out.ik.iterations)
        if out.target is not None:
            d["target"] = [round(float(x), 4) for x in out.target]
        self._state_pub.publish(String(data=json.dumps(d)))


def main(args=None) -> None:
    sys.exit(run(TeleopNode, args, events=True))  # no async callbacks: the EventsExecutor (node_tools.run)


if __name__ == "__main__":
    main()


__all__ = ["TeleopNode", "main"]
