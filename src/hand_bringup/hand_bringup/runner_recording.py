"""A run's rosbag2 (MCAP) recording (:class:`Recorder`): the bag, one keep-all subscription per
recorded topic, the wait until they have matched their publishers, the drain before stopping, and
the final published-vs-recorded check that makes a run that lost messages fail.

The bag is crash safe (:class:`hand_common.bag.BagWriter`): after kill -9 it opens with rosbags
and lacks at most the last ``BagWriter.segment_s`` seconds.
"""

from __future__ import annotations

import pathlib
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from hand_bringup.runner_monitor import MONITOR_QOS
from hand_common import contract

#: Topics never recorded: ROS infrastructure and camera-sized images (the demo keeps the twin's
#: frames as files). Everything else the profile's nodes publish is recorded (see Recorder.record).
NOT_RECORDED_TOPICS = ("/rosout", "/parameter_events")
NOT_RECORDED_TYPES = ("sensor_msgs/msg/Image",)


def check_counts(bag_counts: dict[str, int], published: dict[str, int], received: dict[str, int]
                 ) -> tuple[dict[str, dict[str, int | None]], list[str]]:
    """Per recorded topic ``{"published": n or None, "recorded": n, "monitor": n or None}`` and one
    line per topic that lost messages: fewer recorded than ``published`` (what the publishers say
    they sent) or than ``received`` (what the runner's own keep-all subscriptions got)."""
    recording: dict[str, dict[str, int | None]] = {}
    problems: list[str] = []
    for topic, recorded in sorted(bag_counts.items()):
        recording[topic] = {"published": published.get(topic), "recorded": recorded, "monitor": received.get(topic)}
        pub = published.get(topic)
        if pub is not None and recorded < pub:
            problems.append(f"{topic}: published {pub}, recorded {recorded} ({pub - recorded} lost)")
        mon = received.get(topic)
        if mon is not None and recorded < mon:
            problems.append(f"{topic}: the runner received {mon}, the bag holds {recorded} ({mon - recorded} lost)")
    return recording, problems


def check_received(published: dict[str, int], received: dict[str, int]
                   ) -> tuple[dict[str, dict[str, int | None]], list[str]]:
    """A run without a bag: per topic the runner counts ``{"published": n or None, "recorded":
    None, "monitor": n}`` and one line per topic of which the runner's keep-all subscriptions
    received fewer than ``published``."""
    tally: dict[str, dict[str, int | None]] = {}
    problems: list[str] = []
    for topic, got in sorted(received.items()):
        pub = published.get(topic)
        tally[topic] = {"published": pub, "recorded": None, "monitor": got}
        if pub is not None and got < pub:
            problems.append(f"{topic}: published {pub}, the runner received {got} ({pub - got} lost)")
    return tally, problems


def source_problem(source: tuple[int, int] | None) -> str | None:
    """The line that fails a run whose tracker dropped frames of its finite source (``source``:
    (frames read, of which dropped), :meth:`RunMonitor.source_frames`), else None. The bag is
    compared with what the source had, not with what the tracker published: a paced replay with
    drop_late_frames under load dropped 2 of 621 frames and exited 0 (issue 27)."""
    if source is None or not source[1]:
        return None
    n, dropped = source
    return (f"{contract.TOPIC_LANDMARKS}: the source had {n} frames, the tracker dropped {dropped} "
            f"(drop_late_frames: not processed in time at realtime pacing), {n - dropped} published; "
            "to keep every frame of a recording: -p tracker.drop_late_frames=false or tracker.realtime=false")


def summary_lines(recording: dict[str, dict[str, int | None]]) -> str:
    """One line per recorded topic: published (where known) vs recorded (without a bag: vs what
    the runner received); a last line says what a ``?`` means when one is shown."""
    lines = []
    for topic, c in recording.items():
        pub = "?" if c["published"] is None else str(c["published"])
        got = f"recorded {c['recorded']}" if c["recorded"] is not None else f"received {c['monitor']} (no bag)"
        lines.append(f"  {topic}: published {pub}, {got}")
    if any(c["published"] is None for c in recording.values()):
        lines.append("  (published ?: no count to check against - the tracker counts its topics when a finite "
                     "source ends or the runner deactivates it at the end; the other nodes do not count)")
    return "\n".join(lines)


