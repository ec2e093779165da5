"""Simulated servo board: the firmware's behaviour on a pseudo-terminal. No rclpy.

``sim_board --link /tmp/hand_board`` opens a pty (``os.openpty``), links its slave side at
``--link`` (and writes the path to ``--port-file``), and answers the driver exactly like the
firmware: :class:`hand_servo_driver.board.Board` validates every frame (rule for rule the
firmware's ``board_logic.cpp``, both checked against ``firmware/test_vectors.txt``), clamps,
acknowledges and runs the watchdog. It records what it would output:

- ``--log`` (JSON lines, default ``<link>.log.jsonl``): one record per event with wall time ``t``
  and ``mono`` (CLOCK_MONOTONIC, comparable across processes): ``frame`` (an accepted frame:
  ``seq``, ``msg`` set_pulses/heartbeat/safe, ``result`` 0 ok/1 clamped, ``outputs`` = every
  channel's pulse in µs or null when detached), ``reject`` (``counter`` that rose and by ``count``),
  ``watchdog``, ``boot``, ``plug``, ``unplug``, ``inject``, ``exit``, and ``horn``: an SG90 horn
  (:class:`hand_servo_driver.horn.HornModel`, ``--horn-speed-dps`` 600, ``--horn-deadband-us`` 5)
  reached its target: ``channel``, ``pulse_us``, ``at_mono`` (arrival, CLOCK_MONOTONIC s),
  ``set_mono`` and ``seq`` (when and by which frame that target was set).
- ``--stats-file`` (JSON, default ``<link>.stats.json``, rewritten atomically when something
  changed, at most every 50 ms): counters of the current boot and ``totals`` over all boots,
  ``outputs``, ``flags``, ``frames_applied``, ``plugged``, ``injected``.

Tests and users steer it through ``--control`` (a FIFO; one command per line) or signals:
``unplug`` (SIGUSR1: close the pty, remove the link — a USB cable pulled), ``plug`` (SIGUSR2: a
new pty at the same link, the board reboots: detached, BOOT status), ``flip N`` / ``truncate N``
(corrupt the next N SET_PULSES frames coming from the host: one random bit flipped / the frame
cut short), ``garbage N`` (N random bytes of line noise into the board's input), ``stats``
(write the stats file now), ``quit``. ``--flip-rate``/``--truncate-rate`` corrupt frames at random
all along (for demos).

``sim_board --summarize LOG`` prints the summary of a log (frames applied, rejected per counter,
watchdog trips, last outputs) as JSON and exits.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import random
import select
import signal
import stat
import subprocess
import sys
import tempfile
import time
import tty
from collections.abc import Sequence
from typing import Any

from hand_servo_driver import protocol as p
from hand_servo_driver.board import (
    DEFAULT_MAX_US,
    DEFAULT_MIN_US,
    DEFAULT_SAFE_US,
    DEFAULT_WATCHDOG_MS,
    Board,
    BoardConfig,
    parse_channel_list,
)
from hand_servo_driver.horn import SG90_DEADBAND_US, SG90_SPEED_DPS, Arrival, HornModel

ERROR_COUNTERS = ("crc_errors", "length_errors", "range_errors", "type_errors", "timeouts", "garbage_bytes")


class SimBoard:
    """The simulated board's process state: pty, board logic, log, stats, fault injection."""

    def __init__(self, config: BoardConfig, link: str, port_file: str | None, log_path: str | None,
                 stats_path: str | None, control_path: str | None, flip_rate: float = 0.0,
                 truncate_rate: float = 0.0, seed: int | None = None, quiet: bool = False,
                 horn_speed_dps: float = SG90_SPEED_DPS, horn_deadband_us: float = SG90_DEADBAND_US):
        self.config = config
        self.horns = HornModel(config.channels, speed_dps=horn_speed_dps, deadband_us=horn_deadband_us)
        self.link = os.path.abspath(link)
        self.port_file = port_file
        self.stats_path = stats_path
        self.control_path = control_path
        self.flip_rate = flip_rate
        self.truncate_rate = truncate_rate
        self.rng = random.Random(seed)
        self.quiet = quiet
        self.t0 = time.monotonic()
        self.master: int | None = None
        self.slave: int | None = None
        self.pty_name = ""
        self.board: Board | None = None
        self.boots = 0
        self.pending: list[str] = []  # queued corruptions: "flip" / "truncate"
        self.injected: list[dict[str, Any]] = []
        self.frames_applied = 0
        self.heartbeats = 0
        self.log_lost = 0  # log records (and lines of its own output) a full disk refused
        self.totals = {k: 0 for k in p.COUNTER_NAMES}
        self._prev_counters = {k: 0 for k in p.COUNTER_NAMES}
        self._dirty = True
        self._last_stats_t = 0.0
        self._log = open(log_path, "w", buffering=1) if log_path else None  # one log per run
        self._ctl: int | None = None
        self._ctl_keep: int | None = None
        self._ctl_buf = b""
        self._signals: list[str] = []
        self.running = True
        if control_path:
            if os.path.exists(control_path) and not stat.S_ISFIFO(os.stat(control_path).st_mode):
                raise SystemExit(f"sim_board: --control {control_path} exists and is not a FIFO")
            if not os.path.exists(control_path):
                os.mkfifo(control_path)
            self._ctl = os.open(control_path, os.O_RDONLY | os.O_NONBLOCK)
            self._ctl_keep = os.open(control_path, os.O_WRONLY | os.O_NONBLOCK)  # no EOF when writers leave

    # --- time, log, stats ---------------------------------------------------------------------------
    def now_ms(self) -> int:
        return int((time.monotonic() - self.t0) * 1000.0) & 0xFFFFFFFF

    def say(self, msg: str) -> None:
        if not self.quiet:
            try:
                print(f"sim_board: {msg}", flush=True)
            except OSError:  # stdout is a file on a full disk: the board keeps serving the driver
                self.log_lost += 1

    def record(self, event: str, **fields: Any) -> None:
        """One JSON line in the log. A write that fails (a full disk) is counted in ``log_lost``
        (stats) and said once: a board whose log cannot be written keeps answering the driver, so
        that the driver can still send the safe pose (it crashed with the disk before, issue 27)."""
        if self._log:
            rec = {"t": round(time.time(), 6), "mono": round(time.monotonic(), 6), "event": event, **fields}
            try:
                self._log.write(json.dumps(rec) + "\n")
            except OSError as exc:
                self.log_lost += 1
                if self.log_lost == 1:
                    self.say(f"cannot write the log {self._log.name}: {exc}; still serving, records lost are counted")
        self._dirty = True

    def stats(self) -> dict[str, Any]:
        b = self.board
        return {
            "pid": os.getpid(), "plugged": b is not None, "link": self.link, "port": self.pty_name,
            "boots": self.boots, "channels": self.config.channels, "watchdog_ms": self.config.watchdog_ms,
            "counters": b.counters() if b else None, "totals": dict(self.totals),
            "rejected_total": sum(self.totals[k] for k in ERROR_COUNTERS),
            "outputs": list(b.outputs) if b else None, "flags": int(b.status_flags()) if b else None,
            "frames_applied": self.frames_applied, "heartbeats": self.heartbeats, "log_lost": self.log_lost,
            "injected": list(self.injected), "pending_injections": list(self.pending),
            "mono": time.monotonic(),
        }

    def write_stats(self, force: bool = False) -> None:
        if not self.stats_path or not (self._dirty or force):
            return
        now = time.monotonic()
        if not force and now - self._last_stats_t < 0.05:
            return
        tmp = f"{self.stats_path}.tmp{os.getpid()}"
        self._last_stats_t = now
        try:
            with open(tmp, "w") as f:
                json.dump(self.stats(), f)
            os.replace(tmp, self.stats_path)
        except OSError:  # a full disk: the previous stats file stays; tried again when due
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return
        self._dirty = False

    # --- the pty ------------------------------------------------------------------------------------
    def plug(self) -> None:
        """Open a fresh pty, link it, boot the board (outputs detached, BOOT status)."""
        if self.master is not None:
            return
        if os.path.lexists(self.link) and not os.path.islink(self.link):
            # e.g. --link /dev/ttyACM0 with a real board plugged in: never replace a device or a file
            raise SystemExit(f"sim_board: refusing to replace {self.link}: it exists and is not a symlink")
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no line discipline until the driver configures it
        os.set_blocking(master, False)
        self.master, self.slave = master, slave
        self.pty_name = os.ttyname(slave)
        tmp = f"{self.link}.tmp{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        os.symlink(self.pty_name, tmp)
        os.replace(tmp, self.link)
        if self.port_file:
            with open(self.port_file + ".tmp", "w") as f:
                f.write(self.link + "\n")
            os.replace(self.port_file + ".tmp", self.port_file)
        self.board = Board(self.config, self.now_ms())
        self._prev_counters = {k: 0 for k in p.COUNTER_NAMES}
        self.boots += 1
        self.record("plug", port=self.pty_name, link=self.link)
        self._drain_events()
        self._send(self.board.boot_replies())
        self.say(f"pty {self.pty_name} linked at {self.link} (boot {self.boots})")

    def unplug(self) -> None:
        """Close the pty and remove the link: the driver sees I/O errors, then no device."""
        if self.master is None:
            return
        with contextlib.suppress(OSError):
            if os.readlink(self.link) == self.pty_name:  # only our own link
                os.unlink(self.link)
        for fd in (self.master, self.slave):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.master = self.slave = None
        self.board = None
        self.record("unplug", port=self.pty_name)
        self.say(f"unplugged {self.pty_name}")

    def _send(self, frames: Sequence[bytes]) -> None:
        for fr in frames:
            if self.master is None:
                return
            try:
                os.write(self.master, fr)
            except OSError as exc:  # nobody reads the slave and its buffer is full: drop, like a UART
                if exc.errno not in (errno.EAGAIN, errno.EIO):
                    raise

    # --- data path ------------------------------------------------------------------------------------
    def _corrupt(self, chunk: bytes) -> bytes:
        """Apply pending/random corruption to SET_PULSES frames in a chunk that holds whole frames."""
        if not self.pending and self.flip_rate <= 0 and self.truncate_rate <= 0:
            return chunk
        split = p.Parser()
        frames = split.feed(chunk, 0)
        raw = [p.encode_frame(f.type, f.seq, f.payload) for f in frames]
        if split.buf or sum(len(r) for r in raw) != len(chunk):
            return chunk  # not a clean run of frames: leave it alone
        out = b""
        for f, r in zip(frames, raw):
            kind = None
            if f.type == p.MsgType.SET_PULSES:
                if self.pending:
                    kind = self.pending.pop(0)
                elif self.rng.random() < self.flip_rate:
                    kind = "flip"
                elif self.rng.random() < self.truncate_rate:
                    kind = "truncate"
            if kind == "flip":
                bit = self.rng.randrange(len(r) * 8)
                b = bytearray(r)
                b[bit // 8] ^= 1 << (bit % 8)
                r = bytes(b)
                self.injected.append({"kind": "flip", "seq": f.seq, "bit": bit})
                self.record("inject", kind="flip", seq=f.seq, bit=bit)
            elif kind == "truncate":
                cut = self.rng.randint(1, len(r) - 3)
                r = r[:-cut]
                self.injected.append({"kind": "truncate", "seq": f.seq, "cut": cut})
                self.record("inject", kind="truncate", seq=f.seq, cut=cut)
            out += r
        return out

    def _drain_events(self) -> None:
        b = self.board
        if b is None:
            return
        for ev in b.events:
            if ev.outputs:
                self._record_horns(self.horns.command(time.monotonic(), ev.outputs, tag=ev.seq))
            if ev.kind == "frame":
                if ev.msg == "set_pulses":
                    self.frames_applied += 1
                elif ev.msg == "heartbeat":
                    self.heartbeats += 1
                self.record("frame", seq=ev.seq, msg=ev.msg, result=int(ev.result), outputs=ev.outputs)
            else:
                self.record(ev.kind, seq=ev.seq, outputs=ev.outputs)
        b.events.clear()
        c = b.counters()
        for k in p.COUNTER_NAMES:
            d = c[k] - self._prev_counters[k]
            if d:
                self.totals[k] += d
                if k in ERROR_COUNTERS:
                    self.record("reject", counter=k, count=d)
        self._prev_counters = c

    def _record_horns(self, arrivals: list[Arrival]) -> None:
        for a in arrivals:
            self.record("horn", channel=a.channel, pulse_us=round(a.pulse_us, 1), at_mono=round(a.t, 6),
                        set_mono=round(a.set_t, 6), seq=a.tag)

    def _on_master_readable(self) -> None:
        try:
            data = os.read(self.master, 4096)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EINTR):
                return
            if exc.errno == errno.EIO:  # no process has the slave open (our own fd keeps this rare)
                return
            raise
        if not data:
            return
        data = self._corrupt(data)
        now = self.now_ms()
        replies = self.board.poll(now) + self.board.receive(data, now)
        self._drain_events()
        self._send(replies)

    # --- control ----------------------------------------------------------------------------------------
    def command(self, line: str) -> None:
        words = line.split()
        if not words:
            return
        cmd, args = words[0], words[1:]
        n = int(args[0]) if args else 1
        if cmd == "unplug":
            self.unplug()
        elif cmd == "plug":
            self.plug()
        elif cmd in ("flip", "truncate"):
            self.pending += [cmd] * n
            self._dirty = True
        elif cmd == "garbage":
            if self.board is not None:
                noise = bytes(self.rng.randrange(256) for _ in range(n))
                self.record("inject", kind="garbage", count=n)
                now = self.now_ms()
                replies = self.board.poll(now) + self.board.receive(noise, now)
                self._drain_events()
                self._send(replies)
        elif cmd == "stats":
            self.write_stats(force=True)
        elif cmd == "quit":
            self.running = False
        else:
            self.say(f"unknown control command '{line.strip()}'")

    def _on_control_readable(self) -> None:
        try:
            chunk = os.read(self._ctl, 4096)
        except BlockingIOError:
            return
        self._ctl_buf += chunk
        while b"\n" in self._ctl_buf:
            line, self._ctl_buf = self._ctl_buf.split(b"\n", 1)
            self.command(line.decode(errors="replace"))

    # --- main loop ------------------------------------------------------------------------------------
    def run(self) -> None:
        self.plug()
        self.write_stats(force=True)
        while self.running:
            while self._signals:
                self.command(self._signals.pop(0))
            fds = [fd for fd in (self.master, self._ctl) if fd is not None]
            try:
                ready, _, _ = select.select(fds, [], [], 0.005)
            except InterruptedError:
                continue
            if self._ctl is not None and self._ctl in ready:
                self._on_control_readable()
            if self.master is not None and self.master in ready:
                self._on_master_readable()
            if self.board is not None:
                replies = self.board.poll(self.now_ms())
                self._drain_events()
                self._send(replies)
            self._record_horns(self.horns.advance(time.monotonic()))
            self.write_stats()

    def close(self) -> None:
        self.record("exit", totals=self.totals, frames_applied=self.frames_applied)
        self.unplug()
        self.write_stats(force=True)
        for fd in (self._ctl, self._ctl_keep):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if self.control_path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.control_path)
        if self._log:
            with contextlib.suppress(OSError):  # a full disk: what could not be written is counted
                self._log.close()


