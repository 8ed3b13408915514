"""The policy wire under attack: crafted frames against `indgen serve-policy`, a hung or
hostile server against IndGen's client, and both sides against openpi's own codec."""

from __future__ import annotations

import base64
import os
import socket
import struct
import threading
import time

import msgpack
import numpy as np
import pytest
from openpi_client import msgpack_numpy
from openpi_client.websocket_client_policy import WebsocketClientPolicy
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from helpers import servers
from helpers.openpi_server import OpenpiStyleServer
from indgen_core.episode import PolicyUnavailable
from indgen_core.waiting import wait_until
from indgen_core.wire import codec
from indgen_core.wire.client import RemotePolicy


def blockenv_request(seed: int = 3) -> dict:
    grid = np.zeros((16, 16), dtype=np.uint8)
    grid[8, 8] = 2
    return {"observation/grid": grid, "observation/level": np.int64(0), "episode/seed": np.uint64(seed),
            "episode/step": np.int64(0), "episode/id": "t", "prompt": ""}


def array(dtype: str, shape: list, data: bytes) -> dict:
    return {b"__ndarray__": True, b"data": data, b"dtype": dtype, b"shape": shape}


# The crafted frames of the hardening issue, each with the sentence its refusal must contain.
OBJECT_DTYPE = msgpack.packb({"x": array("|O", [6], b"\x41" * 48)})
STRUCTURED_OBJECT = msgpack.packb({"x": array("O,i8", [3], b"\x00" * 48)})
SHAPE_PAST_BUFFER = msgpack.packb({"x": array("<f8", [1_000_000], b"\x00" * 8)})
DEEP_MAPS = b"\x81\xa1a" * 100_000 + b"\xc0"
EMPTY_MAPS = b"\xdd" + struct.pack(">I", 19 * 1024 * 1024) + b"\x80" * (19 * 1024 * 1024)
CRAFTED = {
    "object dtype": (OBJECT_DTYPE, "dtype '|O' is not allowed"),
    "structured object dtype": (STRUCTURED_OBJECT, "dtype 'O,i8' is not allowed"),
    "shape larger than the buffer": (SHAPE_PAST_BUFFER, "needs 8000000 bytes, the frame carries 8"),
    "deeply nested maps": (DEEP_MAPS, "nested too deeply"),
    "19 MiB of empty maps": (EMPTY_MAPS, "longer than allowed"),
}


def test_codec_frames_are_byte_identical_to_openpis():
    req = {**blockenv_request(), "img": np.arange(224 * 224 * 3, dtype=np.uint8).reshape(224, 224, 3),
           "state": np.linspace(0, 1, 8, dtype=np.float32), "nested": {"a": [1, 2.5, "x"], "b": np.float64(0.5)}}
    assert codec.encode(req) == msgpack_numpy.packb(req)
    back = codec.decode(msgpack_numpy.packb(req))
    assert np.array_equal(back["img"], req["img"]) and back["img"].flags.owndata and back["img"].flags.writeable
    assert back["nested"]["b"] == np.float64(0.5) and back["episode/seed"].dtype == np.uint64


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_codec_refuses_each_crafted_frame_in_one_sentence(name):
    frame, sentence = CRAFTED[name]
    with pytest.raises(codec.FrameError, match=sentence.replace("(", r"\(").replace(")", r"\)")) as err:
        codec.decode(frame)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("frame, sentence", [
    (msgpack.packb({"x": array("<c16", [1], b"\x00" * 16)}), "dtype '<c16' is not allowed"),
    (msgpack.packb({"x": array("(2,)f8", [1], b"\x00" * 16)}), "is not allowed"),
    (msgpack.packb({"x": array("<f4", [-1], b"")}), "non-negative integers"),
    (msgpack.packb({"x": array("<f4", [1] * 9, b"\x00" * 4)}), "at most 8"),
    (msgpack.packb({"x": {b"__ndarray__": True, b"data": "text", b"dtype": "<f4", b"shape": [1]}}), "binary"),
    (msgpack.packb({"x": {b"__npgeneric__": True, b"data": 300, b"dtype": "|u1"}}), "does not fit"),
    (msgpack.packb({"x": {b"__npgeneric__": True, b"data": b"x", b"dtype": "|O"}}), "is not allowed"),
    (msgpack.packb([1]) + b"\x01", "bytes after its message"),
    (msgpack.packb([[0] * 60_000, [0] * 60_000]), "more than 100000"),
    (b"\xc1", "not a valid msgpack frame"),
])
def test_codec_refuses_other_malformed_frames(frame, sentence):
    with pytest.raises(codec.FrameError, match=sentence):
        codec.decode(frame)


