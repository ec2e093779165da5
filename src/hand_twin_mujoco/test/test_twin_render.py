"""Offscreen rendering (EGL), frame files + sidecar CSV, and the render thread."""

from __future__ import annotations

import csv
import math
import threading
import time

import cv2
import numpy as np
import pytest

from hand_twin_mujoco.render import (
    FrameMeta,
    FrameRecorder,
    JointStateRenderer,
    OffscreenRenderer,
    RenderConfig,
    RenderWorker,
)
from hand_twin_mujoco.sim import TwinSim, build_twin


@pytest.fixture(scope="module")
def build(fixture_scene):
    return build_twin(fixture_scene)


def meta(i: int) -> FrameMeta:
    return FrameMeta(wall_time=1000.0 + i, sim_time=0.1 * i, command_stamp=1.7e9 + i / 30,
                     command_received=1.7e9 + i / 30 + 0.004, flexions=(0.1 * i,) * 5, watchdog="ok")


def test_renders_the_hand_and_its_pose(build):
    sim = TwinSim(build.hand, build.tmap)
    result = {}

    def work():  # the GL context lives in the thread that made it
        r = OffscreenRenderer(build.hand, RenderConfig(width=320, height=240))
        import mujoco

        assert not r._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW]
        assert not r._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION]
        sim.copy_state_into(r.data)
        result["open"] = r.render().copy()
        sim.set_flexions(np.ones(5))
        sim.step(500)
        sim.copy_state_into(r.data)
        result["fist"] = r.render().copy()
        r.close()

    t = threading.Thread(target=work)
    t.start()
    t.join(30)
    open_img, fist = result["open"], result["fist"]
    assert open_img.shape == (240, 320, 3) and open_img.dtype == np.uint8
    assert open_img.std() > 10  # not a blank frame
    # skin-coloured pixels (the fixture's rgba 0.9 0.8 0.7): fewer once the fingers curl away
    skin = [np.sum(np.all(np.abs(img.astype(int) - [200, 178, 155]) < 60, axis=2)) for img in (open_img, fist)]
    assert skin[0] > 1000 and skin[1] < 0.85 * skin[0], skin
    assert np.mean(np.abs(open_img.astype(int) - fist.astype(int))) > 2


def test_joint_state_renderer_draws_what_the_live_renderer_drew(build):
    """After-the-run rendering from /hand_twin/joint_states positions: the same picture as the
    live renderer's of that state (positions alone fix the pose), and identical on every call."""
    from hand_common import contract

    sim = TwinSim(build.hand, build.tmap)
    sim.set_flexions(np.array([0.2, 0.9, 0.5, 0.1, 0.7]))
    sim.step(300)
    state = sim.state()
    result = {}

    def work():
        live = OffscreenRenderer(build.hand, RenderConfig(width=320, height=240))
        sim.copy_state_into(live.data)
        result["live"] = live.render().copy()
        live.close()
        r = JointStateRenderer(build.hand, RenderConfig(width=320, height=240))
        names = list(contract.JOINT_NAMES)
        result["a"] = r.render(names, state.position).copy()
        result["open"] = r.render(names, np.zeros(len(names))).copy()
        result["b"] = r.render(names, state.position).copy()
        try:
            r.render(["no_such_joint"], [0.0])
        except KeyError as exc:
            result["error"] = str(exc)
        r.close()

    t = threading.Thread(target=work)
    t.start()
    t.join(30)
    assert np.array_equal(result["a"], result["b"])  # deterministic
    assert np.mean(np.abs(result["a"].astype(int) - result["live"].astype(int))) < 0.5
    assert np.mean(np.abs(result["a"].astype(int) - result["open"].astype(int))) > 2  # the pose shows
    assert "no_such_joint" in result["error"]


def test_recorder_writes_numbered_frames_and_csv(tmp_path):
    rec = FrameRecorder(str(tmp_path / "frames"), "jpg")
    img = np.zeros((48, 64, 3), np.uint8)
    img[:, :, 0] = 255  # pure red in RGB
    for i in range(3):
        assert rec.write(img, meta(i)) == f"frame_{i:06d}.jpg"
    rec.close()
    back = cv2.imread(str(tmp_path / "frames" / "frame_000002.jpg"))
    assert back.shape == (48, 64, 3) and back[24, 32, 2] > 200 and back[24, 32, 0] < 50  # BGR on disk
    rows = list(csv.DictReader(open(tmp_path / "frames" / "frames.csv")))
    assert [r["file"] for r in rows] == [f"frame_{i:06d}.jpg" for i in range(3)]
    assert float(rows[1]["command_stamp"]) == pytest.approx(1.7e9 + 1 / 30, abs=1e-6)
    assert float(rows[2]["index"]) == pytest.approx(0.2) and rows[2]["watchdog"] == "ok"
    with pytest.raises(ValueError, match="record_format"):
        FrameRecorder(str(tmp_path / "x"), "gif")


def test_worker_renders_snapshots_at_its_rate(build):
    sim = TwinSim(build.hand, build.tmap)
    lock = threading.Lock()
    got: list[tuple[np.ndarray, FrameMeta]] = []

    def snapshot(data):
        with lock:
            sim.copy_state_into(data)
        return meta(len(got))

    w = RenderWorker(build.hand, RenderConfig(width=160, height=120), 20.0, snapshot,
                     lambda rgb, m: got.append((rgb.copy(), m)))
    w.start()
    time.sleep(0.3)
    assert got == []  # not enabled yet: the context exists but nothing renders
    w.enabled.set()
    time.sleep(1.0)
    w.close()
    assert 5 <= len(got) <= 22 and got[0][0].shape == (120, 160, 3)
    assert w.frames == len(got) and w.render_time > 0
    with pytest.raises(ValueError, match="render rate"):
        RenderWorker(build.hand, RenderConfig(), 60.0, snapshot, lambda *a: None)


def test_worker_reports_a_missing_camera(build):
    w = RenderWorker(build.hand, RenderConfig(camera="nope"), 10.0, lambda d: None, lambda *a: None)
    with pytest.raises(RuntimeError, match="camera 'nope' not found"):
        w.start()
    assert math.isfinite(w.render_time)
