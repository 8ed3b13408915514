"""`indgen bag replay`: the recorded policy requests, byte for byte, sent open-loop to another
policy server, and how far its actions are from the recorded ones, per level and per action
dimension (each joint and the gripper for DROID).

Open-loop: the new policy sees exactly what the recorded one saw, never the consequences of
its own actions, so this compares checkpoints on the same observations without a robot; it
is not a success rate. Requests go in recorded order (a stateful policy restarts on step 0,
as it did live). The bag is read on a second thread while a request is in flight, so replay
runs about as fast as the slower of reading and the server.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field

import numpy as np

from indgen_core import specs
from indgen_core.bags.reader import BagError
from indgen_core.bags.trials import POLICY_EXCHANGE, Recording, deserialize, records
from indgen_core.wire import codec

_END = object()


@dataclass
class LevelDiff:
    level: int
    names: tuple[str, ...]
    requests: int = 0
    actions: int = 0
    shape_mismatch: int = 0
    abs_sum: np.ndarray | None = None
    abs_max: np.ndarray | None = None

    def add(self, recorded: np.ndarray, replayed: np.ndarray) -> None:
        self.requests += 1
        if recorded.shape != replayed.shape:
            self.shape_mismatch += 1
            return
        diff = np.abs(recorded - replayed).reshape(-1, recorded.shape[-1])
        if self.abs_sum is None:
            self.abs_sum, self.abs_max = np.zeros(diff.shape[1]), np.zeros(diff.shape[1])
        assert self.abs_max is not None, "abs_max is set together with abs_sum"
        self.abs_sum += diff.sum(axis=0)
        self.abs_max = np.maximum(self.abs_max, diff.max(axis=0))
        self.actions += diff.shape[0]

    def figures(self) -> dict:
        mean: list[float] = []
        max_abs: list[float] = []
        width = 0
        if self.abs_sum is not None and self.abs_max is not None:  # set together, by the first add()
            width = len(self.abs_sum)
            if width:
                mean = (self.abs_sum / max(self.actions, 1)).tolist()
                max_abs = self.abs_max.tolist()
        names = list(self.names[:width]) + [f"a{i}" for i in range(len(self.names), width)]
        return {
            "level": self.level,
            "requests": self.requests,
            "actions": self.actions,
            "shape_mismatch": self.shape_mismatch,
            "names": names,
            "mean_abs": mean,
            "max_abs": max_abs,
        }


@dataclass
class Replay:
    levels: dict[int, LevelDiff] = field(default_factory=dict)
    errors: int = 0
    first_error: str = ""

    @property
    def requests(self) -> int:
        return sum(d.requests for d in self.levels.values())

    def max_abs(self) -> float:
        return max((float(d.abs_max.max()) for d in self.levels.values() if d.abs_max is not None), default=0.0)


def _actions(reply: dict, where: str) -> np.ndarray:
    if "actions" not in reply:
        raise BagError(f"{where} has no 'actions'")
    try:
        return np.asarray(reply["actions"], dtype=np.float64)
    except (TypeError, ValueError):
        raise BagError(f"{where}: 'actions' is not numeric") from None


def replay(bag_readers, recording: Recording, client, trials: set[str] | None = None, on_request=None) -> Replay:
    """Send every recorded request (of `trials`, or all) through `client` (a RemotePolicy)."""
    level_of = {a.trial_id: a.level for a in recording.attempts}
    out = Replay()
    pending: queue.Queue = queue.Queue(maxsize=8)
    failure: list[BaseException] = []

    def read() -> None:
        try:
            for record in records(bag_readers, {POLICY_EXCHANGE}):
                msg = deserialize(record)
                if (trials is None or msg.trial_id in trials) and msg.trial_id in level_of:
                    pending.put(msg)
        except BaseException as exc:  # handed to the sending thread, raised there
            failure.append(exc)
        finally:
            pending.put(_END)

    reader = threading.Thread(target=read, name="bag-read", daemon=True)
    reader.start()
    names: dict[str, tuple[str, ...]] = {}
    while (msg := pending.get()) is not _END:
        if msg.spec not in names:
            names[msg.spec] = specs.action_names(msg.spec)
        level = level_of[msg.trial_id]
        diff = out.levels.setdefault(level, LevelDiff(level, names[msg.spec]))
        try:
            recorded = _actions(codec.decode_dict(bytes(msg.reply)), f"the recorded reply of {msg.trial_id}")
        except codec.FrameError as exc:
            raise BagError(f"a recorded reply of {msg.trial_id} is not a policy frame: {exc}") from None
        try:
            reply = client.infer_frame(bytes(msg.request))
            replayed = _actions(reply, f"the replayed reply of {msg.trial_id} step {msg.step}")
        except BagError as exc:
            out.errors += 1
            out.first_error = out.first_error or str(exc)
            continue
        diff.add(recorded, replayed)
        if on_request is not None:
            on_request(out.requests)
    reader.join()
    if failure:
        raise failure[0]
    return out


def by_level(result: Replay) -> list[dict]:
    return [result.levels[k].figures() for k in sorted(result.levels)]