def test_codec_refuses_non_map_requests_and_unsendable_values():
    with pytest.raises(codec.FrameError, match="must be a msgpack map"):
        codec.decode_dict(msgpack.packb([1, 2]), what="request")
    with pytest.raises(codec.FrameError, match="keys must be strings"):
        codec.decode_dict(msgpack.packb({b"k": 1}))
    with pytest.raises(codec.FrameError, match="cannot send numpy dtype object"):
        codec.encode({"x": np.array([object()])})


def _ws_handshake(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 101")
    return sock


def _declare_huge_frame(port: int) -> int:
    """A binary frame whose header declares 2 GiB; returns the server's close code."""
    sock = _ws_handshake(port)
    try:
        sock.sendall(b"\x82" + bytes([0x80 | 127]) + struct.pack(">Q", 2 * 1024**3) + b"\x00\x00\x00\x00" + b"x" * 64)
        data = b""

        def closed() -> bool:  # read until the server closes the connection
            nonlocal data
            try:
                chunk = sock.recv(65536)
            except (ConnectionResetError, TimeoutError):
                return True
            data += chunk
            return not chunk

        wait_until(closed, 10, poll=0)
        # skip the metadata frame, find the close frame (opcode 0x8) and read its code
        i = 0
        while i + 2 <= len(data):
            opcode, n = data[i] & 0x0F, data[i + 1] & 0x7F
            j = i + 2
            if n == 126:
                n, j = struct.unpack(">H", data[j:j + 2])[0], j + 2
            elif n == 127:
                n, j = struct.unpack(">Q", data[j:j + 8])[0], j + 8
            if opcode == 0x8:
                return struct.unpack(">H", data[j:j + 2])[0]
            i = j + n
        return -1
    finally:
        sock.close()


def _peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_crafted_frames_close_only_their_own_connection_and_the_server_keeps_serving():
    port = servers.free_port()
    proc = servers.start_server("blockenv_oracle", port)
    answered, failures = [], []
    stop = threading.Event()

    def good_client():
        remote = RemotePolicy(f"ws://127.0.0.1:{port}", connect_timeout=5, request_timeout=10)
        while not stop.is_set():
            try:
                answered.append(remote.infer(blockenv_request())["actions"].shape)
            except PolicyUnavailable as exc:
                failures.append(str(exc))
            time.sleep(0.01)  # a client's pace: a request every 10 ms or so
        remote.close()

    watcher = threading.Thread(target=good_client, daemon=True)
    try:
        watcher.start()
        assert wait_until(lambda: answered, 30), failures  # the other client is being served
        codes = {}
        for name, (frame, _) in CRAFTED.items():
            before = len(answered)
            with connect(f"ws://127.0.0.1:{port}", compression=None, max_size=None) as ws:
                ws.recv(timeout=10)  # metadata
                ws.send(frame)
                assert ws.recv(timeout=20).startswith("FrameError: "), name
                with pytest.raises(ConnectionClosed):
                    ws.recv(timeout=10)
                codes[name] = ws.close_code
            wait_until(lambda b=before: len(answered) > b, 5)
            assert len(answered) > before, f"the other client got no answer while '{name}' was refused"
        codes["2 GiB declared frame"] = _declare_huge_frame(port)  # returns once the server closed it
        n = len(answered)
        wait_until(lambda: len(answered) > n, 5)
        assert len(answered) > n
        assert proc.poll() is None, "the server died"
        peak = _peak_rss_mb(proc.pid)
    finally:
        stop.set()
        watcher.join(10)
        servers.stop(proc)
    log = proc.output()
    assert failures == [], failures
    assert codes.pop("2 GiB declared frame") == 1009
    assert set(codes.values()) == {1007}, codes
    refusals = [line for line in log.splitlines() if "its connection is closed" in line]
    assert len(refusals) == len(CRAFTED) + 1, log[-3000:]
    for name, (_, sentence) in CRAFTED.items():
        assert sum(sentence in line for line in refusals) == 1, name
    assert "Traceback" not in log
    assert peak < 400, f"the server peaked at {peak:.0f} MB"  # bench/wire_bench.py documents the bound


@pytest.mark.realtime  # bound to the wall clock: the deadline and how soon it is noticed
def test_a_hung_server_becomes_policy_unavailable_within_the_deadline():
    class Never:
        def infer(self, obs):
            return {"actions": np.zeros((1, 3))}

    with OpenpiStyleServer(Never(), hang=True) as srv:
        remote = RemotePolicy(f"ws://127.0.0.1:{srv.port}", connect_timeout=5, request_timeout=0.5)
        t0 = time.monotonic()
        with pytest.raises(PolicyUnavailable, match=r"did not answer within 0\.5 s"):
            remote.infer(blockenv_request())
        assert time.monotonic() - t0 < 3
        assert not remote.connected  # a late reply can never answer the next request


@pytest.mark.parametrize("name", ["object dtype", "shape larger than the buffer"])
def test_a_hostile_reply_is_refused_by_the_client(name):
    class Never:
        def infer(self, obs):
            return {}

    with OpenpiStyleServer(Never(), reply=CRAFTED[name][0]) as srv:
        remote = RemotePolicy(f"ws://127.0.0.1:{srv.port}", connect_timeout=5)
        with pytest.raises(PolicyUnavailable, match="malformed reply"):
            remote.infer(blockenv_request())


def test_indgen_client_talks_to_an_openpi_server():
    class Doubler:
        def infer(self, obs):
            if "boom" in obs:
                raise ValueError("model exploded")
            return {"actions": np.tile(obs["state"][None], (15, 1)) * 2}

    with OpenpiStyleServer(Doubler(), metadata={"policy": "pi05_droid"}) as srv:
        remote = RemotePolicy(f"ws://127.0.0.1:{srv.port}", connect_timeout=5)
        assert remote.connect() == {"policy": "pi05_droid"}
        state = np.arange(8, dtype=np.float32)
        for _ in range(2):
            reply = remote.infer({"state": state, "prompt": "x", "img": np.zeros((224, 224, 3), np.uint8)})
        assert reply["actions"].shape == (15, 8) and np.array_equal(reply["actions"][3], state * 2)
        assert "prev_total_ms" in reply["server_timing"]
        with pytest.raises(PolicyUnavailable, match="the policy server failed: ValueError: model exploded"):
            remote.infer({"boom": np.int64(1)})
        assert remote.infer({"state": state})["actions"].shape == (15, 8)  # reconnected


def test_openpi_client_talks_to_indgen_serve_policy():
    port = servers.free_port()
    proc = servers.start_server("blockenv_oracle", port)
    try:
        client = WebsocketClientPolicy("127.0.0.1", port)
        assert client.get_server_metadata()["policy"] == "blockenv_oracle"
        reply = client.infer(blockenv_request())
        assert reply["actions"].shape == (1, 3) and "infer_ms" in reply["server_timing"]
    finally:
        servers.stop(proc)


def test_error_replies_carry_type_and_message_and_the_traceback_only_with_debug():
    for debug in (False, True):
        port = servers.free_port()
        proc = servers.start_server("blockenv_oracle", port, *(["--debug"] if debug else []))
        try:
            with connect(f"ws://127.0.0.1:{port}", compression=None) as ws:
                ws.recv(timeout=10)
                ws.send(msgpack_numpy.packb({"prompt": "no grid"}))
                text = ws.recv(timeout=10)
                with pytest.raises(ConnectionClosed):
                    ws.recv(timeout=10)
                assert ws.close_code == 1011
        finally:
            servers.stop(proc)
        assert ("Traceback" in text) is debug
        assert "KeyError: 'episode/seed'" in text


def test_connection_cap_and_api_key(tmp_path, monkeypatch):
    port = servers.free_port()
    keyfile = tmp_path / "key"
    keyfile.write_text("s3cret\n")
    proc = servers.start_server("blockenv_oracle", port, "--api-key-file", str(keyfile), "--max-connections", "2")
    try:
        # a wrong key is final at once (no retry makes it right): the sentence comes long before
        # the deadline, which is generous so that a loaded machine still sees the server's answer
        wrong = RemotePolicy(f"ws://127.0.0.1:{port}", api_key="wrong", connect_timeout=60, backoff=(30.0, 30.0))
        with pytest.raises(PolicyUnavailable, match=r"rejected the API key.*401"):
            wrong.connect()
        first, second = (RemotePolicy(f"ws://127.0.0.1:{port}", api_key="s3cret", connect_timeout=10)
                         for _ in range(2))
        first.connect(), second.connect()
        # a full server is retried until the deadline, and the sentence names its answer, not
        # the last try that the deadline cut short
        with pytest.raises(PolicyUnavailable, match="503"):
            RemotePolicy(f"ws://127.0.0.1:{port}", api_key="s3cret", connect_timeout=3).connect()
        assert first.infer(blockenv_request())["actions"].shape == (1, 3)
        second.close()  # its slot is free once the server has seen it go: a connect retries a 503 until then
        monkeypatch.setenv("INDGEN_POLICY_API_KEY", "s3cret")
        from indgen_core.wire.client import read_api_key

        third = RemotePolicy(f"ws://127.0.0.1:{port}", api_key=read_api_key(), connect_timeout=5)
        assert third.infer(blockenv_request())["actions"].shape == (1, 3)
    finally:
        servers.stop(proc)


def test_the_key_is_never_taken_from_the_command_line_and_an_open_server_warns(caplog):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "serve-policy", "blockenv_oracle", "--api-key",
                           "s3cret"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "never given on the command line" in proc.stderr
    from indgen_core.wire.server import PolicyServer

    with caplog.at_level("WARNING", logger="indgen.serve"):
        PolicyServer(lambda: None, host="0.0.0.0", port=0)  # constructed, never bound
    assert "without an API key" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="indgen.serve"):
        PolicyServer(lambda: None, host="127.0.0.1", port=0)
        PolicyServer(lambda: None, host="0.0.0.0", port=0, api_key="k")
    assert caplog.text == ""


