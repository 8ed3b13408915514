"""Episodes out of recorded bags (real or simulated): one per scored attempt.

An attempt's frames are its control ticks (`/indgen/control_tick` with its trial id), in step
order. At each tick: the joint state and each camera's frame stamped like the tick (lock-step
simulation stamps a tick's whole observation alike) or, on the real robot's wall clock, the
latest one stamped no later; the command answering the tick by its sequence number. The last
tick ends the episode without a frame of its own: its state is what makes the previous frame's
executed action (layout.py).

Refused, in one sentence: a bag cut short (repair it first: an attempt may be missing its
end), a bag that holds no trial IndGen recorded, levels the axis does not have, and a camera
without a frame on every tick (a bag recorded with images on request, where the policy asks for them one tick in eight).
Attempts that were aborted, skipped or superseded are never exported.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from indgen_core import topics
from indgen_core.bags import trials
from indgen_core.bags.reader import BagError
from indgen_core.bags.video import camera_topics, to_rgb
from indgen_core.cell.robot_config import FR3_ARM_JOINTS as ARM_JOINTS
from indgen_core.cell.robot_config import ROBOTIQ_JOINT as GRIPPER_JOINT
from indgen_core.datasets import layout
from indgen_core.errors import IndGenError
from indgen_core.records import Outcome
from indgen_core.specs.droid import GRIPPER_CLOSED_RAD, RAD_PER_S_AT_ONE

SCORED = {o: o.word for o in Outcome if o.scored}
SLACK_NS = 2_000_000_000  # records of an attempt can be received this long after its result


@dataclass
class _Samples:
    """What one attempt recorded, as it comes in."""

    ticks: dict[int, Any] = field(default_factory=dict)  # step -> its last ControlTick
    states: list[tuple[int, np.ndarray, float]] = field(default_factory=list)  # (stamp ns, q, gripper)
    arm: dict[int, np.ndarray] = field(default_factory=dict)  # sequence -> DROID velocity
    gripper: dict[int, float] = field(default_factory=dict)  # sequence -> DROID gripper
    frames: dict[str, list[tuple[int, np.ndarray]]] = field(default_factory=dict)  # camera -> (stamp ns, frame)


def _ns(stamp) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def select(recording: trials.Recording, levels: list[int] | None, outcomes: list[str] | None) -> list[trials.Attempt]:
    """The scored attempts to export; an IndGenError for levels its axes do not have."""
    scored = [a for a in recording.attempts if a.result is not None and Outcome(a.result.outcome) in SCORED]
    if levels is not None:
        from indgen_core.axes.progression import library

        for axis in sorted({a.axis for a in scored}):
            have = set(library().get(axis).level_range())
            missing = sorted(set(levels) - have)
            if missing:
                raise IndGenError(
                    f"axis {axis} has the levels {min(have)}..{max(have)}, not {', '.join(map(str, missing))}"
                )
        scored = [a for a in scored if a.level in levels]
    if outcomes is not None:
        unknown = sorted(set(outcomes) - set(SCORED.values()))
        if unknown:
            raise IndGenError(f"--outcome takes {', '.join(SCORED.values())}, not {', '.join(unknown)}")
        scored = [a for a in scored if SCORED[Outcome(a.result.outcome)] in outcomes]
    return scored


def episodes(
    bags: Iterable[str | Path],
    campaign: str | None = None,
    levels: list[int] | None = None,
    outcomes: list[str] | None = None,
) -> Iterator[layout.Episode]:
    """The chosen attempts' episodes; what the bag cannot give is refused here, before any
    episode is read."""
    paths = [Path(b) for b in bags]
    recording = trials.read(paths)
    if recording.truncated:
        raise BagError(
            f"{', '.join(recording.truncated)} ends inside a record (its recorder was killed): "
            "close it with `indgen bag repair` first"
        )
    if not recording.attempts:
        raise BagError(f"{', '.join(map(str, paths))} holds no trial that IndGen recorded")
    wanted = select(recording.only(campaign), levels, outcomes)
    if not wanted:
        raise IndGenError("no scored attempt in the bag matches the --campaign, --levels and --outcome asked for")
    return _stream(paths, recording, wanted)


def _stream(bags: list[Path], recording: trials.Recording, wanted: list[trials.Attempt]) -> Iterator[layout.Episode]:
    """The episodes, one attempt at a time: a real robot's frames are not all held at once."""
    readers = trials.readers(bags)
    cameras = {name: topic for name, topic in camera_topics(readers).items() if name in layout.CAMERA_KEYS}
    if not cameras:  # openpi's DROID training reads exterior_image_1_left and wrist_image_left
        raise IndGenError(
            "the bag holds no camera frames (recorded without cameras, or with bag_exclude:=/cameras/): a DROID "
            "dataset without images trains nothing; record with cameras:=exterior_1,wrist and render:=every_tick"
        )
    by_topic = {topic: name for name, topic in cameras.items()}
    wanted_topics = {
        topics.CONTROL_TICK,
        topics.JOINT_STATES,
        topics.ARM_VELOCITY_COMMAND,
        topics.GRIPPER_COMMAND,
        *by_topic,
    }
    pending = sorted(wanted, key=lambda a: a.start_ns)
    open_: dict[int, _Samples] = {}
    for record in trials.records(readers, wanted_topics):
        while pending and pending[0].end_ns is not None and pending[0].end_ns + SLACK_NS < record.log_time:
            attempt = pending.pop(0)
            yield _episode(attempt, open_.pop(id(attempt), _Samples()), list(cameras), recording.bags)
        for attempt in pending:
            if attempt.start_ns > record.log_time:
                break
            if record.log_time <= (attempt.end_ns or 0) + SLACK_NS:
                _add(open_.setdefault(id(attempt), _Samples()), attempt, record, by_topic)
    for attempt in pending:
        yield _episode(attempt, open_.pop(id(attempt), _Samples()), list(cameras), recording.bags)


