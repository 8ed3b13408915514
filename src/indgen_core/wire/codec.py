"""IndGen's own msgpack-numpy codec: openpi's frames, decoded as hostile input.

The frame format is openpi-client's (`openpi_client.msgpack_numpy`): msgpack, with a numpy
array as the map {b"__ndarray__": True, b"data": <bytes>, b"dtype": dtype.str, b"shape": [..]}
and a numpy scalar as {b"__npgeneric__": True, b"data": <python scalar>, b"dtype": dtype.str}.
Frames encoded here are byte-identical to openpi's, so either side can be openpi.

openpi's decoder builds `np.ndarray(buffer=data, dtype=<peer's string>, shape=<peer's list>)`:
an object dtype turns the peer's bytes into pointers (one 49-byte frame segfaults the
process), a shape larger than the buffer reads past it, and there is no bound on what a frame
expands to. This decoder
- accepts only plain numeric dtypes (bool, signed/unsigned integers, floats; no object, void,
  structured, sub-array or complex types), checks that the declared shape fits the buffer
  exactly, and copies the data into an array it owns;
- bounds every msgpack length (strings, binaries, arrays, maps) and the total number of
  container elements of a frame (`Limits.max_items`), so a frame never expands to more than a
  small multiple of its size (a 19 MiB frame of empty maps is refused, not 1.5 GB of dicts);
- turns every failure into one `FrameError` sentence.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np

MiB = 1024 * 1024

#: dtype strings a frame may carry: numpy's `dtype.str` of bool, int, uint and float types
_DTYPE = re.compile(r"[<>|=]?(b1|[iu][1248]|f[248])")
_ARRAY_KEYS = (b"__ndarray__", "__ndarray__")
_SCALAR_KEYS = (b"__npgeneric__", "__npgeneric__")


class FrameError(ValueError):
    """A frame that is not a well-formed, bounded openpi msgpack-numpy message."""


@dataclass(frozen=True)
class Limits:
    """Bounds on one frame. The defaults fit pi0.5 requests (two 224 x 224 images, about
    300 KB) with a wide margin; a deployment with larger images raises max_frame_bytes."""

    max_frame_bytes: int = 64 * MiB
    #: container elements (array items + map entries) in the whole frame
    max_items: int = 100_000
    #: dimensions of one array
    max_ndim: int = 8
    #: characters of one string (prompts, ids, keys)
    max_str_len: int = 1 * MiB

    def __post_init__(self):
        if self.max_frame_bytes < 1024:
            raise ValueError(f"max_frame_bytes must be at least 1024, got {self.max_frame_bytes}")


DEFAULT_LIMITS = Limits()


# -- encoding (openpi's format) -----------------------------------------------------------------
def _pack_default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray | np.generic):
        if obj.dtype.kind not in "biuf" or obj.dtype.fields is not None:
            raise FrameError(f"cannot send numpy dtype {obj.dtype}: only bool, integer and float arrays travel")
        if isinstance(obj, np.ndarray):
            return {b"__ndarray__": True, b"data": obj.tobytes(), b"dtype": obj.dtype.str, b"shape": obj.shape}
        return {b"__npgeneric__": True, b"data": obj.item(), b"dtype": obj.dtype.str}
    raise FrameError(f"cannot send a value of type {type(obj).__name__}")


def encode(obj: Any) -> bytes:
    """One frame, byte-identical to openpi_client.msgpack_numpy.packb(obj)."""
    try:
        return msgpack.packb(obj, default=_pack_default)
    except FrameError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:
        raise FrameError(f"cannot encode the message: {exc}") from None


# -- decoding (hostile input) -------------------------------------------------------------------
def _dtype(text: Any) -> np.dtype:
    if not isinstance(text, str) or not _DTYPE.fullmatch(text):
        shown = text if isinstance(text, str) and len(text) <= 32 else type(text).__name__
        raise FrameError(f"array dtype {shown!r} is not allowed: only bool, integer and float dtypes are accepted")
    return np.dtype(text)


def _get(obj: dict, name: str) -> Any:
    key = name.encode()
    return obj[key] if key in obj else obj.get(name)


class _Decoder:
    def __init__(self, limits: Limits):
        self.limits = limits
        self.items = 0

    def _count(self, n: int) -> None:
        self.items += n
        if self.items > self.limits.max_items:
            raise FrameError(f"the frame holds more than {self.limits.max_items} list items and map entries")

    def list_hook(self, items: list) -> list:
        self._count(1 + len(items))
        return items

    def object_hook(self, obj: dict) -> Any:
        self._count(1 + len(obj))
        if any(k in obj for k in _ARRAY_KEYS):
            return self._array(obj)
        if any(k in obj for k in _SCALAR_KEYS):
            return self._scalar(obj)
        return obj

    def _array(self, obj: dict) -> np.ndarray:
        data, dtype, shape = _get(obj, "data"), _dtype(_get(obj, "dtype")), _get(obj, "shape")
        if not isinstance(data, bytes):
            raise FrameError("array data must be a msgpack binary")
        if (
            not isinstance(shape, list | tuple)
            or len(shape) > self.limits.max_ndim
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
        ):
            raise FrameError(f"array shape must be at most {self.limits.max_ndim} non-negative integers")
        need = math.prod(shape) * dtype.itemsize
        if need != len(data):
            raise FrameError(
                f"array of shape {tuple(shape)} and dtype {dtype.str} needs {need} bytes, the frame carries {len(data)}"
            )
        try:
            return np.frombuffer(data, dtype=dtype).reshape(shape).copy()  # owns its memory
        except ValueError as exc:
            raise FrameError(f"array of shape {tuple(shape)} cannot be built: {exc}") from None

    def _scalar(self, obj: dict) -> np.generic:
        data, dtype = _get(obj, "data"), _dtype(_get(obj, "dtype"))
        if not isinstance(data, bool | int | float):
            raise FrameError("a numpy scalar must carry a number")
        try:
            return dtype.type(data)
        except (OverflowError, ValueError, TypeError):
            raise FrameError(f"{data!r} does not fit numpy dtype {dtype.str}") from None


def decode(frame: bytes, limits: Limits = DEFAULT_LIMITS) -> Any:
    """The message in one frame; FrameError (one sentence) for anything malformed or too big."""
    if not isinstance(frame, bytes | bytearray | memoryview):
        raise FrameError("expected a binary msgpack frame, got a text frame")
    if len(frame) > limits.max_frame_bytes:
        raise FrameError(f"frame of {len(frame)} bytes is over the {limits.max_frame_bytes}-byte limit")
    decoder = _Decoder(limits)
    n = len(frame)
    try:
        return msgpack.unpackb(
            frame,
            object_hook=decoder.object_hook,
            list_hook=decoder.list_hook,
            raw=False,
            max_bin_len=n,
            max_str_len=min(n, limits.max_str_len),
            max_array_len=min(n, limits.max_items),
            max_map_len=min(n, limits.max_items),
            max_ext_len=0,
        )
    except FrameError:
        raise
    except msgpack.StackError:
        raise FrameError("the frame is nested too deeply") from None
    except msgpack.ExtraData:
        raise FrameError("the frame has bytes after its message") from None
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        text = str(exc).strip() or exc.__class__.__name__
        if "exceeds max_" in text:
            raise FrameError(f"the frame declares an item longer than allowed ({text[:120]})") from None
        raise FrameError(f"not a valid msgpack frame: {text[:200]}") from None
    except MemoryError:
        raise FrameError("the frame does not fit in memory") from None


def decode_dict(frame: bytes, limits: Limits = DEFAULT_LIMITS, what: str = "message") -> dict[str, Any]:
    """A frame that must hold a map with string keys (requests, replies, metadata)."""
    obj = decode(frame, limits)
    if not isinstance(obj, dict):
        raise FrameError(f"the {what} must be a msgpack map, got {type(obj).__name__}")
    bad = [k for k in obj if not isinstance(k, str)]
    if bad:
        raise FrameError(f"the {what}'s keys must be strings, got {type(bad[0]).__name__}")
    return obj
