"""Embedded runner: the launch files' node sets without the ROS CLI (``make demo`` uses it).

Starts the same executables with the same ``config/*.yaml`` files as ``launch/*.launch.py``
(both read :mod:`hand_bringup.bringup`), each as its own process, brings them through their
lifecycle in order, records topics to a rosbag2 (MCAP) with the ``rosbags`` library, shows
progress, and on Ctrl-C (or at the end of a finite source) shuts down actuators first (safe pose),
then the rest. Exits non-zero if any node dies, if the source broke (a damaged video, an unreadable
image: the message names the frame), or if the bag lost a message (the summary names the topic and
the published vs recorded counts).

This module is the command line; the run itself is :class:`hand_bringup.runner_core.Runner`
(processes, lifecycle, supervision), with :mod:`hand_bringup.runner_monitor` (measurements) and
:mod:`hand_bringup.runner_recording` (the crash-safe bag and the published-vs-recorded check).

  python -m hand_bringup.cli demo --video ../shared/media/human_hand_video.mp4 --out out
  python -m hand_bringup.runner sim --source camera:0
  python -m hand_bringup.runner sim --source camera:0 --console    # + the operator console, http://127.0.0.1:8080
  python -m hand_bringup.runner param hand_tracker index_curled_angle 1.7   # = ros2 param set
  python -m hand_bringup.runner calibrate open                              # tracker calibration
  python -m hand_bringup.runner sim --source bag:out/demo_bag -p tracker.index_curled_angle=1.4 --out out/replay
      (replay recorded /hand/landmarks through the tracker with another calibration, no camera)
  python -m hand_bringup.runner robot --peer 192.168.1.20       # two hosts: on the robot's computer,
  python -m hand_bringup.runner operator --peer 192.168.1.30    # then on the operator's laptop
      (DDS reaches this host and the peers only, over UDP; see :func:`two_host_environment`)
  python -m hand_bringup.runner dex --video ../shared/media/human_hand_video.mp4 \
      --robot /path/ability_hand_right_dexpilot.yml --robot-urdf /path/ability_hand/ability_hand_right.urdf
      (any hand from its dex-retargeting config and URDF: retarget node + twin, /dex_twin/joint_states)
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import signal
import sys
import time
from typing import Any

from hand_bringup.bringup import (
    CONSOLE,
    DEX_RETARGET,
    DEX_TWIN,
    NODES,
    PROFILES,
    SERVO_DRIVER,
    TRACKER,
    TWO_HOST_FASTDDS_PROFILE,
    share_file,
)
from hand_bringup.runner_core import DuplicateNodesError, RunConfig, Runner
from hand_common import contract
from hand_common.param_spec import TYPE_NAMES, coerce_value, did_you_mean
from hand_tracking import interface as tracker_iface


def parse_overrides(items: list[str]) -> dict[str, dict[str, Any]]:
    """``["tracker.mirror=true", "twin.render_rate_hz=15"]`` → ``{"tracker": {"mirror": True}, ...}``.
    Values are parsed as YAML scalars or lists; text that YAML reads as a mapping or cannot read
    (``video:/clips/take: 2.mp4``: a ``": "`` inside) stays the text it is (a ROS parameter is never
    a mapping). ValueError names a malformed item."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        node, dot, param = key.partition(".")
        if not sep or not dot or not node or not param:
            raise ValueError(f"override '{item}' is not <node>.<parameter>=<value>")
        out.setdefault(node, {})[param] = parse_value(value)
    return out


#: a number with an exponent and no decimal point (``1e-3``): YAML 1.1 (PyYAML) reads it as text,
#: rcl's parameter parser (``-p x:=1e-3``, a params file) as a double
_EXPONENT_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def parse_value(text: str) -> Any:
    """A ``-p`` value: the YAML scalar or list ``text`` means (``1e-3`` a double, as rcl reads it),
    else ``text`` itself (see :func:`parse_overrides`)."""
    import yaml

    if _EXPONENT_NUMBER.fullmatch(text.strip()):
        return float(text)
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return text if isinstance(value, dict) else value


