"""A recorded campaign, trial by trial: what `indgen bag` reads out of a bag.

One pass over the graph's own topics (task setups, the worlds' final states, results,
operator answers) pairs every attempt at a trial with what the world recorded at its end
and the result the progression manager signed. Messages are decoded with the installed
indgen_msgs (convert.deserialize), so a signature can be checked against the campaign key
when the results store that holds it is at hand.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from indgen_core import topics
from indgen_core.bags.reader import BagError, BagReader, Record

FINAL_STATE, POLICY_EXCHANGE, OPERATOR_ANSWER = topics.FINAL_STATE, topics.POLICY_EXCHANGE, topics.OPERATOR_ANSWER

TRIAL_TOPICS = {topics.TASK_SETUP, FINAL_STATE, topics.EPISODE_RESULT, OPERATOR_ANSWER}


@dataclass
class Attempt:
    """One attempt at a trial: its setup, the world's final state, the result and labels."""

    campaign_id: str
    trial_id: str
    level: int
    axis: str
    world: str
    policy: str
    setup_msg: Any
    start_ns: int
    final: Any = None
    result: Any = None
    end_ns: int | None = None
    signed: bool | None = None  # None: no key to check with
    relabels: list = field(default_factory=list)
    answers: list = field(default_factory=list)

    @property
    def stamp(self) -> tuple[int, int]:
        return (self.setup_msg.header.stamp.sec, self.setup_msg.header.stamp.nanosec)


@dataclass
class Recording:
    """What a bag (or several, split or concatenated) holds, in the order it was recorded."""

    bags: list[Path]
    attempts: list[Attempt]
    truncated: list[str]

    def campaigns(self) -> list[str]:
        return list(dict.fromkeys(a.campaign_id for a in self.attempts))

    def only(self, campaign: str | None) -> Recording:
        """Just one campaign's attempts; a BagError naming what the bag does hold otherwise."""
        if not campaign:
            return self
        held = self.campaigns()
        if campaign not in held:
            names = ", ".join(held) if held else "no campaign"
            raise BagError(f"{_names(self.bags)} holds {names}, not campaign {campaign}")
        return Recording(self.bags, [a for a in self.attempts if a.campaign_id == campaign], self.truncated)

    def trial(self, trial_id: str) -> list[Attempt]:
        found = [a for a in self.attempts if a.trial_id == trial_id]
        if not found:
            raise BagError(f"{_names(self.bags)} has no trial {trial_id}")
        return found


def _names(bags: list[Path]) -> str:
    return ", ".join(str(b) for b in bags)


def readers(bags: Iterable[str | Path]) -> list[BagReader]:
    return [BagReader(b) for b in bags]


def records(bags: list[BagReader], wanted: set[str] | None = None) -> Iterator[Record]:
    for bag in bags:
        yield from bag.records(wanted)


def deserialize(record: Record):
    """The message as the installed indgen_msgs define it; a type this machine does not have
    (another package, a renamed type on a graph topic) is a BagError."""
    from indgen_core.nodes import convert

    try:
        return convert.deserialize(record.data, record.msgtype)
    except LookupError as exc:
        raise BagError(f"{record.topic} holds {exc}") from None
    except Exception as exc:  # bytes that are not a message of that type
        raise BagError(f"a {record.msgtype} message on {record.topic} does not decode ({exc})") from None


def read(bags: Iterable[str | Path], keys=None) -> Recording:
    """Every attempt in the bags. `keys(campaign_id)` gives a campaign's signing key (or None),
    so results are checked; without it no signature is checked."""
    from indgen_core.nodes import convert

    bag_readers = readers(bags)
    attempts: list[Attempt] = []
    by_stamp: dict[tuple, Attempt] = {}
    latest: dict[tuple[str, str], Attempt] = {}
    key_cache: dict[str, Any] = {}

    def key_of(campaign: str):
        if keys is None:
            return None
        if campaign not in key_cache:
            key_cache[campaign] = keys(campaign)
        return key_cache[campaign]

    for record in records(bag_readers, TRIAL_TOPICS):
        msg = deserialize(record)
        if record.topic == topics.TASK_SETUP:
            stamp = (msg.campaign_id, msg.trial_id, msg.header.stamp.sec, msg.header.stamp.nanosec)
            if stamp in by_stamp:  # the latched setup seen again by a restarted recorder
                continue
            attempt = Attempt(msg.campaign_id, msg.trial_id, msg.level, msg.axis, msg.world, msg.policy, msg,
                              record.log_time)
            attempts.append(attempt)
            by_stamp[stamp] = latest[(msg.campaign_id, msg.trial_id)] = attempt
        elif record.topic == FINAL_STATE:
            # the episode goal is stamped when it is sent, after the attempt's task setup
            attempt = latest.get((msg.campaign_id, msg.trial_id))
            if attempt is not None and attempt.stamp <= (msg.setup_stamp.sec, msg.setup_stamp.nanosec):
                attempt.final = msg
        elif record.topic == topics.EPISODE_RESULT:
            attempt = latest.get((msg.campaign_id, msg.trial_id))
            if attempt is None:
                continue  # its setup was before the recording started
            key = key_of(msg.campaign_id)
            signed = None if key is None else convert.signed_by(msg, key)
            if signed is False:
                continue  # not the progression manager's: never counted
            if msg.relabel:
                attempt.relabels.append(msg)
            elif attempt.result is None:
                attempt.result, attempt.end_ns, attempt.signed = msg, record.log_time, signed
        elif record.topic == OPERATOR_ANSWER:
            attempt = latest.get((msg.campaign_id, msg.trial_id))
            if attempt is not None:
                attempt.answers.append(msg)
    truncated = [f"{b.bag}/{name}" for b in bag_readers for name in b.truncated]
    return Recording([b.bag for b in bag_readers], attempts, truncated)


def setup_of(attempt: Attempt):
    from indgen_core.nodes import convert

    return convert.setup_from_msg(attempt.setup_msg)


def state_of(final) -> dict:
    try:
        state = json.loads(final.state_json) if final.state_json else {}
    except json.JSONDecodeError:
        raise BagError(f"the final state of {final.trial_id} is not JSON") from None
    if not isinstance(state, dict):
        raise BagError(f"the final state of {final.trial_id} is not a JSON object")
    return state
