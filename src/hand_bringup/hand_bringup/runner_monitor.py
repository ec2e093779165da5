"""What a run measures while it runs (:class:`RunMonitor`): the frames the tracker published, the
flexions and their latency as an actuator sees them, the nodes' latest diagnostics, the actuators'
safe-pose trips, the twin's real-time factor, and the progress line. No process handling, no bag.

Subscriptions: :data:`MONITOR_QOS` (contract.RECORD: reliable keep-all, so that a busy Python
process on 2 shared cores loses nothing of a burst), and the latency probe at :data:`LATENCY_QOS`
(contract.LATEST: the age of the newest command when it arrives, not the runner's backlog).
"""

from __future__ import annotations

import itertools
import math
import sys
import time
from collections import Counter, deque

from hand_bringup.bringup import SERVO_DRIVER, TWIN
from hand_common import contract
from hand_common.stats import percentiles_ms, rate_hz
from hand_servo_driver import interface as servo_iface
from hand_tracking import interface as tracker_iface
from hand_twin_mujoco import interface as twin_iface

#: The runner's subscriptions (recorder and measurements): contract.RECORD (reliable keep-all), so
#: that a busy Python process (2 shared cores) loses nothing of a burst: DDS fills the reader's
#: queue from its own threads and the runner drains it.
MONITOR_QOS = contract.RECORD
#: The latency probe subscribes like an actuator (contract.LATEST: reliable, keep-last 1): the
#: figure is the age of the newest command when it arrives, not the runner's own backlog.
LATENCY_QOS = contract.LATEST
#: Frames, flexions and latencies a monitor keeps (rings; counts are running totals): 5 min at
#: 30 fps. A run of a finite source keeps all of them (:class:`~hand_bringup.runner_core.Runner`
#: passes the source's frame count when larger), so a demo's figures cover the whole video, and a
#: camera or a looped source runs for hours in flat memory (it grew ~1.5 MB a minute before).
HISTORY = 9000
#: The actuators whose safe-pose trips are counted (node key -> interface with ``following``).
ACTUATOR_INTERFACES = {TWIN: twin_iface, SERVO_DRIVER: servo_iface}
#: Frames and latencies the progress line's rate and median cover (the last ~2 s).
PROGRESS_WINDOW = 60
#: The lifecycle label of the tracker's status (``state`` key) once deactivated.
STATE_INACTIVE = "inactive"