def robot_overrides(args: argparse.Namespace, overrides: dict[str, dict[str, Any]]) -> None:
    """dex profile: ``--robot``, ``--robot-urdf``, ``--robot-dir`` set ``robot``, ``robot_urdf`` and
    ``robot_dir`` on both the retarget node and the twin (file paths made absolute; a ``-p`` of the
    same parameter wins), as ``robot:=`` / ``robot_urdf:=`` / ``robot_dir:=`` of dex.launch.py."""
    values = {"robot": getattr(args, "robot", None), "robot_urdf": getattr(args, "robot_urdf", None),
              "robot_dir": getattr(args, "robot_dir", None)}
    for name, value in values.items():
        if not value:
            continue
        if name != "robot" or value.endswith((".yml", ".yaml")) or os.sep in value:
            if not os.path.exists(value):
                raise ValueError(f"--{name.replace('_', '-')}: no such file or folder {value}")
            value = os.path.abspath(value)
        for key in (DEX_RETARGET, DEX_TWIN):
            overrides.setdefault(key, {}).setdefault(name, value)


def parse_params_files(items: list[str]) -> dict[str, str]:
    """``["tracker=my.yaml"]`` → ``{"tracker": "/abs/my.yaml"}``; ValueError names a malformed item
    or a missing file (the node names it is keyed to are checked by the Runner, which knows them:
    :func:`hand_bringup.runner_core.check_params_file`)."""
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


def console_overrides(args: argparse.Namespace, overrides: dict[str, dict[str, Any]]) -> str | None:
    """With ``--console``: the console node's host/port/allow_remote into ``overrides["console"]``
    and the page's address (``http://127.0.0.1:8080``); None without it. A host other than the
    loopback address needs ``--allow-remote`` (ValueError otherwise) and prints a warning: anyone who
    reaches the page can recalibrate the tracker and move the robot."""
    if not getattr(args, "console", False):
        for flag, value in (("--console-port", args.console_port), ("--console-host", args.console_host)):
            if value is not None:
                raise ValueError(f"{flag} needs --console")
        if args.allow_remote:
            raise ValueError("--allow-remote needs --console")
        return None
    from hand_console.page import DEFAULT_PORT, LOCALHOST, check_host, url

    host = check_host(args.console_host or LOCALHOST, bool(args.allow_remote))
    port = int(args.console_port if args.console_port is not None else DEFAULT_PORT)
    if not 1 <= port <= 65535:
        raise ValueError(f"--console-port {port} is not a TCP port (1-65535)")
    mine = overrides.setdefault(CONSOLE, {})
    mine.setdefault("host", host)
    mine.setdefault("port", port)
    mine.setdefault("allow_remote", bool(args.allow_remote))
    return url(str(mine["host"]), int(mine["port"]))


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
    check_board_flags(args)
    out = pathlib.Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    overrides = parse_overrides(args.param or [])
    params_files = parse_params_files(args.params_file or [])
    robot_overrides(args, overrides)
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
    has_tracker = TRACKER in PROFILES[args.profile]
    if not has_tracker and (args.source or args.video):
        raise ValueError(f"profile '{args.profile}' has no tracker: --source/--video belong to the operator side")
    source = args.source or (f"video:{os.path.abspath(args.video)}" if args.video else "camera:0")
    kind, _, target = source.partition(":") if has_tracker else ("", "", "")
    if has_tracker:
        overrides.setdefault(TRACKER, {}).setdefault(tracker_iface.PARAM_SOURCE, source)
        if overrides[TRACKER].get(tracker_iface.PARAM_LOOP) is True:
            kind = "looping"  # runs until Ctrl-C / --duration
    if kind == "video":
        frames = _video_frame_count(target)
    elif kind == "bag":
        from hand_common.bag import topic_counts

        frames = topic_counts(target).get(contract.TOPIC_LANDMARKS, ("", 0))[1] or None
    console_url = console_overrides(args, overrides)
    cfg = RunConfig(profile=args.profile, out_dir=out, overrides=overrides, params_files=params_files,
                    record=not args.no_record, sim_board=not args.no_sim_board,
                    sim_board_dir=pathlib.Path(args.sim_board_dir).resolve() if args.sim_board_dir else None,
                    video_frames=None,
                    idle_stop_s=30.0 if frames else None, duration_s=args.duration, console=console_url is not None)
    cfg.video_frames = frames  # progress display; the run ends when the tracker reports its source finished
    runner = Runner(cfg)
    code = 0
    brought_up = False
    try:
        runner.start()
        runner.connect()
        runner.bring_up()
        brought_up = True
        print(f"[runner] {args.profile}: {', '.join(s.name for s in runner.specs)} active; Ctrl-C to stop", flush=True)
        if console_url:
            print(f"[runner] operator console: {console_url}", flush=True)
        runner.supervise()
    except KeyboardInterrupt:
        runner.monitor.stopping = True  # nodes that got the signal too shut down on their own: not foreign
        print("\n[runner] stopping (actuators to safe pose first)", flush=True)
    except DuplicateNodesError as exc:
        print(f"[runner] error: {exc}", file=sys.stderr)
        code = 3
    except Exception as exc:  # noqa: BLE001
        # a node that died is the cause of whatever wait failed after it (a service, a transition)
        print(f"[runner] error: {runner.dead_process() or exc}", file=sys.stderr)
        code = 1
    finally:
        runner.stop()
    # a run refused before its nodes were up (a misspelt parameter, a node that died at start) has
    # no messages: its empty tally would only bury the error
    if runner.recording and (brought_up or any(row.get("recorded") for row in runner.recording.values())):
        print(f"[runner] {'recording' if cfg.record else 'messages (no bag)'}:\n" + runner.recording_summary(),
              flush=True)
    if runner.monitor.foreign_transitions:
        # the run was not the one asked for (a node deactivated, reconfigured... by someone else): it fails
        print(f"[runner] error: {len(runner.monitor.foreign_transitions)} lifecycle change(s) of the run's nodes "
              "came from another process (the run fails: its nodes were not in the states it asked for):\n  " +
              "\n  ".join(runner.monitor.foreign_transitions), file=sys.stderr, flush=True)
        code = code or 1
    if runner.recording_problems:
        print("[runner] error: the run lost messages:\n  " + "\n  ".join(runner.recording_problems),
              file=sys.stderr, flush=True)
        code = code or 1
    return code


