"""rosbag2 files (MCAP) through the ``rosbags`` library: no rosbag2_py or ROS CLI needed.

Bags written here open with stock ``ros2 bag info/play`` (rosbag2 metadata version 9, Jazzy) and
with ``mcap`` readers: each connection carries its message definition, including our hand_msgs
types, which are registered from the installed ``share/hand_msgs/msg/*.msg`` files.
"""

from __future__ import annotations

import json
import os
import pathlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from rosbags.interfaces import Connection, ConnectionExtRosbag2, MessageDefinition, MessageDefinitionFormat
from rosbags.rosbag2 import Reader
from rosbags.rosbag2.enums import CompressionMode
from rosbags.rosbag2.storage_mcap import McapReader, McapWriter
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

HAND_MSGS = ("HandLandmarks", "HandLandmarksArray")



def hand_msgs_dir() -> pathlib.Path:
    """Installed ``share/hand_msgs/msg`` directory (ament index); FileNotFoundError if absent."""
    from ament_index_python.packages import get_package_share_directory

    d = pathlib.Path(get_package_share_directory("hand_msgs")) / "msg"
    if not d.is_dir():
        raise FileNotFoundError(f"{d} missing: build hand_msgs first")
    return d


def typestore(msg_dir: str | os.PathLike | None = None) -> Typestore:
    """The ROS 2 Jazzy typestore plus hand_msgs/msg/* (from ``msg_dir`` or the installed share)."""
    store = get_typestore(Stores.ROS2_JAZZY)
    d = pathlib.Path(msg_dir) if msg_dir else hand_msgs_dir()
    types: dict = {}
    for name in HAND_MSGS:
        types.update(get_types_from_msg((d / f"{name}.msg").read_text(), f"hand_msgs/msg/{name}"))
    store.register(types)
    return store


