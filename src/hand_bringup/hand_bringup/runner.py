"""Embedded runner: the launch files' node sets without the ROS CLI (``make demo`` uses it).

Starts the same executables with the same ``config/*.yaml`` files as ``launch/*.launch.py``
(both read :mod:`hand_bringup.bringup`), each as its own process, brings them through their
lifecycle in order, records topics to a rosbag2 (MCAP) with the ``rosbags`` library, shows
progress, and on Ctrl-C (or at the end of a finite source) shuts down actuators first (safe pose),
then the rest. Exits non-zero if any node dies, if the source broke (a damaged video, an unreadable
image: the message names the frame), or if the bag lost a message (the summary names the topic and
the published vs recorded counts).

Supervision: the node processes die with the runner whatever kills it (PR_SET_PDEATHSIG, see
:mod:`hand_common.processes`); a run refuses to start when nodes of the same names are already
alive on its ROS_DOMAIN_ID. The bag is crash safe (see :class:`hand_common.bag.BagWriter`): after
kill -9 it opens with rosbags and lacks at most the last ``BagWriter.segment_s`` seconds.

  python -m hand_bringup.cli demo --video ../shared/media/human_hand_video.mp4 --out out
  python -m hand_bringup.runner sim --source camera:0
  python -m hand_bringup.runner param hand_tracker index_curled_angle 1.7   # = ros2 param set
  python -m hand_bringup.runner calibrate open                              # tracker calibration
  python -m hand_bringup.runner sim --source bag:out/demo_bag -p tracker.index_curled_angle=1.4 --out out/replay
      (replay recorded /hand/landmarks through the tracker with another calibration, no camera)
  python -m hand_bringup.runner robot --peer 192.168.1.20       # two hosts: on the robot's computer,
  python -m hand_bringup.runner operator --peer 192.168.1.30    # then on the operator's laptop
      (DDS reaches this host and the peers only, over UDP; see :func:`two_host_environment`)
"""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from hand_bringup.bringup import (
    PROFILES,
    TWO_HOST_FASTDDS_PROFILE,
    NodeSpec,
    executable_path,
    profile_nodes,
    profile_params,
    share_file,
    shutdown_order,
)
from hand_common import contract
from hand_common.processes import NodeProcess, ensure_local_discovery
from hand_common.stats import percentiles_ms, rate_hz

#: Topics recorded to the bag: topic -> ROS type name.
#: Topics never recorded: ROS infrastructure and camera-sized images (the demo keeps the twin's
#: frames as files). Everything else the profile's nodes publish is recorded (see Runner.record).
NOT_RECORDED_TOPICS = ("/rosout", "/parameter_events")
NOT_RECORDED_TYPES = ("sensor_msgs/msg/Image",)

#: The runner's subscriptions (recorder and measurements): contract.RECORD (reliable keep-all), so
#: that a busy Python process (2 shared cores) loses nothing of a burst: DDS fills the reader's
#: queue from its own threads and the runner drains it.
MONITOR_QOS = contract.RECORD
#: The latency probe subscribes like an actuator (contract.LATEST: reliable, keep-last 1): the
#: figure is the age of the newest command when it arrives, not the runner's own backlog.
LATENCY_QOS = contract.LATEST