def param_target(node: str, running: list[str]) -> str:
    """The node ``runner param`` sets: ``node`` as given (``hand_tracker``, ``/hand_tracker``) or a
    runner key (``tracker``, as in ``-p tracker.x=...``) turned into its node name. ValueError when
    no such node runs (``running``: the node names on the graph), naming the close ones."""
    name = node.lstrip("/")
    if name not in running and name in NODES:
        name = NODES[name].name
    if name in running:
        return name
    domain = os.environ.get("ROS_DOMAIN_ID", "0")
    keys = [k for k, spec in NODES.items() if spec.name in running]
    hint = did_you_mean(node.lstrip("/"), list(running) + keys)
    ours = sorted(n for n in running if not n.startswith("hand_runner"))
    raise ValueError(f"no node /{node.lstrip('/')} is running on ROS_DOMAIN_ID {domain}{hint}; running: "
                     f"{', '.join('/' + n for n in ours) or 'none (is a runner started on this ROS_DOMAIN_ID?)'}")


def param_request(node: str, name: str, text: str, declared: dict[str, str]) -> Any:
    """The value ``runner param <node> <name> <text>`` sends: ``text`` read as a ``-p`` value
    (:func:`parse_value`) and made the declared type's (an integer for a double parameter is that
    double: ``2`` → 2.0). ``declared``: the node's ``{parameter: type name}``. ValueError names a
    parameter the node does not declare (and the close ones), or the parameter, its type and the
    value when the value is of another type."""
    if name not in declared:
        raise ValueError(f"/{node} has no parameter '{name}'{did_you_mean(name, declared)}")
    return coerce_value(name, parse_value(text), declared[name])


