"""The console's web page, built with viser (no rclpy): used by the live node and by bag replay.

:class:`ConsolePage` owns a ``viser.ViserServer`` and its GUI handles; the caller pushes what to
show (``show_*``) from its render loop (at most :data:`hand_console.state.MAX_RENDER_HZ`) and
passes callbacks for the controls. Callbacks run on viser's thread pool, never on a ROS executor.

Binding: ``127.0.0.1`` unless the caller asks for another host explicitly (:func:`check_host`
prints the warning): anyone who reaches the page can recalibrate and move the robot.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hand_common.contract import FINGER_NAMES
from hand_console.layout import blank_frame, plot_history
from hand_console.state import SliderSpec, markdown_table

LOCALHOST = "127.0.0.1"
DEFAULT_PORT = 8080

#: Labels of the page's controls (the browser test finds them by these texts).
OPEN_BUTTON = "1. Open hand"
FIST_BUTTON = "2. Fist"
UNDO_BUTTON = "Undo calibration"
PLAY_BUTTON = "Play"
PAUSE_BUTTON = "Pause"
TIMELINE_LABEL = "time (s)"
ROBOT_FOLDER = "Robot"
TWIN_CAMERA_LABEL = "twin camera"


def check_host(host: str, allow_remote: bool) -> str:
    """The host to bind. ``127.0.0.1`` (and ``localhost``/``::1``) always; any other only with
    ``allow_remote``, with a warning on stderr; ValueError otherwise."""
    if host in (LOCALHOST, "localhost", "::1"):
        return host
    if not allow_remote:
        raise ValueError(f"console host {host!r} is not the loopback address: anyone who reaches the page can "
                         "recalibrate and move the robot; pass allow_remote (--allow-remote / "
                         "allow_remote:=true) to bind it anyway")
    print(f"[console] WARNING: binding {host}: anyone who can reach this address can recalibrate the tracker "
          "and move the robot", file=sys.stderr, flush=True)
    return host


def url(host: str, port: int) -> str:
    """The address to open: ``http://127.0.0.1:8080``."""
    return f"http://{LOCALHOST if host in ('0.0.0.0', '::') else host}:{port}"


@dataclass
class Controls:
    """The page's callbacks (None: the control is not shown). on_calibrate(pose) with pose
    "open"/"fist"; on_undo(); on_param(spec, value); on_seek(t_s); on_play(playing)."""

    on_calibrate: Callable[[str], None] | None = None
    on_undo: Callable[[], None] | None = None
    on_param: Callable[[SliderSpec, float], None] | None = None
    on_seek: Callable[[float], None] | None = None
    on_play: Callable[[bool], None] | None = None