def nice_prefix(nice: int) -> list[str]:
    """``["nice", "-n", "<nice>"]`` (coreutils, execs the command: same pid) or [] for nice 0 or
    where there is no ``nice`` program."""
    import shutil

    exe = shutil.which("nice") if nice else None
    return [exe, "-n", str(int(nice))] if exe else []


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a running process (all its threads) from /proc; None if it
    is gone or there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ros_value(v: Any) -> str:
    """Python value → the text of a ``-p name:=value`` override (YAML scalar)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def parse_overrides(items: list[str]) -> dict[str, dict[str, Any]]:
    """``["tracker.mirror=true", "twin.render_rate=15"]`` → ``{"tracker": {"mirror": True}, ...}``.
    Values are parsed as YAML scalars. ValueError names a malformed item."""
    import yaml

    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        node, dot, param = key.partition(".")
        if not sep or not dot or not node or not param:
            raise ValueError(f"override '{item}' is not <node>.<parameter>=<value>")
        out.setdefault(node, {})[param] = yaml.safe_load(value)
    return out


def parse_params_files(items: list[str]) -> dict[str, str]:
    """``["tracker=my.yaml"]`` → ``{"tracker": "/abs/my.yaml"}``; ValueError names a malformed item
    or a missing file."""
    out = {}
    for item in items:
        key, sep, path = item.partition("=")
        if not sep or not key or not path:
            raise ValueError(f"--params-file '{item}' is not <node>=<file>")
        if not os.path.isfile(path):
            raise ValueError(f"--params-file {key}: no file {path}")
        out[key] = os.path.abspath(path)
    return out


def two_host_environment(peers: list[str], fastdds_profile: str | None = None) -> dict[str, str]:
    """The environment of a run whose DDS graph spans this host and ``peers`` (addresses or host
    names): ``ROS_STATIC_PEERS`` = the peers joined by ``;``, ``ROS_AUTOMATIC_DISCOVERY_RANGE`` stays
    ``LOCALHOST`` (Jazzy's rmw_fastrtps then clears the multicast discovery locators and announces
    the participants to 127.0.0.1 and to the static peers only: nothing else on the network is
    contacted), and ``FASTRTPS_DEFAULT_PROFILES_FILE`` = ``fastdds_profile`` or hand_bringup's
    ``config/fastdds_two_host.xml`` (UDPv4 only; tools/fastdds_localhost.xml would bind UDP to the
    loopback interface only). ValueError names an empty peer, one with whitespace or ``;``, or a
    missing profile file."""
    if not peers:
        raise ValueError("no peer given")
    for peer in peers:
        if not peer or any(c.isspace() or c == ";" for c in peer):
            raise ValueError(f"--peer {peer!r} is not one host address or name")
    profile = fastdds_profile or share_file("hand_bringup", TWO_HOST_FASTDDS_PROFILE)
    if not os.path.isfile(profile):
        raise ValueError(f"--fastdds-profile: no file {profile}")
    return {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_STATIC_PEERS": ";".join(peers),
            "FASTRTPS_DEFAULT_PROFILES_FILE": os.path.abspath(profile)}


@dataclass
class RunConfig:
    """What to run: a bringup profile plus per-node parameter overrides and outputs."""

    profile: str
    out_dir: pathlib.Path
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    params_files: dict[str, str] = field(default_factory=dict)
    record: bool = True
    sim_board: bool = True
    video_frames: int | None = None  # stop after this many frames have been processed
    idle_stop_s: float | None = None  # stop when no landmarks arrive for this long (end of a file)
    duration_s: float | None = None


class DuplicateNodesError(RuntimeError):
    """Nodes with this profile's names are already running on this ROS_DOMAIN_ID."""