def find_node(probe: Any, node: str, discovery_s: float = 2.0) -> str:
    """:func:`param_target` of ``node`` among the nodes ``probe`` discovers within ``discovery_s``
    (returns as soon as the node is seen)."""
    wanted = {node.lstrip("/")} | ({NODES[node].name} if node in NODES else set())
    end = time.monotonic() + discovery_s
    while True:
        running = [n for n, ns in probe.node.get_node_names_and_namespaces() if ns == "/"]
        if wanted & set(running) or time.monotonic() > end:
            return param_target(node, running)
        time.sleep(0.1)


def run_param(args: argparse.Namespace) -> int:
    from rcl_interfaces.srv import DescribeParameters, ListParameters

    from hand_common.probe import RosProbe

    probe = RosProbe("hand_runner_param")
    try:
        node = find_node(probe, args.node)
        names = list(probe.call(ListParameters, f"/{node}/list_parameters", ListParameters.Request()).result.names)
        described = probe.call(DescribeParameters, f"/{node}/describe_parameters",
                               DescribeParameters.Request(names=names)).descriptors
        declared = {n: TYPE_NAMES.get(d.type, str(d.type)) for n, d in zip(names, described)}
        value = param_request(node, args.name, args.value, declared)
        (result,) = probe.set_parameters(node, **{args.name: value})
    finally:
        probe.close()
    print("Set parameter successful" if result.successful else f"Setting parameter failed: {result.reason}")
    return 0 if result.successful else 1


def run_calibrate(args: argparse.Namespace) -> int:
    from hand_msgs.srv import Calibrate

    from hand_common.probe import RosProbe

    probe = RosProbe("hand_runner_calibrate")
    try:
        find_node(probe, contract.TRACKER_NODE)  # not running: said in 2 s, not after the service wait
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
#: The profiles whose servo driver the runner connects to a simulated board unless --no-sim-board
#: (demo always uses the simulated board; the others have no servo driver)
BOARD_PROFILES = tuple(p for p, keys in PROFILES.items() if SERVO_DRIVER in keys and p not in HANDLED_PROFILES)


def check_board_flags(args: argparse.Namespace) -> None:
    """ValueError for ``--no-sim-board`` / ``--sim-board-dir`` on a profile without a simulated
    board to replace or place (every profile but :data:`BOARD_PROFILES`: they would be ignored),
    and for both together."""
    given = [f for f, v in (("--no-sim-board", args.no_sim_board), ("--sim-board-dir", args.sim_board_dir)) if v]
    if given and args.profile not in BOARD_PROFILES:
        why = "always uses the simulated board" if args.profile in HANDLED_PROFILES else "has no servo board"
        raise ValueError(f"{' and '.join(given)}: profile '{args.profile}' {why}; "
                         f"{'they apply' if len(given) > 1 else 'it applies'} to {', '.join(BOARD_PROFILES)}")
    if len(given) == 2:
        raise ValueError("--sim-board-dir places the simulated board, --no-sim-board replaces it: give one")


def board_help(profile: str) -> tuple[str, str]:
    """The help of ``--no-sim-board`` and ``--sim-board-dir`` in ``profile``'s ``--help``."""
    where = f"profiles {', '.join(BOARD_PROFILES)}"
    if profile in BOARD_PROFILES:
        return (f"use a real board at servo_driver.port instead of the simulated one ({where})",
                f"the simulated board's link, pulse log and stats here instead of --out ({where})")
    why = "always uses the simulated board" if profile in HANDLED_PROFILES else "has no servo board"
    return (f"{where} only: '{profile}' {why} (refused)", f"{where} only: '{profile}' {why} (refused)")


