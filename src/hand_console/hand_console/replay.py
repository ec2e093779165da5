"""Replay a recorded run in the console's page: ``ros2 run hand_console console --bag out/sim_bag``.

No ROS graph: the bag is read with the project's bag module (:mod:`hand_common.bag`, rosbags +
rclpy's deserializer) into :class:`ReplayData`, and the page (:class:`~hand_console.page.ConsolePage`)
gets a timeline slider (scrub), Play and Pause. At any moment t (s from the first frame, capture
stamps) it shows the frame of that moment — the tracker's source video read at the landmarks'
``frame_index`` (the run's ``source`` from its diagnostics, or ``--video``) — with its landmarks and
the gate's verdict, the flexions at t with the 10 s before, and the tracker's figures of that
moment; capture → flexion p50/p95 over the 10 s before t come from the bag itself: each flexion's
log time (when the run's recorder received it) minus its capture stamp
(:meth:`ReplayData.latency_at`). A bag without the video still shows landmarks on a blank frame. When the bag holds a
robot's joint states (:data:`REPLAY_ROBOTS`: the tendon twin's, the joint mapper's, the dexterous
twin's, the SO-101 twin's - the first one recorded), its URDF is shown posed as at that moment.
"""

from __future__ import annotations

import argparse
import bisect
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hand_common import contract
from hand_console import keys
from hand_console.state import MAX_RENDER_HZ, FlexionHistory, HandInfo, figures, find_status, gate_view

#: Profiles whose robot a replay shows, in order of preference: the first whose joint-state topic
#: the bag holds (:data:`hand_console.robots.ROBOT_VIEWS`; one robot each).
REPLAY_ROBOTS = ("sim", "rviz", "dex", "arm")
#: Capture → flexion percentiles of a replay cover the flexions of this many seconds up to the moment.
LATENCY_WINDOW_S = 10.0
#: A capture → recorder latency outside [0, this) s says the stamp is not a capture time on the
#: recorder's clock.
MAX_LATENCY_S = 10.0


@dataclass
class Frame:
    """One recorded camera frame: t (s from the first frame), frame_index (source frame, -1 when
    no hand carried it), hands (:class:`~hand_console.state.HandInfo`)."""

    t: float
    frame_index: int
    hands: list[HandInfo]