class ConsolePage:
    """The page: camera, gate, flexion bars and plot, figures, calibration, parameters, replay
    timeline, and the robots' URDFs in the 3D scene. Served on ``host``:``port`` exactly (0: a
    free port, then ``self.port``); OSError when that port is taken."""

    def __init__(self, host: str = LOCALHOST, port: int = DEFAULT_PORT, *, title: str = "hand console",
                 controls: Controls | None = None, sliders: Sequence[tuple[SliderSpec, float]] = (),
                 timeline_s: float | None = None, history_s: float = 10.0, robot_image: bool = False,
                 robot_text: bool = False):
        import viser

        self.controls = controls or Controls()
        self.history_s = history_s
        # viser prints a banner with its address whatever ``verbose`` says: the caller prints the one
        # address to open (the runner, replay); a second one (make demo's screenshot server on a
        # random port) only made a new user look for a page that is gone
        with contextlib.redirect_stdout(io.StringIO()):
            self.server = viser.ViserServer(host=host, port=port, label=title, verbose=False)
        self.host, self.port = host, self.server.get_port() if hasattr(self.server, "get_port") else port
        if port and self.port != port:
            # viser moves on to the next free port when the one asked for is taken: the address the
            # runner printed would then show another program's page (or nothing)
            self.server.stop()
            raise OSError(f"port {port} on {host} is in use (viser would have served on {self.port}): stop "
                          "what holds it or choose another port (--console-port / console_port:=)")
        gui = self.server.gui
        gui.configure_theme(control_layout="fixed", control_width="large", show_logo=False,
                            show_share_button=False)
        self._gate = gui.add_markdown("**gate:** waiting for the tracker")
        self._camera = gui.add_image(blank_frame(), label="camera", format="jpeg", jpeg_quality=80)
        self._flex_text = gui.add_markdown(self._flex_markdown(None))
        self._bars = [gui.add_progress_bar(0.0, color=c) for c in ("red", "orange", "green", "blue", "violet")]
        self._plot = gui.add_image(plot_history(np.zeros(0), np.zeros((0, 5)), history_s), label="last 10 s",
                                   format="png")
        self._robot_image = self._robot_text = None
        if robot_image or robot_text:
            with gui.add_folder(ROBOT_FOLDER):
                if robot_image:
                    self._robot_image = gui.add_image(blank_frame(), label=TWIN_CAMERA_LABEL, format="jpeg",
                                                      jpeg_quality=80)
                if robot_text:
                    self._robot_text = gui.add_markdown("waiting for the robot")
        with gui.add_folder("Figures"):
            self._figures = gui.add_markdown("waiting for /diagnostics")
        self._timeline = self._play = None
        if timeline_s is not None:
            with gui.add_folder("Replay"):
                self._timeline = gui.add_slider(TIMELINE_LABEL, min=0.0, max=max(float(timeline_s), 0.01),
                                                step=0.01, initial_value=0.0)
                self._play = gui.add_button(PLAY_BUTTON)
                self._pause = gui.add_button(PAUSE_BUTTON)
                self._seeking = False

                @self._timeline.on_update
                def _(_event) -> None:
                    if not self._seeking and self.controls.on_seek is not None:
                        self.controls.on_seek(float(self._timeline.value))

                @self._play.on_click
                def _(_event) -> None:
                    if self.controls.on_play is not None:
                        self.controls.on_play(True)

                @self._pause.on_click
                def _(_event) -> None:
                    if self.controls.on_play is not None:
                        self.controls.on_play(False)
        self._calib = None
        if self.controls.on_calibrate is not None:
            with gui.add_folder("Calibration"):
                gui.add_markdown("Hold the hand **open** and click 1, then make a **fist** and click 2 "
                                 "(each captures about 1 s).")
                open_b, fist_b = gui.add_button(OPEN_BUTTON), gui.add_button(FIST_BUTTON)
                undo_b = gui.add_button(UNDO_BUTTON)
                self._calib_progress = gui.add_progress_bar(0.0, animated=False)
                self._calib = gui.add_markdown("not calibrated from this page yet")

                @open_b.on_click
                def _(_event) -> None:
                    self.controls.on_calibrate("open")

                @fist_b.on_click
                def _(_event) -> None:
                    self.controls.on_calibrate("fist")

                @undo_b.on_click
                def _(_event) -> None:
                    if self.controls.on_undo is not None:
                        self.controls.on_undo()
        self._bounds: list[tuple[np.ndarray, np.ndarray]] = []  # robots' boxes in the scene, m
        self._sliders: dict[str, object] = {}
        self._setting: set[str] = set()  # sliders being moved by the node itself (no on_param)
        self._param_status = None
        if sliders:
            self.add_sliders(sliders)

    def add_sliders(self, sliders: Sequence[tuple[SliderSpec, float]]) -> None:
        """A "Parameters (live)" folder with one slider per (spec, current value); moving one calls
        ``controls.on_param(spec, value)``. Can be called once the node's parameters are known."""
        if self.controls.on_param is None or not sliders:
            return
        gui = self.server.gui
        with gui.add_folder("Parameters (live)"):
            self._param_status = gui.add_markdown("move a slider: the node accepts or refuses the value")
            for spec, value in sliders:
                lo, hi = spec.lo, spec.hi
                v = min(max(float(value), lo), hi)
                handle = gui.add_slider(spec.label, min=lo, max=hi, step=spec.step, initial_value=v,
                                        hint=f"{spec.node}/{spec.name}, [{lo:g}, {hi:g}]")
                self._sliders[spec.name] = handle

                def on_update(_event, spec=spec, handle=handle) -> None:
                    if spec.name in self._setting:
                        return
                    self.controls.on_param(spec, float(handle.value))
                handle.on_update(on_update)

    def slider_names(self) -> list[str]:
        return list(self._sliders)

    # --- what the render loop pushes -------------------------------------------------------------
    @staticmethod
    def _flex_markdown(values: Sequence[float] | None) -> str:
        if values is None:
            return "**flexions** (0 open … 1 closed): no data yet"
        return "**flexions** (0 open … 1 closed): " + " · ".join(
            f"{n} `{v:.2f}`" for n, v in zip(FINGER_NAMES, values))

    def show_camera(self, rgb: np.ndarray) -> None:
        self._camera.image = rgb

    def show_gate(self, text: str) -> None:
        self._gate.content = f"**gate:** {text}"

    def show_flexions(self, values: Sequence[float] | None, t: np.ndarray | None = None,
                      v: np.ndarray | None = None) -> None:
        """values: newest flexions (5) or None; (t, v): history for the plot (see FlexionHistory),
        None: the plot is left as it is (it is redrawn less often than the bars)."""
        self._flex_text.content = self._flex_markdown(values)
        for bar, x in zip(self._bars, values if values is not None else [0.0] * 5):
            bar.value = float(min(max(x, 0.0), 1.0) * 100.0)
        if t is not None and v is not None:
            self._plot.image = plot_history(t, v, self.history_s)

    def show_robot(self, rgb: np.ndarray | None = None, rows: Sequence[tuple[str, str]] | None = None) -> None:
        """The robot folder: the twin's camera picture (RGB) and/or its rows (servo pulses and
        acks, Kapandji scores, the arm's state)."""
        if rgb is not None and self._robot_image is not None:
            self._robot_image.image = rgb
        if rows is not None and self._robot_text is not None:
            self._robot_text.content = markdown_table(rows)

    def show_figures(self, rows: Sequence[tuple[str, str]]) -> None:
        self._figures.content = markdown_table(rows)

    def show_calibration(self, text: str, progress: float | None = None) -> None:
        if self._calib is not None:
            self._calib.content = text
            if progress is not None:
                self._calib_progress.value = float(min(max(progress, 0.0), 1.0) * 100.0)

    def show_param_status(self, text: str) -> None:
        if self._param_status is not None:
            self._param_status.content = text

    def set_slider(self, name: str, value: float) -> None:
        """Move a slider to the node's value without calling on_param (after a refusal or undo)."""
        handle = self._sliders.get(name)
        if handle is None:
            return
        self._setting.add(name)
        try:
            handle.value = min(max(float(value), handle.min), handle.max)
        finally:
            self._setting.discard(name)

    def set_timeline(self, t_s: float) -> None:
        """Move the replay timeline to ``t_s`` without calling on_seek (while playing)."""
        if self._timeline is None:
            return
        self._seeking = True
        try:
            self._timeline.value = float(min(max(t_s, self._timeline.min), self._timeline.max))
        finally:
            self._seeking = False

    def add_urdf(self, name: str, urdf, offset: tuple[float, float, float] = (0.0, 0.0, 0.0)):
        """Show a loaded ``yourdfpy.URDF`` in the scene under ``/name``; returns the ViserUrdf whose
        ``update_cfg(cfg)`` poses it (actuated joints in yourdfpy order; mimics follow)."""
        from viser.extras import ViserUrdf

        frame = self.server.scene.add_frame(f"/{name}", position=offset, show_axes=False)
        del frame
        handle = ViserUrdf(self.server, urdf, root_node_name=f"/{name}")
        try:  # frame every robot shown so far (a hand is ~0.2 m: viser's default view is 5 m away)
            lo, hi = np.asarray(urdf.scene.bounds, float) + np.asarray(offset, float)
            self._bounds.append((lo, hi))
            self.frame_robots()
        except (AttributeError, TypeError, ValueError):  # a URDF without geometry keeps the default view
            pass
        return handle

    def frame_robots(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Point the initial camera at the robots' bounding box (returns (look_at, position) m)."""
        if not self._bounds:
            return None
        lo = np.min([b[0] for b in self._bounds], axis=0)
        hi = np.max([b[1] for b in self._bounds], axis=0)
        center, radius = (lo + hi) / 2.0, max(float(np.linalg.norm(hi - lo)) / 2.0, 0.05)
        position = center + radius * np.array([1.6, 1.6, 1.1])
        self.server.initial_camera.look_at = tuple(center)
        self.server.initial_camera.position = tuple(position)
        return center, position

    def close(self) -> None:
        self.server.stop()
