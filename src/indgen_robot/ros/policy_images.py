"""The camera images of a policy node's observation, decoded only when a request needs them:
a ZED frame is 3.7 MB at 15 Hz per camera and a DROID policy looks at one frame in eight ticks
(RawImage keeps a frame in its CDR bytes; LazyImages decodes on first read; RequestedImages asks
a lock-step world to render a tick's frames on the first read)."""

from __future__ import annotations

import collections.abc
import struct
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from sensor_msgs.msg import Image

from indgen_core.ros import fr3


class FrameSource(Protocol):
    """What RequestedImages reads (the policy node's tick IO): the cameras it uses, and a
    tick's frames, asked of the world once."""

    @property
    def cameras(self) -> Sequence[str]: ...

    def requested_frames(self, tick) -> dict: ...


class RawImage:
    """A sensor_msgs/Image still in its CDR bytes: a ZED frame is 3.7 MB at 15 Hz per camera,
    and a DROID policy looks at one frame in eight ticks, so frames are deserialised only
    when a request is built. The stamp (the first field) is read straight from the bytes."""

    def __init__(self, data: bytes):
        if len(data) < 12 or data[1] not in (0, 1):
            raise ValueError("not a CDR-encoded sensor_msgs/Image")
        self.data = data
        sec, nanosec = struct.unpack("<iI" if data[1] == 1 else ">iI", data[4:12])
        self.header = _Header(_Stamp(sec, nanosec))

    def message(self) -> Image:
        from rclpy.serialization import deserialize_message

        return deserialize_message(self.data, Image)


class _Stamp:
    def __init__(self, sec: int, nanosec: int):
        self.sec, self.nanosec = sec, nanosec


class _Header:
    def __init__(self, stamp: _Stamp):
        self.stamp = stamp


class ImagesUnavailable(RuntimeError):
    """The world did not send the images of a tick that were asked for: no command is sent."""


class RequestedImages(collections.abc.Mapping):
    """The cameras of a tick whose world renders them on request (ControlTick.images_on_request):
    the first read asks the world for every camera this node uses, once, and waits for them."""

    def __init__(self, io: FrameSource, tick):
        self._io, self._tick = io, tick
        self._decoded: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str):
        if name not in self._io.cameras:
            raise KeyError(name)
        if name not in self._decoded:
            raw = self._io.requested_frames(self._tick)
            self._decoded.update(
                {c: fr3.read_image(m.message() if isinstance(m, RawImage) else m) for c, m in raw.items()}
            )
        return self._decoded[name]

    def __contains__(self, name) -> bool:
        return name in self._io.cameras

    def __iter__(self):
        return iter(self._io.cameras)

    def __len__(self) -> int:
        return len(self._io.cameras)


class LazyImages(collections.abc.Mapping):
    """Camera name -> RGB array, decoded from its (raw) Image only when a request needs it:
    inside an open-loop chunk no request is built."""

    def __init__(self, messages: dict):
        self._messages = messages
        self._decoded: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str):
        if name not in self._decoded:
            msg = self._messages[name]
            self._decoded[name] = fr3.read_image(msg.message() if isinstance(msg, RawImage) else msg)
        return self._decoded[name]

    def __iter__(self):
        return iter(self._messages)

    def __len__(self) -> int:
        return len(self._messages)
