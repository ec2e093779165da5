"""``hand_twin``: the MuJoCo twin of the tendon-driven hand as a ROS 2 lifecycle node.

Subscribes ``/hand/target_flexions`` (sensor_msgs/JointState, flexion per finger, QoS LATEST);
each finger's flexion becomes a flexor tendon *length* target (see ``targets.py``). Physics runs in
its own thread at the model timestep in real time; rendering in another thread at ≤ 30 Hz.

Publishes (QoS STREAM unless noted):

- ``/hand_twin/joint_states`` (sensor_msgs/JointState): the 15 joints (URDF names), measured
  position (rad), velocity (rad/s) and effort = flexor actuator torque on the joint (N·m);
- ``/hand_twin/tendons`` (sensor_msgs/JointState): names ``{finger}_flexor``, position = flexor length
  (m), velocity (m/s), effort = flexor tension (N, ≥ 0 pulling);
- ``/diagnostics`` (diagnostic_msgs/DiagnosticArray): real-time factor, command age, watchdog state,
  resets, render rate;
- ``/hand_twin/image`` (sensor_msgs/Image rgb8, QoS IMAGE) when ``publish_image`` and rendering.

Two hands (``hands: two``): the scene holds both hands (names prefixed ``left_``/``right_``,
default hand_description's ``mjcf/scene_two_hands.xml``); each hand follows its own operator
hand's ``/hand/<side>/target_flexions`` with its own watchdog (a hand whose commands stop goes to
the safe pose alone) and publishes ``/hand_twin/<side>/joint_states`` and
``/hand_twin/<side>/tendons`` (the same names and contents as the single-hand topics). One physics
thread steps the whole scene.

Every command passes a per-finger deadband (``command_deadband``, hand_tracking/deadband.py) before
it reaches the physics: a value within the tolerance of the last applied one is not re-applied.

Lifecycle: configure loads the model, sizes gains, creates publishers, the renderer (its own
thread/GL context), recorder and viewer; activate subscribes and starts physics; deactivate stops
physics (state kept); cleanup releases everything; shutdown works from any state.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.lifecycle import State, TransitionCallbackReturn
from sensor_msgs.msg import Image, JointState

from hand_common import contract
from hand_common.deadband import FlexionDeadband
from hand_common.node_tools import SafeLifecycleNode, run

from . import interface as iface
from .loop import PhysicsLoop
from .model import ModelContractError, default_two_hands_scene_path
from .params import PARAMS, RENAMED, check_value, config_from, renderer_problem
from .render import FrameMeta, FrameRecorder, RenderConfig, RenderWorker
from .sim import SETTLE_5PCT_OMEGA_T, TwinSim, TwinState, build_twin
from .watchdog import CommandWatchdog, Decision, HandsWatchdog, WatchdogState

#: sensor_msgs/JointState: flexor tendons (length m, velocity m/s, effort = tension N).
TOPIC_TWIN_TENDONS = "/hand_twin/tendons"
TENDON_NAMES = tuple(f"{f}_flexor" for f in contract.FINGER_NAMES)


class TwinNode(SafeLifecycleNode):
    def __init__(self, **kwargs):
        super().__init__(contract.TWIN_NODE, **kwargs)
        self.declare_params(PARAMS, renamed=RENAMED)
        self._reset_resources()

    def _reset_resources(self) -> None:
        self.cfg = None
        self.build = None
        self.sim: TwinSim | None = None
        self.loop: PhysicsLoop | None = None
        self.render_worker: RenderWorker | None = None
        self.recorder: FrameRecorder | None = None
        self.viewer = None
        self._pubs: list = []
        self._subs: list = []
        self._sides: tuple[str, ...] = ()  # hands: two → contract.HAND_SIDES (hand order of the sim)
        self._side_pubs: list[tuple] = []  # per side: (joint states, tendons)
        self._deadbands: list[FlexionDeadband] = []
        self._diag_timer = None
        self._rejected = 0
        self._errors_since_report: list[str] = []
        self._last_render_frames = 0
        self._last_render_time = 0.0
        self._last_diag_clock: float | None = None

    # --- parameters --------------------------------------------------------------------------------
    def check_parameters(self, changes, values) -> str | None:
        """On-set: array lengths and flexion ranges; a live render_rate_hz > 0 needs a renderer."""
        for name, value in changes.items():
            if why := check_value(name, value) or (
                    self.configured and renderer_problem(name, value, self.render_worker is not None)):
                return why
        return None

    def apply_parameters(self, changes) -> None:
        """Post-set: live parameters act on the running loop (configure-time ones wait for configure)."""
        if self.loop is None:
            return
        for name, value in changes.items():
            if name == "command_timeout_s":
                with self.loop.wd_lock:
                    self.loop.watchdog.set_timeout(float(value))
                    self.loop.wd_lock.notify_all()
            elif name == "safe_flexions":
                with self.loop.wd_lock:
                    self.loop.watchdog.set_safe_flexions(list(value))
            elif name == "command_deadband":
                with self.loop.wd_lock:
                    for db in self._deadbands:
                        db.tolerance = FlexionDeadband.check(list(value))
            elif name == "reference_settle_time_s":
                with self.loop.lock:
                    self.sim.omega_ref = (SETTLE_5PCT_OMEGA_T / value) if value > 0 else 0.0
            elif name == "publish_rate_hz":
                self.loop.set_publish_rate(float(value))
            elif name == "render_rate_hz" and self.render_worker is not None:
                if value > 0:
                    self.render_worker.set_rate(float(value))
                    if self.lifecycle_state == "active":
                        self.render_worker.enabled.set()
                else:
                    self.render_worker.enabled.clear()

    # --- lifecycle ---------------------------------------------------------------------------------
    def on_configure(self, state: State) -> TransitionCallbackReturn:
        try:
            cfg = config_from(self.param_values())
            two = cfg.hands == "two"
            sides = contract.HAND_SIDES if two else ()
            path = cfg.model_path or (default_two_hands_scene_path() if two else None)
            build = build_twin(path, camera=cfg.camera, integrator=cfg.integrator,
                               settle_time=cfg.gain_settle_time_s, damping_ratio=cfg.gain_damping_ratio,
                               reach=cfg.gain_reach, reference_settle_time=cfg.reference_settle_time_s,
                               prefixes=tuple(f"{s}_" for s in sides) if two else ("",))
        except (ValueError, ModelContractError) as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.cfg, self.build = cfg, build
        self._sides = sides
        self._deadbands = [FlexionDeadband(cfg.command_deadband) for _ in (sides or ("",))]
        log = self.get_logger()
        log.info(f"model {build.hand.path}: timestep {build.hand.timestep * 1e3:.2f} ms, integrator "
                 f"{cfg.integrator}; flexor lengths open {np.round(build.tmap.l_open * 1e3, 2).tolist()} mm, "
                 f"closed {np.round(build.tmap.l_closed * 1e3, 2).tolist()} mm")
        for k, report in enumerate(build.gain_reports or (build.gains,)):
            for line in report.lines():
                (log.warning if line.startswith("WARNING") else log.info)(f"{sides[k]} hand: {line}" if sides else line)
        reported = {w for r in (build.gain_reports or (build.gains,)) for w in r.warnings}
        for note in build.notes:
            if note not in reported:
                log.warning(note)
        self.sim = build.sim()
        watchdog = (HandsWatchdog(cfg.command_timeout_s, cfg.safe_flexions, len(sides)) if sides
                    else CommandWatchdog(cfg.command_timeout_s, cfg.safe_flexions))
        self.loop = PhysicsLoop(self.sim, watchdog,
                                publish_rate=cfg.publish_rate_hz, on_sample=self._publish_sample,
                                on_event=self._on_event, max_lag=cfg.max_lag_s)
        # Everything is published only while active (physics thread, render worker and diagnostics
        # timer run between activate and deactivate): lifecycle publishers.
        stream = contract.qos(contract.STREAM)
        pub = self.create_lifecycle_publisher
        if sides:
            self._side_pubs = [(pub(JointState, contract.side_topic(contract.TOPIC_TWIN_JOINT_STATES, s), stream),
                                pub(JointState, contract.side_topic(TOPIC_TWIN_TENDONS, s), stream))
                               for s in sides]
            self.pub_joints, self.pub_tendons = self._side_pubs[0]
        else:
            self.pub_joints = pub(JointState, contract.TOPIC_TWIN_JOINT_STATES, stream)
            self.pub_tendons = pub(JointState, TOPIC_TWIN_TENDONS, stream)
            self._side_pubs = [(self.pub_joints, self.pub_tendons)]
        self.pub_diag = pub(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, stream)
        self._pubs = [p for pair in self._side_pubs for p in pair] + [self.pub_diag]
        self.pub_image = None
        if cfg.renders and cfg.publish_image:
            self.pub_image = pub(Image, contract.TOPIC_TWIN_IMAGE, contract.qos(contract.IMAGE))
            self._pubs.append(self.pub_image)
        try:
            if cfg.record_dir and cfg.render_rate_hz > 0:
                self.recorder = FrameRecorder(cfg.record_dir, cfg.record_format, flexion_names=tuple(
                    f"{s}_{f}" for s in sides for f in contract.FINGER_NAMES) if sides else None)
                log.info(f"recording frames to {cfg.record_dir}")
            if cfg.renders:
                self.render_worker = RenderWorker(
                    build.hand, RenderConfig(cfg.image_width_px, cfg.image_height_px, cfg.camera, cfg.shadows,
                                             cfg.reflections),
                    cfg.render_rate_hz, snapshot=self.loop.snapshot, sink=self._on_frame,
                    on_error=lambda msg: self.get_logger().error(msg, throttle_duration_sec=5.0))
                self.render_worker.start()
        except (OSError, RuntimeError, ValueError) as exc:
            log.error(f"configure failed: {exc}")
            self._release()
            return TransitionCallbackReturn.FAILURE
        if cfg.viewer:
            self._open_viewer()
        return TransitionCallbackReturn.SUCCESS

    def _open_viewer(self) -> None:
        if not os.environ.get("DISPLAY"):
            self.get_logger().warning("viewer requested but DISPLAY is not set: running headless")
            return
        try:
            import mujoco.viewer

            self.viewer = mujoco.viewer.launch_passive(self.build.hand.model, self.sim.data,
                                                       show_left_ui=False, show_right_ui=False)
        except Exception as exc:  # noqa: BLE001 - no GLFW/display: stay headless, say why
            self.get_logger().warning(f"viewer unavailable ({type(exc).__name__}: {exc}): running headless")
            self.viewer = None
            return
        viewer = self.viewer

        def sync() -> None:  # called by the physics thread with the sim lock held
            if viewer.is_running():
                viewer.sync()

        self.loop.viewer_sync = sync

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        # enable the lifecycle publishers first: the physics thread publishes from its first step
        ret = super().on_activate(state)
        if ret != TransitionCallbackReturn.SUCCESS:
            return ret
        latest = contract.qos(contract.LATEST)
        topics = [contract.side_topic(contract.TOPIC_TARGET_FLEXIONS, s) for s in self._sides] \
            or [contract.TOPIC_TARGET_FLEXIONS]
        self._subs = [self.create_subscription(JointState, topic, lambda msg, k=k: self._on_command(msg, k), latest)
                      for k, topic in enumerate(topics)]
        self._diag_timer = self.create_timer(1.0 / self.cfg.diagnostics_rate_hz, self._publish_diagnostics)
        self.loop.start()
        if self.render_worker is not None and self.get_parameter("render_rate_hz").value > 0:
            self.render_worker.enabled.set()
        self.get_logger().info(f"active: following {', '.join(topics)}, "
                               f"command_timeout_s {self.loop.watchdog.timeout:.3f} s")
        return ret

    def _stop_running(self) -> None:
        if self.render_worker is not None:
            self.render_worker.enabled.clear()
        if self.loop is not None:
            self.loop.stop()
        for sub in self._subs:
            self.destroy_subscription(sub)
        self._subs = []
        if self._diag_timer is not None:
            self.destroy_timer(self._diag_timer)
            self._diag_timer = None

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        self._stop_running()
        return super().on_deactivate(state)

    def _release(self) -> None:
        """The release hook (cleanup, shutdown, error, failed configure): physics and render
        threads, recorder, viewer, publishers, model."""
        self._stop_running()
        if self.render_worker is not None:
            self.render_worker.close()
        if self.recorder is not None:
            self.recorder.close()
        if self.viewer is not None:
            try:
                self.viewer.close()
            except Exception as exc:  # noqa: BLE001
                self.get_logger().warning(f"viewer close: {exc}")
        for pub in self._pubs:
            self.destroy_lifecycle_publisher(pub)
        self._reset_resources()

    # --- inputs ------------------------------------------------------------------------------------
    def _on_command(self, msg: JointState, hand: int = 0) -> None:
        topic = (contract.side_topic(contract.TOPIC_TARGET_FLEXIONS, self._sides[hand]) if self._sides
                 else contract.TOPIC_TARGET_FLEXIONS)
        try:
            values = contract.parse_flexions(msg.name, msg.position)
        except contract.FlexionContractError as exc:
            self._rejected += 1
            self.get_logger().warning(f"rejected {topic} message (not applied): {exc}", throttle_duration_sec=1.0)
            return
        flexions = np.array([values[f] for f in contract.FINGER_NAMES])
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        if self.loop is None:
            return
        with self.loop.wd_lock:  # the deadband's tolerance may change live (parameter callback); not the
            # sim lock: a command never waits for a physics step
            flexions, _ = self._deadbands[hand].offer(flexions)
        self.loop.command(flexions, stamp, hand=hand if self._sides else None)

    # --- outputs (physics / render threads) --------------------------------------------------------
    def _publish_sample(self, s: TwinState, decision: Decision) -> None:
        stamp = self.get_clock().now().to_msg()
        nj, nf = len(contract.JOINT_NAMES), len(contract.FINGER_NAMES)
        for k, (pub_joints, pub_tendons) in enumerate(self._side_pubs):  # hand by hand in the sim's arrays
            j, f = slice(k * nj, (k + 1) * nj), slice(k * nf, (k + 1) * nf)
            js = JointState()
            js.header.stamp = stamp
            js.name = list(contract.JOINT_NAMES)
            js.position = s.position[j].tolist()
            js.velocity = s.velocity[j].tolist()
            js.effort = s.effort[j].tolist()
            ts = JointState()
            ts.header.stamp = stamp
            ts.name = list(TENDON_NAMES)
            ts.position = s.tendon_length[f].tolist()
            ts.velocity = s.tendon_velocity[f].tolist()
            ts.effort = s.tension[f].tolist()
            try:
                pub_joints.publish(js)
                pub_tendons.publish(ts)
            except Exception as exc:  # noqa: BLE001 - context shutting down under us
                self.get_logger().debug(f"publish skipped: {exc}")

    def _on_event(self, level: str, message: str) -> None:
        log = self.get_logger()
        if level == "error":
            self._errors_since_report.append(message)
            log.error(message)
        elif level == "warn":
            log.warning(message)
        else:
            log.info(message)

    def _on_frame(self, rgb: np.ndarray, meta: FrameMeta) -> None:
        if self.pub_image is not None:
            img = Image()
            img.header.stamp = self.get_clock().now().to_msg()
            img.header.frame_id = self.cfg.camera
            img.height, img.width = int(rgb.shape[0]), int(rgb.shape[1])
            img.encoding = "rgb8"
            img.is_bigendian = 0
            img.step = int(rgb.shape[1] * 3)
            img.data = rgb.tobytes()
            self.pub_image.publish(img)
        if self.recorder is not None:
            self.recorder.write(rgb, meta)

    def _publish_diagnostics(self) -> None:
        if self.loop is None:
            return
        st = self.loop.stats()
        now = self.get_clock().now()
        errors, self._errors_since_report = self._errors_since_report, []
        if errors or not self.loop.running:
            level = DiagnosticStatus.ERROR
            message = errors[-1] if errors else "physics thread stopped"
        elif st.watchdog is not WatchdogState.OK:
            level = DiagnosticStatus.WARN
            message = ("no flexion command received yet: safe pose" if st.watchdog is WatchdogState.WAITING
                       else f"command stale ({st.command_age:.2f} s > {self.loop.watchdog.timeout:.2f} s): safe pose")
        else:
            level = DiagnosticStatus.OK
            message = "following flexion commands"
        render_fps = float("nan")
        render_ms = float("nan")
        rw = self.render_worker
        t = now.nanoseconds * 1e-9
        if rw is not None:
            frames, rtime = rw.frames, rw.render_time
            if self._last_diag_clock is not None and t > self._last_diag_clock:
                df = frames - self._last_render_frames
                render_fps = df / (t - self._last_diag_clock)
                render_ms = (rtime - self._last_render_time) / df * 1e3 if df else float("nan")
            self._last_render_frames, self._last_render_time = frames, rtime
        self._last_diag_clock = t

        def fmt(v: float) -> str:
            return f"{v:.4f}" if math.isfinite(v) else str(v)

        values = {
            "real_time_factor": fmt(st.real_time_factor),
            iface.KEY_RTF_TOTAL: fmt(st.real_time_factor_total),
            "max_lag_ms": fmt(st.max_lag * 1e3),
            "lag_p99_ms": fmt(st.lag_p99 * 1e3),
            "dropped_time_s": fmt(st.dropped_time),
            "physics_busy_fraction": fmt(st.busy_fraction),
            "command_age_s": fmt(st.command_age),
            iface.KEY_COMMAND_RECEIVED_AT: f"{st.command_received_wall:.6f}",
            "command_timeout_s": fmt(self.loop.watchdog.timeout),
            iface.KEY_WATCHDOG: st.watchdog.value,
            "commands_received": str(st.commands),
            "commands_rejected": str(self._rejected),
            "command_values_deadbanded": str(sum(db.suppressed for db in self._deadbands)),
            "resets": str(st.resets),
            "last_reset_reason": st.last_reset_reason or "",
            "sim_time_s": fmt(st.sim_time),
            "render_fps": fmt(render_fps),
            "render_ms": fmt(render_ms),
            "frames_recorded": str(self.recorder.count if self.recorder is not None else 0),
            "model": self.build.hand.path,
        }
        if isinstance(self.loop.watchdog, HandsWatchdog):
            for side, w in zip(self._sides, self.loop.watchdog.hands):
                values[f"watchdog_{side}"] = w.state.value
                values[f"command_age_{side}_s"] = fmt(w.age(self.loop.clock()))
        status = DiagnosticStatus(level=level, name=f"{contract.TWIN_NODE}: physics", message=message,
                                  hardware_id="mujoco",
                                  values=[KeyValue(key=k, value=v) for k, v in values.items()])
        arr = DiagnosticArray()
        arr.header.stamp = now.to_msg()
        arr.status = [status]
        self.pub_diag.publish(arr)


def main(args=None) -> None:
    sys.exit(run(TwinNode, args, events=True))  # no async callbacks: the EventsExecutor (node_tools.run)


if __name__ == "__main__":
    main()