# --- reading what it recorded ----------------------------------------------------------------------------
def read_log(path: str, event: str | None = None) -> list[dict[str, Any]]:
    """Records of a sim_board log (optionally only one event kind); a partly written last line
    is skipped."""
    out = []
    with open(path) as f:
        for line in f:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if event is None or rec.get("event") == event:
                out.append(rec)
    return out


def summarize_log(path: str) -> dict[str, Any]:
    """Frames applied (SET_PULSES / heartbeat / safe), rejections per counter, watchdog trips,
    boots, injected faults and the last outputs of a sim_board log."""
    recs = read_log(path)
    frames = [r for r in recs if r["event"] == "frame"]
    rejected: dict[str, int] = {}
    for r in recs:
        if r["event"] == "reject":
            rejected[r["counter"]] = rejected.get(r["counter"], 0) + r["count"]
    outputs = [r["outputs"] for r in recs if "outputs" in r and r["event"] in ("frame", "watchdog", "boot")]
    return {
        "frames_applied": {m: sum(1 for r in frames if r["msg"] == m) for m in ("set_pulses", "heartbeat", "safe")},
        "frames_clamped": sum(1 for r in frames if r["result"] == p.Result.CLAMPED),
        "rejected": rejected,
        "rejected_frames_or_bytes_total": sum(rejected.values()),
        "watchdog_trips": sum(1 for r in recs if r["event"] == "watchdog"),
        "boots": sum(1 for r in recs if r["event"] == "plug"),
        "unplugs": sum(1 for r in recs if r["event"] == "unplug"),
        "injected": sum(1 for r in recs if r["event"] == "inject"),
        "last_outputs": outputs[-1] if outputs else None,
    }


