"""`indgen bag info`: what a bag holds: its files, every topic with its type, message count
and rate, and the campaigns and trials recorded in it."""

from __future__ import annotations

from collections import Counter

from indgen_core.bags.reader import BagReader
from indgen_core.bags.trials import Recording
from indgen_core.errors import require
from indgen_core.records import Outcome


def topic_table(bag_readers: list[BagReader]) -> tuple[list[dict], dict]:
    """Per topic: type, count, rate over its own first..last message; and the bag's span."""
    reader_mod = require("mcap.reader", "all", "reading bags")
    seen: dict[str, dict] = {}
    first = last = None
    size = 0

    def note(topic: str, msgtype: str, count: int, t0: int, t1: int, meta: dict) -> None:
        nonlocal first, last
        row = seen.setdefault(
            topic,
            {
                "topic": topic,
                "type": msgtype,
                "count": 0,
                "first": t0,
                "last": t1,
                "type_hash": meta.get("topic_type_hash", ""),
            },
        )
        row["count"] += count
        row["first"], row["last"] = min(row["first"], t0), max(row["last"], t1)
        first = t0 if first is None else min(first, t0)
        last = t1 if last is None else max(last, t1)

    for bag in bag_readers:
        for path in bag.files:
            size += path.stat().st_size
            summary = None
            if BagReader.complete(path):
                with path.open("rb") as fh:
                    summary = reader_mod.make_reader(fh).get_summary()
            if summary is not None and summary.statistics is not None:
                # a closed file: counts from its statistics, times from its chunk indexes
                spans: dict[int, list[int]] = {}
                for chunk in summary.chunk_indexes:
                    for cid in chunk.message_index_offsets:
                        s = spans.setdefault(cid, [chunk.message_start_time, chunk.message_end_time])
                        s[0], s[1] = min(s[0], chunk.message_start_time), max(s[1], chunk.message_end_time)
                for cid, channel in summary.channels.items():
                    count = summary.statistics.channel_message_counts.get(cid, 0)
                    if count:
                        t0, t1 = spans.get(cid, [summary.statistics.message_start_time] * 2)
                        note(
                            channel.topic,
                            summary.schemas[channel.schema_id].name,
                            count,
                            t0,
                            t1,
                            dict(channel.metadata),
                        )
                continue
            for record in BagReader(path).records():  # a cut file: read to its last complete record
                note(record.topic, record.msgtype, 1, record.log_time, record.log_time, dict(record.channel.metadata))
    rows = sorted(seen.values(), key=lambda r: r["topic"])
    for r in rows:
        span = (r["last"] - r["first"]) / 1e9
        r["rate_hz"] = (r["count"] - 1) / span if r["count"] > 1 and span > 0 else None
    return rows, {
        "start_ns": first or 0,
        "end_ns": last or 0,
        "bytes": size,
        "duration_s": ((last or 0) - (first or 0)) / 1e9,
    }


def campaign_table(recording: Recording) -> list[dict]:
    rows = []
    for campaign in recording.campaigns():
        attempts = [a for a in recording.attempts if a.campaign_id == campaign]
        outcomes = Counter(Outcome(a.result.outcome).word for a in attempts if a.result is not None)
        head = attempts[0]
        rows.append(
            {
                "campaign": campaign,
                "world": head.world,
                "axis": head.axis,
                "policy": ",".join(sorted({a.policy for a in attempts})),
                "levels": sorted({a.level for a in attempts}),
                "trials": len({a.trial_id for a in attempts}),
                "attempts": len(attempts),
                "outcomes": dict(outcomes),
                "unfinished": sum(a.result is None for a in attempts),
                "final_states": sum(a.final is not None for a in attempts),
            }
        )
    return rows
