"""`indgen bag repair`: close a bag whose recorder was killed.

Such a bag has .mcap files that stop inside a record, without their summary, and no
metadata.yaml. Every complete record of a cut file is copied, as it is, into a new closed
MCAP file (same schemas, channels with their QoS and type hash, zstd chunks); the cut file
is kept beside it as <name>.mcap.cut, so nothing is lost. Then metadata.yaml (version 9, the
keys rosbag2 writes) is written from what the files hold.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from indgen_core.bags.reader import BagError, BagReader, mcap_files
from indgen_core.errors import require


def repair(bag: str | Path) -> dict:
    bag = Path(bag)
    files = mcap_files(bag, allow_missing_metadata=True)
    if bag.is_file():
        raise BagError(f"{bag}: repair works on a bag folder (the folder that holds the .mcap files)")
    fixed = []
    for path in files:
        if not BagReader.complete(path):
            _rewrite(path)
            fixed.append(path.name)
    had_metadata = (bag / "metadata.yaml").is_file()
    stats = _statistics(files)
    if fixed or not had_metadata:
        (bag / "metadata.yaml").write_text(yaml.safe_dump(_metadata(files, stats), sort_keys=True))
    return {
        "bag": str(bag),
        "closed_files": fixed,
        "wrote_metadata": bool(fixed or not had_metadata),
        "messages": sum(s["count"] for s in stats["topics"].values()),
        "topics": len(stats["topics"]),
    }


def _rewrite(path: Path) -> None:
    reader_mod = require("mcap.reader", "all", "repairing bags")
    writer_mod = require("mcap.writer", "all", "repairing bags")
    cut = path.with_name(path.name + ".cut")
    path.rename(cut)
    schemas: dict[int, int] = {}
    channels: dict[int, int] = {}
    with cut.open("rb") as src, path.open("wb") as dst:
        writer = writer_mod.Writer(dst, compression=writer_mod.CompressionType.ZSTD)
        writer.start(profile="ros2", library="indgen bag repair")
        try:
            for schema, channel, message in reader_mod.NonSeekingReader(src).iter_messages(log_time_order=False):
                if schema is not None and schema.id not in schemas:
                    schemas[schema.id] = writer.register_schema(schema.name, schema.encoding, schema.data)
                if channel.id not in channels:
                    channels[channel.id] = writer.register_channel(
                        channel.topic,
                        channel.message_encoding,
                        schemas.get(channel.schema_id, 0),
                        dict(channel.metadata),
                    )
                writer.add_message(
                    channels[channel.id], message.log_time, message.data, message.publish_time, message.sequence
                )
        except Exception:  # the cut: everything before it is in
            pass
        writer.finish()


def _statistics(files: list[Path]) -> dict:
    topics: dict[str, dict] = {}
    per_file = []
    for path in files:
        reader = BagReader(path)
        first = last = None
        count = 0
        for record in reader.records():
            entry = topics.setdefault(
                record.topic, {"type": record.msgtype, "count": 0, "metadata": dict(record.channel.metadata)}
            )
            entry["count"] += 1
            count += 1
            first = record.log_time if first is None else min(first, record.log_time)
            last = record.log_time if last is None else max(last, record.log_time)
        per_file.append({"path": path.name, "first": first or 0, "last": last or 0, "count": count})
    return {"topics": topics, "files": per_file}


def _metadata(files: list[Path], stats: dict) -> dict:
    first = min((f["first"] for f in stats["files"] if f["count"]), default=0)
    last = max((f["last"] for f in stats["files"] if f["count"]), default=0)
    topics = []
    for name, t in stats["topics"].items():
        qos = yaml.safe_load(t["metadata"].get("offered_qos_profiles", "") or "[]") or []
        topics.append(
            {
                "message_count": t["count"],
                "topic_metadata": {
                    "name": name,
                    "type": t["type"],
                    "serialization_format": "cdr",
                    "offered_qos_profiles": qos,
                    "type_description_hash": t["metadata"].get("topic_type_hash", ""),
                },
            }
        )
    return {
        "rosbag2_bagfile_information": {
            "version": 9,
            "storage_identifier": "mcap",
            "ros_distro": "rosbags",
            "custom_data": None,
            "compression_format": "",
            "compression_mode": "",
            "relative_file_paths": [p.name for p in files],
            "duration": {"nanoseconds": last - first},
            "starting_time": {"nanoseconds_since_epoch": first},
            "message_count": sum(t["count"] for t in stats["topics"].values()),
            "topics_with_message_count": topics,
            "files": [
                {
                    "path": f["path"],
                    "starting_time": {"nanoseconds_since_epoch": f["first"]},
                    "duration": {"nanoseconds": f["last"] - f["first"]},
                    "message_count": f["count"],
                }
                for f in stats["files"]
            ],
        }
    }
