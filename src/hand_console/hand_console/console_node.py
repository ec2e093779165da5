"""``hand_console``: the operator console lifecycle node, a local web page served with viser.

What the page shows and does (issue 23): the tracker's camera (``/hand/image_preview``, downscaled
and rate-limited by the tracker, published only while someone subscribes) with the 21 landmarks of
``/hand/landmarks``, handedness and the quality gate's verdict; per-digit bars and a 10 s plot of
``/hand/target_flexions``; the active profile's URDF(s) driven by their joint states (mimic joints
honoured by yourdfpy); figures from ``/diagnostics`` (:mod:`hand_console.keys`); guided calibration
(``/hand_tracker/calibrate`` open then fist, the windows before/after, undo); sliders for the
tracker's live parameters (``set_parameters``; a refusal shows the node's reason).

The hot path stays sacred: every data subscription is best-effort keep-last 1
(``contract.VIEW``), callbacks only store the newest message (:class:`~hand_console.state.LatestSlot`,
replaced ones counted as dropped), and a render thread draws at most ``render_rate_hz`` (≤ 15 Hz)
and only while a browser is connected. Every data topic (the preview, landmarks, flexions,
diagnostics, the robots' joint states, the twin's picture, the Kapandji and arm topics) is
subscribed only while a browser is connected: with no page open the console has no subscription
at all, so no publisher sends it anything and it runs no Python per message (the tracker
downscales and encodes its preview only while someone subscribes). A robot's pose is sent to the
page at most ``robot_rate_hz`` times a second and only when it moved (each pose sent makes the
browser draw its 3D scene again). Service calls run on viser's threads, never the executor's.

Lifecycle: ``configure`` starts the web server (binds ``host``, 127.0.0.1 by default; another host
needs ``allow_remote: true`` and prints a warning) and loads the URDFs; ``activate`` starts the
render thread (which subscribes while a page is open); ``deactivate`` stops it and unsubscribes;
``cleanup`` stops the server.

Run: ``ros2 run hand_console console --ros-args -p profile:=sim`` then configure/activate (the
launch files' ``console:=true`` and the runner's ``--console`` do this), or replay a recorded run
without ROS: ``ros2 run hand_console console --bag out/sim_bag`` (see :mod:`hand_console.replay`).
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from hand_msgs.msg import HandLandmarksArray
from hand_msgs.srv import Calibrate
from rcl_interfaces.msg import Parameter, ParameterType
from rcl_interfaces.srv import DescribeParameters, GetParameters, ListParameters, SetParametersAtomically
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.lifecycle import State, TransitionCallbackReturn
from sensor_msgs.msg import CompressedImage, Image, JointState
from std_msgs.msg import String

from hand_common import contract
from hand_common.node_tools import SafeLifecycleNode, run
from hand_common.param_spec import ParamSpec
from hand_console import keys
from hand_console.layout import blank_frame, decode_jpeg_rgb, draw_landmarks
from hand_console.page import ConsolePage, Controls, check_host, url
from hand_console.robots import ROBOT_VIEWS, UrdfPose, image_rgb, pose_moved, robot_panel, robot_views
from hand_console.state import (
    DEFAULT_RENDER_HZ,
    MAX_RENDER_HZ,
    PLOT_RATE_HZ,
    CalibrationLog,
    FlexionHistory,
    HandInfo,
    LatencyWindow,
    LatestSlot,
    RenderClock,
    SafePoseCounter,
    SliderSpec,
    arm_rows,
    figures,
    find_status,
    gate_view,
    kapandji_rows,
    markdown_table,
    servo_rows,
    slider_specs,
    update_trips,
)

#: The tracker parameters offered as sliders (regular expressions, in this order): the finger
#: windows, then the 1€ filter.
SLIDER_PATTERNS = (r"(thumb|index|middle|ring|pinky)_(straight|curled)_angle", r"filter_min_cutoff_hz",
                   r"filter_beta")
#: A robot's configuration is sent to the page again only when a joint moved more than this, rad
#: (or m): a still robot costs the browser no redraw of its 3D scene.
POSE_TOLERANCE = 1e-3
#: Default of ``robot_rate_hz``: robot poses sent to the page per second at most (a pose costs the
#: console ~5 ms of CPU in ``ViserUrdf.update_cfg`` and the browser a redraw of its 3D scene).
DEFAULT_ROBOT_RATE_HZ = 5.0
#: The finger-window parameters read before/after a calibration (and set back by undo).
WINDOW_PATTERN = r"(thumb|index|middle|ring|pinky)_(straight|curled)_angle|joint_(straight|curled)_angles"

PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("host", "127.0.0.1", "Address the web server binds. Anything but the loopback address needs "
              "allow_remote: true (anyone who reaches the page can recalibrate and move the robot)."),
    ParamSpec("port", 8080, "TCP port of the web page.", range=(1, 65535)),
    ParamSpec("allow_remote", False, "Allow a host other than 127.0.0.1 (a warning is printed)."),
    ParamSpec("profile", "sim", "Bringup profile whose robot(s) the page shows: " + ", ".join(sorted(ROBOT_VIEWS)),
              choices=tuple(sorted(ROBOT_VIEWS))),
    ParamSpec("render_rate_hz", DEFAULT_RENDER_HZ, "Most renders of the page per second, Hz (at most 15).",
              range=(0.5, MAX_RENDER_HZ), live=True),
    ParamSpec("robot_rate_hz", DEFAULT_ROBOT_RATE_HZ, "Most robot poses sent to the page per second, Hz "
              "(at most render_rate_hz: a pose is sent by a render).", range=(0.5, MAX_RENDER_HZ), live=True),
    ParamSpec("tracker_node", contract.TRACKER_NODE, "Name of the tracker node (calibration, parameters)."),
    ParamSpec("calibration_duration_s", 1.0, "Capture window of each calibration pose, s of media time.",
              range=(0.1, 30.0), live=True),
    ParamSpec("service_timeout_s", 10.0, "Longest wait for a parameter service answer, s.", range=(0.5, 120.0),
              live=True),
)


def _hand_infos(msg: HandLandmarksArray) -> list[HandInfo]:
    import numpy as np

    return [HandInfo(h.handedness, float(h.handedness_score), bool(h.accepted), float(h.quality), h.rejection,
                     np.array([(p.x, p.y) for p in h.image_landmarks], float)) for h in msg.hands]


def _stamp_ns(stamp) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def _pvalue(pv) -> Any:
    t = pv.type
    return {ParameterType.PARAMETER_BOOL: lambda: pv.bool_value,
            ParameterType.PARAMETER_INTEGER: lambda: pv.integer_value,
            ParameterType.PARAMETER_DOUBLE: lambda: pv.double_value,
            ParameterType.PARAMETER_STRING: lambda: pv.string_value,
            ParameterType.PARAMETER_DOUBLE_ARRAY: lambda: list(pv.double_array_value)}.get(t, lambda: None)()


def _param_msg(name: str, value: Any) -> Parameter:
    p = Parameter(name=name)
    if isinstance(value, list):
        p.value.type, p.value.double_array_value = ParameterType.PARAMETER_DOUBLE_ARRAY, [float(x) for x in value]
    elif isinstance(value, float):
        p.value.type, p.value.double_value = ParameterType.PARAMETER_DOUBLE, value
    else:
        raise TypeError(f"{name}: unsupported value {value!r}")
    return p


class ConsoleNode(SafeLifecycleNode):
    """The ``hand_console`` lifecycle node (see module docstring)."""

    def __init__(self, **kwargs):
        super().__init__(contract.CONSOLE_NODE, **kwargs)
        self.declare_params(PARAMS, annotate=True)
        self.page: ConsolePage | None = None
        self._subs: list = []  # every data subscription, only while a browser is connected
        self._render: threading.Thread | None = None
        self._stop = threading.Event()
        self._service_clients: dict[tuple[Any, str], Any] = {}
        self._cb_group = MutuallyExclusiveCallbackGroup()
        self._reset()

    def _reset(self) -> None:
        self.preview: LatestSlot[CompressedImage] = LatestSlot()
        self.landmarks: LatestSlot[HandLandmarksArray] = LatestSlot()
        self._recent_landmarks: deque[HandLandmarksArray] = deque(maxlen=30)  # matched to preview stamps
        self.flexions: LatestSlot[JointState] = LatestSlot()
        self.history = FlexionHistory()
        self.latency = LatencyWindow()
        self.diagnostics: dict[str, dict[str, str]] = {}
        self.trips = SafePoseCounter()
        self.joint_slots: list[LatestSlot[JointState]] = []
        self.twin_image: LatestSlot[Image] = LatestSlot()
        self.kapandji: dict[str, float | None] = {"human": None, "robot": None}
        self.arm_state: str | None = None
        self._robot_rows_due = False
        self._robots: list[tuple[Any, UrdfPose]] = []
        self._sent_cfg: list[Any] = []  # per robot: the configuration last sent to the page
        self.poses_shown: list[int] = []  # per robot: poses sent to the page (figures row "robot poses")
        self.calibration = CalibrationLog()
        self._calibrating = threading.Lock()
        self._sliders_built = False
        self._last_camera: Any = None
        self.renders = 0
        self._last_figures = self._last_plot = self._last_pose = self._sliders_retry_at = 0.0

    # --- lifecycle ----------------------------------------------------------------------------------
    def on_configure(self, state: State) -> TransitionCallbackReturn:
        log = self.get_logger()
        p = {s.name: self.get_parameter(s.name).value for s in PARAMS}
        try:
            host = check_host(str(p["host"]), bool(p["allow_remote"]))
            views = robot_views(str(p["profile"]))
        except (ValueError, KeyError) as exc:
            log.error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self._reset()
        self.panel = robot_panel(str(p["profile"]))
        try:
            self.page = ConsolePage(host, int(p["port"]), title=f"hand console - {p['profile']}",
                                    controls=Controls(on_calibrate=self._on_calibrate, on_undo=self._on_undo,
                                                      on_param=self._on_param),
                                    robot_image=self.panel.twin_image is not None,
                                    robot_text=self.panel.servo or self.panel.kapandji is not None
                                    or self.panel.arm_state is not None)
        except OSError as exc:
            log.error(f"configure failed: cannot serve on {host}:{p['port']}: {exc}")
            return TransitionCallbackReturn.FAILURE
        import yourdfpy

        for view in views:
            try:
                path = view.urdf()
                urdf = yourdfpy.URDF.load(str(path), load_meshes=True, build_scene_graph=True)
                handle = self.page.add_urdf(view.name, urdf, view.offset)
                self._robots.append((handle, UrdfPose.for_urdf(urdf)))
                self._sent_cfg.append(None)
                self.poses_shown.append(0)
                self.joint_slots.append(LatestSlot())
            except Exception as exc:  # noqa: BLE001 - the page works without the robot view
                log.warning(f"robot view {view.name}: {type(exc).__name__}: {exc}")
        self._views = views[:len(self._robots)]
        log.info(f"console at {url(host, self.page.port)} (profile {p['profile']})")
        print(f"[console] {url(host, self.page.port)}", flush=True)
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        self._stop.clear()
        self._render = threading.Thread(target=self._render_loop, name="console render", daemon=True)
        self._render.start()
        return super().on_activate(state)

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        self._stop_render()
        return super().on_deactivate(state)

    def _stop_render(self) -> None:
        self._stop.set()
        if self._render is not None:
            self._render.join(5.0)
            self._render = None
        self._watch(False)

    def _watch(self, looking: bool) -> None:
        """Subscribe to every data topic while a browser is connected, and to none otherwise
        (render thread, and the lifecycle transitions once it stopped). A page opened again starts
        a new flexion history and latency window (what came before it was not received)."""
        if looking and not self._subs:
            self.history.clear()
            self.latency.clear()
            self._subs = self._subscribe()
        elif not looking and self._subs:
            for sub in self._subs:
                self.destroy_subscription(sub)
            self._subs = []

    def _subscribe(self) -> list:
        view = contract.qos(contract.VIEW)
        two = str(self.get_parameter("profile").value) == "two_hands"
        flex_topic = contract.side_topic(contract.TOPIC_TARGET_FLEXIONS, "right") if two \
            else contract.TOPIC_TARGET_FLEXIONS
        subs = [
            self.create_subscription(HandLandmarksArray, contract.TOPIC_LANDMARKS, self._on_landmarks, view),
            self.create_subscription(JointState, flex_topic, self._on_flexions, view),
            self.create_subscription(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, self._on_diagnostics,
                                     contract.qos(contract.STREAM)),
        ]
        for v, slot in zip(self._views, self.joint_slots):
            subs.append(self.create_subscription(JointState, v.topic_name(), slot.put, view))
        panel = self.panel
        if panel.twin_image is not None:
            subs.append(self.create_subscription(Image, panel.resolve(panel.twin_image), self.twin_image.put, view))
        if panel.kapandji is not None:
            for who, topic in zip(("human", "robot"), panel.kapandji):
                subs.append(self.create_subscription(
                    JointState, panel.resolve(topic), lambda m, who=who: self._on_kapandji(who, m), view))
        if panel.arm_state is not None:
            subs.append(self.create_subscription(String, panel.resolve(panel.arm_state), self._on_arm_state, view))
        subs.append(self.create_subscription(CompressedImage, contract.TOPIC_IMAGE_PREVIEW, self.preview.put, view))
        return subs

    @property
    def subscribed_topics(self) -> list[str]:
        """The topics the console subscribes to now (none while no browser is connected)."""
        return [s.topic_name for s in self._subs]

    def _release(self) -> None:
        self._stop_render()
        if self.page is not None:
            self.page.close()
            self.page = None

    # --- subscriptions: store only -------------------------------------------------------------------
    def _on_landmarks(self, msg: HandLandmarksArray) -> None:
        self.landmarks.put(msg)
        self._recent_landmarks.append(msg)

    def _on_flexions(self, msg: JointState) -> None:
        t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        self.latency.add(time.time() - t)
        by_name = dict(zip(msg.name, msg.position))
        if all(f in by_name for f in contract.FINGER_NAMES):
            self.history.add(t, [by_name[f] for f in contract.FINGER_NAMES])
        self.flexions.put(msg)

    def _on_kapandji(self, who: str, msg: JointState) -> None:
        self.kapandji[who] = float(msg.position[0]) if len(msg.position) else None
        self._robot_rows_due = True

    def _on_arm_state(self, msg: String) -> None:
        self.arm_state = msg.data
        self._robot_rows_due = True

    def robot_rows(self) -> list[tuple[str, str]]:
        """The robot folder's rows for this profile (servo, Kapandji, arm)."""
        rows: list[tuple[str, str]] = []
        if self.panel.servo:
            rows += servo_rows(self.diagnostics) or [("servo driver", "no diagnostics yet")]
        if self.panel.kapandji is not None:
            rows += kapandji_rows(self.kapandji["human"], self.kapandji["robot"])
        if self.panel.arm_state is not None:
            rows += arm_rows(self.arm_state)
        return rows

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for st in msg.status:
            self.diagnostics[st.name] = {kv.key: kv.value for kv in st.values}
        update_trips(self.trips, self.diagnostics)

    # --- render loop ---------------------------------------------------------------------------------
    def _render_loop(self) -> None:
        clock = RenderClock(float(self.get_parameter("render_rate_hz").value))
        while not self._stop.is_set():
            now = time.monotonic()
            wait = clock.wait_s(now)
            if wait > 0:
                self._stop.wait(wait)
                continue
            clock.rendered(now)
            page = self.page
            looking = page is not None and bool(page.server.get_clients())
            self._watch(looking)
            if not looking:
                continue  # nobody looks: nothing subscribed, nothing drawn, no preview asked of the tracker
            try:
                self.render_once(page)
                self.renders += 1
            except Exception as exc:  # noqa: BLE001 - a bad message must not end the page
                self.get_logger().error(f"render: {type(exc).__name__}: {exc}", throttle_duration_sec=5.0)

    def _landmarks_for(self, stamp_ns: int) -> HandLandmarksArray | None:
        for msg in reversed(self._recent_landmarks):
            if _stamp_ns(msg.header.stamp) == stamp_ns:
                return msg
        return self._recent_landmarks[-1] if self._recent_landmarks else None

    def render_once(self, page: ConsolePage) -> None:
        tracker = find_status(self.diagnostics, keys.TRACKER_NODE, keys.TRACKER_STATUS_SUFFIX)
        image = self.preview.take()
        lm = self.landmarks.take()
        if image is not None or lm is not None:
            if image is not None:
                rgb = decode_jpeg_rgb(bytes(image.data))
                self._last_camera = rgb
                msg = self._landmarks_for(_stamp_ns(image.header.stamp))
            else:
                rgb = self._last_camera if self._last_camera is not None else blank_frame()
                msg = lm
            hands = _hand_infos(msg) if msg is not None else []
            gate = gate_view(hands, tracker.get(keys.TRACKER_TRACKING))
            page.show_camera(draw_landmarks(rgb, hands, gate))
            page.show_gate(gate.text())
        if self.flexions.take() is not None:
            now = time.monotonic()
            if now - self._last_plot >= 1.0 / PLOT_RATE_HZ:
                self._last_plot = now
                page.show_flexions(self.history.latest(), *self.history.series())
            else:
                page.show_flexions(self.history.latest())
        twin = self.twin_image.take()
        if twin is not None:
            page.show_robot(rgb=image_rgb(twin.width, twin.height, twin.encoding, twin.step, twin.data))
        if self._robot_rows_due:
            self._robot_rows_due = False
            page.show_robot(rows=self.robot_rows())
        now = time.monotonic()
        pose_due = now - self._last_pose >= 1.0 / float(self.get_parameter("robot_rate_hz").value)
        if pose_due:
            self._last_pose = now
        for i, ((robot, pose), slot) in enumerate(zip(self._robots, self.joint_slots)):
            js = slot.take() if pose_due else None  # not due: the slot keeps the newest for the next
            if js is not None:
                cfg = pose.update(js.name, js.position)
                if pose_moved(self._sent_cfg[i], cfg, POSE_TOLERANCE):
                    robot.update_cfg(cfg)
                    self._sent_cfg[i] = cfg
                    self.poses_shown[i] += 1
        now = time.monotonic()
        if now - self._last_figures >= 1.0:
            self._last_figures = now
            if self.panel.servo:
                page.show_robot(rows=self.robot_rows())
            page.show_figures(figures(self.diagnostics, self.latency.percentiles_ms(), self.trips.trips,
                                      "the console's keep-last-1 receive times")
                              + [("robot poses shown", ", ".join(
                                  f"{v.name} {n}" for v, n in zip(self._views, self.poses_shown)) or "-"),
                                 ("console drops (preview / flexions)",
                                  f"{self.preview.dropped} / {self.flexions.dropped}")])
            if not self._sliders_built and now >= self._sliders_retry_at:
                self._build_sliders(page)

    # --- services (called from viser's threads) ------------------------------------------------------
    def _client(self, srv_type, name: str):
        key = (srv_type, name)
        if key not in self._service_clients:
            self._service_clients[key] = self.create_client(srv_type, name, callback_group=self._cb_group)
        return self._service_clients[key]

    def _call(self, srv_type, name: str, request, timeout: float):
        client = self._client(srv_type, name)
        if not client.wait_for_service(timeout_sec=min(timeout, 2.0)):
            raise TimeoutError(f"service {name} is not available")
        done = threading.Event()
        future = client.call_async(request)
        future.add_done_callback(lambda _f: done.set())
        if not done.wait(timeout):
            client.remove_pending_request(future)
            raise TimeoutError(f"no answer from {name} within {timeout:.1f} s")
        return future.result()

    def _tracker(self) -> str:
        return "/" + str(self.get_parameter("tracker_node").value).lstrip("/")

    def _timeout(self) -> float:
        return float(self.get_parameter("service_timeout_s").value)

    def get_tracker_params(self, names: list[str]) -> dict[str, Any]:
        res = self._call(GetParameters, f"{self._tracker()}/get_parameters", GetParameters.Request(names=names),
                         self._timeout())
        return {n: _pvalue(v) for n, v in zip(names, res.values)}

    def set_tracker_params(self, values: dict[str, Any]) -> tuple[bool, str]:
        """Set several tracker parameters atomically (all or none, judged together: undo sets a
        window's straight and curled angles at once, which one at a time can cross); (successful,
        the node's reason when refused)."""
        req = SetParametersAtomically.Request(parameters=[_param_msg(k, v) for k, v in values.items()])
        res = self._call(SetParametersAtomically, f"{self._tracker()}/set_parameters_atomically", req,
                         self._timeout())
        if res.result.successful:
            return True, ""
        names = ", ".join(values) if len(values) <= 3 else f"{len(values)} parameters"
        return False, f"{names}: {res.result.reason}"

    def _window_names(self) -> list[str]:
        import re

        res = self._call(ListParameters, f"{self._tracker()}/list_parameters", ListParameters.Request(),
                         self._timeout())
        return sorted(n for n in res.result.names if re.fullmatch(WINDOW_PATTERN, n))

    def _build_sliders(self, page: ConsolePage) -> None:
        """Sliders for the tracker's live parameters, from its parameter descriptions (ranges)."""
        try:
            res = self._call(ListParameters, f"{self._tracker()}/list_parameters", ListParameters.Request(),
                             self._timeout())
            names = list(res.result.names)
            desc = self._call(DescribeParameters, f"{self._tracker()}/describe_parameters",
                              DescribeParameters.Request(names=names), self._timeout())
        except TimeoutError:  # the tracker is not up yet: tried again in 10 s (each try waits 2 s for it)
            self._sliders_retry_at = time.monotonic() + 10.0
            return
        described = [(d.name, d.floating_point_range[0].from_value, d.floating_point_range[0].to_value,
                      d.description) for d in desc.descriptors
                     if d.type == ParameterType.PARAMETER_DOUBLE and len(d.floating_point_range)]
        specs = slider_specs(self._tracker().lstrip("/"), described, SLIDER_PATTERNS)
        values = self.get_tracker_params([s.name for s in specs])
        page.add_sliders([(s, float(values[s.name])) for s in specs if values.get(s.name) is not None])
        self._sliders_built = True

    def _on_param(self, spec: SliderSpec, value: float) -> None:
        page = self.page
        try:
            ok, reason = self.set_tracker_params({spec.name: float(value)})
        except (TimeoutError, TypeError) as exc:
            ok, reason = False, str(exc)
        except Exception as exc:  # noqa: BLE001 - shown on the page and logged
            ok, reason = False, f"{type(exc).__name__}: {exc}"
            self.get_logger().error(f"set {spec.name}: {reason}")
        if page is None:
            return
        if ok:
            page.show_param_status(f"✅ `{spec.name}` = {value:.3f} accepted by {spec.node}")
            return
        page.show_param_status(f"❌ refused by {spec.node}: {reason}")
        self.get_logger().info(f"parameter refused: {reason}")
        try:  # the slider goes back to the node's value
            page.set_slider(spec.name, float(self.get_tracker_params([spec.name])[spec.name]))
        except (TimeoutError, TypeError, ValueError):
            pass

    def _on_calibrate(self, pose: str) -> None:
        page = self.page
        if page is None:
            return
        if not self._calibrating.acquire(blocking=False):
            page.show_calibration("a capture is already running")
            return
        try:
            duration = float(self.get_parameter("calibration_duration_s").value)
            names = self._window_names()
            if pose == "open":
                self.calibration.before = self.get_tracker_params(names)
                self.calibration.after = {}
            page.show_calibration(f"capturing **{pose}** for {duration:.1f} s: hold still …", 0.5 if pose == "fist"
                                  else 0.0)
            req = Calibrate.Request(pose=Calibrate.Request.OPEN if pose == "open" else Calibrate.Request.FIST,
                                    duration_s=duration)
            res = self._call(Calibrate, f"{self._tracker()}/calibrate", req, duration + 15.0)
            if not res.success:
                self.calibration.step, self.calibration.message = "failed", res.message
                page.show_calibration(f"❌ {pose} refused: {res.message}", 0.0)
                return
            if pose == "open" or not res.message.startswith("windows set"):
                self.calibration.step = pose
                page.show_calibration(f"✅ {res.message}", 0.5)
                return
            self.calibration.after = self.get_tracker_params(names)
            self.calibration.step, self.calibration.message = "done", res.message
            self._refresh_sliders(page)
            rows = self.calibration.table([n for n in names if not n.startswith("joint_")])
            page.show_calibration(f"✅ calibrated ({res.frames} frames)\n\n" + markdown_table(rows), 1.0)
        except (TimeoutError, TypeError) as exc:
            page.show_calibration(f"❌ {pose}: {exc}", 0.0)
        except Exception as exc:  # noqa: BLE001 - shown on the page and logged, never a silent button
            page.show_calibration(f"❌ {pose}: {type(exc).__name__}: {exc}", 0.0)
            self.get_logger().error(f"calibration {pose}: {type(exc).__name__}: {exc}")
        finally:
            self._calibrating.release()

    def _refresh_sliders(self, page: ConsolePage) -> None:
        names = list(page.slider_names())
        if names:
            for n, v in self.get_tracker_params(names).items():
                if isinstance(v, float):
                    page.set_slider(n, v)

    def _on_undo(self) -> None:
        page = self.page
        if page is None:
            return
        try:
            values = self.calibration.undo_values()
            ok, reason = self.set_tracker_params(values)
        except (ValueError, TimeoutError, TypeError) as exc:
            page.show_calibration(f"❌ undo: {exc}")
            return
        if not ok:
            page.show_calibration(f"❌ undo refused: {reason}")
            return
        self.calibration.step = "undone"
        self._refresh_sliders(page)
        page.show_calibration("↩ windows set back to their values before the calibration\n\n" + markdown_table(
            [(n, f"{v:.3f}") for n, v in values.items() if isinstance(v, float)]), 0.0)


def main(args=None):
    argv = sys.argv[1:] if args is None else list(args)
    if "--bag" in argv or any(a.startswith("--bag=") for a in argv):
        from hand_console.replay import main as replay_main

        sys.exit(replay_main([a for a in argv if a != "--ros-args"]))
    sys.exit(run(ConsoleNode, args))


if __name__ == "__main__":
    main()