def build_parser(handlers: dict[str, Any] | None = None) -> argparse.ArgumentParser:
    """The runner's CLI. handlers: profile -> run(args, out, overrides, params_files) -> exit code;
    a profile in HANDLED_PROFILES without a handler is not offered."""
    handlers = handlers or {}
    p = argparse.ArgumentParser(prog="runner", description=__doc__.split("\n\n")[0].replace("``", "'"),
                                epilog="python -m hand_bringup.runner <profile> --help: that profile's options")
    sub = p.add_subparsers(dest="command", required=True)
    # every bringup profile but gazebo (which needs `gz sim` and ros_gz_bridge: use its launch file)
    for profile in [p for p in PROFILES if p != "gazebo" and (p not in HANDLED_PROFILES or p in handlers)]:
        s = sub.add_parser(profile, help=f"run the '{profile}' node set: {', '.join(PROFILES.get(profile, ()))}")
        s.add_argument("--video", help="video file for the tracker (default for demo: the shared hand video)")
        s.add_argument("--source", help="tracker source, e.g. camera:0 (overrides --video)")
        s.add_argument("--out", default="out", help="output directory (logs, bag, demo files; default out)")
        s.add_argument("-p", "--param", action="append", metavar="NODE.PARAM=VALUE",
                       help="parameter override, e.g. tracker.mirror=true; node keys: "
                            f"{', '.join(PROFILES[profile]) if profile in PROFILES else 'the profile nodes'}; "
                            "an integer for a decimal parameter is that decimal (2 = 2.0), a decimal for an "
                            "integer parameter is refused")
        s.add_argument("--params-file", action="append", metavar="NODE=FILE", help="replace a node's YAML file")
        s.add_argument("--no-record", action="store_true", help="do not write a bag")
        no_board_help, board_dir_help = board_help(profile)
        s.add_argument("--no-sim-board", action="store_true", help=no_board_help)
        s.add_argument("--duration", type=float, help="stop after this many seconds")
        s.add_argument("--sim-board-dir", metavar="DIR", help=board_dir_help)
        s.add_argument("--peer", action="append", metavar="HOST",
                       help="two hosts: the other host's address or name (repeatable); DDS then reaches this "
                            "host and the peers only, over UDP (ROS_STATIC_PEERS; use the same ROS_DOMAIN_ID "
                            "on both hosts; see the hand_bringup README, 'Two hosts')")
        s.add_argument("--fastdds-profile", metavar="FILE",
                       help="with --peer: Fast DDS XML profile instead of hand_bringup's fastdds_two_host.xml")
        if DEX_RETARGET in PROFILES.get(profile, ()):
            s.add_argument("--robot", help="robot hand: a dex-retargeting name (ability_hand_right, ...) or the path "
                                           "to its dex-retargeting .yml (both dex nodes; empty = dex_hand)")
            s.add_argument("--robot-urdf", help="the robot's URDF, replacing the .yml's urdf_path")
            s.add_argument("--robot-dir", help="folder of the robot URDFs for a relative urdf_path "
                                               "(default $HAND_ROBOTS_DIR, else ../shared/robots)")
        s.add_argument("--console", action="store_true",
                       help="also serve the operator console, a local web page (camera with landmarks, "
                            "flexions, the robot, figures, calibration); prints its address")
        s.add_argument("--console-port", type=int, metavar="PORT", help="the console's TCP port (default 8080)")
        s.add_argument("--console-host", metavar="ADDRESS",
                       help="address the console binds (default 127.0.0.1); another one needs --allow-remote")
        s.add_argument("--allow-remote", action="store_true",
                       help="let --console-host be a non-loopback address (anyone who reaches the page can "
                            "recalibrate the tracker and move the robot: a warning is printed)")
        s.set_defaults(func=run_profile, profile=profile, handler=handlers.get(profile))
    s = sub.add_parser("param", help="set a parameter on a running node (= ros2 param set)")
    s.add_argument("node", help="node name (hand_tracker) or runner key (tracker)")
    s.add_argument("name", help="parameter name")
    s.add_argument("value", help="the value, as YAML (1.7, 2, true, [0.1, 0.2], text); an integer for a "
                                 "decimal parameter is that decimal")
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
