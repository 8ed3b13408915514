"""`indgen bag video`: an H.264 MP4 per trial from a recorded camera, with the trial, its
level, the control step and the outcome drawn under each frame.

Frames belong to the attempt whose time range (its task setup to its result) holds their
receive time; the step is that of the attempt's latest control tick stamped no later than the
frame (header stamps: the time the world took them, the same for a simulated tick and its
frames). Not the order the recorder received them in: a tick and its frame come on two topics,
and on a busy machine the frame can be taken first. H.264 (yuv420p)
because browsers play it, which is where a report's video link opens; PyAV encodes it in
process.
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from indgen_core import topics
from indgen_core.bags.reader import BagError
from indgen_core.bags.trials import Attempt, Recording, deserialize, records
from indgen_core.errors import require
from indgen_core.nodes import messages
from indgen_core.records import Outcome

if TYPE_CHECKING:
    from av.container import OutputContainer
    from av.video.stream import VideoStream

IMAGE_TYPE = "sensor_msgs/msg/Image"
BAR = 30  # px of caption under the frame (two lines)
MIN_WIDTH = 320  # px; smaller camera frames are scaled up by a whole factor
CHANNELS = {
    "rgb8": (3, [0, 1, 2]),
    "bgr8": (3, [2, 1, 0]),
    "rgba8": (4, [0, 1, 2]),
    "bgra8": (4, [2, 1, 0]),
    "mono8": (1, [0, 0, 0]),
}


def camera_topics(bag_readers) -> dict[str, str]:
    """Recorded image topics, by camera name (/cameras/<name>/image_raw -> name; other
    topics by their full name)."""
    found = {}
    for bag in bag_readers:
        for path in bag.files:
            for topic, msgtype in _channels(path):
                if msgtype == IMAGE_TYPE:
                    parts = topic.strip("/").split("/")
                    name = parts[1] if len(parts) == 3 and parts[0] == "cameras" else topic
                    found[name] = topic
    return found


def _channels(path: Path):
    reader_mod = require("mcap.reader", "all", "reading bags")
    from indgen_core.bags.reader import BagReader

    with path.open("rb") as fh:
        if BagReader.complete(path):
            summary = reader_mod.make_reader(fh).get_summary()
            if summary is not None:
                for channel in summary.channels.values():
                    yield channel.topic, summary.schemas[channel.schema_id].name
                return
        fh.seek(0)
        seen = set()
        try:
            for schema, channel, _ in reader_mod.NonSeekingReader(fh).iter_messages(log_time_order=False):
                if channel.id not in seen:
                    seen.add(channel.id)
                    yield channel.topic, schema.name if schema else ""
        except Exception:
            return


def pick_attempts(recording: Recording, trial: str | None, every: bool) -> list[Attempt]:
    """--trial: that trial's last finished attempt; --all: every finished attempt; else one
    per level, the first attempt that the world or the operator judged."""
    done = [a for a in recording.attempts if a.result is not None]
    if trial:
        found = [a for a in recording.trial(trial) if a.result is not None]
        if not found:
            raise BagError(f"trial {trial} has no finished attempt in the bag")
        return found[-1:]
    if every:
        return done
    per_level: dict[tuple[str, int], Attempt] = {}
    for a in done:
        judged = Outcome(a.result.outcome) not in (Outcome.ABORTED, Outcome.SKIPPED, Outcome.SUPERSEDED)
        if judged and (a.campaign_id, a.level) not in per_level:
            per_level[(a.campaign_id, a.level)] = a
    return list(per_level.values())


def to_rgb(msg) -> np.ndarray:
    spec = CHANNELS.get(msg.encoding)
    if spec is None:
        raise BagError(f"camera encoding {msg.encoding!r} is not one of {', '.join(CHANNELS)}")
    channels, order = spec
    data = np.frombuffer(bytes(msg.data), dtype=np.uint8)
    if msg.step < msg.width * channels or data.size < msg.step * msg.height:
        raise BagError(f"an image of {msg.width}x{msg.height} {msg.encoding} has {data.size} bytes")
    rows = data[: msg.step * msg.height].reshape(msg.height, msg.step)[:, : msg.width * channels]
    return rows.reshape(msg.height, msg.width, channels)[:, :, order]


class _Video:
    def __init__(self, path: Path, attempt: Attempt, fps: float):
        self.path, self.attempt, self.fps = path, attempt, fps
        self.container: OutputContainer | None = None
        self.stream: VideoStream | None = None
        self.frames = 0
        self.outcome = Outcome(attempt.result.outcome).word
        self._held: tuple[np.ndarray, int] | None = None

    def add(self, rgb: np.ndarray, step: int) -> None:
        """A camera frame of `step`. A world that renders on request sends frames only on the
        ticks where the policy was asked (one in eight for pi0.5): each frame is held until
        the next one, so the video plays at the episode's own pace."""
        if self._held is not None:
            held, at = self._held
            for _ in range(max(1, min(step - at, 64))):
                self._write(held, at)
        self._held = (rgb, step)

    def _write(self, rgb: np.ndarray, step: int) -> None:
        a = self.attempt
        frame = _captioned(rgb, (a.trial_id, f"level {a.level} | step {step} | {self.outcome}"))
        if self.container is None:
            av = require("av", "all", "writing videos")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            container: OutputContainer = av.open(str(self.path), "w")
            self.container = container
            stream = self.stream = container.add_stream("libx264", rate=round(self.fps))
            stream.height, stream.width = frame.shape[:2]
            stream.pix_fmt = "yuv420p"
            stream.options = {"crf": "23", "preset": "veryfast"}
        assert self.stream is not None, "the stream is added with the container"
        import av

        for packet in self.stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
            self.container.mux(packet)
        self.frames += 1

    def close(self) -> None:
        if self._held is not None:
            self._write(*self._held)
            self._held = None
        if self.container is not None:
            assert self.stream is not None, "the stream is added with the container"
            for packet in self.stream.encode():
                self.container.mux(packet)
            self.container.close()