class Recorder:
    """The bag of one run at ``path`` and its subscriptions on ``node`` (the runner's probe node).
    on_diagnostics(msg): called with every recorded /diagnostics message (the run then knows its
    nodes from what its bag holds: one reader, one stream)."""

    def __init__(self, node, path: pathlib.Path, on_diagnostics: Callable[[Any], None] | None = None) -> None:
        from hand_common.bag import BagWriter

        self._node = node
        if path.exists():
            import shutil

            shutil.rmtree(path)
        self.bag = BagWriter(path)
        self.recorded: set[str] = set()
        self._subs: dict[str, Any] = {}  # topic -> the recorder's subscription
        self._lock = threading.Lock()
        self._on_diagnostics = on_diagnostics
        #: why the bag stopped (a full disk: the file and the OS error), None while it records
        self.error: str | None = None
        self._held: dict[str, int] = {}  # after an error: what the bag holds (its committed segments)
        self.closed = False
        #: messages received after :meth:`close` (the run had ended; a two-host run's other side goes on)
        self.after_close = 0

    def record(self, topic: str, type_name: str) -> None:
        """Record ``topic`` (ROS type name like ``sensor_msgs/msg/JointState``) from now on; a topic
        already recorded is left as it is."""
        from hand_common.bag import message_class

        if topic in self.recorded:
            return
        with self._lock:
            if self.bag is None:
                return
            self.bag.add(topic, type_name)
        self._subs[topic] = self._node.create_subscription(
            message_class(type_name), topic, self._callback(topic), contract.qos(MONITOR_QOS), raw=True)
        self.recorded.add(topic)

    def record_published_topics(self, node_names: Iterable[str]) -> set[str]:
        """Record every topic the nodes ``node_names`` publish (as the ROS graph shows them now),
        except infrastructure, lifecycle transition events, service introspection events and images. Returns the recorded topics."""
        for name in node_names:
            try:
                pubs = self._node.get_publisher_names_and_types_by_node(name, "/")
            except Exception:  # noqa: BLE001 - the node is not discovered yet
                continue
            for topic, types in pubs:
                # service introspection events (<service>/_service_event: the servo driver's parameter
                # services say who called them) are infrastructure, and rosbags has no *_Event types
                if (topic in NOT_RECORDED_TOPICS or topic.endswith(("/transition_event", "/_service_event")) or not types
                        or types[0] in NOT_RECORDED_TYPES):
                    continue
                self.record(topic, types[0])
        return set(self.recorded)

    def _callback(self, topic: str):
        diagnostics = topic == contract.TOPIC_DIAGNOSTICS and self._on_diagnostics is not None
        if diagnostics:
            from diagnostic_msgs.msg import DiagnosticArray
            from rclpy.serialization import deserialize_message

        def cb(data: bytes) -> None:
            with self._lock:
                if self.closed:  # the run is over: another host's nodes (two-host runs) still publish
                    self.after_close += 1
                    return
                if self.bag is not None:
                    try:
                        self.bag.write(topic, time.time_ns(), data)
                    except OSError as exc:  # never out of an rclpy callback (it aborted the runner)
                        self._stop_on(exc)
            if diagnostics:
                self._on_diagnostics(deserialize_message(data, DiagnosticArray))
        return cb

    def _stop_on(self, exc: OSError) -> None:
        """The bag cannot be written (a full disk): keep what it committed (it opens: every
        segment before this one), drop the pending segment (its space goes back to the disk, for
        the logs of the shutdown), record ``error`` naming the file, record nothing more. Called
        with the lock held."""
        bag, self.bag = self.bag, None
        self._held = dict(bag.committed)
        pending = bag._staging / f"{bag._staging.name}.mcap"
        self.error = (f"cannot write the bag {bag.path} ({exc.filename or pending}: {exc.strerror or exc}); "
                      f"it keeps the {sum(self._held.values())} messages committed before")
        import shutil

        shutil.rmtree(bag._staging, ignore_errors=True)

    def flush(self) -> None:
        """Commit the bag's pending segment if it is due (called ~20 times a second)."""
        with self._lock:
            if self.bag is not None:
                try:
                    self.bag.flush_if_due()
                except OSError as exc:
                    self._stop_on(exc)

    def count(self, topic: str) -> int:
        """Messages of ``topic`` written to the bag so far."""
        with self._lock:
            return self.bag.counts.get(topic, 0) if self.bag is not None else self._held.get(topic, 0)

    def wait_for_publishers(self, expected: set[str], node_names: Iterable[str], timeout: float = 10.0) -> None:
        """Before anything is active: record what the configured nodes publish and wait until
        every recorder subscription of the ``expected`` topics has *matched* its publisher (a
        volatile reader that matches a writer late never gets the samples sent before; the graph
        showing the publisher does not mean the reader has matched it: the reader's own count
        decides)."""
        names = list(node_names)
        end = time.monotonic() + timeout
        unmatched: set[str] = set()
        while time.monotonic() < end:
            recorded = self.record_published_topics(names)
            unmatched = {t for t in recorded if t != contract.TOPIC_DIAGNOSTICS
                         and self._subs[t].get_publisher_count() == 0}
            # /diagnostics has a publisher per node: every one the graph shows must have matched (a
            # node's status sent on activation went to a reader that had matched another node only)
            diagnostics = self._subs.get(contract.TOPIC_DIAGNOSTICS)
            if diagnostics is not None and diagnostics.get_publisher_count() < self._node.count_publishers(
                    contract.TOPIC_DIAGNOSTICS):
                unmatched.add(contract.TOPIC_DIAGNOSTICS)
            if expected <= recorded and not unmatched:
                return
            time.sleep(0.02)
        missing = sorted((expected - self.recorded) | unmatched)
        print(f"[runner] warning: the recorder matched no publisher on {missing} after {timeout:.0f} s", flush=True)

    def drain(self, published_counts: Callable[[], dict[str, int]], tick: Callable[[], None], *,
              idle_s: float, until: float) -> None:
        """Wait until the bag holds every published message that is known (``published_counts``),
        while those topics' recorded counts still grow (``idle_s``), at most until ``until``
        (time.monotonic); ``tick`` runs in between (it raises when a node died)."""
        last, last_change = None, time.monotonic()
        while time.monotonic() - last_change < idle_s and time.monotonic() < until:
            published = published_counts()
            counts = {t: self.count(t) for t in published}
            if all(counts[t] >= n for t, n in published.items()):
                return
            if counts != last:
                last, last_change = counts, time.monotonic()
            tick()
            self.flush()
            time.sleep(0.05)

    def counts(self) -> dict[str, int]:
        """Messages written per topic (after :meth:`close`: the bag's final counts)."""
        with self._lock:
            return dict(self.bag.counts) if self.bag is not None else dict(self._held)

    def close(self) -> None:
        """Close the bag; a message that arrives afterwards is counted in ``after_close``, not written."""
        with self._lock:
            self.closed = True
            if self.bag is not None:
                try:
                    self.bag.close()
                except OSError as exc:  # the merge needs a second copy's space: the segments stay
                    self._stop_on(exc)