class SimBoardProcess:
    """A sim_board started as its own process in ``workdir`` (for tests and the embedded demo).

    Files: ``board`` (the link = the driver's port), ``board.port``, ``board.log.jsonl``,
    ``board.stats.json``, ``board.ctl`` (control FIFO), ``sim_board.out`` (its stdout).
    """

    def __init__(self, workdir: str, *extra_args: str, timeout: float = 10.0):
        self.workdir = workdir
        self.link = os.path.join(workdir, "board")
        self.port_file = self.link + ".port"
        self.log_path = self.link + ".log.jsonl"
        self.stats_path = self.link + ".stats.json"
        self.control_path = self.link + ".ctl"
        self.out_path = os.path.join(workdir, "sim_board.out")
        self._out = open(self.out_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hand_servo_driver.sim_board", "--link", self.link, "--port-file", self.port_file,
             "--log", self.log_path, "--stats-file", self.stats_path, "--control", self.control_path, *extra_args],
            stdout=self._out, stderr=subprocess.STDOUT, start_new_session=True)
        end = time.monotonic() + timeout
        while not (os.path.exists(self.port_file) and os.path.exists(self.stats_path)):
            if self.proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"sim_board did not start: {self.output()}")
            time.sleep(0.02)

    def output(self) -> str:
        if not self._out.closed:
            self._out.flush()
        with open(self.out_path, "rb") as f:
            return f.read().decode(errors="replace")

    def control(self, command: str) -> None:
        """Send one control command (see the module docstring)."""
        fd = os.open(self.control_path, os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(fd, (command.strip() + "\n").encode())
        finally:
            os.close(fd)

    def stats(self) -> dict[str, Any]:
        with open(self.stats_path) as f:
            return json.load(f)

    def records(self, event: str | None = None) -> list[dict[str, Any]]:
        return read_log(self.log_path, event)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 5.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self._out.close()
        return self.proc.returncode


# --- command line ----------------------------------------------------------------------------------------
def _strip_ros_args(argv: list[str]) -> list[str]:
    """Drop ``--ros-args ... [--]`` that ``ros2 launch`` appends to every executable."""
    out, skip = [], False
    for a in argv:
        if a == "--ros-args":
            skip = True
            continue
        if skip and a == "--":
            skip = False
            continue
        if not skip:
            out.append(a)
    return out


def build_arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="sim_board", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--link", default="/tmp/hand_servo_board",
                    help="stable path to symlink the pty at (the driver's `port`), default %(default)s")
    ap.add_argument("--port-file", help="write the link path here once the pty is ready")
    ap.add_argument("--log", help="JSON-lines event/pulse log (default <link>.log.jsonl)")
    ap.add_argument("--stats-file", help="JSON stats, rewritten on change (default <link>.stats.json)")
    ap.add_argument("--control", help="control FIFO to create (commands: unplug, plug, flip N, truncate N, "
                                      "garbage N, stats, quit)")
    ap.add_argument("--channels", type=int, default=5, help="number of servo outputs (1..16)")
    ap.add_argument("--min-us", default=str(DEFAULT_MIN_US), help="clamp minimum, one value or a comma list")
    ap.add_argument("--max-us", default=str(DEFAULT_MAX_US), help="clamp maximum, one value or a comma list")
    ap.add_argument("--safe-us", default=str(DEFAULT_SAFE_US), help="safe pose, one value or a comma list")
    ap.add_argument("--watchdog-ms", type=int, default=DEFAULT_WATCHDOG_MS, help="0 disables")
    ap.add_argument("--watchdog-action", choices=("pose", "detach"), default="pose")
    ap.add_argument("--flip-rate", type=float, default=0.0, help="probability to flip a bit of each SET_PULSES")
    ap.add_argument("--truncate-rate", type=float, default=0.0, help="probability to truncate each SET_PULSES")
    ap.add_argument("--seed", type=int, default=None, help="random seed of the fault injection")
    ap.add_argument("--horn-speed-dps", type=float, default=SG90_SPEED_DPS,
                    help="simulated horn speed, deg/s (SG90: %(default)s)")
    ap.add_argument("--horn-deadband-us", type=float, default=SG90_DEADBAND_US,
                    help="half dead band of the simulated horns, us (SG90: %(default)s)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--summarize", metavar="LOG", help="print the summary of a log as JSON and exit")
    return ap


