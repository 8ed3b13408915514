"""`indgen bag latency`: the control loop's timing as recorded, per trial and overall.

All times are the recorder's receive times (log time), so every interval is measured on one
clock, and includes the same delivery delay at both ends:
- tick period: between consecutive control ticks of a trial (the real robot's runner ticks
  at 15 Hz on the wall clock; in lock-step simulation a tick waits for the policy, so the
  period is the loop's own speed);
- missed ticks: ticks that no command answered (the world held);
- observation to command: from a tick to the first command that echoes it;
- policy round trip and server inference: from the policy node's recorded exchanges.
BlockEnv has no control tick: its observation and the action that names the same step
stand in for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from indgen_core import topics
from indgen_core.bags.trials import POLICY_EXCHANGE, deserialize, records

#: topics whose messages answer a control tick, by the tick's sequence (layout.data_offset)
SEQUENCED_COMMANDS = {topics.ARM_VELOCITY_COMMAND, topics.LIBERO_OSC_COMMAND, topics.ROBOCASA_COMMAND}
WANTED = {
    topics.CONTROL_TICK,
    topics.BLOCKENV_OBSERVATION,
    topics.BLOCKENV_ACTION,
    POLICY_EXCHANGE,
    *SEQUENCED_COMMANDS,
}


@dataclass
class TrialTiming:
    trial_id: str
    tick_ns: list[int] = field(default_factory=list)
    answered: list[bool] = field(default_factory=list)
    obs_to_command_ms: list[float] = field(default_factory=list)
    round_trip_ms: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)

    def figures(self) -> dict:
        period = np.diff(np.array(self.tick_ns, dtype=np.int64)) / 1e6 if len(self.tick_ns) > 1 else np.array([])
        return {
            "trial": self.trial_id,
            "ticks": len(self.tick_ns),
            "missed": int(sum(not a for a in self.answered)),
            **_percentiles("period_ms", period),
            **_percentiles("obs_to_command_ms", self.obs_to_command_ms),
            **_percentiles("round_trip_ms", self.round_trip_ms),
            **_percentiles("server_ms", self.server_ms),
            "requests": len(self.round_trip_ms),
        }


def _percentiles(name: str, values) -> dict:
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return {f"{name}_p50": None, f"{name}_p99": None}
    return {f"{name}_p50": float(np.percentile(values, 50)), f"{name}_p99": float(np.percentile(values, 99))}


def measure(bag_readers, trials: set[str] | None = None) -> tuple[list[dict], dict]:
    """Per-trial figures and the figures over all trials. A command is matched to its tick by
    the tick's sequence (or BlockEnv's trial and step), not by the order the recorder took
    them in: a tick and its command come on two topics, and on a busy machine the command can
    be taken first (its delay then counts as 0)."""
    timings: dict[str, TrialTiming] = {}
    ticks: list[tuple[object, TrialTiming, int, int]] = []  # (key, trial, index, tick ns)
    answers: dict[object, list[int]] = {}  # key -> the commands' receive times (ns)

    def timing(trial_id: str) -> TrialTiming | None:
        if trials is not None and trial_id not in trials:
            return None
        return timings.setdefault(trial_id, TrialTiming(trial_id))

    for record in records(bag_readers, WANTED):
        msg = deserialize(record)
        if record.topic in (topics.CONTROL_TICK, topics.BLOCKENV_OBSERVATION):
            t = timing(msg.trial_id)
            if t is None:
                continue
            key = msg.sequence if record.topic == topics.CONTROL_TICK else (msg.trial_id, msg.step)
            t.tick_ns.append(record.log_time)
            t.answered.append(False)
            ticks.append((key, t, len(t.answered) - 1, record.log_time))
        elif record.topic in SEQUENCED_COMMANDS or record.topic == topics.BLOCKENV_ACTION:
            key = msg.layout.data_offset if record.topic in SEQUENCED_COMMANDS else (msg.trial_id, msg.step)
            answers.setdefault(key, []).append(record.log_time)
        elif record.topic == POLICY_EXCHANGE:
            t = timing(msg.trial_id)
            if t is not None:
                t.round_trip_ms.append(msg.round_trip_ms)
                if msg.server_infer_ms >= 0:
                    t.server_ms.append(msg.server_infer_ms)
    for key, t, index, t_ns in ticks:
        if answers.get(key):  # BlockEnv's keys repeat when a trial runs again: the nearest command, once
            answer = min(answers[key], key=lambda a: abs(a - t_ns))
            answers[key].remove(answer)
            t.answered[index] = True
            t.obs_to_command_ms.append(max(answer - t_ns, 0) / 1e6)
    rows = [t.figures() for t in timings.values()]
    total = TrialTiming("all")
    for t in timings.values():
        total.answered += t.answered
        total.obs_to_command_ms += t.obs_to_command_ms
        total.round_trip_ms += t.round_trip_ms
        total.server_ms += t.server_ms
    overall = total.figures()
    periods = np.concatenate(
        [np.diff(np.array(t.tick_ns, dtype=np.int64)) / 1e6 for t in timings.values() if len(t.tick_ns) > 1]
        or [np.array([])]
    )
    overall.update(
        _percentiles("period_ms", periods), ticks=sum(len(t.tick_ns) for t in timings.values()), trials=len(timings)
    )
    return rows, overall
