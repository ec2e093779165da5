"""Offscreen rendering of the twin and frame files for the demo video (no rclpy).

- :class:`OffscreenRenderer`: ``mujoco.Renderer`` on its own ``MjData`` copy of the state, from the
  scene's camera, shadows and reflections off by default (they cost ~4× on llvmpipe here).
  Headless it uses whatever ``MUJOCO_GL`` selects (the package sets ``egl`` when there is no
  ``DISPLAY``). The OpenGL context belongs to the thread that created the renderer: create, use
  and close it in one thread (:class:`RenderWorker` does).
- :class:`FrameRecorder`: numbered ``frame_000000.jpg|png`` files plus ``frames.csv`` with one
  row per frame: wall time, sim time, the header stamp of the command that was applied and its
  arrival time, the applied flexions and the watchdog state, so capture → twin latency can be
  measured and a video composed.
- :class:`RenderWorker`: a thread that renders snapshots at a fixed rate (≤ 30 Hz) and hands the
  images to a sink; it never holds the physics lock while rendering (MuJoCo releases the GIL in
  ``mjr_render``) and runs at a lower CPU priority (nice +10) together with its GL threads.
- :class:`JointStateRenderer`: renders recorded joint positions (``/hand_twin/joint_states``)
  after a run, so a demo video costs the live graph nothing; the same positions give the same
  picture every time.
"""

from __future__ import annotations

import csv
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np

from hand_common import contract

from .model import HandModel

MAX_RENDER_RATE = 30.0


@dataclass(frozen=True)
class RenderConfig:
    """Offscreen image settings. ``antialias`` keeps the model's multisampling (``offsamples``);
    off by default: 4× MSAA costs 2-3× per frame on software EGL (llvmpipe) here."""

    width: int = 640
    height: int = 480
    camera: str = "front"
    shadows: bool = False
    reflections: bool = False
    antialias: bool = False


class OffscreenRenderer:
    """Render RGB images (height, width, 3) uint8 of a hand state from the configured camera."""

    def __init__(self, hand: HandModel, config: RenderConfig):
        m = hand.model
        # The twin owns this in-memory model copy: an offscreen buffer of exactly the image size (a
        # larger one is cleared and resolved every frame for nothing), multisampling off unless asked.
        m.vis.global_.offwidth = config.width
        m.vis.global_.offheight = config.height
        if not config.antialias:
            m.vis.quality.offsamples = 0
        self.hand = hand
        self.config = config
        self.camera = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_CAMERA, config.camera)
        if self.camera < 0:
            raise ValueError(f"camera '{config.camera}' not found in the model")
        self.data = mujoco.MjData(m)
        self._renderer = mujoco.Renderer(m, height=config.height, width=config.width)
        flags = self._renderer.scene.flags
        flags[mujoco.mjtRndFlag.mjRND_SHADOW] = config.shadows
        flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = config.reflections
        self._out = np.empty((config.height, config.width, 3), dtype=np.uint8)

    def render(self) -> np.ndarray:
        """Render ``self.data`` (fill it first, e.g. with TwinSim.copy_state_into). Returns a view
        of an internal buffer that the next call overwrites."""
        mujoco.mj_fwdPosition(self.hand.model, self.data)
        self._renderer.update_scene(self.data, camera=self.camera)
        return self._renderer.render(out=self._out)

    def close(self) -> None:
        self._renderer.close()


@dataclass(frozen=True)
class FrameMeta:
    """Bookkeeping of one rendered frame (times in s)."""

    wall_time: float
    sim_time: float
    command_stamp: float  # header stamp of the applied command (nan: safe pose, none applied)
    command_received: float  # wall time the applied command arrived (nan if none)
    flexions: tuple[float, ...]
    watchdog: str


class FrameRecorder:
    """Write numbered image files and a sidecar CSV into ``directory`` (created if missing)."""

    HEADER = ["frame", "file", "wall_time", "sim_time", "command_stamp", "command_received",
              *contract.FINGER_NAMES, "watchdog"]

    def __init__(self, directory: str, fmt: str = "jpg", jpeg_quality: int = 90,
                 flexion_names: tuple[str, ...] | None = None):
        """flexion_names: the CSV's flexion columns (default thumb … pinky; the two-hand twin passes
        ``left_thumb`` … ``right_pinky``)."""
        if fmt not in ("jpg", "png"):
            raise ValueError(f"record_format must be 'jpg' or 'png', got '{fmt}'")
        import cv2  # opencv-python-headless (pinned); only needed when recording

        self._cv2 = cv2
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self.fmt = fmt
        self.params = [cv2.IMWRITE_JPEG_QUALITY, int(jpeg_quality)] if fmt == "jpg" else []
        self.count = 0
        self._csv_file = open(os.path.join(directory, "frames.csv"), "w", newline="")
        self._csv = csv.writer(self._csv_file)
        header = self.HEADER if flexion_names is None else [*self.HEADER[:6], *flexion_names, self.HEADER[-1]]
        self._csv.writerow(header)

    def write(self, rgb: np.ndarray, meta: FrameMeta) -> str:
        """Write one frame; returns its file name. OSError if the disk refuses."""
        name = f"frame_{self.count:06d}.{self.fmt}"
        if not self._cv2.imwrite(os.path.join(self.directory, name), rgb[:, :, ::-1], self.params):
            raise OSError(f"could not write {os.path.join(self.directory, name)}")
        self._csv.writerow([self.count, name, f"{meta.wall_time:.6f}", f"{meta.sim_time:.6f}",
                            f"{meta.command_stamp:.9f}", f"{meta.command_received:.6f}",
                            *(f"{v:.4f}" for v in meta.flexions), meta.watchdog])
        self._csv_file.flush()
        self.count += 1
        return name

    def close(self) -> None:
        self._csv_file.close()