def _beside(link: str, suffix: str) -> str:
    """``<link><suffix>`` where the link's folder is writable, else in the temp folder (a link in
    /dev: a normal user may not write there)."""
    if os.access(os.path.dirname(os.path.abspath(link)), os.W_OK):
        return link + suffix
    return os.path.join(tempfile.gettempdir(), os.path.basename(link) + suffix)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_arg_parser().parse_args(_strip_ros_args(list(sys.argv[1:] if argv is None else argv)))
    if args.summarize:
        print(json.dumps(summarize_log(args.summarize), indent=2))
        return 0
    n = args.channels
    try:
        config = BoardConfig(channels=n, min_us=parse_channel_list(args.min_us, n),
                             max_us=parse_channel_list(args.max_us, n), safe_us=parse_channel_list(args.safe_us, n),
                             watchdog_ms=args.watchdog_ms,
                             watchdog_action=p.SAFE_DETACH if args.watchdog_action == "detach" else p.SAFE_POSE)
    except ValueError as exc:
        print(f"sim_board: invalid configuration: {exc}", file=sys.stderr)
        return 2
    if not args.horn_speed_dps > 0 or not args.horn_deadband_us >= 0:
        print(f"sim_board: invalid configuration: --horn-speed-dps must be > 0 and --horn-deadband-us >= 0 "
              f"(got {args.horn_speed_dps}, {args.horn_deadband_us})", file=sys.stderr)
        return 2
    link = args.link
    sim = SimBoard(config, link, args.port_file, args.log or _beside(link, ".log.jsonl"),
                   args.stats_file or _beside(link, ".stats.json"), args.control, args.flip_rate, args.truncate_rate,
                   args.seed, args.quiet, args.horn_speed_dps, args.horn_deadband_us)

    def on_signal(signum, _frame):
        if signum in (signal.SIGINT, signal.SIGTERM):
            sim.running = False
        elif signum == signal.SIGUSR1:
            sim._signals.append("unplug")
        elif signum == signal.SIGUSR2:
            sim._signals.append("plug")

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(s, on_signal)
    try:
        sim.run()
    finally:
        sim.close()
        sim.say(f"stopped; totals {sim.totals}, {sim.frames_applied} SET_PULSES applied")
    return 0


if __name__ == "__main__":
    sys.exit(main())