def _captioned(rgb: np.ndarray, lines: tuple[str, str]) -> np.ndarray:
    """The frame, scaled up (nearest) to at least MIN_WIDTH so that the caption is legible, over
    a two-line caption bar; even sides, as yuv420p wants."""
    from PIL import Image, ImageDraw

    h, w = rgb.shape[:2]
    scale = max(1, -(-MIN_WIDTH // w))
    if scale > 1:
        rgb = np.repeat(np.repeat(rgb, scale, axis=0), scale, axis=1)
        h, w = rgb.shape[:2]
    out = np.zeros((h + BAR + (h + BAR) % 2, w + w % 2, 3), dtype=np.uint8)
    out[:h, :w] = rgb
    image = Image.fromarray(out)
    draw = ImageDraw.Draw(image)
    for i, text in enumerate(lines):
        draw.text((4, h + 3 + 13 * i), text[: max(w // 6, 10)], fill=(255, 255, 255))
    return np.asarray(image)


def safe_file_name(trial_id: str) -> str:
    return "".join(c if c.isalnum() or c in "._-+" else "_" for c in trial_id)


def write_videos(
    bag_readers,
    recording: Recording,
    attempts: list[Attempt],
    out_dir: Path,
    camera: str | None = None,
    fps: float = 15.0,
) -> list[_Video]:
    cameras = camera_topics(bag_readers)
    if not cameras:
        raise BagError(
            f"{', '.join(str(b.bag) for b in bag_readers)} has no camera images "
            "(the recorder was told to leave them out, or the world ran without cameras)"
        )
    if camera is None:
        camera = sorted(cameras)[0]
    if camera not in cameras:
        raise BagError(f"no camera {camera!r} in the bag; it has {', '.join(sorted(cameras))}")
    topic = cameras[camera]
    videos = [_Video(out_dir / f"{safe_file_name(a.trial_id)}-{camera}.mp4", a, fps) for a in attempts]

    def end_ns(attempt: Attempt) -> int:
        assert attempt.end_ns is not None, f"attempt at {attempt.trial_id} has no result"
        return attempt.end_ns

    def video_at(log_time: int) -> _Video | None:
        return next((v for v in videos if v.attempt.start_ns <= log_time <= end_ns(v.attempt)), None)

    ticks: dict[int, tuple[list[int], list[int]]] = {}  # video -> (stamps, steps), in stamp order
    for record in records(bag_readers, {topics.CONTROL_TICK}):
        video = video_at(record.log_time)
        if video is not None:
            tick = deserialize(record)
            stamps, steps = ticks.setdefault(id(video), ([], []))
            at = bisect.bisect_right(stamps, messages.nanoseconds(tick.header.stamp))
            stamps.insert(at, messages.nanoseconds(tick.header.stamp))
            steps.insert(at, int(tick.step))
    try:
        for record in records(bag_readers, {topic}):
            video = video_at(record.log_time)
            if video is None:
                continue
            msg = deserialize(record)
            stamps, steps = ticks.get(id(video), ([], []))
            at = bisect.bisect_right(stamps, messages.nanoseconds(msg.header.stamp))
            video.add(to_rgb(msg), steps[max(at - 1, 0)] if steps else 0)
    finally:
        for video in videos:
            video.close()
    return videos
