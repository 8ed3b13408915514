"""The pipe between IndGen's RoboCasa world and its worker (indgen_sim/robocasa/worker/
frames.py), read as it could be broken: a frame comes back whole and equal, or is a
FrameError, never a partial dict. No RoboCasa needed."""

from __future__ import annotations

import io
import json
import struct

import numpy as np
import pytest

from indgen_sim.robocasa.worker import frames


def _roundtrip(message):
    buffer = io.BytesIO()
    frames.write_frame(buffer, message)
    buffer.seek(0)
    return frames.read_frame(buffer), buffer


def test_a_frame_of_json_values_and_arrays_comes_back_equal():
    image = np.arange(64 * 64 * 3, dtype=np.uint8).reshape(64, 64, 3)
    message = {
        "observation": {"images": {"robot0_agentview_left": image}, "state": {"base_pos": np.array([1.0, -2.0, 0.5])}},
        "language": "Pick the can from the counter and place it in the cabinet.",
        "flags": [True, 3, None, np.float32(0.25)],
    }
    back, _ = _roundtrip(message)
    assert np.array_equal(back["observation"]["images"]["robot0_agentview_left"], image)
    assert back["observation"]["images"]["robot0_agentview_left"].dtype == np.uint8
    assert np.array_equal(back["observation"]["state"]["base_pos"], [1.0, -2.0, 0.5])
    assert back["language"] == message["language"] and back["flags"] == [True, 3, None, 0.25]


@pytest.mark.parametrize("cut", [0, 4, 8, 20, -1])
def test_a_frame_cut_anywhere_is_a_frame_error(cut):
    buffer = io.BytesIO()
    frames.write_frame(buffer, {"a": np.zeros((4, 4)), "b": "x"})
    data = buffer.getvalue()
    cut = len(data) - 1 if cut < 0 else cut
    with pytest.raises(frames.FrameError, match="closed after"):
        frames.read_frame(io.BytesIO(data[:cut]))


def test_garbage_lengths_headers_and_arrays_are_refused_with_a_sentence():
    huge = struct.pack("<Q", frames.MAX_BYTES + 1)
    with pytest.raises(frames.FrameError, match="over the"):
        frames.read_frame(io.BytesIO(huge))
    text = b"this is a stray print on stdout"
    with pytest.raises(frames.FrameError):  # its first 8 bytes read as an absurd length
        frames.read_frame(io.BytesIO(text))
    not_json = b"{not json"
    with pytest.raises(frames.FrameError, match="not JSON"):
        frames.read_frame(io.BytesIO(struct.pack("<Q", len(not_json)) + not_json))
    listed = b"[1, 2]"
    with pytest.raises(frames.FrameError, match="not a JSON object"):
        frames.read_frame(io.BytesIO(struct.pack("<Q", len(listed)) + listed))
    header = json.dumps({"x": {"__array__": 0, "dtype": "float64", "shape": [2, 2]}}).encode()
    short = struct.pack("<Q", len(header)) + header + struct.pack("<Q", 8) + b"\0" * 8
    with pytest.raises(frames.FrameError, match="needs 32 bytes, not 8"):
        frames.read_frame(io.BytesIO(short))
    evil = json.dumps({"x": {"__array__": 0, "dtype": "object", "shape": [1]}}).encode()
    with pytest.raises(frames.FrameError, match="not one a frame carries"):
        frames.read_frame(io.BytesIO(struct.pack("<Q", len(evil)) + evil))


def test_non_finite_numbers_are_not_written_as_json():
    with pytest.raises(ValueError):
        frames.write_frame(io.BytesIO(), {"x": float("nan")})
