"""A bad network link between two network namespaces on one machine, for the two-host test.

The kernel here has no ``tc netem`` (and no iptables), so the link is emulated in user space:
two TAP devices, one moved into each namespace (the operator's and the robot's), and a forwarding
process (``python -m hand_bringup.netlink forward``) that holds both TAP file descriptors and
copies every Ethernet frame from one to the other, dropping, delaying (± jitter) and reordering
frames with a seeded RNG as told. Outages are ``ip link set <tap> down`` inside a namespace (the
kernel then refuses to send: no route), exactly as on a real host whose Wi-Fi drops.

Pure parts (tested directly): :class:`LinkFaults` (what the link does now), :class:`LinkPolicy`
(frame → dropped or its delivery time), :func:`joint_state_in_frame` (is this Ethernet frame an
RTPS DATA carrying a ``sensor_msgs/JointState`` with the five digit names? its capture stamp) and
:func:`shift_joint_state_stamp` (a test-only clock offset: the stamp seen by the other side moves by
``offset_s``, as if the operator's clock were off).

:class:`TwoNamespaces` makes the namespaces, the TAP pair, the addresses (only inside them),
starts the forwarder and removes everything on :meth:`~TwoNamespaces.close` (processes still in
the namespaces are killed first). Needs root, ``ip netns`` and ``/dev/net/tun``: :func:`netns_problem`
says why not when they are missing.

Forwarder log (JSONL, one record per JointState frame that crossed or was dropped, plus fault
changes): ``{"ev": "js", "dir": "ab", "mono": t_in, "out": t_out or null, "stamp": s, "seq": n}``,
``{"ev": "faults", "mono": t, ...}``; CLOCK_MONOTONIC, comparable with the simulated board's
``mono``.
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import heapq
import json
import os
import random
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, TextIO

from hand_common import contract

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
ETH_P_IP = 0x0800
RTPS_DATA = 0x15
#: user-defined entity kinds have the two top bits clear (builtin: 0xc0)
_BUILTIN_KIND = 0xC0


@dataclasses.dataclass(frozen=True)
class LinkFaults:
    """What the emulated link does to each frame, both directions alike.

    loss: probability a frame is dropped (0..1); delay_s: one-way delay (s); jitter_s: the delay is
    uniform in ``delay_s ± jitter_s`` (a jitter larger than the frame interval reorders frames);
    reorder: probability a frame is held back ``reorder_gap_s`` more (it then arrives after frames
    sent later); stamp_offset_s: added to the capture stamp of every JointState going a→b (the
    operator's clock as the robot sees it); down: every frame dropped (prefer ``ip link set down``,
    which is what a real host sees; this is for a link that drops silently)."""

    loss: float = 0.0
    delay_s: float = 0.0
    jitter_s: float = 0.0
    reorder: float = 0.0
    reorder_gap_s: float = 0.05
    stamp_offset_s: float = 0.0
    down: bool = False

    def __post_init__(self) -> None:
        for name in ("loss", "reorder"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"LinkFaults.{name} {v} is not a probability in [0, 1]")
        for name in ("delay_s", "jitter_s", "reorder_gap_s"):
            if getattr(self, name) < 0.0:
                raise ValueError(f"LinkFaults.{name} {getattr(self, name)} is negative")
        if self.jitter_s > self.delay_s:
            raise ValueError(f"LinkFaults.jitter_s {self.jitter_s} exceeds delay_s {self.delay_s}")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LinkFaults:
        unknown = set(d) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"LinkFaults: unknown field(s) {sorted(unknown)}")
        return cls(**d)


class LinkPolicy:
    """Decides each frame's fate from the current :class:`LinkFaults` and a seeded RNG.

    :meth:`decide` returns the CLOCK_MONOTONIC time (s) to deliver a frame that entered at ``now``,
    or None when it is dropped. Deterministic for a given seed and call sequence."""

    def __init__(self, seed: int = 0, faults: LinkFaults | None = None):
        self.rng = random.Random(seed)
        self.faults = faults or LinkFaults()

    def decide(self, now: float) -> float | None:
        f = self.faults
        if f.down or (f.loss and self.rng.random() < f.loss):
            return None
        delay = f.delay_s + (self.rng.uniform(-f.jitter_s, f.jitter_s) if f.jitter_s else 0.0)
        if f.reorder and self.rng.random() < f.reorder:
            delay += f.reorder_gap_s
        return now + delay


def _udp_payload(frame: bytes) -> tuple[int, int] | None:
    """(offset of the UDP header, offset of the UDP payload) of an unfragmented IPv4/UDP frame."""
    if len(frame) < 42 or struct.unpack_from("!H", frame, 12)[0] != ETH_P_IP:
        return None
    ihl = (frame[14] & 0x0F) * 4
    if frame[23] != 17 or struct.unpack_from("!H", frame, 20)[0] & 0x3FFF:  # not UDP, or a fragment
        return None
    udp = 14 + ihl
    return udp, udp + 8


def _rtps_data_payloads(frame: bytes):
    """Yield (offset of the serialized payload, its end) of every user DATA submessage."""
    off = _udp_payload(frame)
    if off is None:
        return
    pos = off[1]
    if frame[pos:pos + 4] != b"RTPS":
        return
    pos += 20
    while pos + 4 <= len(frame):
        sid, flags = frame[pos], frame[pos + 1]
        end = "<" if flags & 1 else ">"
        (length,) = struct.unpack_from(end + "H", frame, pos + 2)
        body = pos + 4
        nxt = body + length if length else len(frame)
        if sid == RTPS_DATA and flags & 0x04 and body + 20 <= len(frame):
            (to_qos,) = struct.unpack_from(end + "H", frame, body + 2)
            writer_kind = frame[body + 11]
            p = body + 4 + to_qos
            if flags & 0x02:  # inline QoS: a parameter list up to PID_SENTINEL
                while p + 4 <= nxt:
                    pid, plen = struct.unpack_from(end + "HH", frame, p)
                    p += 4 + plen
                    if pid == 1:
                        break
            if not writer_kind & _BUILTIN_KIND:
                yield p, min(nxt, len(frame))
        if nxt <= pos:
            return
        pos = nxt


def _cdr_string(buf: bytes, p: int, base: int, end: str) -> tuple[str, int]:
    p = base + ((p - base + 3) & ~3)
    (n,) = struct.unpack_from(end + "I", buf, p)
    s = buf[p + 4:p + 4 + n]
    if n == 0 or len(s) != n or s[-1] != 0:
        raise ValueError("not a CDR string")
    return s[:-1].decode("ascii", "strict"), p + 4 + n


def joint_state_in_frame(frame: bytes) -> tuple[float, int, str] | None:
    """(capture stamp s, offset of ``header.stamp.sec`` in the frame, CDR byte order ``<``/``>``)
    of the first user RTPS DATA in ``frame`` that is a ``sensor_msgs/JointState`` naming exactly
    the five digits (:data:`hand_common.contract.FINGER_NAMES`), else None. Never raises."""
    found = joint_states_in_frame(frame)
    return found[0] if found else None


def joint_states_in_frame(frame: bytes) -> list[tuple[float, int, str]]:
    """Every such JointState in ``frame`` (see :func:`joint_state_in_frame`), in order: one UDP
    datagram can carry several DATA submessages (Fast DDS packs the backlog it resends after an
    outage into one). Never raises."""
    out = []
    for start, stop in _rtps_data_payloads(frame):
        try:
            if stop - start < 24 or frame[start] != 0 or frame[start + 1] not in (0, 1):
                continue
            end = "<" if frame[start + 1] == 1 else ">"
            base = start + 4
            sec, nsec = struct.unpack_from(end + "iI", frame, base)
            _, p = _cdr_string(frame, base + 8, base, end)
            p = base + ((p - base + 3) & ~3)
            (count,) = struct.unpack_from(end + "I", frame, p)
            if count != len(contract.FINGER_NAMES):
                continue
            p += 4
            names = []
            for _ in range(count):
                name, p = _cdr_string(frame, p, base, end)
                names.append(name)
            if tuple(names) == tuple(contract.FINGER_NAMES):
                out.append((sec + nsec * 1e-9, base, end))
        except (struct.error, ValueError, UnicodeDecodeError):
            continue
    return out


def shift_joint_state_stamp(frame: bytes, offset_s: float) -> bytes:
    """``frame`` with every JointState capture stamp in it moved by ``offset_s`` (the UDP checksum
    set to 0, "none", which IPv4 allows); other frames unchanged."""
    found = joint_states_in_frame(frame)
    if not found or not offset_s:
        return frame
    buf = bytearray(frame)
    for stamp, at, end in found:
        ns = round((stamp + offset_s) * 1e9)
        struct.pack_into(end + "iI", buf, at, ns // 1_000_000_000, ns % 1_000_000_000)
    udp, _ = _udp_payload(frame)  # type: ignore[misc]
    struct.pack_into("!H", buf, udp + 6, 0)
    return bytes(buf)


def _ipv4_fragment(frame: bytes) -> tuple[tuple, int, bool, int] | None:
    """(datagram key, payload offset in the datagram, more fragments follow, IP header end) of an IPv4
    fragment, None for any other frame (an unfragmented datagram included)."""
    if len(frame) < 34 or struct.unpack_from("!H", frame, 12)[0] != ETH_P_IP:
        return None
    flags = struct.unpack_from("!H", frame, 20)[0]
    if not flags & 0x3FFF:
        return None
    ihl = (frame[14] & 0x0F) * 4
    key = (frame[26:30], frame[30:34], frame[18:20], frame[23])
    return key, (flags & 0x1FFF) * 8, bool(flags & 0x2000), 14 + ihl


def _whole_datagram(fragments: Sequence[bytes]) -> tuple[bytes, list[tuple[int, int, int]]]:
    """The unfragmented frame of a datagram's complete ``fragments`` (in offset order): the first
    one's Ethernet + IP header (fragment fields cleared, length set), then every payload; and per
    fragment (its payload's offset in the whole frame, its length, its IP header end)."""
    parts, out = [], []
    first = _ipv4_fragment(fragments[0])
    head = bytearray(fragments[0][:first[3]])
    pos = len(head)
    for f in fragments:
        _, _, _, hdr = _ipv4_fragment(f)
        parts.append(f[hdr:])
        out.append((pos, len(f) - hdr, hdr))
        pos += len(f) - hdr
    struct.pack_into("!H", head, 20, 0)
    struct.pack_into("!H", head, 16, pos - 14)
    return bytes(head) + b"".join(parts), out


class FragmentJoiner:
    """Holds the IPv4 fragments of a datagram until all of them are in, so that a datagram larger than
    the link's MTU is seen whole (Fast DDS resends an outage's backlog as one datagram of several
    samples, which IP fragments: unjoined, its samples crossed with their stamps unmoved and unlogged).
    Fragments leave a host back to back; a datagram incomplete after ``max_age_s`` is let go as is."""

    def __init__(self, max_age_s: float = 0.5):
        self.max_age_s = float(max_age_s)
        self._held: dict[tuple, tuple[float, list[tuple[int, bool, bytes]]]] = {}

    def add(self, frame: bytes, now: float) -> list[bytes] | None:
        """None: ``frame`` is no fragment (it goes alone). Else the fragments to send now, in offset
        order: [] while the datagram is incomplete, all of them once it is (or the stale ones)."""
        info = _ipv4_fragment(frame)
        out: list[bytes] = []
        for key in [k for k, (t, _) in self._held.items() if now - t > self.max_age_s]:
            out += [f for _, _, f in sorted(self._held.pop(key)[1], key=lambda x: x[0])]
        if info is None:
            return out + [frame] if out else None
        key, offset, more, hdr = info
        t0, parts = self._held.setdefault(key, (now, []))
        parts.append((offset, more, frame))
        parts.sort(key=lambda x: x[0])
        end = 0
        for off, _, f in parts:
            if off != end:
                return out
            end = off + len(f) - _ipv4_fragment(f)[3]
        if parts[-1][1]:  # the last one is still to come
            return out
        del self._held[key]
        return out + [f for _, _, f in parts]


def fragments_joint_states(fragments: Sequence[bytes]) -> list[float]:
    """Capture stamps of the JointStates in a datagram's complete ``fragments`` (or one frame)."""
    if len(fragments) == 1 and _ipv4_fragment(fragments[0]) is None:
        return [st for st, _, _ in joint_states_in_frame(fragments[0])]
    whole, _ = _whole_datagram(fragments)
    return [st for st, _, _ in joint_states_in_frame(whole)]


def shift_fragments_stamps(fragments: Sequence[bytes], offset_s: float) -> list[bytes]:
    """:func:`shift_joint_state_stamp` for a datagram in IP fragments (complete, in offset order): each
    stamp's 8 bytes are moved where they lie, across a fragment boundary too; the UDP checksum (first
    fragment) set to 0."""
    if len(fragments) == 1 and _ipv4_fragment(fragments[0]) is None:
        return [shift_joint_state_stamp(fragments[0], offset_s)]
    whole, where = _whole_datagram(fragments)
    found = joint_states_in_frame(whole)
    if not found or not offset_s:
        return list(fragments)
    bufs = [bytearray(f) for f in fragments]

    def put(pos: int, data: bytes) -> None:
        for i, b in enumerate(data):
            for k, (start, n, hdr) in enumerate(where):
                if start <= pos + i < start + n:
                    bufs[k][hdr + pos + i - start] = b
                    break

    for stamp, at, end in found:
        ns = round((stamp + offset_s) * 1e9)
        put(at, struct.pack(end + "iI", ns // 1_000_000_000, ns % 1_000_000_000))
    put(where[0][0] + 6, b"\0\0")  # the UDP checksum: "none"
    return [bytes(b) for b in bufs]


# --- the forwarder process ---------------------------------------------------------------------------
def open_tap(name: str) -> int:
    """Create (in this process's namespace) a non-persistent TAP device ``name``; returns its fd.
    The device disappears when the fd closes (the forwarder exits), wherever it was moved."""
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


class Forwarder:
    """Copies frames a↔b between two TAP fds under a :class:`LinkPolicy` per direction."""

    def __init__(self, fd_a: int, fd_b: int, seed: int, log: TextIO):
        self.fds = {"ab": (fd_a, fd_b), "ba": (fd_b, fd_a)}
        self.policies = {"ab": LinkPolicy(seed), "ba": LinkPolicy(seed + 1)}
        self.joiners = {"ab": FragmentJoiner(), "ba": FragmentJoiner()}
        self.log = log
        self.queue: list[tuple[float, int, str, bytes, list[dict]]] = []
        self.cv = threading.Condition()
        self.n = 0
        self.counts = {"ab": [0, 0], "ba": [0, 0]}  # forwarded, dropped
        self.stop = threading.Event()
        self._log_lock = threading.Lock()

    def set_faults(self, faults: LinkFaults) -> None:
        with self.cv:
            for p in self.policies.values():
                p.faults = faults
        self._write({"ev": "faults", "mono": time.monotonic(), **dataclasses.asdict(faults)})

    def _write(self, rec: dict) -> None:
        with self._log_lock:
            self.log.write(json.dumps(rec) + "\n")

    def read_loop(self) -> None:
        by_fd = {fds[0]: d for d, fds in self.fds.items()}
        while not self.stop.is_set():
            ready, _, _ = select.select(list(by_fd), [], [], 0.2)
            for fd in ready:
                try:
                    frame = os.read(fd, 65536)
                except OSError:
                    continue
                now = time.monotonic()
                d = by_fd[fd]
                held = self.joiners[d].add(frame, now)
                frames = [frame] if held is None else held
                if not frames:
                    continue  # a fragment: held until its datagram is complete
                # one record per JointState: a datagram may carry several (a resent backlog)
                recs = [{"ev": "js", "dir": d, "mono": now, "stamp": st} for st in fragments_joint_states(frames)]
                with self.cv:
                    policy = self.policies[d]
                    if d == "ab" and policy.faults.stamp_offset_s:
                        frames = shift_fragments_stamps(frames, policy.faults.stamp_offset_s)
                    fates = [policy.decide(now) for _ in frames]  # each fragment (frame) its own fate
                    if None in fates:  # the datagram is lost (the receiver drops an incomplete one)
                        for rec in recs:
                            rec["out"] = None
                            self._write(rec)
                        recs = []
                    for i, (f, at) in enumerate(zip(frames, fates)):
                        if at is None:
                            self.counts[d][1] += 1
                            continue
                        self.n += 1
                        heapq.heappush(self.queue, (at, self.n, d, f, recs if i == len(frames) - 1 else []))
                    self.cv.notify()

    def write_loop(self) -> None:
        while not self.stop.is_set():
            with self.cv:
                while not self.queue or self.queue[0][0] > time.monotonic():
                    timeout = 0.2 if not self.queue else max(0.0, self.queue[0][0] - time.monotonic())
                    self.cv.wait(timeout)
                    if self.stop.is_set():
                        return
                _, _, d, frame, recs = heapq.heappop(self.queue)
            try:
                os.write(self.fds[d][1], frame)
                self.counts[d][0] += 1
                ok = True
            except OSError:  # the far side's interface is down: the frame is lost
                self.counts[d][1] += 1
                ok = False
            out = time.monotonic() if ok else None
            for rec in recs:
                rec["out"] = out
                self._write(rec)


def forward_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="netlink forward")
    ap.add_argument("--tap-a", required=True)
    ap.add_argument("--tap-b", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--seed", type=int, default=27)
    args = ap.parse_args(argv)
    fd_a, fd_b = open_tap(args.tap_a), open_tap(args.tap_b)
    log = open(args.log, "a", buffering=1)
    fw = Forwarder(fd_a, fd_b, args.seed, log)
    signal.signal(signal.SIGTERM, lambda *_: fw.stop.set())
    threads = [threading.Thread(target=fw.read_loop, daemon=True), threading.Thread(target=fw.write_loop, daemon=True)]
    for t in threads:
        t.start()
    print("ready", flush=True)
    # control: one JSON object of LinkFaults fields per line on stdin ({} = a clean link)
    for line in sys.stdin:
        if fw.stop.is_set():
            break
        line = line.strip()
        if not line:
            continue
        try:
            fw.set_faults(LinkFaults.from_dict(json.loads(line)))
            print("ok", flush=True)
        except (ValueError, TypeError) as exc:
            print(f"error {exc}", flush=True)
    fw.stop.set()
    with fw.cv:
        fw.cv.notify_all()
    for t in threads:
        t.join(1)
    fw._write({"ev": "exit", "mono": time.monotonic(), "forwarded_ab": fw.counts["ab"][0],
               "dropped_ab": fw.counts["ab"][1], "forwarded_ba": fw.counts["ba"][0], "dropped_ba": fw.counts["ba"][1]})
    log.close()
    return 0


# --- namespaces ------------------------------------------------------------------------------------------
def netns_problem() -> str | None:
    """Why the two-namespace link cannot be made here (None: it can)."""
    if os.geteuid() != 0:
        return "needs root (network namespaces and TAP devices)"
    if shutil.which("ip") is None:
        return "needs iproute2's ip"
    if not os.path.exists("/dev/net/tun"):
        return "needs /dev/net/tun"
    name = f"hnp{os.getpid() % 100000}"
    r = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if r.returncode:
        return f"ip netns add failed: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return None


def _ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")


def reclaim_leftover_namespaces() -> list[str]:
    """Delete the namespaces of earlier runs whose process is gone (a test killed before its
    cleanup); returns their names."""
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    gone = []
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.fullmatch(r"(?:hop|hrb)(\d+)", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
            gone.append(name)
    return gone


class TwoNamespaces:
    """Namespaces ``a`` (operator) and ``b`` (robot) joined by the emulated link.

    ``addr_a``/``addr_b``: each side's address (a /30 inside the namespaces only; nothing is
    added to the host's own network). ``log``: the forwarder's JSONL. Use as a context manager,
    or call :meth:`close` (idempotent; kills what still runs in the namespaces, deletes them, stops
    the forwarder, whose exit removes the TAP devices)."""

    def __init__(self, workdir: str, seed: int = 27, subnet: str = "10.231.27"):
        tag = str(os.getpid())  # pids are < 2**22: names stay within 15 characters
        self.ns = {"a": f"hop{tag}", "b": f"hrb{tag}"}
        self.tap = {"a": f"tapop{tag}", "b": f"taprb{tag}"}
        self.addr = {"a": f"{subnet}.1", "b": f"{subnet}.2"}
        self.log = os.path.join(workdir, "netlink.jsonl")
        self.fw: subprocess.Popen | None = None
        self._closed = False
        reclaim_leftover_namespaces()
        try:
            for ns in self.ns.values():
                _ip("netns", "add", ns)
                _ip("-n", ns, "link", "set", "lo", "up")
            self.fw = subprocess.Popen(
                [sys.executable, "-m", "hand_bringup.netlink", "forward", "--tap-a", self.tap["a"], "--tap-b",
                 self.tap["b"], "--log", self.log, "--seed", str(seed)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
            if self.fw.stdout.readline().strip() != "ready":
                raise RuntimeError("the link forwarder did not start")
            for side in "ab":
                _ip("link", "set", self.tap[side], "netns", self.ns[side])
                _ip("-n", self.ns[side], "addr", "add", f"{self.addr[side]}/30", "dev", self.tap[side])
                _ip("-n", self.ns[side], "link", "set", self.tap[side], "up")
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> TwoNamespaces:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def set_faults(self, faults: LinkFaults | None = None) -> None:
        """Change what the link does from now on (None: a clean link)."""
        self.fw.stdin.write(json.dumps(dataclasses.asdict(faults or LinkFaults())) + "\n")
        self.fw.stdin.flush()
        reply = self.fw.stdout.readline().strip()
        if reply != "ok":
            raise RuntimeError(f"link forwarder: {reply or 'no reply'}")

    def link(self, side: str, up: bool) -> float:
        """``ip link set <side's TAP> up|down`` in its namespace; returns CLOCK_MONOTONIC after it."""
        _ip("-n", self.ns[side], "link", "set", self.tap[side], "up" if up else "down")
        return time.monotonic()

    def cmd(self, side: str, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the side's namespace."""
        return ["ip", "netns", "exec", self.ns[side], *argv]

    def records(self, ev: str | None = None) -> list[dict[str, Any]]:
        out = []
        if not os.path.exists(self.log):
            return out
        with open(self.log) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if ev is None or r.get("ev") == ev:
                    out.append(r)
        return out

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for ns in self.ns.values():
            r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
            for pid in r.stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        if self.fw is not None and self.fw.poll() is None:
            try:
                self.fw.stdin.close()
                self.fw.wait(3)
            except (OSError, subprocess.TimeoutExpired):
                self.fw.kill()
                self.fw.wait(3)
        for ns in self.ns.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["forward"]:
        return forward_main(argv[1:])
    print("usage: python -m hand_bringup.netlink forward --tap-a A --tap-b B --log FILE [--seed N]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
