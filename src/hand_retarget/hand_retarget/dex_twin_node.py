"""``dex_twin``: the dexterous hand's MuJoCo twin (lifecycle node, a thin sibling of hand_twin).

Subscribes ``/dex_hand/joint_commands`` (sensor_msgs/JointState, the 20 URDF names in any order,
rad; QoS LATEST): a message with missing, unknown or duplicate names, or a non-finite value, is
rejected with a throttled WARN and never applied. Each joint's MuJoCo ``position`` actuator tracks
its command (:class:`hand_retarget.dex_sim.DexSim`). Physics runs in its own thread at the model
timestep in real time (hand_twin_mujoco's :class:`~hand_twin_mujoco.watchdog.RealTimePacer`);
without a command for ``command_timeout_s`` the command becomes the open pose.

Publishes ``/dex_twin/joint_states`` (sensor_msgs/JointState, measured position rad, velocity
rad/s, effort = actuator torque N m; QoS STREAM) at ``publish_rate_hz``, ``/diagnostics``, and with
``render_rate_hz`` > 0 ``/dex_twin/image`` (rgb8, QoS IMAGE) through hand_twin_mujoco's render worker.
"""

from __future__ import annotations

import math
import sys
import threading
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.lifecycle import State, TransitionCallbackReturn
from sensor_msgs.msg import Image, JointState

from hand_common import contract
from hand_common.node_tools import SafeLifecycleNode, run
from hand_twin_mujoco.watchdog import RealTimePacer

from .dex_sim import DexModelError, DexSim
from .params import TWIN_PARAMS, TWIN_RENAMED, check_value
from .topics import DEX_TWIN_NODE, TOPIC_JOINT_COMMANDS, TOPIC_TWIN_IMAGE, TOPIC_TWIN_JOINT_STATES


def parse_command(names, positions, expected: tuple[str, ...]) -> np.ndarray:
    """A joint command message -> (n,) in ``expected`` order; ValueError naming the problem."""
    if len(names) != len(positions):
        raise ValueError(f"{len(names)} names but {len(positions)} positions")
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate names in {list(names)}")
    unknown = sorted(set(names) - set(expected))
    if unknown:
        raise ValueError(f"unknown joints {unknown}")
    missing = [n for n in expected if n not in names]
    if missing:
        raise ValueError(f"missing joints {missing}")
    index = {n: i for i, n in enumerate(names)}
    q = np.array([float(positions[index[n]]) for n in expected])
    if not np.all(np.isfinite(q)):
        raise ValueError(f"non-finite command for {[n for n, v in zip(expected, q) if not math.isfinite(v)]}")
    return q


class _Hand:
    """What hand_twin_mujoco's renderer needs from a model: ``.model``."""

    def __init__(self, model):
        self.model = model