@dataclass
class ReplayData:
    """What a recorded run shows, on one time axis (s from its first landmarks' capture stamp).

    frames: the landmarks messages in time order; flex_t (N,), flex_v (N, 5): the flexions;
    flex_latency_s (N,): each flexion's capture → recorder latency, s (its log time, when the
    run's recorder received it - a reliable keep-all subscriber - minus its capture stamp);
    diagnostics: (t, {status name: {key: value}}) in time order; source: the tracker's source spec
    (``video:/path``), '' when the bag does not say; duration_s: the last time on the axis.
    """

    frames: list[Frame] = field(default_factory=list)
    flex_t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    flex_v: np.ndarray = field(default_factory=lambda: np.zeros((0, 5)))
    flex_latency_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    diagnostics: list[tuple[float, dict[str, dict[str, str]]]] = field(default_factory=list)
    source: str = ""
    duration_s: float = 0.0
    #: the robot shown (a :class:`hand_console.robots.RobotView`, None: none recorded) and its joint
    #: states (t s on the axis, names, positions) in time order
    robot: Any = None
    joints: list[tuple[float, list[str], list[float]]] = field(default_factory=list)

    @classmethod
    def load(cls, bag: str | os.PathLike, side: str | None = None) -> ReplayData:
        """Read ``bag`` (a rosbag2 directory). side: "left"/"right" for a two-hand run's per-hand
        topics (default: the single-hand topics, else the right hand's). ValueError when the bag
        holds no landmarks."""
        from hand_common.bag import read_messages, topic_counts

        counts = topic_counts(bag)
        lm_topic, fx_topic = contract.TOPIC_LANDMARKS, contract.TOPIC_TARGET_FLEXIONS
        if side is not None or fx_topic not in counts:
            s = side or "right"
            lm_topic = contract.side_topic(contract.TOPIC_LANDMARKS, s) if side else lm_topic
            fx_topic = contract.side_topic(contract.TOPIC_TARGET_FLEXIONS, s)
        if lm_topic not in counts:
            raise ValueError(f"{bag}: no {lm_topic} recorded (topics: {sorted(counts)})")
        raw_frames, flex, diags = [], [], []
        for topic, log_ns, msg in read_messages(bag, [lm_topic, fx_topic, contract.TOPIC_DIAGNOSTICS]):
            if topic == lm_topic:
                raw_frames.append((_stamp(msg.header.stamp), msg))
            elif topic == fx_topic:
                by = dict(zip(msg.name, msg.position))
                if all(f in by for f in contract.FINGER_NAMES):
                    flex.append((_stamp(msg.header.stamp), [float(by[f]) for f in contract.FINGER_NAMES], log_ns))
            else:
                diags.append((log_ns * 1e-9, {st.name: {kv.key: kv.value for kv in st.values} for st in msg.status}))
        if not raw_frames:
            raise ValueError(f"{bag}: {lm_topic} holds no message")
        raw_frames.sort(key=lambda x: x[0])
        t0 = raw_frames[0][0]
        data = cls()
        for t, msg in raw_frames:
            index = int(msg.hands[0].frame_index) if msg.hands else -1
            data.frames.append(Frame((t - t0) * 1e-9, index, _hand_infos(msg)))
        flex.sort(key=lambda x: x[0])
        data.flex_t = np.array([(t - t0) * 1e-9 for t, _, _ in flex])
        data.flex_v = np.array([v for _, v, _ in flex]).reshape(-1, 5)
        data.flex_latency_s = np.array([(log - t) * 1e-9 for t, _, log in flex])
        # diagnostics are stamped on arrival (log time): put them on the capture axis through the
        # first landmarks' log time
        lm_log0 = next((log * 1e-9 for topic, log, _ in read_messages(bag, [lm_topic])), None)
        merged: dict[str, dict[str, str]] = {}
        for t_log, statuses in sorted(diags, key=lambda x: x[0]):
            merged = {**merged, **statuses}
            data.diagnostics.append((t_log - (lm_log0 or t_log), merged))
        tracker = find_status(merged, keys.TRACKER_NODE, keys.TRACKER_STATUS_SUFFIX)
        data.source = tracker.get(keys.TRACKER_SOURCE, "")
        data.duration_s = max(data.frames[-1].t, float(data.flex_t[-1]) if len(data.flex_t) else 0.0)
        data._load_robot(bag, counts, t0)
        return data

    def _load_robot(self, bag, counts: dict, t0_ns: int) -> None:
        from hand_common.bag import read_messages
        from hand_console.robots import robot_views

        views = [v for p in REPLAY_ROBOTS for v in robot_views(p)]
        self.robot = next((v for v in views if v.topic_name() in counts), None)
        if self.robot is None:
            return
        for _, _, msg in read_messages(bag, [self.robot.topic_name()]):
            self.joints.append(((_stamp(msg.header.stamp) - t0_ns) * 1e-9, list(msg.name),
                                [float(x) for x in msg.position]))
        self.joints.sort(key=lambda j: j[0])

    def joints_at(self, t: float) -> tuple[list[str], list[float]] | None:
        """The robot's last joint state at or before ``t`` (names, positions), None before the first."""
        i = bisect.bisect_right([j[0] for j in self.joints], t) - 1
        return (self.joints[i][1], self.joints[i][2]) if i >= 0 else None

    def frame_at(self, t: float) -> Frame:
        """The last frame captured at or before ``t`` (the first one before it)."""
        i = bisect.bisect_right([f.t for f in self.frames], t) - 1
        return self.frames[max(i, 0)]

    def flexions_at(self, t: float, window_s: float = 10.0) -> tuple[tuple[float, ...] | None, FlexionHistory]:
        """(the flexions at ``t``, the last ``window_s`` seconds up to ``t`` as a FlexionHistory)."""
        hist = FlexionHistory(window_s)
        i = int(np.searchsorted(self.flex_t, t, side="right"))
        j = int(np.searchsorted(self.flex_t, t - window_s, side="left"))
        for k in range(j, i):
            hist.add(float(self.flex_t[k]), self.flex_v[k])
        return hist.latest(), hist

    def latency_at(self, t: float, window_s: float = LATENCY_WINDOW_S) -> tuple[float | None, float | None, str]:
        """Capture → flexion (p50, p95) in ms over the flexions captured in the ``window_s`` s up
        to ``t``, from the recorder's receive times (log time − capture stamp), and the note the
        page shows after them: whose times they are, or why there is no figure (None, None, why):
        no flexion in the window, or capture stamps that are not on the recorder's clock (a file
        read unpaced stamps the media timeline, ahead of the wall clock)."""
        lat = self.flex_latency_s
        if len(lat) and np.mean((lat >= 0.0) & (lat < MAX_LATENCY_S)) < 0.5:
            return None, None, "no figure: the capture stamps are not on the recorder's clock (an unpaced file?)"
        i = int(np.searchsorted(self.flex_t, t, side="right"))
        j = int(np.searchsorted(self.flex_t, t - window_s, side="left"))
        w = lat[j:i]
        w = w[(w >= 0.0) & (w < MAX_LATENCY_S)] * 1e3
        if not len(w):
            return None, None, f"no flexion in the {window_s:g} s before"
        return (float(np.percentile(w, 50)), float(np.percentile(w, 95)),
                f"recorder's keep-all receive times, {len(w)} flexions in the last {window_s:g} s")

    def diagnostics_at(self, t: float) -> dict[str, dict[str, str]]:
        """The newest diagnostics known at ``t`` ({} before the first)."""
        i = bisect.bisect_right([d[0] for d in self.diagnostics], t) - 1
        return self.diagnostics[i][1] if i >= 0 else {}


