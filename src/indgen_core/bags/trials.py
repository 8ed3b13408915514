"""A recorded campaign, trial by trial: what `indgen bag` reads out of a bag.

One pass over the graph's own topics (task setups, the worlds' final states, results,
operator answers) pairs every attempt at a trial with what the world recorded at its end
and the result the progression manager signed. Messages are decoded from the definitions the
bag stores (decode.py: no ROS needed), and a signature is checked against the campaign key
when the results store that holds it is at hand.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from indgen_core import topics
from indgen_core.bags.decode import BagDecoder
from indgen_core.bags.reader import BagError, BagReader, Record
from indgen_core.nodes import messages

FINAL_STATE, POLICY_EXCHANGE, OPERATOR_ANSWER = topics.FINAL_STATE, topics.POLICY_EXCHANGE, topics.OPERATOR_ANSWER

#: the graph's own topics and the types IndGen records on them
TRIAL_TOPICS = {
    topics.TASK_SETUP: "indgen_msgs/msg/TaskSetup",
    FINAL_STATE: "indgen_msgs/msg/WorldFinalState",
    topics.EPISODE_RESULT: "indgen_msgs/msg/EpisodeResult",
    OPERATOR_ANSWER: "indgen_msgs/msg/OperatorAnswer",
}


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
    #: trials with a result whose signature did not check (forged or altered): never counted
    unsigned: list[str] = field(default_factory=list)

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
        return Recording(
            self.bags, [a for a in self.attempts if a.campaign_id == campaign], self.truncated, self.unsigned
        )

    def trial(self, trial_id: str) -> list[Attempt]:
        found = [a for a in self.attempts if a.trial_id == trial_id]
        if not found:
            raise BagError(f"{_names(self.bags)} has no trial {trial_id}")
        return found


def _names(bags: list[Path]) -> str:
    return ", ".join(str(b) for b in bags)


def readers(bags: Iterable[str | Path]) -> list[BagReader]:
    """Readers that share one decoder (bags split from one recording define the same types)."""
    decoder = BagDecoder()
    return [BagReader(b, decoder=decoder) for b in bags]


def records(bags: list[BagReader], wanted: set[str] | None = None) -> Iterator[Record]:
    for bag in bags:
        yield from bag.records(wanted)


def deserialize(record: Record):
    """The message, decoded with the definition its bag stores (a BagError when it has none)."""
    return record.decode()


def _graph_message(record: Record):
    """A message on one of the graph's own topics: of the type IndGen records there, or a
    BagError (another package's type on a graph topic would be read field by field as ours)."""
    expected = TRIAL_TOPICS[record.topic]
    if record.msgtype != expected:
        raise BagError(f"{record.topic} holds {record.msgtype or 'untyped'} messages, not IndGen's {expected}")
    return record.decode()


def read(bags: Iterable[str | Path], keys=None) -> Recording:
    """Every attempt in the bags. `keys(campaign_id)` gives a campaign's signing key (or None),
    so results are checked; without it no signature is checked."""

    bag_readers = readers(bags)
    attempts: list[Attempt] = []
    by_stamp: dict[tuple, Attempt] = {}
    latest: dict[tuple[str, str], Attempt] = {}
    unsigned: list[str] = []
    key_cache: dict[str, Any] = {}

    def key_of(campaign: str):
        if keys is None:
            return None
        if campaign not in key_cache:
            key_cache[campaign] = keys(campaign)
        return key_cache[campaign]

    attempt: Attempt | None
    for record in records(bag_readers, set(TRIAL_TOPICS)):
        msg = _graph_message(record)
        if record.topic == topics.TASK_SETUP:
            stamp = (msg.campaign_id, msg.trial_id, msg.header.stamp.sec, msg.header.stamp.nanosec)
            if stamp in by_stamp:  # the latched setup seen again by a restarted recorder
                continue
            attempt = Attempt(
                msg.campaign_id, msg.trial_id, msg.level, msg.axis, msg.world, msg.policy, msg, record.log_time
            )
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
            signed = None if key is None else messages.signed_by(msg, key, kinds=record.decoder.kinds)
            if signed is False:
                unsigned.append(msg.trial_id)
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
    return Recording([b.bag for b in bag_readers], attempts, truncated, unsigned)


def setup_of(attempt: Attempt):
    """The attempt's task setup as a record; a BagError when its fields are not valid."""
    try:
        return messages.setup_from_msg(attempt.setup_msg)
    except (messages.MalformedMessage, AttributeError, TypeError) as exc:
        raise BagError(f"the recorded task setup of {attempt.trial_id} is not valid ({exc})") from None


def state_of(final) -> dict:
    try:
        state = json.loads(final.state_json) if final.state_json else {}
    except json.JSONDecodeError:
        raise BagError(f"the final state of {final.trial_id} is not JSON") from None
    if not isinstance(state, dict):
        raise BagError(f"the final state of {final.trial_id} is not a JSON object")
    return state
