"""RunMonitor without ROS traffic: bounded history (rings + running counts, issue 27 item 6), the
progress line's figures (no negative capture→flexion for unpaced stamps)."""

from __future__ import annotations

import time
import tracemalloc
from types import SimpleNamespace

import pytest

from hand_bringup.runner_core import RunConfig, Runner
from hand_bringup.runner_monitor import HISTORY, RunMonitor
from hand_common import contract


def _stamp(t: float) -> SimpleNamespace:
    return SimpleNamespace(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))


def _landmarks(i: int, t: float, hand: bool = True) -> SimpleNamespace:
    hands = [SimpleNamespace(frame_index=i)] if hand else []
    return SimpleNamespace(header=SimpleNamespace(stamp=_stamp(t)), hands=hands)


def _flexions(t: float, value: float) -> SimpleNamespace:
    return SimpleNamespace(header=SimpleNamespace(stamp=_stamp(t)), name=list(contract.FINGER_NAMES),
                           position=[value] * 5)


def _feed(m: RunMonitor, n: int, t0: float) -> None:
    for i in range(n):
        t = t0 + i / 30.0
        m._on_landmarks(_landmarks(i, t, hand=i % 4 != 0))
        m._on_flexions(_flexions(t, (i % 100) / 100.0))
        m._on_latest_flexions(_flexions(time.time() - 0.020, 0.5))


def test_history_is_bounded_and_counts_are_whole():
    m = RunMonitor(history=500)
    _feed(m, 2000, 1000.0)
    assert len(m.frames) == 500 and len(m.flexions) == 500 and len(m.flexion_latency) == 500
    assert m.frames[0][0] == 1500 and m.frames[-1][0] == 1999  # the latest ones, in order
    assert next(iter(m.flexions)) == int(round((1000.0 + 1500 / 30.0) * 1e9))
    assert m.landmark_msgs == 2000 and m.flexion_msgs == 2000
    assert m.frames_detected == 1500  # every 4th frame had no hand
    assert m.last_flexion == [0.99] * 5
    line = m.progress_line(video_frames=None)
    assert "frames 2000 " in line and "hand 1500/2000" in line
    assert "capture→flexion 20." in line  # the 20 ms the latest commands were old


def test_memory_stays_flat_once_the_rings_are_full():
    """50 000 frames (28 min at 30 fps) through a 1000-frame monitor: the memory it holds after
    5 000 and after 50 000 frames differs by < 64 KB (before: every frame, flexion and latency
    kept, ~0.5 KB a frame = 22 MB here)."""
    m = RunMonitor(history=1000)
    tracemalloc.start()
    try:
        _feed(m, 5000, 0.0)
        before = tracemalloc.get_traced_memory()[0]
        _feed(m, 45000, 5000 / 30.0)
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert m.landmark_msgs == 50000
    assert after - before < 64 * 1024, f"grew {after - before} B"


def test_unpaced_stamps_give_no_latency():
    """An unpaced file's stamps run ahead of the wall clock: no (negative) capture→flexion."""
    m = RunMonitor()
    m.stamps_are_capture_times = False
    m._on_latest_flexions(_flexions(time.time() + 3.0, 0.5))
    assert list(m.flexion_latency) == []
    assert "capture→flexion n/a (unpaced)" in m.progress_line()
    paced = RunMonitor()
    paced._on_latest_flexions(_flexions(time.time() + 0.3, 0.5))  # ahead of this clock: not a capture time
    assert list(paced.flexion_latency) == [] and "capture→flexion -" in paced.progress_line()


def test_runner_sizes_the_history(tmp_path):
    assert Runner(RunConfig(profile="sim", out_dir=tmp_path)).monitor.history == HISTORY
    big = Runner(RunConfig(profile="sim", out_dir=tmp_path, video_frames=20000)).monitor
    assert big.history >= 20000 and big.stamps_are_capture_times
    unpaced = Runner(RunConfig(profile="sim", out_dir=tmp_path, overrides={"tracker": {"realtime": False}}))
    assert not unpaced.monitor.stamps_are_capture_times
    with pytest.raises(ValueError, match="history"):
        RunMonitor(history=10)


def _event(label: str, start: tuple[int, str], goal: tuple[int, str]):
    from types import SimpleNamespace as NS

    return NS(transition=NS(label=label), start_state=NS(id=start[0], label=start[1]),
              goal_state=NS(id=goal[0], label=goal[1]))


def test_a_transition_the_runner_did_not_request_is_reported(capsys):
    """Issue 27: a foreign `deactivate` of the servo driver succeeded and the runner did not notice."""
    m = RunMonitor()
    m.expect_transitions(["servo_driver", "hand_tracker"], ("configure", "activate"))
    for name in ("servo_driver", "hand_tracker"):  # the runner's own bring-up: expected, silent
        assert m.on_transition(name, _event("", (1, "unconfigured"), (10, "configuring"))) is None
        assert m.on_transition(name, _event("transition_success", (10, "configuring"), (2, "inactive"))) is None
        assert m.on_transition(name, _event("", (2, "inactive"), (13, "activating"))) is None
    text = m.on_transition("servo_driver", _event("", (3, "active"), (14, "deactivating")))
    assert text.startswith("servo_driver: lifecycle change active -> deactivating not requested by the runner")
    assert m.on_transition("servo_driver", _event("transition_success", (14, "deactivating"), (2, "inactive"))) is None
    # a second configure the runner did not ask for is foreign too (its expectation was used)
    assert m.on_transition("hand_tracker", _event("", (1, "unconfigured"), (10, "configuring")))
    assert len(m.foreign_transitions) == 2 and "[runner] warning: servo_driver" in capsys.readouterr().err
    m.stopping = True  # the runner's own bring-down
    assert m.on_transition("servo_driver", _event("", (2, "inactive"), (12, "shuttingdown"))) is None
    assert len(m.foreign_transitions) == 2
