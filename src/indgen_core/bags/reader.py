"""Reading a rosbag2 MCAP bag, whole or cut short.

A bag is a folder with metadata.yaml and one .mcap file (or several, split by size). The
reader goes through each .mcap sequentially with the `mcap` library and decodes messages from
the message definitions stored in the file (decode.py), so it needs neither ROS nor the
project's own types. A file whose writer was killed has no summary at its end (and the
bag no metadata.yaml): it is read up to its last complete record, and `truncated` says so;
`indgen bag repair` rewrites it as a complete bag.

Every problem is one BagError sentence: a folder that is not a bag, a missing metadata.yaml,
a file that is not MCAP, a message type without a definition.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from indgen_core.bags.decode import BagDecoder
from indgen_core.errors import IndGenError, require


class BagError(IndGenError):
    pass


@dataclass(frozen=True)
class Record:
    topic: str
    msgtype: str
    log_time: int  # ns, when the recorder received it
    data: bytes  # the message's CDR bytes
    schema: Any
    channel: Any
    decoder: BagDecoder

    def decode(self):
        """The message, from the definition its bag stores; a BagError when it has none usable
        or the bytes are not a message of that type."""
        if self.schema is None or self.schema.encoding != "ros2msg":
            kind = self.schema.encoding if self.schema is not None else "no"
            raise BagError(
                f"{self.topic} has {kind} schema for {self.msgtype or 'its messages'}, not a ros2msg definition"
            )
        try:
            self.decoder.learn(self.msgtype, self.schema.data.decode())
        except Exception as exc:
            raise BagError(f"{self.topic}: no usable definition of {self.msgtype} ({exc})") from None
        try:
            return self.decoder.decode(self.data, self.msgtype)
        except Exception as exc:  # bytes that are not a message of that type
            raise BagError(f"a {self.msgtype} message on {self.topic} does not decode ({exc})") from None


def mcap_files(bag: Path, allow_missing_metadata: bool = False) -> list[Path]:
    bag = Path(bag)
    if not bag.exists():
        raise BagError(f"{bag}: does not exist")
    if bag.is_file():
        if bag.suffix != ".mcap":
            raise BagError(f"{bag}: not a rosbag2 bag (a folder with metadata.yaml and .mcap files)")
        return [bag]
    files = sorted(bag.glob("*.mcap"))
    meta = bag / "metadata.yaml"
    if not files:
        raise BagError(f"{bag}: not a rosbag2 bag (no .mcap file in it)")
    # a recorder killed mid-file leaves no metadata.yaml and a cut .mcap: that reads, up to its
    # last complete chunk; closed files without metadata.yaml are a broken copy
    if not meta.is_file() and (not allow_missing_metadata or all(BagReader.complete(f) for f in files)):
        raise BagError(f"{bag}: no metadata.yaml; if its recorder was killed, `indgen bag repair {bag}` rebuilds it")
    if meta.is_file():
        try:
            info = yaml.safe_load(meta.read_text()) or {}
            listed = info["rosbag2_bagfile_information"]["relative_file_paths"]
        except (yaml.YAMLError, KeyError, TypeError):
            raise BagError(f"{meta}: not a rosbag2 metadata.yaml") from None
        named = [bag / p for p in listed]
        missing = [p.name for p in named if not p.is_file()]
        if missing:
            raise BagError(f"{bag}: metadata.yaml lists {', '.join(missing)}, which is not there")
        return named
    return files


class BagReader:
    """Every message of a bag in order of its files, decodable on request."""

    MAGIC = b"\x89MCAP0\r\n"

    def __init__(self, bag: str | Path, allow_truncated: bool = True, decoder: BagDecoder | None = None):
        self.bag = Path(bag)
        self.files = mcap_files(self.bag, allow_missing_metadata=allow_truncated)
        self.truncated: list[str] = []
        self.decoder = decoder or BagDecoder()
        for path in list(self.files):
            with path.open("rb") as fh:
                head = fh.read(8)
            if head != self.MAGIC:
                if len(head) < 8 and self.MAGIC.startswith(head):  # killed before its first flush
                    self.files.remove(path)
                    self.truncated.append(path.name)
                    continue
                raise BagError(f"{path}: not an MCAP file")

    def records(self, topics: set[str] | None = None) -> Iterator[Record]:
        reader_mod = require("mcap.reader", "all", "reading bags")
        for path in self.files:
            with path.open("rb") as fh:
                # a closed file has a summary to seek with; a cut one is read record by record
                reader = reader_mod.make_reader(fh) if self.complete(path) else reader_mod.NonSeekingReader(fh)
                try:
                    # in file order: sorting by time would read a cut file to its (missing) end first
                    for schema, channel, message in reader.iter_messages(
                        topics=list(topics) if topics else None, log_time_order=False
                    ):
                        yield Record(
                            channel.topic,
                            schema.name if schema else "",
                            message.log_time,
                            bytes(message.data),
                            schema,
                            channel,
                            self.decoder,
                        )
                except Exception as exc:
                    if self.complete(path):  # a whole file that does not read: corrupt
                        raise BagError(f"{path}: corrupt MCAP ({exc})") from None
                    # the file ends inside a record (its writer was killed): what came before counts
                if not self.complete(path) and path.name not in self.truncated:
                    self.truncated.append(path.name)

    @classmethod
    def complete(cls, path: Path) -> bool:
        """Whether an .mcap file ends as a closed one does (its closing magic bytes)."""
        with Path(path).open("rb") as fh:
            fh.seek(0, io.SEEK_END)
            if fh.tell() < 16:
                return False
            fh.seek(-8, io.SEEK_END)
            return fh.read(8) == cls.MAGIC
