"""Writing rosbag2 bags (metadata version 9, MCAP storage, zstd chunk compression) from raw CDR
bytes, without rosbag2: rosbags' writer, with what rosbag2 Jazzy adds and rosbags does not.

- Types: ROS 2 Jazzy's from rosbags' store; indgen_msgs' from their installed .msg files (the
  store needs the definition text to write a message's schema and its RIHS01 type hash).
- Each MCAP channel also gets rosbag2 Jazzy's `topic_type_hash` metadata, so tools that read
  topic info from the .mcap alone see the hash.
- A chunk is closed and flushed to disk at least every `flush_s` seconds, so a recorder killed
  with SIGKILL loses at most that much; such a bag is read up to its last complete chunk.
- A bag grows to `split_bytes`, then the next one starts (`<name>_1`, `<name>_2`, ...).
"""

from __future__ import annotations

import os
import threading
import time
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, cast

from indgen_core.errors import IndGenError, require

if TYPE_CHECKING:
    from rosbags.interfaces import Connection
    from rosbags.rosbag2 import Writer
    from rosbags.rosbag2.storage_mcap import McapWriter


class UnknownType(IndGenError):
    pass


def msg_folder() -> Path | None:
    """Where indgen_msgs' .msg files are installed (the venv, or a colcon/ROS prefix)."""
    import sys

    for prefix in (sys.prefix, *os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        folder = Path(prefix) / "share" / "indgen_msgs" / "msg"
        if folder.is_dir():
            return folder
    source = Path(__file__).resolve().parents[2] / "indgen_msgs" / "msg"
    return source if source.is_dir() else None


def typestore():
    """Jazzy's types plus indgen_msgs'."""
    typesys = require("rosbags.typesys", "all", "recording bags")
    store = typesys.get_typestore(typesys.Stores.ROS2_JAZZY)
    folder = msg_folder()
    if folder is not None:
        types = {}
        for path in sorted(folder.glob("*.msg")):
            types.update(typesys.get_types_from_msg(path.read_text(), f"indgen_msgs/msg/{path.stem}"))
        store.register(types)
    return store


def qos_of(profile) -> object:
    """An rclpy QoSProfile (what a publisher offered) as rosbags' Qos; the enum values are
    rmw's on both sides."""
    from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

    def span(duration) -> QosTime:
        ns = int(getattr(duration, "nanoseconds", 0))
        return QosTime(ns // 1_000_000_000, ns % 1_000_000_000)

    return Qos(
        QosHistory(int(profile.history)),
        int(profile.depth),
        QosReliability(int(profile.reliability)),
        QosDurability(int(profile.durability)),
        span(profile.deadline),
        span(profile.lifespan),
        QosLiveliness(int(profile.liveliness)),
        span(profile.liveliness_lease_duration),
        bool(profile.avoid_ros_namespace_conventions),
    )


class BagWriter:
    def __init__(self, path: Path, split_bytes: int = 2**30, flush_s: float = 2.0):
        self.base = Path(path)
        self.split_bytes = split_bytes
        self.flush_s = flush_s
        self.store = typestore()
        self.paths: list[Path] = []
        self.connections: dict[tuple[str, str], Connection] = {}
        self._offered: dict[tuple[str, str], list] = {}
        self._writer: Writer | None = None
        self._last_flush = time.monotonic()
        self.messages = 0
        # a node's close() runs on its main thread while its executor may still be delivering
        # a message: a write racing the close would land after the summary was counted (a bag
        # whose metadata disagrees with its messages) or in a closed file
        self._lock = threading.RLock()
        self._open()

    def _open(self) -> None:
        rosbag2 = require("rosbags.rosbag2", "all", "recording bags")
        path = self.base if not self.paths else self.base.with_name(f"{self.base.name}_{len(self.paths)}")
        path.parent.mkdir(parents=True, exist_ok=True)
        writer = rosbag2.Writer(path, version=9, storage_plugin=rosbag2.StoragePlugin.MCAP)
        writer.set_compression(rosbag2.CompressionMode.STORAGE, rosbag2.CompressionFormat.ZSTD)
        writer.open()
        _with_type_hashes(writer)
        self._writer, self.connections = writer, {}
        self.paths.append(path)
        for (topic, msgtype), qos in self._offered.items():
            self._connect(topic, msgtype, qos)
        self.flush()  # the header on disk at once: a recorder killed now leaves an MCAP file

    def _open_writer(self) -> Writer:
        """The current bag's writer; only asked for while the bag is open."""
        assert self._writer is not None, "the bag is closed"
        return self._writer

    def _storage(self) -> McapWriter:
        """The current bag's MCAP storage (the writer is always opened with the MCAP plugin)."""
        return cast("McapWriter", self._open_writer().storage)

    def knows(self, msgtype: str) -> bool:
        return msgtype in self.store.fielddefs

    def _connect(self, topic: str, msgtype: str, qos: list) -> Connection:
        conn = self._open_writer().add_connection(topic, msgtype, typestore=self.store, offered_qos_profiles=qos)
        self.connections[(topic, msgtype)] = conn
        return conn

    def add_topic(self, topic: str, msgtype: str, qos: list | None = None) -> None:
        """Record `topic`; UnknownType when the type's definition is not known."""
        with self._lock:
            self._add_topic(topic, msgtype, qos)

    def _add_topic(self, topic: str, msgtype: str, qos: list | None) -> None:
        if self._writer is None:
            return
        if (topic, msgtype) in self.connections:
            return
        if not self.knows(msgtype):
            raise UnknownType(f"no definition of {msgtype} (topic {topic}); it is not recorded")
        self._offered[(topic, msgtype)] = list(qos or [])
        self._connect(topic, msgtype, list(qos or []))

    def write(self, topic: str, msgtype: str, t_ns: int, data: bytes) -> bool:
        """Append one message; False once the bag is closed (a message that came during shutdown)."""
        with self._lock:
            if self._writer is None:
                return False
            self._write(topic, msgtype, t_ns, data)
            return True

    def _write(self, topic: str, msgtype: str, t_ns: int, data: bytes) -> None:
        conn = self.connections[(topic, msgtype)]
        writer = self._open_writer()
        writer.write(conn, t_ns, data)
        self.messages += 1
        if self.size() > self.split_bytes:
            writer.close()
            self._open()
        elif time.monotonic() - self._last_flush > self.flush_s:
            self.flush()

    def size(self) -> int:
        storage = self._storage()
        return storage.bio.tell() + storage.chunk.bio.tell()

    def flush(self) -> None:
        """Close the pending chunk and put it on disk (a SIGKILL after this loses nothing before)."""
        with self._lock:
            if self._writer is not None:
                self._flush()

    def _flush(self) -> None:
        storage = self._storage()
        if storage.chunk.bio.tell():
            storage.close_chunk()
        storage.bio.flush()
        os.fsync(storage.bio.fileno())
        self._last_flush = time.monotonic()

    def close(self) -> None:
        with self._lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None


def _with_type_hashes(writer) -> None:
    """rosbag2 Jazzy writes `topic_type_hash` into every MCAP channel's metadata; rosbags does
    not. Add it when a connection is created (rosbags' own channel record, one key more)."""
    from rosbags.rosbag2 import storage_mcap as sm

    storage = writer.storage

    def add_connection(connection, offered_qos_profiles: str) -> None:
        metadata = BytesIO()
        sm.write_string(metadata, "offered_qos_profiles")
        sm.write_string(metadata, offered_qos_profiles)
        sm.write_string(metadata, "topic_type_hash")
        sm.write_string(metadata, connection.digest)
        storage.channels.append(
            sm.Channel(
                connection.id,
                connection.msgtype,
                connection.topic,
                connection.ext.serialization_format,
                metadata.getvalue(),
            )
        )
        storage.channel_stats[connection.id] = 0
        sm.write_channel(storage.chunk.bio, storage.channels[-1], storage.schemas)

    storage.add_connection = add_connection