class DexTwinNode(SafeLifecycleNode):
    def __init__(self, **kwargs):
        super().__init__(DEX_TWIN_NODE, **kwargs)
        self.declare_params(TWIN_PARAMS, annotate=True, renamed=TWIN_RENAMED)  # "Read at configure." in the text
        self._reset()

    def _reset(self) -> None:
        self.sim: DexSim | None = None
        self.lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop_evt = threading.Event()
        self._pubs: list = []
        self._sub = None
        self._diag_timer = None
        self._render = None
        self._command_time = -math.inf
        self._commands = self._rejected = 0
        self._events: list[str] = []
        self.pacer: RealTimePacer | None = None

    def _param(self, name: str):
        return self.get_parameter(name).value

    # --- lifecycle -------------------------------------------------------------------------------
    def on_configure(self, state: State) -> TransitionCallbackReturn:
        log = self.get_logger()
        try:
            for p in TWIN_PARAMS:
                reason = check_value(TWIN_PARAMS, p.name, self._param(p.name))
                if reason:
                    raise ValueError(reason)
            if self._param("robot"):
                from .robot import load_robot

                robot = load_robot(self._param("robot"), "dexpilot", self._param("robot_dir") or None,
                                   self._param("robot_urdf") or None)
                sim = DexSim.for_urdf(robot.urdf_path, robot.joint_names)
                for note in sim.warnings:
                    log.warning(note)
            else:
                from hand_description import dex

                desc = dex.load(self._param("description_path") or None)
                sim = DexSim(desc.joint_names, self._param("model_path") or None)
        except (ValueError, OSError, DexModelError) as exc:
            log.error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.sim = sim
        self.pacer = RealTimePacer(sim.timestep, max_lag=float(self._param("max_lag_s")))
        # physics thread, render worker and diagnostics timer run only while active
        stream = contract.qos(contract.STREAM)
        self.pub_joints = self.create_lifecycle_publisher(JointState, TOPIC_TWIN_JOINT_STATES, stream)
        self.pub_diag = self.create_lifecycle_publisher(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, stream)
        self._pubs = [self.pub_joints, self.pub_diag]
        rate = float(self._param("render_rate_hz"))
        if rate > 0:
            try:
                from hand_twin_mujoco.render import RenderConfig, RenderWorker

                self.pub_image = self.create_lifecycle_publisher(Image, TOPIC_TWIN_IMAGE, contract.qos(contract.IMAGE))
                self._pubs.append(self.pub_image)
                self._render = RenderWorker(
                    _Hand(sim.model), RenderConfig(int(self._param("image_width_px")), int(self._param("image_height_px")),
                                                   self._param("camera")),
                    rate, snapshot=self._snapshot, sink=self._on_frame,
                    on_error=lambda msg: self.get_logger().error(msg, throttle_duration_sec=5.0))
                self._render.start()
            except (RuntimeError, ValueError) as exc:
                log.error(f"configure failed: {exc}")
                self._release()
                return TransitionCallbackReturn.FAILURE
        log.info(f"model {sim.path}: {len(sim.joint_names)} position-controlled joints, timestep "
                 f"{sim.timestep * 1e3:.1f} ms")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        # enable the lifecycle publishers first: the physics thread publishes from its first step
        ret = super().on_activate(state)
        if ret != TransitionCallbackReturn.SUCCESS:
            return ret
        self._sub = self.create_subscription(JointState, TOPIC_JOINT_COMMANDS, self._on_command,
                                             contract.qos(contract.LATEST))
        self._diag_timer = self.create_timer(1.0 / float(self._param("diagnostics_rate_hz")), self._publish_diagnostics)
        self._stop_evt.clear()
        self.pacer.begin(time.monotonic())
        self._thread = threading.Thread(target=self._run, name="dex_twin_physics", daemon=True)
        self._thread.start()
        if self._render is not None:
            self._render.enabled.set()
        return ret

    def _stop(self) -> None:
        if self._render is not None:
            self._render.enabled.clear()
        self._stop_evt.set()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None
        if self._sub is not None:
            self.destroy_subscription(self._sub)
            self._sub = None
        if self._diag_timer is not None:
            self.destroy_timer(self._diag_timer)
            self._diag_timer = None

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        self._stop()
        return super().on_deactivate(state)

    def _release(self) -> None:
        """The release hook (cleanup, shutdown, error, failed configure): threads, renderer, publishers."""
        self._stop()
        if self._render is not None:
            self._render.close()
        for p in self._pubs:
            self.destroy_lifecycle_publisher(p)
        self._reset()

    # --- commands --------------------------------------------------------------------------------
    def _on_command(self, msg: JointState) -> None:
        if self.sim is None:
            return
        try:
            q = parse_command(msg.name, msg.position, self.sim.joint_names)
        except ValueError as exc:
            self._rejected += 1
            self.get_logger().warning(f"rejected {TOPIC_JOINT_COMMANDS} message (not applied): {exc}",
                                      throttle_duration_sec=1.0)
            return
        with self.lock:
            self.sim.set_command(q)
            self._command_time = time.monotonic()
            self._commands += 1

    # --- physics thread --------------------------------------------------------------------------
    def _run(self) -> None:
        next_pub = time.monotonic()
        stale = True
        try:
            while not self._stop_evt.is_set():
                now = time.monotonic()
                with self.lock:
                    timed_out = now - self._command_time > float(self._param("command_timeout_s"))
                    if timed_out and not stale:
                        self._events.append("command timeout: open pose")
                        self.get_logger().warning("no joint command within command_timeout_s: open pose")
                    if timed_out:
                        self.sim.set_command(np.zeros(len(self.sim.joint_names)))
                    stale = timed_out
                    n = self.pacer.due(now)
                    reason = self.sim.step(n)
                    self.pacer.done(n, now)
                    sample = self.sim.state() if now >= next_pub else None
                if reason:
                    self._events.append(f"physics reset: {reason}")
                    self.get_logger().error(f"physics unstable ({reason}): reset to keyframe 'open'")
                if sample is not None:
                    next_pub = max(next_pub + 1.0 / float(self._param("publish_rate_hz")), now)
                    self._publish_state(sample)
                wake = min(self.pacer.next_due(), next_pub)
                self._stop_evt.wait(max(wake - time.monotonic(), 0.0005))
        except Exception as exc:  # noqa: BLE001 - report, never die silently
            self._events.append(f"physics loop stopped: {exc}")
            self.get_logger().error(f"physics loop stopped: {type(exc).__name__}: {exc}")

    def _publish_state(self, s) -> None:
        js = JointState()
        js.header.stamp = self.get_clock().now().to_msg()
        js.name = list(self.sim.joint_names)
        js.position = s.position.tolist()
        js.velocity = s.velocity.tolist()
        js.effort = s.effort.tolist()
        try:
            self.pub_joints.publish(js)
        except Exception as exc:  # noqa: BLE001 - context shutting down under us
            self.get_logger().debug(f"publish skipped: {exc}")

    # --- rendering (render thread) ---------------------------------------------------------------
    def _snapshot(self, data):
        from hand_twin_mujoco.render import FrameMeta

        with self.lock:
            self.sim.copy_state_into(data)
            return FrameMeta(time.time(), self.sim.time, float("nan"), float("nan"), (), "")

    def _on_frame(self, rgb, meta) -> None:
        img = Image()
        img.header.stamp = self.get_clock().now().to_msg()
        img.header.frame_id = str(self._param("camera"))
        img.height, img.width = int(rgb.shape[0]), int(rgb.shape[1])
        img.encoding = "rgb8"
        img.step = int(rgb.shape[1] * 3)
        img.data = rgb.tobytes()
        self.pub_image.publish(img)

    def _publish_diagnostics(self) -> None:
        if self.sim is None:
            return
        events, self._events = self._events, []
        age = time.monotonic() - self._command_time
        alive = self._thread is not None and self._thread.is_alive()
        if not alive or any("reset" in e or "stopped" in e for e in events):
            level, message = DiagnosticStatus.ERROR, (events[-1] if events else "physics thread stopped")
        elif age > float(self._param("command_timeout_s")):
            level, message = DiagnosticStatus.WARN, "no fresh joint command: open pose"
        else:
            level, message = DiagnosticStatus.OK, "following joint commands"
        values = {"real_time_factor": f"{self.pacer.real_time_factor():.4f}",
                  "dropped_time_s": f"{self.pacer.dropped_time:.4f}", "command_age_s": f"{age:.3f}",
                  "commands_received": str(self._commands), "commands_rejected": str(self._rejected),
                  "resets": str(self.sim.resets), "sim_time_s": f"{self.sim.time:.3f}", "model": self.sim.path}
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        arr.status = [DiagnosticStatus(level=level, name=f"{DEX_TWIN_NODE}: physics", message=message,
                                       hardware_id="mujoco",
                                       values=[KeyValue(key=k, value=v) for k, v in values.items()])]
        self.pub_diag.publish(arr)


def main(args=None) -> None:
    sys.exit(run(DexTwinNode, args, events=True))  # no async callbacks: the EventsExecutor (node_tools.run)


if __name__ == "__main__":
    main()