class Runner:
    """Starts, supervises and stops one profile's node processes (see module docstring)."""

    #: Seconds to let DDS discovery show nodes already running on the domain before starting ours.
    DISCOVERY_WAIT_S = 1.5
    #: After the source finished: seconds without a new recorded message before giving up the drain.
    DRAIN_IDLE_S = 3.0
    DRAIN_MAX_S = 60.0

    def __init__(self, cfg: RunConfig):
        ensure_local_discovery()
        self.cfg = cfg
        self.specs: list[NodeSpec] = profile_nodes(cfg.profile)
        unknown = sorted((set(cfg.overrides) | set(cfg.params_files)) - {s.key for s in self.specs})
        if unknown:
            raise ValueError(f"no node {unknown} in profile '{cfg.profile}'; its nodes are "
                             f"{[s.key for s in self.specs]}")
        for spec in self.specs:  # the profile's own parameters (two_hands: hands: two); -p overrides win
            for k, v in profile_params(cfg.profile, spec.key).items():
                cfg.overrides.setdefault(spec.key, {}).setdefault(k, v)
        self.two_hands = cfg.overrides.get("tracker", {}).get("hands") == "two"
        self.log_dir = cfg.out_dir / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.procs: dict[str, NodeProcess] = {}
        self.board: NodeProcess | None = None
        self.probe = None
        self.bag = None
        self.recorded: set[str] = set()
        self._record_subs: dict[str, Any] = {}  # topic -> the recorder's subscription
        self._bag_lock = threading.Lock()
        self._diagnostics_from_bag = False  # /diagnostics is recorded: its recorder reads the statuses
        self.t_start = time.time()
        # live measurements
        # (frame_index, receive wall time, hand found, capture stamp ns) per /hand/landmarks message
        self.frames: list[tuple[int, float, bool, int]] = []
        self.flexion_latency: list[float] = []  # s, as a keep-last-1 subscriber sees them
        self.twin_rtf: float | None = None  # twin's real-time factor since activation (diagnostics)
        self._trips: list[tuple[str, float]] = []  # (actuator, wall time) OK -> safe-pose transitions
        self._actuators_seen: set[str] = set()
        self._watchdog_ok: dict[str, bool] = {}
        self.cpu_seconds: dict[str, float] = {}  # process -> CPU s, sampled just before shutdown
        self._own_cpu0 = sum(os.times()[:2])  # the runner's CPU s counted from here
        self.flexions: dict[int, list[float]] = {}  # capture stamp ns -> flexion thumb..pinky
        self.last_flexion: list[float] = []
        self.diagnostics: dict[str, dict[str, str]] = {}
        self.failure: str | None = None
        #: {topic: {"published": n or None, "recorded": n, "monitor": n or None}} after stop()
        self.recording: dict[str, dict[str, int | None]] = {}
        #: human-readable lines, one per topic that lost messages (empty: nothing lost)
        self.recording_problems: list[str] = []
        self.source_problem: str | None = None
        self._landmark_msgs = 0
        self._flexion_msgs = 0

    # --- processes ----------------------------------------------------------------------------
    def _start_board(self) -> str:
        link = str(self.cfg.out_dir / "servo_board.tty")
        self.board = NodeProcess.module(
            "hand_servo_driver.sim_board", "--link", link, "--log", str(self.cfg.out_dir / "servo_board_pulses.jsonl"),
            log_path=str(self.log_dir / "sim_board.log"))
        end = time.monotonic() + 15
        while not os.path.exists(link):
            if not self.board.alive() or time.monotonic() > end:
                raise RuntimeError(f"simulated board did not come up:\n{self.board.tail()}")
            time.sleep(0.05)
        return link

    def _node_args(self, spec: NodeSpec) -> list[str]:
        params = self.cfg.params_files.get(spec.key) or share_file(spec.package, spec.params_file)
        args = [executable_path(spec), "--ros-args", "-r", f"__node:={spec.name}", "--params-file", params]
        for k, v in self.cfg.overrides.get(spec.key, {}).items():
            args += ["-p", f"{k}:={ros_value(v)}"]
        return args

    def refuse_running_nodes(self, wait_s: float | None = None) -> None:
        """DuplicateNodesError naming the nodes of this profile that are already alive on this
        ROS_DOMAIN_ID (another run, or nodes a killed run left behind): two nodes of one name would
        both answer lifecycle calls and both drive the actuators. Waits ``wait_s`` for discovery."""
        from hand_common.probe import RosProbe

        if self.probe is None:
            self.probe = RosProbe("hand_runner")
        names = {s.name for s in self.specs}
        end = time.monotonic() + (self.DISCOVERY_WAIT_S if wait_s is None else wait_s)
        found: set[str] = set()
        while True:
            found |= {n for n, ns in self.probe.node.get_node_names_and_namespaces() if n in names and ns == "/"}
            if time.monotonic() >= end:
                break
            time.sleep(0.1)
        if found:
            domain = os.environ.get("ROS_DOMAIN_ID", "0")
            raise DuplicateNodesError(
                f"nodes {', '.join('/' + n for n in sorted(found))} are already running on ROS_DOMAIN_ID "
                f"{domain}: stop that run first (or use another ROS_DOMAIN_ID)")

    def start(self) -> None:
        self.refuse_running_nodes()
        if any(s.key == "joint_mapper" for s in self.specs):
            # no robot_state_publisher here: read the URDF file without waiting for /robot_description
            self.cfg.overrides.setdefault("joint_mapper", {}).setdefault("description_timeout_s", 0.0)
        if any(s.key == "servo_driver" for s in self.specs) and self.cfg.sim_board:
            port = self._start_board()
            self.cfg.overrides.setdefault("servo_driver", {}).setdefault("port", port)
        for spec in self.specs:
            # not on the hot path: a higher niceness (NodeSpec.nice), so the tracker runs first
            self.procs[spec.key] = NodeProcess(nice_prefix(spec.nice) + self._node_args(spec),
                                               str(self.log_dir / f"{spec.key}.log"))

    def sample_cpu(self) -> dict[str, float]:
        """CPU seconds per process now (node keys, ``sim_board``, ``runner``) into ``cpu_seconds``."""
        procs = dict(self.procs) | ({"sim_board": self.board} if self.board else {})
        for key, p in procs.items():
            cpu = process_cpu_seconds(p.pid)
            if cpu is not None:
                self.cpu_seconds[key] = round(cpu, 2)
        self.cpu_seconds["runner"] = round(sum(os.times()[:2]) - self._own_cpu0, 2)
        return dict(self.cpu_seconds)

    def check_alive(self) -> None:
        """Set ``failure`` (and raise) if any node process has exited."""
        for key, p in list(self.procs.items()) + ([("sim_board", self.board)] if self.board else []):
            if not p.alive():
                self.failure = f"{key} exited with code {p.proc.returncode}; last lines of its log:\n{p.tail()}"
                raise RuntimeError(self.failure)

    # --- ROS side -------------------------------------------------------------------------------
    def connect(self) -> None:
        from hand_common.probe import RosProbe

        if self.probe is None:
            self.probe = RosProbe("hand_runner")
        if self.cfg.record:
            self._start_recording()
        self._subscribe_measurements()

    def _start_recording(self) -> None:
        """Open the bag; topics are added by :meth:`record` as the nodes' publishers appear."""
        from hand_common.bag import BagWriter

        path = self.cfg.out_dir / f"{self.cfg.profile}_bag"
        if path.exists():
            import shutil

            shutil.rmtree(path)
        self.bag = BagWriter(path)
        for topic, type_name in self._expected_topics().items():
            self.record(topic, type_name)

    def record(self, topic: str, type_name: str) -> None:
        """Record ``topic`` (ROS type name like ``sensor_msgs/msg/JointState``) from now on; a topic
        already recorded is left as it is."""
        from hand_common.bag import message_class

        if self.bag is None or topic in self.recorded:
            return
        self.bag.add(topic, type_name)
        self._record_subs[topic] = self.probe.node.create_subscription(
            message_class(type_name), topic, self._recorder(topic), contract.qos(MONITOR_QOS), raw=True)
        self.recorded.add(topic)

    def record_published_topics(self) -> set[str]:
        """Record every topic the profile's nodes publish (as the ROS graph shows them now), except
        infrastructure, lifecycle transition events and images. Returns the recorded topics."""
        node = self.probe.node
        for spec in self.specs:
            try:
                pubs = node.get_publisher_names_and_types_by_node(spec.name, "/")
            except Exception:  # noqa: BLE001 - the node is not discovered yet
                continue
            for topic, types in pubs:
                if (topic in NOT_RECORDED_TOPICS or topic.endswith("/transition_event") or not types
                        or types[0] in NOT_RECORDED_TYPES):
                    continue
                self.record(topic, types[0])
        return set(self.recorded)

    def _recorder(self, topic: str):
        diagnostics = topic == contract.TOPIC_DIAGNOSTICS
        if diagnostics:
            from diagnostic_msgs.msg import DiagnosticArray
            from rclpy.serialization import deserialize_message

        def cb(data: bytes) -> None:
            with self._bag_lock:
                if self.bag is not None:
                    self.bag.write(topic, time.time_ns(), data)
            if diagnostics:  # what the run knows of its nodes is what its bag holds: one reader, one stream
                self._diagnostics_from_bag = True
                self._read_diagnostics(deserialize_message(data, DiagnosticArray))
        return cb

    def flush_recording(self) -> None:
        """Commit the bag's pending segment if it is due (called ~20 times a second)."""
        with self._bag_lock:
            if self.bag is not None:
                self.bag.flush_if_due()

    def _subscribe_measurements(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from hand_msgs.msg import HandLandmarksArray
        from sensor_msgs.msg import JointState

        node = self.probe.node
        node.create_subscription(HandLandmarksArray, contract.TOPIC_LANDMARKS, self._on_landmarks,
                                 contract.qos(MONITOR_QOS))
        for topic in ([contract.side_topic(contract.TOPIC_TARGET_FLEXIONS, s) for s in contract.HAND_SIDES]
                      if self.two_hands else [contract.TOPIC_TARGET_FLEXIONS]):
            node.create_subscription(JointState, topic, self._on_flexions, contract.qos(MONITOR_QOS))
            node.create_subscription(JointState, topic, self._on_latest_flexions, contract.qos(LATENCY_QOS))
        node.create_subscription(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, self._on_diagnostics,
                                 contract.qos(MONITOR_QOS))

    def _on_landmarks(self, msg) -> None:
        self._landmark_msgs += 1
        idx = msg.hands[0].frame_index if msg.hands else (self.frames[-1][0] + 1 if self.frames else 0)
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        self.frames.append((int(idx), time.time(), bool(msg.hands), stamp))

    def _on_latest_flexions(self, msg) -> None:
        latency = time.time() - (msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
        if -0.5 < latency < 10.0:  # else the stamp is not a capture time on this clock (replayed stamps)
            self.flexion_latency.append(latency)

    def _on_flexions(self, msg) -> None:
        self._flexion_msgs += 1
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        by_name = dict(zip(msg.name, msg.position))
        self.flexions[stamp] = [float(by_name.get(f, math.nan)) for f in contract.FINGER_NAMES]
        self.last_flexion = self.flexions[stamp]

    def _on_diagnostics(self, msg) -> None:
        if not self._diagnostics_from_bag:  # else the recorder's reader feeds _read_diagnostics
            self._read_diagnostics(msg)

    def _read_diagnostics(self, msg) -> None:
        for status in msg.status:
            entry = {kv.key: kv.value for kv in status.values}
            entry["_level"] = str(int.from_bytes(status.level, "little") if isinstance(status.level, bytes)
                                  else int(status.level))
            entry["_message"] = status.message
            self.diagnostics[status.name] = entry
            self._count_safe_pose(status.name, entry)

    def _count_safe_pose(self, name: str, entry: dict[str, str], now: float | None = None) -> None:
        """Count an actuator's transitions from following commands to its safe pose (twin:
        ``watchdog`` ok → stale; servo driver: ``stale`` False → True) and keep the twin's RTF."""
        if contract.TWIN_NODE in name and "watchdog" in entry:
            key, ok = "twin", entry["watchdog"] == "ok"
            try:
                if "real_time_factor_total" in entry:
                    self.twin_rtf = float(entry["real_time_factor_total"])
            except ValueError:
                pass
        elif contract.SERVO_DRIVER_NODE in name and "stale" in entry:
            key, ok = "servo_driver", entry["stale"] != "True"
        else:
            return
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

    def bring_up(self, timeout: float = 60.0) -> None:
        """Wait for every node's lifecycle services (failing fast, with its log, if a process dies),
        check the -p overrides against what the nodes declare, then configure and activate them in
        order. RuntimeError names the node and quotes its log."""
        from hand_common.lifecycle_client import LifecycleClient, LifecycleError

        client = LifecycleClient(self.probe.node, timeout=timeout)
        names = [s.name for s in self.specs]
        end = time.monotonic() + timeout
        while True:
            self.check_alive()
            try:
                client.wait_for(names, timeout=0.5)
                break
            except LifecycleError as exc:
                if time.monotonic() > end:
                    raise RuntimeError(f"{exc}; see {self.log_dir}") from None
        self._check_overrides()
        try:
            client.bring_up(names, before_activate=self._wait_for_publishers)
        except LifecycleError as exc:
            key = next((s.key for s in self.specs if f"/{s.name}:" in str(exc)), None)
            tail = f"\nlast lines of {self.procs[key].log_path}:\n{self.procs[key].tail(8)}" if key else ""
            raise RuntimeError(f"{exc}{tail}") from None

    def _check_overrides(self) -> None:
        """rclpy silently ignores an override of an undeclared parameter: refuse such typos."""
        from rcl_interfaces.srv import ListParameters

        for spec in self.specs:
            wanted = set(self.cfg.overrides.get(spec.key, {}))
            if not wanted:
                continue
            res = self.probe.call(ListParameters, f"/{spec.name}/list_parameters", ListParameters.Request(),
                                  timeout=60.0)  # a node still starting answers once it spins
            unknown = sorted(wanted - set(res.result.names))
            if unknown:
                raise ValueError(f"/{spec.name} declares no parameter {unknown} (check -p {spec.key}.<name>)")

    def _expected_topics(self) -> dict[str, str]:
        """The main topics this profile's nodes publish: {topic: type}. They are subscribed before
        the nodes are configured, so discovery has matched them by the time frames flow."""
        landmarks, joints = "hand_msgs/msg/HandLandmarksArray", "sensor_msgs/msg/JointState"
        keys = {s.key for s in self.specs}
        out = {contract.TOPIC_DIAGNOSTICS: "diagnostic_msgs/msg/DiagnosticArray"}
        if "tracker" in keys:
            out[contract.TOPIC_LANDMARKS] = landmarks
            for t in (contract.TOPIC_TARGET_FLEXIONS, contract.TOPIC_JOINT_FLEXIONS):
                if self.two_hands:
                    out.update({contract.side_topic(t, side): joints for side in contract.HAND_SIDES})
                else:
                    out[t] = joints
        if "twin" in keys:
            if self.cfg.overrides.get("twin", {}).get("hands") == "two":
                out.update({contract.side_topic(contract.TOPIC_TWIN_JOINT_STATES, side): joints
                            for side in contract.HAND_SIDES})
            else:
                out[contract.TOPIC_TWIN_JOINT_STATES] = joints
        if "joint_mapper" in keys:
            out[contract.TOPIC_JOINT_STATES] = joints
        return out

    def _wait_for_publishers(self, timeout: float = 10.0) -> None:
        """Before anything is active: record what the configured nodes publish and wait until
        every recorder subscription of the main topics has *matched* its publisher (a volatile
        reader that matches a writer late never gets the samples sent before; the graph showing
        the publisher does not mean the reader has matched it: the reader's own count decides)."""
        if self.bag is None:
            return
        expected = {t for t in self._expected_topics() if t != contract.TOPIC_DIAGNOSTICS}
        end = time.monotonic() + timeout
        unmatched: set[str] = set()
        while time.monotonic() < end:
            recorded = self.record_published_topics()
            unmatched = {t for t in recorded if t != contract.TOPIC_DIAGNOSTICS
                         and self._record_subs[t].get_publisher_count() == 0}
            if expected <= recorded and not unmatched:
                return
            time.sleep(0.02)
        missing = sorted((expected - self.recorded) | unmatched)
        print(f"[runner] warning: the recorder matched no publisher on {missing} after {timeout:.0f} s", flush=True)

    def bring_down(self) -> list[str]:
        from hand_common.lifecycle_client import LifecycleClient

        if self.probe is None:
            return []
        client = LifecycleClient(self.probe.node, timeout=10.0)
        alive = [s.name for s in shutdown_order(self.specs) if self.procs.get(s.key) and self.procs[s.key].alive()]
        return client.bring_down(alive, final="shutdown")

    def stop(self) -> None:
        self.sample_cpu()
        problems = []
        try:
            problems = self.bring_down()
        except Exception as exc:  # noqa: BLE001 - never skip stopping the processes
            problems.append(f"lifecycle shutdown: {exc}")
        for p in problems:
            print(f"[runner] warning: {p}", file=sys.stderr)
        for spec in shutdown_order(self.specs):
            if spec.key in self.procs:
                self.procs[spec.key].stop()
        if self.board:
            self.board.stop()
        with self._bag_lock:
            if self.bag is not None:
                self.bag.close()
        self._check_recording()
        if self.probe is not None:
            self.probe.close()

    # --- progress -------------------------------------------------------------------------------
    def progress_line(self) -> str:
        n = len(self.frames)
        det = sum(1 for f in self.frames if f[2])
        total = f"/{self.cfg.video_frames}" if self.cfg.video_frames else ""
        fps = rate_hz([f[1] for f in self.frames[-60:]])
        lat = percentiles_ms(self.flexion_latency[-60:])["p50"]
        flex = " ".join(f"{v:.2f}" for v in self.last_flexion)
        return (f"[runner] frames {n}{total}  hand {det}/{n}  {fps or 0:.1f} fps  "
                f"capture→flexion {lat or 0:.1f} ms  flexion [{flex}]")

    def tracker_status(self) -> dict[str, str]:
        """The tracker's latest ``: tracking`` diagnostic values ({} before the first one)."""
        for name, entry in self.diagnostics.items():
            if name.endswith(": tracking") and "watchdog" in entry:
                return entry
        return {}

    def source_finished(self) -> bool:
        """True once the tracker reports that its finite source ended (video, images, bag)."""
        return self.tracker_status().get("watchdog") == "finished"

    def check_source(self) -> None:
        """Set ``source_problem`` (and raise RuntimeError) if the tracker reports frames it could
        not read: a broken or truncated file, an unreadable image (its message names the frame)."""
        st = self.tracker_status()
        error, bad = st.get("last_error", ""), int(st.get("bad_frames", "0") or 0)
        if error or bad:
            if not error and "tracker" in self.procs:  # skipped frames are logged, not in the diagnostics
                lines = [ln for ln in self.procs["tracker"].tail(200).splitlines() if "frame" in ln and
                         ("WARN" in ln or "ERROR" in ln)]
                error = "; ".join(lines[-3:]) or f"see {self.procs['tracker'].log_path}"
            self.source_problem = (f"source {st.get('source', '?')} broke after {st.get('frames', '?')} frames "
                                   f"({bad} bad frames): {error}")
            raise RuntimeError(self.source_problem)

    def finished(self) -> bool:
        if self.source_finished():
            return True
        if self.cfg.video_frames and max(len(self.frames), self._recorded(contract.TOPIC_LANDMARKS)) >= \
                self.cfg.video_frames:  # whichever of the monitor and the bag has counted them all first
            return True
        if self.cfg.idle_stop_s and self.frames and time.time() - self.frames[-1][1] > self.cfg.idle_stop_s:
            return True
        return bool(self.cfg.duration_s and time.time() - self.t_start > self.cfg.duration_s)

    def _recorded(self, topic: str) -> int:
        """Messages of ``topic`` written to the bag so far (0 without a bag)."""
        with self._bag_lock:
            return self.bag.counts.get(topic, 0) if self.bag is not None else 0

    def supervise(self, on_tick=None) -> None:
        """Until finished (or Ctrl-C): check processes, print progress, call ``on_tick``."""
        last_print = 0.0
        while not self.finished():
            self.check_alive()
            self.flush_recording()
            if on_tick is not None:
                on_tick(self)
            if time.monotonic() - last_print > 1.0:
                print(self.progress_line(), flush=True)
                last_print = time.monotonic()
            time.sleep(0.05)
        print(self.progress_line(), flush=True)
        self.drain_recording()
        self.check_source()

    def published_counts(self) -> dict[str, int]:
        """Messages the publishers say they sent, per topic, where they say it, once the tracker's
        source finished: /hand/landmarks from its ``frames`` diagnostic (one message per frame),
        /hand/target_flexions and /hand/joint_flexions from its ``flexions_published``."""
        st = self.tracker_status()
        out: dict[str, int] = {}
        if st.get("watchdog") != "finished" or self.two_hands:
            return out
        if "frames" in st and self.cfg.overrides.get("tracker", {}).get("publish_landmarks", True) is not False:
            out[contract.TOPIC_LANDMARKS] = int(st["frames"])
        if "flexions_published" in st:
            out[contract.TOPIC_TARGET_FLEXIONS] = out[contract.TOPIC_JOINT_FLEXIONS] = int(st["flexions_published"])
        return out

    def drain_recording(self) -> None:
        """Before stopping: wait until the bag holds every published message that is known (see
        :meth:`published_counts`), while those topics' recorded counts still grow (``DRAIN_IDLE_S``),
        at most ``DRAIN_MAX_S``. Only the counted topics decide: /diagnostics keeps arriving at its
        own rate and must not keep a run that lost messages waiting forever (it then fails in
        :meth:`_check_recording`, naming the topic and the numbers)."""
        if self.bag is None:
            return
        start = time.monotonic()
        end = start + self.DRAIN_IDLE_S
        while not self.source_finished() and self.cfg.video_frames and time.monotonic() < end:
            time.sleep(0.05)  # the tracker's final count comes with its next diagnostics
        last, last_change = None, time.monotonic()
        while time.monotonic() - last_change < self.DRAIN_IDLE_S and time.monotonic() - start < self.DRAIN_MAX_S:
            published = self.published_counts()
            counts = {t: self._recorded(t) for t in published}
            if all(counts[t] >= n for t, n in published.items()):
                return
            if counts != last:
                last, last_change = counts, time.monotonic()
            self.check_alive()
            self.flush_recording()
            time.sleep(0.05)

    def _check_recording(self) -> None:
        """Fill ``recording`` and ``recording_problems`` (bag closed: its final counts)."""
        if self.bag is None:
            return
        published = self.published_counts()
        monitor = {contract.TOPIC_LANDMARKS: self._landmark_msgs}
        if not self.two_hands:
            monitor[contract.TOPIC_TARGET_FLEXIONS] = self._flexion_msgs
        self.recording = {}
        for topic, recorded in sorted(self.bag.counts.items()):
            self.recording[topic] = {"published": published.get(topic), "recorded": recorded,
                                     "monitor": monitor.get(topic)}
            pub = published.get(topic)
            if pub is not None and recorded < pub:
                self.recording_problems.append(f"{topic}: published {pub}, recorded {recorded} "
                                               f"({pub - recorded} lost)")
            mon = monitor.get(topic)
            if mon is not None and recorded < mon:
                self.recording_problems.append(f"{topic}: the runner received {mon}, the bag holds {recorded} "
                                               f"({mon - recorded} lost)")

    def recording_summary(self) -> str:
        """One line per recorded topic: published (where known) vs recorded."""
        lines = []
        for topic, c in self.recording.items():
            pub = "?" if c["published"] is None else str(c["published"])
            lines.append(f"  {topic}: published {pub}, recorded {c['recorded']}")
        return "\n".join(lines)


# --- CLI --------------------------------------------------------------------------------------------
def _video_frame_count(path: str) -> int:
    import cv2

    cap = cv2.VideoCapture(path)
    if not cap.isOpened():
        raise FileNotFoundError(f"cannot open video {path}")
    n = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
    cap.release()
    return n


def run_profile(args: argparse.Namespace) -> int:
    out = pathlib.Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    overrides = parse_overrides(args.param or [])
    params_files = parse_params_files(args.params_file or [])
    if getattr(args, "peer", None):  # before any ROS participant exists (this process and its children)
        env = two_host_environment(args.peer, args.fastdds_profile)
        os.environ.update(env)
        print(f"[runner] two hosts: DDS to this host and {env['ROS_STATIC_PEERS']} (ROS_STATIC_PEERS), "
              f"ROS_DOMAIN_ID {os.environ.get('ROS_DOMAIN_ID', '0')}, Fast DDS profile "
              f"{env['FASTRTPS_DEFAULT_PROFILES_FILE']}", flush=True)
    elif getattr(args, "fastdds_profile", None):
        raise ValueError("--fastdds-profile is for two-host runs: give --peer too")
    if getattr(args, "handler", None) is not None:  # e.g. demo: hand_bringup.cli passes demo.run_demo
        return args.handler(args, out, overrides, params_files)
    frames = None
    has_tracker = "tracker" in PROFILES[args.profile]
    if not has_tracker and (args.source or args.video):
        raise ValueError(f"profile '{args.profile}' has no tracker: --source/--video belong to the operator side")
    source = args.source or (f"video:{os.path.abspath(args.video)}" if args.video else "camera:0")
    kind, _, target = source.partition(":") if has_tracker else ("", "", "")
    if has_tracker:
        overrides.setdefault("tracker", {}).setdefault("source", source)
        if overrides["tracker"].get("loop") is True:
            kind = "looping"  # runs until Ctrl-C / --duration
    if kind == "video":
        frames = _video_frame_count(target)
    elif kind == "bag":
        from hand_common.bag import topic_counts

        frames = topic_counts(target).get(contract.TOPIC_LANDMARKS, ("", 0))[1] or None
    cfg = RunConfig(profile=args.profile, out_dir=out, overrides=overrides, params_files=params_files,
                    record=not args.no_record, sim_board=not args.no_sim_board, video_frames=None,
                    idle_stop_s=30.0 if frames else None, duration_s=args.duration)
    cfg.video_frames = frames  # progress display; the run ends when the tracker reports its source finished
    runner = Runner(cfg)
    code = 0
    try:
        runner.start()
        runner.connect()
        runner.bring_up()
        print(f"[runner] {args.profile}: {', '.join(s.name for s in runner.specs)} active; Ctrl-C to stop", flush=True)
        runner.supervise()
    except KeyboardInterrupt:
        print("\n[runner] stopping (actuators to safe pose first)", flush=True)
    except DuplicateNodesError as exc:
        print(f"[runner] error: {exc}", file=sys.stderr)
        code = 3
    except Exception as exc:  # noqa: BLE001
        print(f"[runner] error: {exc}", file=sys.stderr)
        code = 1
    finally:
        runner.stop()
    if runner.recording:
        print("[runner] recording:\n" + runner.recording_summary(), flush=True)
    if runner.recording_problems:
        print("[runner] error: the bag lost messages:\n  " + "\n  ".join(runner.recording_problems),
              file=sys.stderr, flush=True)
        code = code or 1
    return code


def run_param(args: argparse.Namespace) -> int:
    import yaml

    from hand_common.probe import RosProbe

    probe = RosProbe("hand_runner_param")
    try:
        (result,) = probe.set_parameters(args.node, **{args.name: yaml.safe_load(args.value)})
    finally:
        probe.close()
    reason = result.reason
    if not result.successful and "undeclared" in reason:
        reason = f"/{args.node} has no parameter '{args.name}'"
    print("Set parameter successful" if result.successful else f"Setting parameter failed: {reason}")
    return 0 if result.successful else 1


def run_calibrate(args: argparse.Namespace) -> int:
    from hand_msgs.srv import Calibrate

    from hand_common.probe import RosProbe

    probe = RosProbe("hand_runner_calibrate")
    try:
        req = Calibrate.Request(pose=Calibrate.Request.OPEN if args.pose == "open" else Calibrate.Request.FIST,
                                duration_s=float(args.duration))
        res = probe.call(Calibrate, f"/{contract.TRACKER_NODE}/calibrate", req, timeout=args.duration + 15)
    finally:
        probe.close()
    print(f"{'ok' if res.success else 'rejected'}: {res.message} (frames {res.frames})")
    return 0 if res.success else 1


# Profiles whose run is a function of a module above the runner (demo imports the runner); the CLI in
# hand_bringup.cli passes them in, so the runner never imports its own callers (no import cycle).
HANDLED_PROFILES = ("demo",)


def build_parser(handlers: dict[str, Any] | None = None) -> argparse.ArgumentParser:
    """The runner's CLI. handlers: profile -> run(args, out, overrides, params_files) -> exit code;
    a profile in HANDLED_PROFILES without a handler is not offered."""
    handlers = handlers or {}
    p = argparse.ArgumentParser(prog="runner", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    # every bringup profile but gazebo (which needs `gz sim` and ros_gz_bridge: use its launch file)
    for profile in [p for p in PROFILES if p != "gazebo" and (p not in HANDLED_PROFILES or p in handlers)]:
        s = sub.add_parser(profile, help=f"run the '{profile}' node set")
        s.add_argument("--video", help="video file for the tracker (default for demo: the shared hand video)")
        s.add_argument("--source", help="tracker source, e.g. camera:0 (overrides --video)")
        s.add_argument("--out", default="out", help="output directory (logs, bag, demo files)")
        s.add_argument("-p", "--param", action="append", metavar="NODE.PARAM=VALUE",
                       help="parameter override, e.g. tracker.mirror=true; node keys: "
                            f"{', '.join(PROFILES[profile]) if profile in PROFILES else 'the profile nodes'}; "
                            "give decimal parameters a decimal point (1.0, not 1: ROS parameters are typed)")
        s.add_argument("--params-file", action="append", metavar="NODE=FILE", help="replace a node's YAML file")
        s.add_argument("--no-record", action="store_true", help="do not write a bag")
        s.add_argument("--no-sim-board", action="store_true", help="hardware: use a real board at servo_driver.port")
        s.add_argument("--duration", type=float, help="stop after this many seconds")
        s.add_argument("--peer", action="append", metavar="HOST",
                       help="two hosts: the other host's address or name (repeatable); DDS then reaches this "
                            "host and the peers only, over UDP (ROS_STATIC_PEERS; use the same ROS_DOMAIN_ID "
                            "on both hosts; see the hand_bringup README, 'Two hosts')")
        s.add_argument("--fastdds-profile", metavar="FILE",
                       help="with --peer: Fast DDS XML profile instead of hand_bringup's fastdds_two_host.xml")
        s.set_defaults(func=run_profile, profile=profile, handler=handlers.get(profile))
    s = sub.add_parser("param", help="set a parameter on a running node (= ros2 param set)")
    s.add_argument("node"), s.add_argument("name"), s.add_argument("value")
    s.set_defaults(func=run_param)
    s = sub.add_parser("calibrate", help="capture the open hand or the fist on the running tracker")
    s.add_argument("pose", choices=["open", "fist"])
    s.add_argument("--duration", type=float, default=1.0)
    s.set_defaults(func=run_calibrate)
    return p


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None, handlers: dict[str, Any] | None = None) -> None:
    # SIGTERM (kill, systemd, docker stop) stops like Ctrl-C: actuators to the safe pose first. SIGINT
    # explicitly too: a runner started in the background inherits it as ignored.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    args = build_parser(handlers).parse_args(argv)
    try:
        sys.exit(args.func(args))
    except (OSError, ValueError, TypeError, TimeoutError, RuntimeError) as exc:
        print(f"runner: error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