def _add(samples: _Samples, attempt: trials.Attempt, record, cameras: dict[str, str]) -> None:
    msg = record.decode()
    if record.topic == topics.CONTROL_TICK:
        if msg.trial_id == attempt.trial_id:
            # a tick the world sent again (no command came in time) has a new sequence: the last
            # one of a step is the one the world acted on, and the one its command answers
            known = samples.ticks.get(int(msg.step))
            if known is None or int(msg.sequence) > int(known.sequence):
                samples.ticks[int(msg.step)] = msg
    elif record.topic == topics.JOINT_STATES:
        index = {name: i for i, name in enumerate(msg.name)}
        if all(name in index for name in ARM_JOINTS) and GRIPPER_JOINT in index:
            q = np.array([msg.position[index[name]] for name in ARM_JOINTS], dtype=np.float64)
            g = float(np.clip(msg.position[index[GRIPPER_JOINT]] / GRIPPER_CLOSED_RAD, 0.0, 1.0))
            samples.states.append((_ns(msg.header.stamp), q, g))
    elif record.topic == topics.ARM_VELOCITY_COMMAND:
        values = np.asarray(msg.data, dtype=np.float64)
        if values.shape == (7,):
            samples.arm[int(msg.layout.data_offset)] = values / RAD_PER_S_AT_ONE
    elif record.topic == topics.GRIPPER_COMMAND:
        if len(msg.data) == 1:
            samples.gripper[int(msg.layout.data_offset)] = float(np.clip(msg.data[0] / GRIPPER_CLOSED_RAD, 0, 1))
    else:
        samples.frames.setdefault(cameras[record.topic], []).append(
            (_ns(msg.header.stamp), layout.frame_16_9(to_rgb(msg)))
        )


def _at(samples: list, stamp: int, wall_clock: bool):
    """The sample stamped like `stamp` (lock-step) or the latest one no later (wall clock)."""
    stamps = [s[0] for s in samples]
    i = bisect.bisect_right(stamps, stamp) - 1
    if i < 0 or (not wall_clock and stamps[i] != stamp):
        return None
    return samples[i]


def _episode(attempt: trials.Attempt, samples: _Samples, cameras: list[str], bags: list[Path]) -> layout.Episode:
    ticks = [samples.ticks[step] for step in sorted(samples.ticks)]
    where = f"trial {attempt.trial_id} (level {attempt.level})"
    if len(ticks) < 2:
        raise BagError(f"{where} has {len(ticks)} recorded control tick(s): too few to export")
    wall = bool(ticks[0].wall_clock)
    samples.states.sort(key=lambda s: s[0])
    states = [_at(samples.states, _ns(t.header.stamp), wall) for t in ticks]
    if any(s is None for s in states):
        lost = sum(s is None for s in states)
        raise BagError(f"{where}: {lost} of its {len(ticks)} ticks have no joint state in the bag")
    frames = ticks[:-1]
    images: dict[str, list[np.ndarray]] = {}
    for camera in cameras:
        shots = sorted(samples.frames.get(camera, []), key=lambda s: s[0])
        found = [_at(shots, _ns(t.header.stamp), wall) for t in frames]
        have = sum(f is not None for f in found)
        if have < len(frames):
            if any(t.images_on_request for t in ticks):
                raise BagError(
                    f"the bag was recorded with images on request: camera {camera} has a frame on {have} of the "
                    f"{len(frames)} ticks of {where}; record with render:=every_tick to export its images"
                )
            raise BagError(
                f"camera {camera} has no frame on {len(frames) - have} of the {len(frames)} ticks of {where}"
            )
        images[camera] = [f[1] for f in found if f is not None]
    missing_commands = 0
    commanded: list[np.ndarray] = []
    for t in frames:
        arm, grip = samples.arm.get(int(t.sequence)), samples.gripper.get(int(t.sequence))
        if arm is None or grip is None:  # the robot held still (no command answered the tick)
            missing_commands += 1
            arm, grip = np.zeros(7), (commanded[-1][7] if commanded else 0.0)
        commanded.append(np.concatenate([arm, [grip]]))
    q = np.array([s[1] for s in states if s is not None])
    g = np.array([s[2] for s in states if s is not None])
    stamps = np.array([_ns(t.header.stamp) for t in frames], dtype=np.int64)
    try:
        columns = layout.episode_columns(images, q, g, np.array(commanded), stamps, attempt.level)
    except ValueError as exc:
        raise BagError(f"{where}: {exc}") from None
    setup = attempt.setup_msg
    notes: dict[str, Any] = {"clock": "wall" if wall else "simulated", "ticks_without_command": missing_commands}
    return layout.Episode(
        task=setup.language_instruction,
        axis=attempt.axis,
        level=attempt.level,
        outcome=SCORED[Outcome(attempt.result.outcome)],
        source=f"bag {', '.join(b.name for b in bags)}",
        trial_id=attempt.trial_id,
        columns=columns,
        campaign_id=attempt.campaign_id,
        world=attempt.world,
        policy=attempt.policy,
        seed=int(setup.seed),
        notes=notes,
    )
