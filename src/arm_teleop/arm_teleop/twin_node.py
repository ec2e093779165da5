"""``arm_twin``: the SO-101's MuJoCo digital twin as a ROS 2 lifecycle node.

Subscribes ``/arm/joint_commands`` (sensor_msgs/JointState, LATEST): each joint's angle becomes
its **position actuator's** ctrl, clamped to the compiled model's ctrlrange (gripper included);
a message with missing names or non-finite values is rejected (logged, counted) and changes
nothing. Physics steps in real time on a timer (``step_rate_hz`` Hz, each tick integrates the wall
time elapsed, at most 0.1 s). Publishes ``/arm_twin/joint_states`` (position, velocity, actuator
force) at ``publish_rate_hz`` and ``/diagnostics``. With ``render_rate_hz`` > 0 and ``record_dir`` set
it renders the scene's camera offscreen (``MUJOCO_GL=egl`` headless) and writes numbered JPEGs
plus ``frames.csv`` (frame, file, wall_time, sim_time, command_stamp) for the demo video.

Commands that stop arriving leave the arm where it was told to be (position servos hold); the
twin never invents motion. Deactivate/cleanup/shutdown release the renderer and recorder.
"""

from __future__ import annotations

import csv
import math
import os
import sys
import time

import mujoco
import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.lifecycle import State, TransitionCallbackReturn
from sensor_msgs.msg import JointState

from arm_teleop import topics
from arm_teleop.arm_model import ALL_JOINTS, ModelError, load_arm
from hand_common import contract
from hand_common.node_tools import SafeLifecycleNode, run
from hand_common.param_spec import ParamSpec

#: Every parameter; the not-live ones are read at configure (refused while configured).
PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("model_path", "", "MJCF scene ('' = arm_description's mjcf/scene.xml); read at configure"),
    ParamSpec("initial_keyframe", "rest", "keyframe the twin starts in"),
    ParamSpec("step_rate_hz", 100.0, "physics timer rate (Hz); each tick integrates the elapsed wall time", (10.0, 1000.0),
              live=True),
    ParamSpec("publish_rate_hz", 30.0, "joint state publication rate (Hz)", (1.0, 500.0), live=True),
    ParamSpec("render_rate_hz", 0.0, "offscreen render rate (Hz), 0 = off", (0.0, 30.0), live=True),
    ParamSpec("record_dir", "", "write rendered frames + frames.csv here ('' = do not record)"),
    ParamSpec("camera", "front", "scene camera to render"),
    ParamSpec("width_px", 640, "render width (px)", (64, 1920)),
    ParamSpec("height_px", 480, "render height (px)", (64, 1080)),
    ParamSpec("diagnostics_period_s", 1.0, "diagnostics period (s)", (0.1, 60.0), live=True),
)
#: Old names (before the unit-suffix rule, issue 25), refused with the new one.
RENAMED: dict[str, str] = {"step_rate": "step_rate_hz", "publish_rate": "publish_rate_hz",
                           "render_rate": "render_rate_hz", "width": "width_px", "height": "height_px",
                           "diagnostics_period": "diagnostics_period_s"}