class RunMonitor:
    """The live measurements of one run (see module docstring). two_hands: the tracker publishes
    the per-side flexion topics. history: how many of the latest frames, flexions and latencies
    are kept (rings, :data:`HISTORY`); ``landmark_msgs``, ``frames_detected`` and ``flexion_msgs``
    count every message of the run."""

    def __init__(self, two_hands: bool = False, history: int = HISTORY) -> None:
        if history < PROGRESS_WINDOW:
            raise ValueError(f"history {history} < {PROGRESS_WINDOW} (the progress line's window)")
        self.two_hands = two_hands
        self.history = int(history)
        # (frame_index, receive wall time, hand found, capture stamp ns) per /hand/landmarks message
        self.frames: deque[tuple[int, float, bool, int]] = deque(maxlen=self.history)
        self.flexion_latency: deque[float] = deque(maxlen=self.history)  # s, as a keep-last-1 subscriber sees them
        self.frames_detected = 0  # /hand/landmarks messages with a hand, whole run
        #: False when the tracker reads a file as fast as it can (realtime false): its stamps are the
        #: media timeline, ahead of the wall clock, so capture→flexion is not measured (it printed
        #: negative latencies)
        self.stamps_are_capture_times = True
        self.twin_rtf: float | None = None  # twin's real-time factor since activation (diagnostics)
        self._trips: list[tuple[str, float]] = []  # (actuator, wall time) OK -> safe-pose transitions
        self._actuators_seen: set[str] = set()
        self._watchdog_ok: dict[str, bool] = {}
        # capture stamp ns -> flexion thumb..pinky, the latest ``history`` (insertion order = arrival)
        self.flexions: dict[int, list[float]] = {}
        self.last_flexion: list[float] = []
        self.diagnostics: dict[str, dict[str, str]] = {}
        #: the tracker's first status that reports its finite source finished: the source's final
        #: accounting (frames, dropped_frames, flexions_published). Later statuses do not replace it:
        #: once the runner deactivates the tracker, its status reports dropped_frames 0 (its prefetch
        #: queue is gone), which made a run that dropped 507 of 621 frames exit 0
        self.tracker_at_end: dict[str, str] | None = None
        #: a source that does not finish (camera, looped file) or a run ended before its end
        #: (--duration, Ctrl-C): the tracker's first ``inactive`` status after the runner
        #: deactivated it (:meth:`expect_stopped_status`): its final counts, nothing published after
        self.tracker_stopped: dict[str, str] | None = None
        self._awaiting_stopped = False
        self.landmark_msgs = 0
        self.flexion_msgs = 0  # every flexion topic (two hands: both sides)
        self.flexion_msgs_by_topic: dict[str, int] = {}
        #: /diagnostics is recorded: the recorder's reader feeds :meth:`read_diagnostics`
        self.diagnostics_from_bag = False
        #: lifecycle transitions of the run's nodes the runner did not request (another process's
        #: change_state: "servo_driver: 'deactivate' (active -> deactivating) ..."), in order
        self.foreign_transitions: list[str] = []
        self._expected_transitions: Counter[tuple[str, str]] = Counter()
        #: the runner is taking its nodes down: their transitions are its own
        self.stopping = False

    def subscribe(self, node) -> None:
        """Create the measurement subscriptions on ``node`` (the runner's probe node)."""
        from diagnostic_msgs.msg import DiagnosticArray
        from hand_msgs.msg import HandLandmarksArray
        from sensor_msgs.msg import JointState

        node.create_subscription(HandLandmarksArray, contract.TOPIC_LANDMARKS, self._on_landmarks,
                                 contract.qos(MONITOR_QOS))
        for topic in ([contract.side_topic(contract.TOPIC_TARGET_FLEXIONS, s) for s in contract.HAND_SIDES]
                      if self.two_hands else [contract.TOPIC_TARGET_FLEXIONS]):
            node.create_subscription(JointState, topic, lambda msg, t=topic: self._on_flexions(msg, t),
                                     contract.qos(MONITOR_QOS))
            node.create_subscription(JointState, topic, self._on_latest_flexions, contract.qos(LATENCY_QOS))
        node.create_subscription(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, self._on_diagnostics,
                                 contract.qos(MONITOR_QOS))

    def watch_lifecycle(self, node, names: list[str]) -> None:
        """Subscribe to each node's ``/<name>/transition_event`` (rcl_lifecycle publishes one per
        state change) to notice transitions the runner did not request."""
        from lifecycle_msgs.msg import TransitionEvent

        for name in names:
            node.create_subscription(TransitionEvent, f"/{name}/transition_event",
                                     lambda msg, n=name: self.on_transition(n, msg), 10)

    #: a requested transition -> the transition state its event goes to (rcl_lifecycle's events
    #: carry the transition's id, not its label; the goal state's label is always there)
    TRANSITION_STATES = {"configure": "configuring", "activate": "activating", "deactivate": "deactivating",
                         "cleanup": "cleaningup", "shutdown": "shuttingdown"}

    def expect_transitions(self, names: list[str], labels: tuple[str, ...]) -> None:
        """The runner is about to request ``labels`` of each node in ``names`` (before it calls)."""
        for name in names:
            for label in labels:
                self._expected_transitions[(name, self.TRANSITION_STATES[label])] += 1

    def on_transition(self, name: str, msg) -> str | None:
        """A transition event of ``name``: one the runner did not request (and not while it stops
        the run) is reported at once on stderr and kept in :attr:`foreign_transitions`. Only the
        event leaving a primary state counts (the one of the request itself)."""
        if msg.start_state.id > 4 or self.stopping:  # a transition state (configuring, ...) or the run's end
            return None
        key = (name, msg.goal_state.label)
        if self._expected_transitions[key] > 0:
            self._expected_transitions[key] -= 1
            return None
        text = (f"{name}: lifecycle change {msg.start_state.label} -> {msg.goal_state.label} not requested by the "
                "runner: another process changed its state (the node's log names the clients)")
        self.foreign_transitions.append(text)
        print(f"[runner] warning: {text}", file=sys.stderr, flush=True)
        return text

    def _on_landmarks(self, msg) -> None:
        self.landmark_msgs += 1
        idx = msg.hands[0].frame_index if msg.hands else (self.frames[-1][0] + 1 if self.frames else 0)
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        self.frames.append((int(idx), time.time(), bool(msg.hands), stamp))
        self.frames_detected += bool(msg.hands)

    def _on_latest_flexions(self, msg) -> None:
        if not self.stamps_are_capture_times:
            return
        latency = time.time() - (msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
        if 0.0 <= latency < 10.0:  # else the stamp is not a capture time on this clock (replayed stamps)
            self.flexion_latency.append(latency)

    def _on_flexions(self, msg, topic: str = contract.TOPIC_TARGET_FLEXIONS) -> None:
        self.flexion_msgs += 1
        self.flexion_msgs_by_topic[topic] = self.flexion_msgs_by_topic.get(topic, 0) + 1
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        by_name = dict(zip(msg.name, msg.position))
        self.last_flexion = [float(by_name.get(f, math.nan)) for f in contract.FINGER_NAMES]
        self.flexions.pop(stamp, None)  # a repeated stamp moves to the newest end
        self.flexions[stamp] = self.last_flexion
        while len(self.flexions) > self.history:
            del self.flexions[next(iter(self.flexions))]  # the oldest

    def _on_diagnostics(self, msg) -> None:
        if not self.diagnostics_from_bag:  # else the recorder's reader feeds read_diagnostics
            self.read_diagnostics(msg)

    def read_diagnostics(self, msg) -> None:
        """Keep every status of a diagnostic_msgs/DiagnosticArray (by status name)."""
        for status in msg.status:
            entry = {kv.key: kv.value for kv in status.values}
            entry["_level"] = str(int.from_bytes(status.level, "little") if isinstance(status.level, bytes)
                                  else int(status.level))
            entry["_message"] = status.message
            self.diagnostics[status.name] = entry
            if (self.tracker_at_end is None and status.name.endswith(tracker_iface.STATUS_SUFFIX)
                    and entry.get(tracker_iface.KEY_WATCHDOG) == tracker_iface.WATCHDOG_FINISHED):
                self.tracker_at_end = entry
            if (self._awaiting_stopped and self.tracker_stopped is None
                    and status.name.endswith(tracker_iface.STATUS_SUFFIX)
                    and entry.get(tracker_iface.KEY_STATE) == STATE_INACTIVE):
                self.tracker_stopped = entry
            self.count_safe_pose(status.name, entry)

    def expect_stopped_status(self) -> None:
        """The runner is deactivating the tracker to end the run: its next ``inactive`` status is
        its final count (:attr:`tracker_stopped`; an inactive status from before, at bring-up,
        counts nothing)."""
        self._awaiting_stopped = True

    def count_safe_pose(self, name: str, entry: dict[str, str], now: float | None = None) -> None:
        """Count an actuator's transitions from following commands to its safe pose (each
        actuator's status key from its interface: twin ``watchdog`` ok → stale; servo driver
        ``stale`` False → True) and keep the twin's RTF."""
        found = [(key, ok) for key, iface in ACTUATOR_INTERFACES.items()
                 if iface.NODE in name and (ok := iface.following(entry)) is not None]
        if not found:
            return
        key, ok = found[0]
        if key == TWIN and twin_iface.KEY_RTF_TOTAL in entry:
            try:
                self.twin_rtf = float(entry[twin_iface.KEY_RTF_TOTAL])
            except ValueError:
                pass
        if self._watchdog_ok.get(key) and not ok:
            self._trips.append((key, time.time() if now is None else now))
        self._actuators_seen.add(key)
        self._watchdog_ok[key] = ok

    @property
    def safe_pose_trips(self) -> dict[str, int]:
        """Per actuator: transitions to the safe pose while the hand was still being tracked (a
        landmarks message arrived after it; the one when the video ends is not a trip). Seen at
        the diagnostics rate (1 Hz), so a trip shorter than a second between two reports can be
        missed; the servo driver's ``stale_events`` counter is in the summary's servo section."""
        last = self.frames[-1][1] if self.frames else -math.inf
        out = dict.fromkeys(sorted(self._actuators_seen), 0)
        for key, t in self._trips:
            if t < last:
                out[key] += 1
        return out

    def progress_line(self, video_frames: int | None = None) -> str:
        """The one-line progress report (video_frames: the source's frame count, if known)."""
        n, det = self.landmark_msgs, self.frames_detected
        total = f"/{video_frames}" if video_frames else ""
        fps = rate_hz([f[1] for f in _last(self.frames, PROGRESS_WINDOW)])
        lat = percentiles_ms(_last(self.flexion_latency, PROGRESS_WINDOW))["p50"]
        flex = " ".join(f"{v:.2f}" for v in self.last_flexion)
        latency = ("n/a (unpaced)" if not self.stamps_are_capture_times
                   else "-" if lat is None else f"{lat:.1f} ms")
        return (f"[runner] frames {n}{total}  hand {det}/{n}  {fps or 0:.1f} fps  "
                f"capture→flexion {latency}  flexion [{flex}]")

    def tracker_status(self) -> dict[str, str]:
        """The tracker's latest ``: tracking`` diagnostic values ({} before the first one)."""
        for name, entry in self.diagnostics.items():
            if name.endswith(tracker_iface.STATUS_SUFFIX) and tracker_iface.KEY_WATCHDOG in entry:
                return entry
        return {}

    def source_status(self) -> dict[str, str]:
        """The tracker's status at the end of its finite source (:attr:`tracker_at_end`) once it
        ended, else its latest (:meth:`tracker_status`): what a run's end check counts from."""
        return self.tracker_at_end if self.tracker_at_end is not None else self.tracker_status()

    def source_finished(self) -> bool:
        """True once the tracker reports that its finite source ended (video, images, bag)."""
        return self.source_status().get(tracker_iface.KEY_WATCHDOG) == tracker_iface.WATCHDOG_FINISHED

    def final_status(self) -> dict[str, str] | None:
        """The tracker's status whose counts are final: the one of its finite source's end, else
        its first status once the runner deactivated it (:attr:`tracker_stopped`); None before."""
        st = self.source_status()
        if st.get(tracker_iface.KEY_WATCHDOG) == tracker_iface.WATCHDOG_FINISHED:
            return st
        return self.tracker_stopped

    def published_counts(self, landmarks_published: bool = True) -> dict[str, int]:
        """Messages the publishers say they sent, per topic, where they say it, once the tracker's
        counts are final (:meth:`final_status`: its finite source finished, or the runner
        deactivated it): /hand/landmarks from its ``frames`` diagnostic (one message per frame,
        when ``landmarks_published``; two hands: each side's landmarks topic too), the flexion
        topics from its ``flexions_published`` (two hands: ``flexions_published_<side>`` on each
        side's /target_flexions and /joint_flexions)."""
        st = self.final_status()
        out: dict[str, int] = {}
        if st is None:
            return out
        frames = st.get(tracker_iface.KEY_FRAMES) if landmarks_published else None
        if frames is not None:
            out[contract.TOPIC_LANDMARKS] = int(frames)
        if self.two_hands:
            for side in contract.HAND_SIDES:
                if frames is not None:
                    out[contract.side_topic(contract.TOPIC_LANDMARKS, side)] = int(frames)
                if (key := tracker_iface.key_flexions_published(side)) in st:
                    n = int(st[key])
                    for topic in (contract.TOPIC_TARGET_FLEXIONS, contract.TOPIC_JOINT_FLEXIONS):
                        out[contract.side_topic(topic, side)] = n
        elif tracker_iface.KEY_FLEXIONS_PUBLISHED in st:
            out[contract.TOPIC_TARGET_FLEXIONS] = out[contract.TOPIC_JOINT_FLEXIONS] = int(
                st[tracker_iface.KEY_FLEXIONS_PUBLISHED])
        return out

    def source_frames(self) -> tuple[int, int] | None:
        """(frames the tracker read from its finite source, of which it dropped) once the source
        finished: ``frames`` processed + ``dropped_frames`` (a paced replay with drop_late_frames
        drops the frames it cannot process in time); None before."""
        st = self.source_status()
        if (st.get(tracker_iface.KEY_WATCHDOG) != tracker_iface.WATCHDOG_FINISHED
                or tracker_iface.KEY_FRAMES not in st):
            return None
        dropped = int(st.get(tracker_iface.KEY_DROPPED_FRAMES, "0") or 0)
        return int(st[tracker_iface.KEY_FRAMES]) + dropped, dropped

    def received_counts(self) -> dict[str, int]:
        """Messages the runner's own keep-all subscriptions received, per topic it counts."""
        return {contract.TOPIC_LANDMARKS: self.landmark_msgs, **self.flexion_msgs_by_topic}


def _last(ring: deque, n: int) -> list:
    """The last ``n`` items of ``ring``, oldest first (without copying the whole ring)."""
    out = list(itertools.islice(reversed(ring), n))
    out.reverse()
    return out
