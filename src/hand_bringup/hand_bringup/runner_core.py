"""The embedded runner's core (:class:`Runner`): start one bringup profile's node processes with
the same executables and ``config/*.yaml`` files as ``launch/*.launch.py`` (both read
:mod:`hand_bringup.bringup`), bring them through their lifecycle in order, supervise them until
the source ends (or Ctrl-C), and stop them: actuators first (safe pose), then the rest
(:func:`hand_bringup.bringup.shutdown_order`). What it measures is in
:mod:`hand_bringup.runner_monitor`, its bag in :mod:`hand_bringup.runner_recording`, its command
line in :mod:`hand_bringup.runner`.

Supervision: the node processes die with the runner whatever kills it (PR_SET_PDEATHSIG, see
:mod:`hand_common.processes`); a run refuses to start when nodes of the same names are already
alive on its ROS_DOMAIN_ID.
"""

from __future__ import annotations

import os
import pathlib
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from hand_bringup.bringup import (
    CONSOLE,
    JOINT_MAPPER,
    NODES,
    SERVO_DRIVER,
    TRACKER,
    TWIN,
    NodeSpec,
    executable_path,
    profile_nodes,
    profile_params,
    share_file,
    shutdown_order,
)
from hand_bringup.runner_monitor import HISTORY, RunMonitor
from hand_bringup.runner_recording import (
    Recorder,
    check_counts,
    check_received,
    source_problem,
    summary_lines,
)
from hand_common import contract
from hand_common.param_spec import did_you_mean
from hand_common.processes import NodeProcess, ensure_local_discovery
from hand_joint_mapper import interface as mapper_iface
from hand_servo_driver import interface as servo_iface
from hand_tracking import interface as tracker_iface
from hand_twin_mujoco import interface as twin_iface


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
    """Python value → the text of a ``-p name:=value`` override (rcl reads it as YAML): booleans
    and numbers as YAML scalars, text double-quoted (JSON strings are YAML: a ``": "`` or a ``#``
    inside stays text instead of breaking rcl's YAML scanner), lists as YAML flow sequences."""
    import json

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(ros_value(x) for x in v) + "]"
    return str(v)


def params_file_names(path: str, node_name: str) -> list[str]:
    """The parameter names (``a.b`` for nested namespaces, as rcl reads them) that the sections of
    the YAML parameters file ``path`` reaching ``node_name`` set (see :func:`check_params_file`)."""
    import fnmatch

    import yaml

    from hand_bringup.param_tables import flatten

    with open(path, encoding="utf8") as f:
        doc = yaml.safe_load(f)
    names: set[str] = set()
    for key, section in (doc or {}).items():
        if fnmatch.fnmatchcase(node_name, str(key).lstrip("/").replace("**", "*")) and isinstance(section, dict):
            names |= set(flatten(section.get("ros__parameters") or {}))
    return sorted(names)


def check_params_file(path: str, node_name: str) -> None:
    """ValueError when the YAML parameters file ``path`` has no section for ``node_name`` (rcl
    applies ``<name>:``, ``/<name>:``, ``/**:`` and other wildcard keys to a node and silently
    ignores the rest: a file keyed to a misspelt name would set nothing), naming the keys found."""
    import fnmatch

    import yaml

    try:
        with open(path, encoding="utf8") as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"--params-file {path}: cannot read it as YAML: {exc}") from None
    if not isinstance(doc, dict) or not doc:
        raise ValueError(f"--params-file {path}: not a ROS parameters file (<node name>: {{ros__parameters: ...}})")
    for key in doc:
        pattern = str(key).lstrip("/").replace("**", "*")
        if fnmatch.fnmatchcase(node_name, pattern):
            return
    raise ValueError(f"--params-file {path} has sections for {sorted(map(str, doc))}, none for the node "
                     f"/{node_name}: ROS would ignore the file (key it '{node_name}:' or '/**:')")