class RenderWorker:
    """Render thread: owns the OpenGL context from ``start()`` (created in the thread) to ``close()``.

    snapshot(render_data) -> FrameMeta | None: copies the state to render into ``render_data``
    under the caller's lock (None = nothing to render now). sink(rgb, meta): consumes the image
    (publish, record). ``enabled`` pauses rendering without dropping the context.
    """

    def __init__(self, hand: HandModel, config: RenderConfig, rate: float,
                 snapshot: Callable[[mujoco.MjData], FrameMeta | None],
                 sink: Callable[[np.ndarray, FrameMeta], None],
                 on_error: Callable[[str], None] = lambda msg: None,
                 nice: int = 10):
        if not 0.0 < rate <= MAX_RENDER_RATE:
            raise ValueError(f"render rate must be in (0, {MAX_RENDER_RATE}] Hz, got {rate}")
        self.hand, self.config, self.rate = hand, config, rate
        self.snapshot, self.sink, self.on_error = snapshot, sink, on_error
        self.nice = nice
        self.enabled = threading.Event()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None
        self.frames = 0
        self.render_time = 0.0  # cumulative seconds spent rendering

    def start(self, timeout: float = 20.0) -> None:
        """Start the thread and wait until the renderer exists; RuntimeError if it failed."""
        self._thread = threading.Thread(target=self._run, name="twin_render", daemon=True)
        self._thread.start()
        self._ready.wait(timeout)
        if self.error is not None:
            self._thread.join(2.0)
            raise RuntimeError(self.error)
        if not self._ready.is_set():
            raise RuntimeError(f"renderer not ready after {timeout} s")

    def set_rate(self, rate: float) -> None:
        if not 0.0 < rate <= MAX_RENDER_RATE:
            raise ValueError(f"render rate must be in (0, {MAX_RENDER_RATE}] Hz, got {rate}")
        self.rate = rate

    def _lower_priority(self) -> None:
        """Raise this thread's nice value before the GL context exists: Mesa's llvmpipe rasteriser
        threads are created with the context and inherit it, so under CPU contention the physics
        thread (and other processes, e.g. the tracker) run first and only rendering slows down."""
        if self.nice <= 0 or not hasattr(os, "setpriority"):
            return
        try:
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + self.nice)
        except OSError as exc:
            self.on_error(f"could not lower the render thread's priority: {exc}")

    def _run(self) -> None:
        self._lower_priority()
        try:
            renderer = OffscreenRenderer(self.hand, self.config)
        except Exception as exc:  # noqa: BLE001 - no GL, bad camera: report to start()
            self.error = f"offscreen renderer unavailable: {type(exc).__name__}: {exc}"
            self._ready.set()
            return
        self._ready.set()
        try:
            next_t = time.monotonic()
            while not self._stop.is_set():
                if not self.enabled.wait(0.1):
                    next_t = time.monotonic()
                    continue
                now = time.monotonic()
                if now < next_t:
                    self._stop.wait(next_t - now)
                    continue
                next_t = max(next_t + 1.0 / self.rate, now)
                meta = self.snapshot(renderer.data)
                if meta is None:
                    continue
                t0 = time.monotonic()
                rgb = renderer.render()
                self.render_time += time.monotonic() - t0
                self.frames += 1
                try:
                    self.sink(rgb, meta)
                except Exception as exc:  # noqa: BLE001 - a failing sink must not kill rendering
                    self.on_error(f"frame sink failed: {type(exc).__name__}: {exc}")
        finally:
            renderer.close()

    def close(self) -> None:
        self._stop.set()
        self.enabled.set()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None


class JointStateRenderer:
    """Render a hand from joint positions alone (e.g. recorded ``/hand_twin/joint_states``).

    ``render(names, positions)``: ``names`` joint names of the message, ``positions`` rad in that
    order; joints of the model not named keep the model's open keyframe. Returns an RGB image
    (height, width, 3) uint8 view that the next call overwrites. KeyError names an unknown joint.
    Deterministic: equal positions give identical pixels. Create, use and close in one thread
    (the OpenGL context belongs to it).
    """

    def __init__(self, hand: HandModel, config: RenderConfig):
        self.hand = hand
        self._renderer = OffscreenRenderer(hand, config)
        self._base = np.array(hand.model.key_qpos[hand.key_open]) if hand.model.nkey else None
        self._adr: dict[str, int] = {}
        for jid, adr in zip(hand.joint_ids, hand.qpos_adr):
            self._adr[mujoco.mj_id2name(hand.model, mujoco.mjtObj.mjOBJ_JOINT, int(jid))] = int(adr)

    def render(self, names: list[str], positions: list[float] | np.ndarray) -> np.ndarray:
        data = self._renderer.data
        if self._base is not None:
            data.qpos[:] = self._base
        prefix = self.hand.prefix
        for name, q in zip(names, positions):
            key = name if name in self._adr else f"{prefix}{name}"
            if key not in self._adr:
                raise KeyError(f"joint '{name}' is not a joint of {self.hand.path}")
            data.qpos[self._adr[key]] = float(q)
        return self._renderer.render()

    def close(self) -> None:
        self._renderer.close()