class TwinNode(SafeLifecycleNode):
    def __init__(self, **kwargs):
        super().__init__(topics.TWIN_NODE, **kwargs)
        self.declare_params(PARAMS, renamed=RENAMED)  # live ones are read where used; the base refuses the others while configured
        self.arm = None
        self.data = None
        self._reset()

    def _reset(self) -> None:
        self._timers: list = []
        self._sub = None
        self._pubs: dict = {}
        self._renderer = None
        self._csv = None
        self._frames = 0
        self._cmd_stamp = float("nan")
        self._commands = 0
        self._rejected = 0
        self._last_step = None
        self._last_pub = 0.0
        self._last_render = 0.0

    def _p(self, name):
        return self.get_parameter(name).value

    def on_configure(self, state: State) -> TransitionCallbackReturn:
        try:
            from arm_description.paths import scene_path

            path = self._p("model_path") or str(scene_path())
            self.arm = load_arm(path)
            m = self.arm.model
            self.data = mujoco.MjData(m)
            k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, self._p("initial_keyframe"))
            if k < 0:
                raise ModelError(f"no keyframe '{self._p('initial_keyframe')}'")
            mujoco.mj_resetDataKeyframe(m, self.data, k)
            mujoco.mj_forward(m, self.data)
            if self._p("render_rate_hz") > 0:
                cam = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_CAMERA, self._p("camera"))
                if cam < 0:
                    raise ModelError(f"no camera '{self._p('camera')}'")
                m.vis.global_.offwidth = max(m.vis.global_.offwidth, self._p("width_px"))
                m.vis.global_.offheight = max(m.vis.global_.offheight, self._p("height_px"))
                self._renderer = mujoco.Renderer(m, self._p("height_px"), self._p("width_px"))
                self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
                self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
                self._cam = cam
                if self._p("record_dir"):
                    os.makedirs(self._p("record_dir"), exist_ok=True)
                    self._csv_file = open(os.path.join(self._p("record_dir"), "frames.csv"), "w", newline="")
                    self._csv = csv.writer(self._csv_file)
                    self._csv.writerow(["frame", "file", "wall_time", "sim_time", "command_stamp"])
        except (ModelError, ValueError, OSError, RuntimeError) as exc:
            self.get_logger().error(f"configure failed: {exc}")
            self._release()
            return TransitionCallbackReturn.FAILURE
        # joint states come from the physics timer (active only); /diagnostics also while inactive
        self._pubs = {"js": self.create_lifecycle_publisher(JointState, topics.TWIN_JOINT_STATES,
                                                            contract.qos(contract.STREAM)),
                      "diag": self.create_publisher(DiagnosticArray, contract.TOPIC_DIAGNOSTICS,
                                                    contract.qos(contract.STREAM))}
        self._timers.append(self.create_timer(self._p("diagnostics_period_s"), self._diagnostics))
        self.get_logger().info(f"configured: {path}, gripper ctrlrange [{self.arm.gripper_closed:.4f}, "
                               f"{self.arm.gripper_open:.4f}]")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        self._sub = self.create_subscription(JointState, topics.JOINT_COMMANDS, self._on_command,
                                             contract.qos(contract.LATEST))
        self._last_step = time.monotonic()
        self._timers.append(self.create_timer(1.0 / self._p("step_rate_hz"), self._tick))
        return super().on_activate(state)

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        if self._sub is not None:
            self.destroy_subscription(self._sub)
            self._sub = None
        for t in self._timers[1:]:
            self.destroy_timer(t)
        self._timers = self._timers[:1]
        return super().on_deactivate(state)

    def _release(self) -> None:
        """The release hook (cleanup, shutdown, error, failed configure): subscription, timers,
        publishers, renderer and recorder, model."""
        if self._sub is not None:
            self.destroy_subscription(self._sub)
        for t in self._timers:
            self.destroy_timer(t)
        if "js" in self._pubs:
            self.destroy_lifecycle_publisher(self._pubs["js"])
        if "diag" in self._pubs:
            self.destroy_publisher(self._pubs["diag"])
        if self._renderer is not None:
            self._renderer.close()
        if self._csv is not None:
            self._csv_file.close()
        self.arm = self.data = None
        self._reset()

    # --- commands, physics, output -----------------------------------------------------------------
    def _on_command(self, msg: JointState) -> None:
        d = dict(zip(msg.name, msg.position))
        missing = [j for j in ALL_JOINTS if j not in d]
        q = np.array([d.get(j, math.nan) for j in ALL_JOINTS])
        if missing or len(msg.name) != len(msg.position) or not np.all(np.isfinite(q)):
            self._rejected += 1
            self.get_logger().warning(f"command rejected: missing {missing} or non-finite values",
                                      throttle_duration_sec=5.0)
            return
        self.data.ctrl[self.arm.actuator] = np.clip(q, self.arm.lower, self.arm.upper)
        self._cmd_stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        self._commands += 1

    def _tick(self) -> None:
        if self.data is None:
            return
        now = time.monotonic()
        elapsed = min(now - self._last_step, 0.1)
        self._last_step = now
        m = self.arm.model
        for _ in range(int(round(elapsed / m.opt.timestep))):
            mujoco.mj_step(m, self.data)
        if now - self._last_pub >= 1.0 / self._p("publish_rate_hz"):
            self._last_pub = now
            js = JointState()
            js.header.stamp = self.get_clock().now().to_msg()
            js.name = list(ALL_JOINTS)
            js.position = [float(x) for x in self.data.qpos[self.arm.qpos_adr]]
            js.velocity = [float(x) for x in self.data.qvel[self.arm.dof_adr]]
            js.effort = [float(x) for x in self.data.actuator_force[self.arm.actuator]]
            self._pubs["js"].publish(js)
        rr = self._p("render_rate_hz")
        if self._renderer is not None and rr > 0 and now - self._last_render >= 1.0 / rr:
            self._last_render = now
            self._render()

    def _render(self) -> None:
        self._renderer.update_scene(self.data, camera=self._cam)
        rgb = self._renderer.render()
        if self._csv is not None:
            import cv2

            name = f"frame_{self._frames:06d}.jpg"
            cv2.imwrite(os.path.join(self._p("record_dir"), name), rgb[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, 90])
            self._csv.writerow([self._frames, name, f"{time.time():.6f}", f"{self.data.time:.6f}",
                                f"{self._cmd_stamp:.9f}"])
            self._csv_file.flush()
        self._frames += 1

    def _diagnostics(self) -> None:
        st = DiagnosticStatus(name=f"{topics.TWIN_NODE}: twin", hardware_id="mujoco")
        st.level = DiagnosticStatus.OK if self._rejected == 0 else DiagnosticStatus.WARN
        st.message = f"{self.lifecycle_state}, {self._commands} commands, {self._rejected} rejected"
        vals = {"commands": self._commands, "rejected": self._rejected, "frames_rendered": self._frames,
                "sim_time": f"{self.data.time:.3f}" if self.data is not None else "0"}
        st.values = [KeyValue(key=k, value=str(v)) for k, v in vals.items()]
        arr = DiagnosticArray(status=[st])
        arr.header.stamp = self.get_clock().now().to_msg()
        self._pubs["diag"].publish(arr)


def main(args=None) -> None:
    sys.exit(run(TwinNode, args, events=True))  # no async callbacks: the EventsExecutor (node_tools.run)


if __name__ == "__main__":
    main()
