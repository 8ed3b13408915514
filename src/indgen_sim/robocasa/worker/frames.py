"""The frames IndGen's RoboCasa world and its worker exchange over a pipe: a dict of JSON
values and numpy arrays.

    frame  = u64 header length, header (JSON, UTF-8), then per array: u64 length, raw bytes
    header = the dict, each array replaced by {"__array__": index, "dtype": ..., "shape": [...]}

Both ends are IndGen's own processes, but a frame is still read as it could be broken (a
worker that crashed mid-write, a stray print on stdout): a short read, a length over
MAX_BYTES, bad JSON or an array whose bytes do not fit its shape is a FrameError, never a
partial dict. Standard library and numpy only: this module runs in both environments."""

from __future__ import annotations

import json
import struct
from typing import Any, BinaryIO

import numpy as np

MAX_BYTES = 64 * 1024 * 1024  # the largest header or array: three 256 x 256 images are 0.6 MB
_LENGTH = struct.Struct("<Q")
_DTYPES = {"uint8", "int32", "int64", "float32", "float64", "bool"}


class FrameError(Exception):
    """A frame that cannot be read whole and right."""


def write_frame(stream: BinaryIO, message: dict[str, Any]) -> None:
    arrays: list[np.ndarray] = []

    def pack(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            arrays.append(np.ascontiguousarray(value))
            return {"__array__": len(arrays) - 1, "dtype": str(value.dtype), "shape": list(value.shape)}
        if isinstance(value, dict):
            return {str(k): pack(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [pack(v) for v in value]
        if isinstance(value, np.generic):
            return value.item()
        return value

    header = json.dumps(pack(message), allow_nan=False).encode()
    parts = [_LENGTH.pack(len(header)), header]
    for array in arrays:
        data = array.tobytes()
        parts += [_LENGTH.pack(len(data)), data]
    stream.write(b"".join(parts))
    stream.flush()


def _read_exactly(stream: BinaryIO, n: int) -> bytes:
    data = stream.read(n)
    if data is None or len(data) != n:
        raise FrameError(f"the pipe closed after {0 if not data else len(data)} of {n} bytes")
    return data


def _read_block(stream: BinaryIO) -> bytes:
    (n,) = _LENGTH.unpack(_read_exactly(stream, _LENGTH.size))
    if n > MAX_BYTES:
        raise FrameError(f"a block of {n} bytes is over the {MAX_BYTES} a frame may hold")
    return _read_exactly(stream, n)


def read_frame(stream: BinaryIO) -> dict[str, Any]:
    try:
        header = json.loads(_read_block(stream).decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FrameError(f"the frame's header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise FrameError("the frame's header is not a JSON object")
    blocks: dict[int, np.ndarray] = {}

    def placeholders(value: Any) -> list[dict[str, Any]]:
        if isinstance(value, dict):
            if "__array__" in value:
                return [value]
            return [p for v in value.values() for p in placeholders(v)]
        if isinstance(value, list):
            return [p for v in value for p in placeholders(v)]
        return []

    for spec in sorted(placeholders(header), key=lambda p: p["__array__"]):
        dtype, shape = spec.get("dtype"), spec.get("shape")
        if dtype not in _DTYPES or not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise FrameError(f"an array of dtype {dtype!r} and shape {shape!r} is not one a frame carries")
        data = _read_block(stream)
        expected = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if len(data) != expected:
            raise FrameError(f"an array of shape {shape} and dtype {dtype} needs {expected} bytes, not {len(data)}")
        blocks[spec["__array__"]] = np.frombuffer(data, dtype=dtype).reshape(shape).copy()

    def unpack(value: Any) -> Any:
        if isinstance(value, dict):
            if "__array__" in value:
                return blocks[value["__array__"]]
            return {k: unpack(v) for k, v in value.items()}
        if isinstance(value, list):
            return [unpack(v) for v in value]
        return value

    return unpack(header)