class BagWriter:
    """Write serialized (CDR) messages to a new MCAP rosbag2 directory, crash safe.

    Usage: ``w = BagWriter(path); w.add(topic, "sensor_msgs/msg/JointState"); w.write(topic, t_ns, cdr)``;
    ``close()`` commits the rest and merges the segments into one file (also via ``with``).
    Raises FileExistsError if path exists.

    Crash safety: messages are written in *segments* of ``segment_s`` seconds; each segment is a
    complete MCAP file (footer, index, message definitions) written under a hidden name and renamed
    into the bag when done, then ``metadata.yaml`` is rewritten atomically (temp file + rename) to
    list every committed segment. A process killed at any moment (kill -9) therefore leaves a bag
    that ``rosbags`` and ``ros2 bag`` open, holding every message but those of the segment being
    written: at most the last ``segment_s`` seconds (``write`` and :meth:`flush_if_due` commit a
    due segment; call the latter periodically when messages may stop). A leftover hidden segment
    directory is harmless and ignored by readers. Segments are split files of one bag, as
    ``ros2 bag record --max-bag-duration`` writes them.

    Bounded over a long run: every ``consolidate_n`` committed segments (120: a minute) are joined
    into one *chunk* file the same crash-safe way as the final merge (written under the hidden
    name, renamed in, metadata.yaml switched atomically, then the segments deleted). Without it the
    segment list — kept in memory and rewritten into metadata.yaml every ``segment_s`` — grew by
    120 entries a minute (``bench_bag_memory``: +0.08 MB/min of heap, metadata.yaml +26 KB/min,
    7200 files an hour); with it the list holds at most ``consolidate_n`` segments plus one chunk a
    minute.

    counts: {topic: messages written so far}; committed: {topic: messages in committed segments}.
    """

    def __init__(self, path: str | os.PathLike, store: Typestore | None = None, *, segment_s: float = 0.5,
                 clock: Callable[[], float] = time.monotonic, consolidate_n: int = 120):
        self.store = store or typestore()
        self.path = pathlib.Path(path)
        if self.path.exists():
            raise FileExistsError(f"{self.path} exists")
        if not segment_s > 0:
            raise ValueError(f"segment_s must be positive, got {segment_s}")
        self.path.mkdir(parents=True)
        self._staging = self.path / ".segment"  # the pending segment's MCAP file is written in here
        self._staging.mkdir()
        self.segment_s = float(segment_s)
        if consolidate_n < 0:
            raise ValueError(f"consolidate_n must be >= 0 (0: never), got {consolidate_n}")
        self.consolidate_n = int(consolidate_n)
        self._seg_no = 0  # segments committed so far (their file names)
        self._chunks = 0  # chunk files written so far (their file names)
        self._small_from = 0  # index in _files of the first segment not yet joined into a chunk
        self._clock = clock
        self._conns: dict[str, Connection] = {}
        self._defs: dict[str, tuple[MessageDefinition, str]] = {}  # msgtype -> (definition, RIHS01 hash)
        self.counts: dict[str, int] = {}
        self.committed: dict[str, int] = {}
        self._files: list[dict[str, Any]] = []  # committed segments (rosbag2 metadata 'files' entries)
        self._seg: McapWriter | None = None
        self._seg_counts: dict[str, int] = {}
        self._seg_t = [0, 0]  # first, last message time (ns) of the pending segment
        self._seg_t0 = 0.0
        self._in_files: set[str] = set()  # topics declared in at least one committed file
        self._closed = False
        self._write_metadata()  # an empty but valid bag from the start

    # --- segments ---------------------------------------------------------------------------------
    def _open_segment(self) -> None:
        staged = self._staging / f"{self._staging.name}.mcap"
        staged.unlink(missing_ok=True)  # left over by an earlier failed commit
        seg = McapWriter(self._staging, CompressionMode.NONE)
        types: set[str] = set()
        for conn in self._conns.values():
            self._declare(seg, conn, types)
        self._seg, self._seg_counts = seg, dict.fromkeys(self._conns, 0)
        self._seg_t = [2**63 - 1, 0]
        self._seg_t0 = self._clock()

    @staticmethod
    def _declare(seg: McapWriter, conn: Connection, types: set[str]) -> None:
        if conn.msgtype not in types:
            seg.add_msgtype(conn)
            types.add(conn.msgtype)
        seg.add_connection(conn, "[]")

    def _commit_segment(self) -> None:
        """Close the pending segment, move its MCAP file into the bag, rewrite metadata.yaml."""
        seg, self._seg = self._seg, None
        if seg is None:
            return
        count = sum(self._seg_counts.values())
        start = self._seg_t[0] if count else 0
        duration = max(0, self._seg_t[1] - self._seg_t[0]) if count else 0
        name = f"{self.path.name}_{self._seg_no}.mcap"
        self._seg_no += 1
        seg.close(9, f"segment {name}: {count} messages")
        (self._staging / f"{self._staging.name}.mcap").replace(self.path / name)
        self._files.append({"path": name, "starting_time": {"nanoseconds_since_epoch": start},
                            "duration": {"nanoseconds": duration}, "message_count": count})
        for t, n in self._seg_counts.items():
            self.committed[t] = self.committed.get(t, 0) + n
        self._in_files.update(self._seg_counts)
        self._write_metadata()
        if self.consolidate_n and len(self._files) - self._small_from >= self.consolidate_n:
            self._consolidate()

    def _consolidate(self) -> None:
        """Join the segments committed since the last chunk into one chunk file (see the class doc).
        Called between segments: the staging file is free."""
        small = self._files[self._small_from:]
        seg = McapWriter(self._staging, CompressionMode.NONE)
        types: set[str] = set()
        for c in self._conns.values():
            self._declare(seg, c, types)
        for f in small:
            reader = McapReader(self.path / f["path"])
            reader.open()
            try:
                for conn, t, raw in reader.messages(reader.connections):
                    seg.write(self._conns[conn.topic], t, raw)
            finally:
                reader.close()
        name = f"{self.path.name}_chunk_{self._chunks}.mcap"
        count = sum(f["message_count"] for f in small)
        seg.close(9, f"chunk {name}: {count} messages")
        (self._staging / f"{self._staging.name}.mcap").replace(self.path / name)
        self._chunks += 1
        self._files[self._small_from:] = [_span(small, name)]
        self._small_from = len(self._files)
        self._write_metadata()
        for f in small:
            (self.path / f["path"]).unlink(missing_ok=True)

    def _write_metadata(self, files: list[dict[str, Any]] | None = None) -> None:
        """metadata.yaml for ``files`` (default: the committed segments), atomically (temp + rename;
        no fsync: a killed process's writes survive in the page cache, a power cut is not covered)."""
        files = self._files if files is None else files
        timed = [f for f in files if f["message_count"]]
        start = min((f["starting_time"]["nanoseconds_since_epoch"] for f in timed), default=0)
        end = max((f["starting_time"]["nanoseconds_since_epoch"] + f["duration"]["nanoseconds"] for f in timed),
                  default=0)
        topics = [{"topic_metadata": {"name": t, "type": c.msgtype, "serialization_format": "cdr",
                                      "offered_qos_profiles": [], "type_description_hash": c.digest},
                   "message_count": self.committed.get(t, 0)} for t, c in self._conns.items()]
        info = {
            "version": 9,
            "storage_identifier": "mcap",
            "relative_file_paths": [f["path"] for f in files],
            "duration": {"nanoseconds": max(0, end - start)},
            "starting_time": {"nanoseconds_since_epoch": start},
            "message_count": sum(self.committed.values()),
            "topics_with_message_count": topics,
            "compression_format": "",
            "compression_mode": "",
            "files": files,
            "custom_data": None,
            "ros_distro": "rosbags",
        }
        tmp = self.path / "metadata.yaml.tmp"
        # JSON is YAML (1.2 flow style; rosbags and ros2 bag's yaml-cpp read it), and a hundred
        # times faster to write than PyYAML's block style: this file is rewritten every segment
        tmp.write_text(json.dumps({"rosbag2_bagfile_information": info}, indent=1), encoding="utf8")
        tmp.replace(self.path / "metadata.yaml")

    # --- API --------------------------------------------------------------------------------------
    def add(self, topic: str, msgtype: str) -> None:
        """Declare ``topic`` with ROS type name like ``sensor_msgs/msg/JointState``; KeyError from
        the typestore for an unknown type. A topic already declared is left as it is."""
        if topic in self._conns:
            return
        if msgtype not in self._defs:
            msgdef, _ = self.store.generate_msgdef(msgtype, ros_version=2)
            self._defs[msgtype] = (MessageDefinition(MessageDefinitionFormat.MSG, msgdef),
                                   self.store.hash_rihs01(msgtype))
        msgdef, digest = self._defs[msgtype]
        conn = Connection(id=len(self._conns) + 1, topic=topic, msgtype=msgtype, msgdef=msgdef, digest=digest,
                          msgcount=0, ext=ConnectionExtRosbag2(serialization_format="cdr", offered_qos_profiles=[]),
                          owner=self)
        self._conns[topic] = conn
        self.counts[topic] = 0
        if self._seg is not None:
            self._declare(self._seg, conn, {c.msgtype for c in self._conns.values() if c is not conn})
            self._seg_counts[topic] = 0

    def write(self, topic: str, stamp_ns: int, cdr: bytes) -> None:
        """Append one serialized message received at ``stamp_ns`` (ns since the epoch); commits the
        pending segment first when it is ``segment_s`` old. KeyError for an undeclared topic."""
        if self._closed:
            raise ValueError(f"{self.path}: write after close")
        conn = self._conns.get(topic)
        if conn is None:
            raise KeyError(f"{topic}: not declared with add()")
        self.flush_if_due()
        if self._seg is None:
            self._open_segment()
        t = int(stamp_ns)
        self._seg.write(conn, t, bytes(cdr))
        self._seg_t[0], self._seg_t[1] = min(self._seg_t[0], t), max(self._seg_t[1], t)
        self._seg_counts[topic] += 1
        self.counts[topic] += 1

    def flush_if_due(self) -> bool:
        """Commit the pending segment if it is ``segment_s`` old; True if one was committed."""
        if self._seg is not None and self._clock() - self._seg_t0 >= self.segment_s:
            self._commit_segment()
            return True
        return False

    def flush(self) -> None:
        """Commit the pending segment now (if any message is pending)."""
        self._commit_segment()

    def close(self, *, merge: bool = True) -> None:
        """Commit the pending segment, then (``merge``) join the segments into one MCAP file
        ``<bag name>.mcap``: the merged file is written under a hidden name, metadata.yaml is
        switched to it atomically, then the segments are deleted, so the bag is valid at every
        instant of the merge too. Idempotent."""
        if self._closed:
            return
        if self._seg is None and set(self._conns) - self._in_files:
            self._open_segment()  # topics that never got a message stay declared (as rosbag2 does)
        self._commit_segment()
        self._closed = True
        import shutil

        try:
            if merge and self._files:  # one segment too: a closed bag is always <name>.mcap, however fast it was written
                self._merge()
        finally:  # a merge that failed (a full disk) leaves the bag as its committed segments
            shutil.rmtree(self._staging, ignore_errors=True)

    def _merge(self) -> None:
        """Join the committed segments into ``<bag name>.mcap`` (see :meth:`close`)."""
        with Reader(self.path) as reader:
            seg = McapWriter(self._staging, CompressionMode.NONE)
            types: set[str] = set()
            by_id = {}
            for c in reader.connections:
                by_id[c.id] = self._conns[c.topic]
                self._declare(seg, by_id[c.id], types)
            for c in self._conns.values():  # topics without a message stay declared
                if c not in by_id.values():
                    self._declare(seg, c, types)
            for conn, t, raw in reader.messages():
                seg.write(by_id[conn.id], t, raw)
            seg.close(9, f"{self.path.name}: {sum(self.committed.values())} messages")
        name = f"{self.path.name}.mcap"
        (self._staging / f"{self._staging.name}.mcap").replace(self.path / name)
        merged = [_span(self._files, name)]
        self._write_metadata(merged)
        for f in self._files:
            (self.path / f["path"]).unlink(missing_ok=True)
        self._files = merged

    def __enter__(self) -> BagWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _span(files: list[dict[str, Any]], path: str) -> dict[str, Any]:
    """The rosbag2 metadata 'files' entry of one file ``path`` holding the messages of ``files``."""
    timed = [f for f in files if f["message_count"]]
    start = min((f["starting_time"]["nanoseconds_since_epoch"] for f in timed), default=0)
    end = max((f["starting_time"]["nanoseconds_since_epoch"] + f["duration"]["nanoseconds"] for f in timed), default=0)
    return {"path": path, "starting_time": {"nanoseconds_since_epoch": start},
            "duration": {"nanoseconds": max(0, end - start)}, "message_count": sum(f["message_count"] for f in files)}