def _stamp(stamp) -> int:
    """A header stamp in integer ns (differences exact: a float of epoch seconds keeps ~0.2 us)."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def _hand_infos(msg) -> list[HandInfo]:
    return [HandInfo(h.handedness, float(h.handedness_score), bool(h.accepted), float(h.quality), h.rejection,
                     np.array([(p.x, p.y) for p in h.image_landmarks], float)) for h in msg.hands]


class VideoFrames:
    """Frames of the source video by index (cv2), downscaled to ``width`` px; a sequential read
    when the next index is asked (playing), a seek otherwise (scrubbing). None when unreadable."""

    def __init__(self, path: str, width: int = 320):
        import cv2

        self.cap = cv2.VideoCapture(path)
        if not self.cap.isOpened():
            raise FileNotFoundError(f"cannot open video {path}")
        self.width = int(width)
        self._next = 0

    def get(self, index: int) -> np.ndarray | None:
        import cv2

        if index < 0:
            return None
        if index != self._next:
            self.cap.set(cv2.CAP_PROP_POS_FRAMES, index)
        ok, bgr = self.cap.read()
        self._next = index + 1
        if not ok:
            return None
        h, w = bgr.shape[:2]
        small = cv2.resize(bgr, (self.width, max(1, round(h * self.width / w))), interpolation=cv2.INTER_AREA)
        return cv2.cvtColor(small, cv2.COLOR_BGR2RGB)

    def close(self) -> None:
        self.cap.release()


class Replay:
    """The page of a recorded run: timeline (scrub), Play, Pause; draws at most 15 times a second."""

    def __init__(self, data: ReplayData, host: str, port: int, video: str | None = None):
        from hand_console.page import ConsolePage, Controls

        self.data = data
        path = video or (data.source.partition(":")[2] if data.source.startswith("video:") else "")
        self.video = VideoFrames(path) if path and os.path.isfile(path) else None
        self.t = 0.0
        self.playing = False
        self._lock = threading.Lock()
        self._dirty = True
        self._stop = threading.Event()
        self.page = ConsolePage(host, port, title="hand console - replay",
                                controls=Controls(on_seek=self.seek, on_play=self.play),
                                timeline_s=max(data.duration_s, 0.01))
        self.shown_t: float | None = None
        self.robot = self.pose = None  # the URDF in the scene and its joint-state -> configuration map
        if data.robot is not None and data.joints:
            import yourdfpy

            from hand_console.robots import UrdfPose

            urdf = yourdfpy.URDF.load(str(data.robot.urdf()), load_meshes=True, build_scene_graph=True)
            self.robot = self.page.add_urdf(data.robot.name, urdf, data.robot.offset)
            self.pose = UrdfPose.for_urdf(urdf)

    def seek(self, t_s: float) -> None:
        with self._lock:
            self.t = min(max(float(t_s), 0.0), self.data.duration_s)
            self._dirty = True

    def play(self, playing: bool) -> None:
        with self._lock:
            self.playing = bool(playing)
            if self.playing and self.t >= self.data.duration_s:
                self.t = 0.0

    def show(self, t: float) -> None:
        """Draw the moment ``t``: frame, landmarks, gate, flexions and their 10 s, figures."""
        from hand_console.layout import blank_frame, draw_landmarks

        frame = self.data.frame_at(t)
        rgb = self.video.get(frame.frame_index) if self.video is not None else None
        diag = self.data.diagnostics_at(t)
        tracker = find_status(diag, keys.TRACKER_NODE, keys.TRACKER_STATUS_SUFFIX)
        gate = gate_view(frame.hands, tracker.get(keys.TRACKER_TRACKING))
        self.page.show_camera(draw_landmarks(rgb if rgb is not None else blank_frame(), frame.hands, gate))
        self.page.show_gate(f"{gate.text()} (t {t:.2f} s, frame {frame.frame_index})")
        latest, hist = self.data.flexions_at(t)
        ts, vs = hist.series()
        self.page.show_flexions(latest, ts, vs)
        p50, p95, note = self.data.latency_at(t)
        self.page.show_figures(figures(diag, (p50, p95), {}, note))
        if self.robot is not None and (js := self.data.joints_at(t)) is not None:
            self.robot.update_cfg(self.pose.update(*js))
        self.shown_t = t

    def run(self, duration_s: float | None = None) -> None:
        """Serve until interrupted (or ``duration_s``): advance while playing, draw what changed."""
        period = 1.0 / MAX_RENDER_HZ
        last = time.monotonic()
        end = None if duration_s is None else last + duration_s
        while not self._stop.is_set() and (end is None or time.monotonic() < end):
            now = time.monotonic()
            with self._lock:
                if self.playing:
                    self.t = min(self.t + (now - last), self.data.duration_s)
                    self.playing = self.t < self.data.duration_s
                    self._dirty = True
                t, dirty, playing = self.t, self._dirty, self.playing
            last = now
            if dirty and self.page.server.get_clients():  # drawn once someone looks
                with self._lock:
                    self._dirty = self._dirty and self.t != t  # moved again meanwhile: draw again
                self.show(t)
                if playing:
                    self.page.set_timeline(t)
            self._stop.wait(period)

    def close(self) -> None:
        self._stop.set()
        if self.video is not None:
            self.video.close()
        self.page.close()


def moment_of_frame(data: ReplayData, frame_index: int) -> float:
    """The time (s on the replay's axis) of the recorded frame ``frame_index`` of the source; the
    run's middle when no landmarks message carries that frame."""
    for f in data.frames:
        if f.frame_index == frame_index:
            return f.t
    return data.duration_s / 2.0


def screenshot(bag: str | os.PathLike, png: str | os.PathLike, t_s: float | None = None,
               frame_index: int | None = None, video: str | None = None, timeout: float = 300.0) -> dict[str, Any]:
    """The console's page at one moment of a recorded run, saved as a PNG by a headless chromium
    (:mod:`hand_console.browser`): the page is served on a free loopback port, moved to ``t_s`` (or
    to the moment of source frame ``frame_index``, else the middle of the run), and captured once it
    shows that moment (its camera picture and gate line). Used by ``make demo`` after the run (no
    browser competes with the run's hot path). Returns {png, t_s, frame_index}; RuntimeError when no
    browser can be driven here (the reason), ValueError for a bag without landmarks, TimeoutError
    when the page does not show the moment within ``timeout`` s."""
    import socket

    from hand_console.browser import ConsoleBrowser, browser_problem
    from hand_console.page import LOCALHOST, url

    if problem := browser_problem():
        raise RuntimeError(problem)
    data = ReplayData.load(bag)
    t = t_s if t_s is not None else moment_of_frame(data, frame_index) if frame_index is not None \
        else data.duration_s / 2.0
    with socket.socket() as sock:
        sock.bind((LOCALHOST, 0))
        port = sock.getsockname()[1]
    replay = Replay(data, LOCALHOST, port, video)
    replay.seek(t)
    server = threading.Thread(target=replay.run, name="console replay", daemon=True)
    server.start()
    frame = data.frame_at(replay.t)
    try:
        with ConsoleBrowser(url(LOCALHOST, replay.page.port), 1400, 1000) as page:
            page.open(timeout)
            shown = f"t {replay.t:.2f} s, frame {frame.frame_index}"
            page.wait_for(lambda: shown in page.text() and page.image_sources(), timeout, f"the moment ({shown})")
            time.sleep(1.0)  # the pictures' blobs decoded and laid out
            page.screenshot(png)
    finally:
        replay.close()
        server.join(5.0)
    return {"png": os.fspath(png), "t_s": round(replay.t, 3), "frame_index": frame.frame_index}


def main(argv: list[str] | None = None) -> int:
    from hand_console.page import DEFAULT_PORT, LOCALHOST, check_host, url

    p = argparse.ArgumentParser(prog="console --bag", description=__doc__.split("\n\n")[0])
    p.add_argument("--bag", required=True, help="rosbag2 directory of a recorded run (e.g. out/sim_bag)")
    p.add_argument("--video", help="the run's source video (default: the source named in its diagnostics)")
    p.add_argument("--side", choices=contract.HAND_SIDES, help="two-hand runs: which hand")
    p.add_argument("--port", type=int, default=DEFAULT_PORT)
    p.add_argument("--host", default=LOCALHOST)
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host (a warning is printed)")
    p.add_argument("--duration", type=float, help="serve this many seconds, then exit")
    args = p.parse_args(argv)
    try:
        host = check_host(args.host, args.allow_remote)
        data = ReplayData.load(args.bag, args.side)
        replay = Replay(data, host, args.port, args.video)
    except (ValueError, OSError) as exc:
        print(f"console: error: {exc}", file=sys.stderr)
        return 2
    print(f"[console] replay of {args.bag}: {len(data.frames)} frames, {data.duration_s:.1f} s"
          f"{'' if replay.video else ' (no video: landmarks on a blank frame)'}", flush=True)
    print(f"[console] {url(host, replay.page.port)}", flush=True)
    try:
        replay.run(args.duration)
    except KeyboardInterrupt:
        pass
    finally:
        replay.close()
    return 0


__all__: list[Any] = ["Frame", "ReplayData", "Replay", "VideoFrames", "main", "moment_of_frame", "screenshot"]
