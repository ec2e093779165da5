"""rosbag2 files (MCAP) through the ``rosbags`` library: no rosbag2_py or ROS CLI needed.

Bags written here open with stock ``ros2 bag info/play`` (rosbag2 metadata version 9, Jazzy) and
with ``mcap`` readers: each connection carries its message definition, including our hand_msgs
types, which are registered from the installed ``share/hand_msgs/msg/*.msg`` files.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator
from typing import Any

from rosbags.rosbag2 import Reader, StoragePlugin, Writer
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
    """Write serialized (CDR) messages to a new MCAP rosbag2 directory.

    Usage: ``w = BagWriter(path); w.add(topic, "sensor_msgs/msg/JointState"); w.write(topic, t_ns, cdr)``;
    ``close()`` finalises the metadata (also via ``with``). Raises FileExistsError if path exists.
    """

    def __init__(self, path: str | os.PathLike, store: Typestore | None = None):
        self.store = store or typestore()
        self._writer = Writer(pathlib.Path(path), version=9, storage_plugin=StoragePlugin.MCAP)
        self._writer.open()
        self._conns: dict[str, Any] = {}
        self.counts: dict[str, int] = {}

    def add(self, topic: str, msgtype: str) -> None:
        """Declare ``topic`` with ROS type name like ``sensor_msgs/msg/JointState``."""
        self._conns[topic] = self._writer.add_connection(topic, msgtype, typestore=self.store)
        self.counts[topic] = 0

    def write(self, topic: str, stamp_ns: int, cdr: bytes) -> None:
        """Append one serialized message received at ``stamp_ns`` (ns since the epoch)."""
        self._writer.write(self._conns[topic], int(stamp_ns), bytes(cdr))
        self.counts[topic] += 1

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> BagWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
