"""Check a ``/joint_states`` stream against a URDF: what robot_state_publisher would swallow silently.

robot_state_publisher (Jazzy) ignores joint names it does not know without a word, drops a
message whose ``name`` and ``position`` differ in length, ignores a message whose stamp is not
newer than the last one it published, and never enforces limits. This checker reports each of
those, per message:

========================  =====================================================================
kind                      meaning
========================  =====================================================================
``length_mismatch``       ``position`` (or a non-empty ``velocity``/``effort``) differs in
                          length from ``name``
``duplicate_name``        a joint appears twice in one message
``unknown_name``          not a movable (revolute/continuous/prismatic) joint of the URDF
``missing_joint``         a movable URDF joint is absent (and is not a ``<mimic>`` of one that
                          is present): robot_state_publisher publishes no transform for it
``non_finite``            NaN or ±inf position
``out_of_limits``         position outside the URDF ``<limit>`` (+ tolerance)
``stale_stamp``           zero stamp; stamp not after the previous message's; older than
                          ``max_age_s`` at reception; or more than ``max_age_s`` in the future
========================  =====================================================================

Library: :class:`JointStateChecker` (one message at a time), :func:`check_messages`,
:func:`check_bag` (rosbag2 directory, MCAP or sqlite3, read with ``rosbags``; reception time =
the bag's log time) and :func:`check_live` (subscribes for a while, optionally records a bag).
CLI: ``check_joint_states --bag DIR`` or ``check_joint_states --live --duration 10``; exit code
0 = every message passed, 1 = problems, 2 = no message or unusable input.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hand_common import contract
from hand_joint_mapper.joint_mapping import MappingError, UrdfJoint, load_urdf_file, parse_urdf

KINDS = ("length_mismatch", "duplicate_name", "unknown_name", "missing_joint", "non_finite", "out_of_limits",
         "stale_stamp")


@dataclass(frozen=True)
class Problem:
    """One finding: message ``index`` (0-based, in stream order), ``kind`` (see :data:`KINDS`),
    the joint concerned (None for whole-message problems) and a human-readable detail."""

    index: int
    kind: str
    joint: str | None
    detail: str

    def __str__(self) -> str:
        who = f" {self.joint}" if self.joint else ""
        return f"message {self.index}: {self.kind}{who}: {self.detail}"


@dataclass
class CheckReport:
    """Summary of a checked stream. ``ok``: at least one message and no problem at all."""

    messages: int = 0
    bad_messages: int = 0
    counts: Counter = field(default_factory=Counter)
    problems: list[Problem] = field(default_factory=list)  # the first ``keep`` problems
    keep: int = 1000
    first_stamp_ns: int | None = None
    last_stamp_ns: int | None = None

    @property
    def ok(self) -> bool:
        return self.messages > 0 and not self.counts

    def add(self, found: list[Problem]) -> None:
        self.messages += 1
        if found:
            self.bad_messages += 1
        for p in found:
            self.counts[p.kind] += 1
            if len(self.problems) < self.keep:
                self.problems.append(p)

    def summary(self, show: int = 10) -> str:
        """Multi-line text: totals, counts per kind, the first ``show`` problems."""
        span = ""
        if self.first_stamp_ns is not None and self.last_stamp_ns is not None:
            span = f" spanning {(self.last_stamp_ns - self.first_stamp_ns) / 1e9:.2f} s of stamps"
        lines = [f"{self.messages} messages{span}: {self.messages - self.bad_messages} passed, "
                 f"{self.bad_messages} with problems" + ("" if self.messages else " (NO MESSAGES)")]
        lines += [f"  {k}: {self.counts[k]}" for k in KINDS if self.counts[k]]
        lines += [f"  {p}" for p in self.problems[:show]]
        if len(self.problems) > show:
            lines.append(f"  ... {sum(self.counts.values()) - show} more")
        return "\n".join(lines)


class JointStateChecker:
    """Checks JointState messages one by one against a URDF; accumulates a :class:`CheckReport`.

    urdf_xml: the URDF text. tolerance: allowed excess over a limit (rad or m). max_age_s: a
    message received more than this after its stamp (or stamped this far in the future) is stale;
    None disables the age check. require_all: report movable URDF joints missing from a message.
    Raises MappingError for an unusable URDF.
    """

    def __init__(self, urdf_xml: str, *, tolerance: float = 1e-6, max_age_s: float | None = 0.5,
                 require_all: bool = True):
        _, joints = parse_urdf(urdf_xml)
        self.joints: dict[str, UrdfJoint] = {n: j for n, j in joints.items() if j.single_dof}
        self.fixed = {n for n, j in joints.items() if not j.single_dof}
        self.tolerance = tolerance
        self.max_age_ns = None if max_age_s is None else int(max_age_s * 1e9)
        self.require_all = require_all
        self.report = CheckReport()
        self._prev_stamp_ns: int | None = None
        self._index = 0

    def _mimic_root(self, name: str) -> str:
        seen = {name}
        while (j := self.joints.get(name)) is not None and j.mimic is not None and j.mimic.joint not in seen:
            name = j.mimic.joint
            seen.add(name)
        return name

    def check(self, name: Sequence[str], position: Sequence[float], velocity: Sequence[float] = (),
              effort: Sequence[float] = (), stamp_ns: int = 0, receive_ns: int | None = None) -> list[Problem]:
        """Check one message (its arrays, stamp in ns, reception time in ns or None); returns the
        problems found and adds them to :attr:`report`."""
        i = self._index
        self._index += 1
        found: list[Problem] = []

        def bad(kind: str, joint: str | None, detail: str) -> None:
            found.append(Problem(i, kind, joint, detail))

        names = list(name)
        lengths_ok = len(position) == len(names)
        if not lengths_ok:
            bad("length_mismatch", None, f"{len(names)} names but {len(position)} positions "
                                         f"(robot_state_publisher drops the whole message)")
        for field_name, arr in (("velocity", velocity), ("effort", effort)):
            if len(arr) and len(arr) != len(names):
                bad("length_mismatch", None, f"{len(names)} names but {len(arr)} {field_name} values")
        for n, c in Counter(names).items():
            if c > 1:
                bad("duplicate_name", n, f"appears {c} times")
        for n in dict.fromkeys(names):
            if n not in self.joints:
                why = "a fixed/multi-DOF joint" if n in self.fixed else "not a joint of the URDF"
                bad("unknown_name", n, f"{why}: robot_state_publisher ignores it silently")
        if self.require_all:
            present = set(names)
            for n in self.joints:
                if n not in present and self._mimic_root(n) not in present:
                    bad("missing_joint", n, "movable URDF joint absent: no transform for its child link")
        if lengths_ok:
            for n, p in zip(names, position):
                v = float(p)
                if not math.isfinite(v):
                    bad("non_finite", n, f"position {v}")
                    continue
                j = self.joints.get(n)
                lim = j.limits if j is not None else None
                if lim is not None and not (lim[0] - self.tolerance <= v <= lim[1] + self.tolerance):
                    bad("out_of_limits", n, f"position {v:.6g} outside the URDF limit [{lim[0]:g}, {lim[1]:g}]")
        stamp_ns = int(stamp_ns)
        if stamp_ns == 0:
            bad("stale_stamp", None, "zero stamp")
        elif self._prev_stamp_ns is not None and stamp_ns <= self._prev_stamp_ns:
            bad("stale_stamp", None, f"stamp {stamp_ns / 1e9:.6f} s does not advance past the previous "
                                     f"{self._prev_stamp_ns / 1e9:.6f} s (robot_state_publisher ignores it)")
        if stamp_ns and receive_ns is not None and self.max_age_ns is not None:
            age = int(receive_ns) - stamp_ns
            if age > self.max_age_ns:
                bad("stale_stamp", None, f"received {age / 1e9:.3f} s after its stamp (max {self.max_age_ns / 1e9:g} s)")
            elif age < -self.max_age_ns:
                bad("stale_stamp", None, f"stamped {-age / 1e9:.3f} s in the future of its reception (clock mismatch)")
        if stamp_ns:
            self._prev_stamp_ns = stamp_ns if self._prev_stamp_ns is None else max(self._prev_stamp_ns, stamp_ns)
            r = self.report
            r.first_stamp_ns = stamp_ns if r.first_stamp_ns is None else min(r.first_stamp_ns, stamp_ns)
            r.last_stamp_ns = stamp_ns if r.last_stamp_ns is None else max(r.last_stamp_ns, stamp_ns)
        self.report.add(found)
        return found

    def check_msg(self, msg: Any, receive_ns: int | None = None) -> list[Problem]:
        """Check a JointState object (rclpy message or rosbags dataclass)."""
        s = msg.header.stamp
        return self.check(msg.name, msg.position, msg.velocity, msg.effort,
                          int(s.sec) * 1_000_000_000 + int(s.nanosec), receive_ns)


def check_messages(urdf_xml: str, messages: Iterable[tuple[Any, int | None]], **opts: Any) -> CheckReport:
    """Check ``(JointState, reception ns or None)`` pairs in order; options as JointStateChecker."""
    checker = JointStateChecker(urdf_xml, **opts)
    for msg, t in messages:
        checker.check_msg(msg, t)
    return checker.report


def check_bag(urdf_xml: str, bag_path: str, topic: str = contract.TOPIC_JOINT_STATES, **opts: Any) -> CheckReport:
    """Check every message on ``topic`` of a rosbag2 directory (log time = reception time).

    Raises ValueError naming the topics present when ``topic`` is not in the bag.
    """
    from rclpy.serialization import deserialize_message
    from rosbags.rosbag2 import Reader
    from sensor_msgs.msg import JointState

    checker = JointStateChecker(urdf_xml, **opts)
    with Reader(bag_path) as reader:
        conns = [c for c in reader.connections if c.topic == topic]
        if not conns:
            raise ValueError(f"bag {bag_path} has no topic {topic}; topics: {sorted({c.topic for c in reader.connections})}")
        if any(c.msgtype != "sensor_msgs/msg/JointState" for c in conns):
            raise ValueError(f"{topic} in {bag_path} is {conns[0].msgtype}, not sensor_msgs/msg/JointState")
        for _, t, raw in reader.messages(connections=conns):
            # rclpy, not rosbags, deserializes: rmw's CDR of JointState carries 8 trailing padding
            # bytes that rosbags' strict size check rejects ("CDR message size mismatch").
            checker.check_msg(deserialize_message(bytes(raw), JointState), t)
    return checker.report


def check_live(urdf_xml: str, topic: str = contract.TOPIC_JOINT_STATES, duration_s: float = 10.0,
               count: int | None = None, record: str | None = None, **opts: Any) -> CheckReport:
    """Subscribe to ``topic`` (reliable, depth 100) for ``duration_s``, until ``count`` messages or Ctrl-C,
    checking each at reception (node clock); ``record``: also write them to a new MCAP bag there.
    Initialises rclpy if needed (then shuts it down again)."""
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    own = not rclpy.ok()
    if own:
        from hand_common.processes import ensure_local_discovery

        ensure_local_discovery()  # DDS stays on this machine unless told otherwise
        rclpy.init()
    node = rclpy.create_node("joint_state_checker")
    checker = JointStateChecker(urdf_xml, **opts)
    writer = None
    if record:
        from rosbags.typesys import Stores, get_typestore

        from hand_common.bag import BagWriter

        writer = BagWriter(record, get_typestore(Stores.ROS2_JAZZY))
        writer.add(topic, "sensor_msgs/msg/JointState")

    def on_msg(msg: JointState) -> None:
        now = node.get_clock().now().nanoseconds
        checker.check_msg(msg, now)
        if writer is not None:
            writer.write(topic, now, serialize_message(msg))

    node.create_subscription(JointState, topic, on_msg,
                             QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    end = time.monotonic() + duration_s
    try:
        while time.monotonic() < end and (count is None or checker.report.messages < count) and rclpy.ok():
            executor.spin_once(timeout_sec=0.05)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass  # Ctrl-C ends the listening early; the report covers what arrived
    finally:
        executor.remove_node(node)
        node.destroy_node()
        if writer is not None:
            writer.close()
        if own:
            rclpy.try_shutdown()
    return checker.report


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="check_joint_states", description=__doc__.split("\n\n")[0])
    ap.add_argument("--urdf", help="URDF file (default: hand_description's URDF)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--bag", help="rosbag2 directory to check")
    src.add_argument("--live", action="store_true", help="subscribe to the topic now")
    ap.add_argument("--topic", default=contract.TOPIC_JOINT_STATES)
    ap.add_argument("--duration", type=float, default=10.0, help="live: seconds to listen (default 10)")
    ap.add_argument("--count", type=int, help="live: stop after this many messages")
    ap.add_argument("--record", help="live: also record the messages into this new bag directory")
    ap.add_argument("--max-age", type=float, default=0.5,
                    help="stamp older than this at reception = stale (s, default 0.5; <0 disables)")
    ap.add_argument("--tolerance", type=float, default=1e-6, help="allowed limit excess (rad/m)")
    ap.add_argument("--allow-missing", action="store_true", help="do not report missing URDF joints")
    ap.add_argument("--show", type=int, default=20, help="problems to print (default 20)")
    a = ap.parse_args(list(argv) if argv is not None else [x for x in sys.argv[1:] if x != "--ros-args"])
    try:
        if a.urdf:
            urdf_file = a.urdf
        else:
            from hand_description.paths import urdf_path

            urdf_file = str(urdf_path())
        urdf = load_urdf_file(urdf_file)
        opts = dict(tolerance=a.tolerance, max_age_s=None if a.max_age < 0 else a.max_age,
                    require_all=not a.allow_missing)
        if a.bag:
            report = check_bag(urdf, a.bag, a.topic, **opts)
        else:
            report = check_live(urdf, a.topic, a.duration, a.count, a.record, **opts)
    except (MappingError, ValueError, OSError, ImportError) as exc:
        print(f"check_joint_states: {exc}", file=sys.stderr)
        return 2
    print(f"{a.bag or a.topic} against {urdf_file}:")
    print(report.summary(a.show))
    return 0 if report.ok else (1 if report.messages else 2)


if __name__ == "__main__":
    sys.exit(main())