def message_class(type_name: str) -> type:
    """``"sensor_msgs/msg/JointState"`` → the generated Python class (rosidl_runtime_py's
    get_message, which has no wheel). ValueError for a malformed name, ImportError if absent."""
    parts = type_name.split("/")
    if len(parts) != 3 or parts[1] not in ("msg", "srv"):
        raise ValueError(f"'{type_name}' is not a <package>/msg/<Type> name")
    import importlib

    return getattr(importlib.import_module(f"{parts[0]}.{parts[1]}"), parts[2])


def read_messages(path: str | os.PathLike, topics: list[str] | None = None) -> Iterator[tuple[str, int, Any]]:
    """Yield ``(topic, log_time_ns, message)`` in log-time order from a rosbag2, as rclpy messages.

    rosbags reads the container; rclpy deserializes the CDR (as ``ros2 bag play`` would): data
    recorded from rmw can end in alignment padding that rosbags' strict ``deserialize_cdr`` refuses
    ("CDR message size mismatch"), while rmw accepts it.
    """
    from rclpy.serialization import deserialize_message

    with Reader(pathlib.Path(path)) as reader:
        conns = [c for c in reader.connections if topics is None or c.topic in topics]
        classes = {c.msgtype: message_class(c.msgtype) for c in conns}
        for conn, t, raw in reader.messages(connections=conns):
            yield conn.topic, t, deserialize_message(bytes(raw), classes[conn.msgtype])


def topic_counts(path: str | os.PathLike) -> dict[str, tuple[str, int]]:
    """{topic: (type, message count)} from a rosbag2's metadata."""
    with Reader(pathlib.Path(path)) as reader:
        return {c.topic: (c.msgtype, c.msgcount) for c in reader.connections}