def test_sigterm_while_a_client_is_served_ends_the_server_cleanly_every_time():
    """SIGTERM (a launcher's or a cluster's stop) while requests are in flight: exit 143 with
    `indgen: terminated` and no traceback, however the signal falls. The handler that raises
    wherever the program is landed it inside a connection's task now and then, and asyncio
    printed that task's traceback."""
    for attempt in range(8):
        port = servers.free_port()
        proc = servers.start_server("blockenv_random_legal", port)
        stop = threading.Event()
        answered = []

        def client(port=port, stop=stop, answered=answered):
            remote = RemotePolicy(f"ws://127.0.0.1:{port}", connect_timeout=5, request_timeout=5)
            try:
                while not stop.is_set():
                    answered.append(remote.infer(blockenv_request())["actions"].shape)
            except PolicyUnavailable:
                pass  # the server went away: what this test does to it
            finally:
                remote.close()

        clients = [threading.Thread(target=client, daemon=True) for _ in range(4)]
        for thread in clients:
            thread.start()
        try:
            assert wait_until(lambda a=answered, more=13 * attempt: len(a) > 40 + more, 30)
            proc.terminate()
            assert proc.wait(10) == 143, proc.output()[-3000:]
        finally:
            stop.set()
            for thread in clients:
                thread.join(10)
            servers.stop(proc)
        log = proc.output()
        assert "indgen: terminated" in log and "Traceback" not in log, log[-3000:]