@dataclass
class RunConfig:
    """What to run: a bringup profile plus per-node parameter overrides and outputs."""

    profile: str
    out_dir: pathlib.Path
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    params_files: dict[str, str] = field(default_factory=dict)
    record: bool = True
    sim_board: bool = True
    #: where the simulated board's link, pulse log and stats go (default: out_dir); the board
    #: stands for hardware whose own log is not on the run's disk (a full-disk test keeps it apart)
    sim_board_dir: pathlib.Path | None = None
    video_frames: int | None = None  # stop after this many frames have been processed
    idle_stop_s: float | None = None  # stop when no landmarks arrive for this long (end of a file)
    duration_s: float | None = None
    console: bool = False  # also run the operator console (hand_console), activated first



class DuplicateNodesError(RuntimeError):
    """Nodes with this profile's names are already running on this ROS_DOMAIN_ID."""


class Runner:
    """Starts, supervises and stops one profile's node processes (see module docstring).

    monitor: the live measurements (:class:`~hand_bringup.runner_monitor.RunMonitor`); recorder:
    the bag (:class:`~hand_bringup.runner_recording.Recorder`, None without recording or before
    :meth:`connect`); recording, recording_problems: the published-vs-recorded check after
    :meth:`stop`.
    """

    #: Seconds to let DDS discovery show nodes already running on the domain before starting ours.
    DISCOVERY_WAIT_S = 1.5
    #: After the source finished: seconds without a new recorded message before giving up the drain.
    DRAIN_IDLE_S = 3.0
    DRAIN_MAX_S = 60.0

    def __init__(self, cfg: RunConfig):
        ensure_local_discovery()
        self.cfg = cfg
        self.specs: list[NodeSpec] = profile_nodes(cfg.profile)
        if cfg.console:  # a viewer: activated before the tracker (a busy port fails before anything moves)
            self.specs.insert(0, NODES[CONSOLE])
            cfg.overrides.setdefault(CONSOLE, {}).setdefault("profile", cfg.profile)
        unknown = sorted((set(cfg.overrides) | set(cfg.params_files)) - {s.key for s in self.specs})
        if unknown:
            keys = [s.key for s in self.specs]
            hints = "".join(did_you_mean(k, keys) for k in unknown)
            raise ValueError(f"no node {unknown} in profile '{cfg.profile}'{hints}; its nodes are {keys}")
        for spec in self.specs:
            if spec.key in cfg.params_files:
                check_params_file(cfg.params_files[spec.key], spec.name)
        for spec in self.specs:  # the profile's own parameters (two_hands: hands: two); -p overrides win
            for k, v in profile_params(cfg.profile, spec.key).items():
                cfg.overrides.setdefault(spec.key, {}).setdefault(k, v)
        self.two_hands = cfg.overrides.get(TRACKER, {}).get(tracker_iface.PARAM_HANDS) == tracker_iface.HANDS_TWO
        self.log_dir = cfg.out_dir / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.procs: dict[str, NodeProcess] = {}
        self.board: NodeProcess | None = None
        self.probe = None
        self.recorder: Recorder | None = None
        # a finite source's figures cover all of it; anything longer keeps the last HISTORY frames
        self.monitor = RunMonitor(self.two_hands, history=max(HISTORY, (cfg.video_frames or 0) + 100))
        self.monitor.stamps_are_capture_times = cfg.overrides.get(TRACKER, {}).get(
            tracker_iface.PARAM_REALTIME, True) is not False
        self.t_start = time.time()
        self.cpu_seconds: dict[str, float] = {}  # process -> CPU s, sampled just before shutdown
        self._own_cpu0 = sum(os.times()[:2])  # the runner's CPU s counted from here
        self.failure: str | None = None
        #: {topic: {"published": n or None, "recorded": n, "monitor": n or None}} after stop()
        self.recording: dict[str, dict[str, int | None]] = {}
        #: human-readable lines, one per topic that lost messages (empty: nothing lost)
        self.recording_problems: list[str] = []
        self.source_problem: str | None = None
        #: why a finite source's run ended before the tracker reported the source finished (no
        #: landmarks for ``idle_stop_s``): the run fails with it (it exited 0, a stall unreported)
        self.ended_early: str | None = None

    # --- processes ----------------------------------------------------------------------------
    def _start_board(self) -> str:
        board_dir = pathlib.Path(self.cfg.sim_board_dir or self.cfg.out_dir)
        board_dir.mkdir(parents=True, exist_ok=True)
        link = str(board_dir / "servo_board.tty")
        self.board = NodeProcess.module(
            "hand_servo_driver.sim_board", "--link", link, "--log", str(board_dir / "servo_board_pulses.jsonl"),
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
            self.probe = RosProbe("hand_runner", events=True)
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
        from hand_common.shm import reclaim_stale

        removed, freed = reclaim_stale()  # kill -9 of a run leaves Fast DDS files nothing else reclaims
        if removed:
            print(f"[runner] reclaimed {len(removed)} Fast DDS shared-memory files of dead processes "
                  f"({freed / 1e6:.1f} MB) in /dev/shm", flush=True)
        self.refuse_running_nodes()
        if any(s.key == JOINT_MAPPER for s in self.specs):
            # no robot_state_publisher here: read the URDF file without waiting for /robot_description
            self.cfg.overrides.setdefault(JOINT_MAPPER, {}).setdefault(mapper_iface.PARAM_DESCRIPTION_TIMEOUT_S, 0.0)
        if any(s.key == SERVO_DRIVER for s in self.specs) and self.cfg.sim_board:
            port = self._start_board()
            self.cfg.overrides.setdefault(SERVO_DRIVER, {}).setdefault(servo_iface.PARAM_PORT, port)
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

    def dead_process(self) -> str | None:
        """Why a node process (or the simulated board) is no longer running, with the last lines
        of its log; None while all run."""
        for key, p in list(self.procs.items()) + ([("sim_board", self.board)] if self.board else []):
            if not p.alive():
                return f"{key} exited with code {p.proc.returncode}; last lines of its log:\n{p.tail()}"
        return None

    def check_alive(self) -> None:
        """Set ``failure`` (and raise) if any node process has exited."""
        if (dead := self.dead_process()) is not None:
            self.failure = dead
            raise RuntimeError(self.failure)

    # --- ROS side -------------------------------------------------------------------------------
    def connect(self) -> None:
        from hand_common.probe import RosProbe

        if self.probe is None:
            self.probe = RosProbe("hand_runner", events=True)
        if self.cfg.record:
            self._start_recording()
        self.monitor.subscribe(self.probe.node)
        self.monitor.watch_lifecycle(self.probe.node, [s.name for s in self.specs])

    def _start_recording(self) -> None:
        """Open the bag; topics are added as the nodes' publishers appear (the main ones now)."""
        self.recorder = Recorder(self.probe.node, self.cfg.out_dir / f"{self.cfg.profile}_bag",
                                 on_diagnostics=self._recorded_diagnostics)
        for topic, type_name in self._expected_topics().items():
            self.recorder.record(topic, type_name)

    def _recorded_diagnostics(self, msg) -> None:
        # what the run knows of its nodes is what its bag holds: one reader, one stream
        self.monitor.diagnostics_from_bag = True
        self.monitor.read_diagnostics(msg)

    def flush_recording(self) -> None:
        """Commit the bag's pending segment if it is due (called ~20 times a second); RuntimeError
        (``failure``) when the bag cannot be written any more (a full disk: the message names the
        file): the run ends, actuators to the safe pose first, with exit 1."""
        if self.recorder is not None:
            self.recorder.flush()
            if self.recorder.error is not None:
                self.failure = self.recorder.error
                raise RuntimeError(self.failure)

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
        self.monitor.expect_transitions(names, ("configure", "activate"))
        try:
            client.bring_up(names, before_activate=self._wait_for_publishers)
        except LifecycleError as exc:
            key = next((s.key for s in self.specs if f"/{s.name}:" in str(exc)), None)
            tail = f"\nlast lines of {self.procs[key].log_path}:\n{self.procs[key].tail(8)}" if key else ""
            raise RuntimeError(f"{exc}{tail}") from None

    def _check_overrides(self) -> None:
        """rclpy silently ignores an override of an undeclared parameter: refuse such typos (a
        ``-p`` and a ``--params-file``'s names), naming the close declared names."""
        from rcl_interfaces.srv import ListParameters

        for spec in self.specs:
            wanted = set(self.cfg.overrides.get(spec.key, {}))
            in_file = set(params_file_names(self.cfg.params_files[spec.key], spec.name)) \
                if spec.key in self.cfg.params_files else set()
            if not wanted | in_file:
                continue
            # a node still starting answers once it spins; one that died (its services may still
            # be on the graph for a while) is reported with its own reason, not as a silent service
            end = time.monotonic() + 60.0
            while True:
                self.check_alive()
                try:
                    res = self.probe.call(ListParameters, f"/{spec.name}/list_parameters", ListParameters.Request(),
                                          timeout=min(2.0, max(0.1, end - time.monotonic())))
                    break
                except TimeoutError:
                    self.check_alive()
                    if time.monotonic() >= end:
                        raise
            declared = [n for n in res.result.names if not n.startswith("qos_overrides.")]
            problems = []
            for names, where in ((wanted, f"-p {spec.key}.<name>"),
                                 (in_file, f"--params-file {self.cfg.params_files.get(spec.key)}")):
                unknown = sorted(names - set(res.result.names))
                if unknown:
                    hints = "".join(f"; '{u}'{h}" for u in unknown if (h := did_you_mean(u, declared)))
                    problems.append(f"/{spec.name} declares no parameter {unknown} (check {where}){hints}")
            if problems:
                raise ValueError("\n".join(problems))

    def _expected_topics(self) -> dict[str, str]:
        """The main topics this profile's nodes publish: {topic: type}. They are subscribed before
        the nodes are configured, so discovery has matched them by the time frames flow."""
        keys = {s.key for s in self.specs}
        out = {contract.TOPIC_DIAGNOSTICS: "diagnostic_msgs/msg/DiagnosticArray"}
        if TRACKER in keys:
            out.update(tracker_iface.publishes(self.two_hands))
        if TWIN in keys:
            out.update(twin_iface.publishes(
                self.cfg.overrides.get(TWIN, {}).get(twin_iface.PARAM_HANDS) == twin_iface.HANDS_TWO))
        if JOINT_MAPPER in keys:
            out.update(mapper_iface.PUBLISHES)
        return out

    def _wait_for_publishers(self, timeout: float = 10.0) -> None:
        """Before anything is active: the recorder's subscriptions of the main topics have matched
        their publishers (:meth:`Recorder.wait_for_publishers`)."""
        if self.recorder is None:
            return
        expected = {t for t in self._expected_topics() if t != contract.TOPIC_DIAGNOSTICS}
        self.recorder.wait_for_publishers(expected, [s.name for s in self.specs], timeout)

    def bring_down(self) -> list[str]:
        from hand_common.lifecycle_client import LifecycleClient

        if self.probe is None:
            return []
        self.monitor.stopping = True
        client = LifecycleClient(self.probe.node, timeout=10.0)
        alive = [s.name for s in shutdown_order(self.specs) if self.procs.get(s.key) and self.procs[s.key].alive()]
        return client.bring_down(alive, final="shutdown")

    #: After deactivating the tracker at the end of a run its source did not end: diagnostics
    #: periods (plus 2 s) to wait for its final status (:meth:`stop_tracker_for_counts`).
    STOPPED_STATUS_PERIODS = 2.0

    def stop_tracker_for_counts(self) -> None:
        """A run whose source did not finish (a camera, a looped file, --duration, Ctrl-C): get the
        tracker's final counts before the check. Deactivates the nodes in shutdown order up to the
        tracker (actuators first: safe pose; the console and the nodes before the tracker stay),
        waits for the tracker's first ``inactive`` status (it publishes no data any more; its
        diagnostics timer goes on: frames, flexions_published per topic), then drains the bag (or
        the runner's own subscriptions) as for a finite source, so a lost message fails the run.
        Nothing to do after a finite source's end, without a tracker or after a failure."""
        from hand_common.lifecycle_client import LifecycleClient, LifecycleError

        tracker = self.procs.get(TRACKER)
        if (self.probe is None or tracker is None or not tracker.alive() or self.failure is not None
                or self.monitor.source_finished()):
            return
        self.monitor.stopping = True
        client = LifecycleClient(self.probe.node, timeout=10.0)
        names = []
        for spec in shutdown_order(self.specs):
            if self.procs.get(spec.key) and self.procs[spec.key].alive():
                names.append(spec.name)
            if spec.key == TRACKER:
                break
        self.monitor.expect_stopped_status()
        for name in names:
            try:
                if client.settled_state(name) == "active" and not client.transition(name, "deactivate"):
                    print(f"[runner] warning: /{name}: deactivate refused", file=sys.stderr, flush=True)
            except LifecycleError as exc:
                print(f"[runner] warning: {exc}", file=sys.stderr, flush=True)
        period = float(self.cfg.overrides.get(TRACKER, {}).get("diagnostics_period_s", 1.0))
        wait_s = self.STOPPED_STATUS_PERIODS * period + 2.0
        end = time.monotonic() + wait_s
        while self.monitor.tracker_stopped is None and time.monotonic() < end and tracker.alive():
            time.sleep(0.05)
        if self.monitor.tracker_stopped is None:
            print(f"[runner] warning: the deactivated tracker sent no status within {wait_s:.0f} s:"
                  " its topics have no published count to check (published ?)", file=sys.stderr, flush=True)
            return
        self.drain_recording()

    def stop(self) -> None:
        self.sample_cpu()
        try:
            self.stop_tracker_for_counts()
        except KeyboardInterrupt:  # a second Ctrl-C: stop now, without the final counts
            print("[runner] second interrupt: stopping without the tracker's final counts", file=sys.stderr)
        except Exception as exc:  # noqa: BLE001 - never skip stopping the processes
            print(f"[runner] warning: final counts: {exc}", file=sys.stderr)
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
        if self.recorder is not None:
            self.recorder.close()
        self._check_recording()
        if self.probe is not None:
            self.probe.close()

    # --- progress -------------------------------------------------------------------------------
    def check_source(self) -> None:
        """Set ``source_problem`` (and raise RuntimeError) if the tracker reports frames it could
        not read: a broken or truncated file, an unreadable image (its message names the frame)."""
        st = self.monitor.tracker_status()
        error = st.get(tracker_iface.KEY_LAST_ERROR, "")
        bad = int(st.get(tracker_iface.KEY_BAD_FRAMES, "0") or 0)
        if error or bad:
            if not error and TRACKER in self.procs:  # skipped frames are logged, not in the diagnostics
                lines = tracker_iface.frame_problem_lines(self.procs[TRACKER].tail(200))
                error = "; ".join(lines[-3:]) or f"see {self.procs[TRACKER].log_path}"
            self.source_problem = (f"source {st.get(tracker_iface.KEY_SOURCE, '?')} broke after "
                                   f"{st.get(tracker_iface.KEY_FRAMES, '?')} frames ({bad} bad frames): {error}")
            raise RuntimeError(self.source_problem)

    def progress_line(self) -> str:
        """The one-line progress report printed every second."""
        return self.monitor.progress_line(self.cfg.video_frames)

    def finished(self) -> bool:
        frames = self.monitor.frames
        if self.monitor.source_finished():
            return True
        if self.cfg.video_frames and max(self.monitor.landmark_msgs, self._recorded(contract.TOPIC_LANDMARKS)) >= \
                self.cfg.video_frames:  # whichever of the monitor and the bag has counted them all first
            return True
        if self.cfg.idle_stop_s and frames and time.time() - frames[-1][1] > self.cfg.idle_stop_s:
            total = f" of {self.cfg.video_frames}" if self.cfg.video_frames else ""
            self.ended_early = (f"{contract.TOPIC_LANDMARKS}: no message for {self.cfg.idle_stop_s:.0f} s after "
                                f"{self.monitor.landmark_msgs}{total} frames and the tracker never reported its "
                                f"source finished: the run stopped early (see {self.log_dir})")
            return True
        return bool(self.cfg.duration_s and time.time() - self.t_start > self.cfg.duration_s)

    def _recorded(self, topic: str) -> int:
        """Messages of ``topic`` written to the bag so far (0 without a bag)."""
        return self.recorder.count(topic) if self.recorder is not None else 0

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
        """Messages the tracker says it sent, per topic, once its counts are final: its source
        finished, or the runner deactivated it (:meth:`stop_tracker_for_counts`,
        :meth:`RunMonitor.published_counts`)."""
        landmarks = self.cfg.overrides.get(TRACKER, {}).get(tracker_iface.PARAM_PUBLISH_LANDMARKS, True) is not False
        return self.monitor.published_counts(landmarks)

    def drain_recording(self) -> None:
        """Before stopping: wait until the bag holds every published message that is known (see
        :meth:`published_counts`), while those topics' recorded counts still grow (``DRAIN_IDLE_S``),
        at most ``DRAIN_MAX_S``. Only the counted topics decide: /diagnostics keeps arriving at its
        own rate and must not keep a run that lost messages waiting forever (it then fails in
        :meth:`_check_recording`, naming the topic and the numbers)."""
        if self.recorder is None and self.probe is None:
            return
        start = time.monotonic()
        end = start + self.DRAIN_IDLE_S
        while (not self.monitor.source_finished() and self.monitor.tracker_stopped is None
               and self.cfg.video_frames and time.monotonic() < end):
            time.sleep(0.05)  # the tracker's final count comes with its next diagnostics
        if self.recorder is not None:
            self.recorder.drain(self.published_counts, self.check_alive, idle_s=self.DRAIN_IDLE_S,
                                until=start + self.DRAIN_MAX_S)
            return
        # no bag: the runner's own keep-all subscriptions are the tally (--no-record)
        last, last_change = None, time.monotonic()
        while time.monotonic() - last_change < self.DRAIN_IDLE_S and time.monotonic() < start + self.DRAIN_MAX_S:
            published, received = self.published_counts(), self.monitor.received_counts()
            counts = {t: received.get(t, 0) for t in published}
            if all(counts[t] >= n for t, n in published.items()):
                return
            if counts != last:
                last, last_change = counts, time.monotonic()
            self.check_alive()
            time.sleep(0.05)

    def _check_recording(self) -> None:
        """Fill ``recording`` and ``recording_problems`` (bag closed: its final counts; without a
        bag, what the runner's own subscriptions received): a finite source's frames the tracker
        dropped, fewer recorded (or received) than published."""
        dropped = source_problem(self.monitor.source_frames())
        if dropped:
            self.recording_problems.append(dropped)
        if self.ended_early and not self.monitor.source_finished():
            self.recording_problems.append(self.ended_early)
        if self.probe is not None and self.probe.callback_errors:
            self.recording_problems.append(
                f"{self.probe.callback_errors} of the runner's own callbacks (recording, monitoring) raised: "
                + "; ".join(self.probe.callback_error_messages))
        if self.recorder is None:
            if self.probe is not None:  # the runner subscribed: it has counts
                self.recording, problems = check_received(self.published_counts(), self.monitor.received_counts())
                self.recording_problems.extend(problems)
            return
        self.recording, problems = check_counts(self.recorder.counts(), self.published_counts(),
                                                self.monitor.received_counts())
        self.recording_problems.extend(problems)

    def recording_summary(self) -> str:
        """One line per recorded topic: published (where known) vs recorded."""
        return summary_lines(self.recording)
