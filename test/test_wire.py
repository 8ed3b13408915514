"""The policy server speaks openpi's protocol: checked with openpi-client itself."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import urllib.request
from typing import ClassVar

import numpy as np
import pytest
from openpi_client import msgpack_numpy
from openpi_client.websocket_client_policy import WebsocketClientPolicy
from websockets.exceptions import ConnectionClosed

from helpers.servers import free_port
from indgen_core.episode import PolicyUnavailable
from indgen_core.policy import Policy
from indgen_core.wire.client import RemotePolicy
from indgen_core.wire.server import PolicyServer


class Echo(Policy):
    metadata: ClassVar[dict] = {"policy": "echo", "chunk": 4}

    def infer(self, obs):
        if "boom" in obs:
            raise ValueError("the policy exploded")
        return {"actions": np.tile(obs["state"][None], (4, 1)) * 2, "echo": obs["prompt"]}


@contextlib.contextmanager
def serving(api_key=None):
    """Our PolicyServer on a free port, in a background event loop."""
    port = free_port()
    srv = PolicyServer(Echo, port=port, api_key=api_key)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    task = {}

    def run():
        asyncio.set_event_loop(loop)
        task["t"] = loop.create_task(srv.serve_forever(lambda p: started.set()))
        with contextlib.suppress(asyncio.CancelledError):
            loop.run_until_complete(task["t"])

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(10)
    try:
        yield srv, port
    finally:
        loop.call_soon_threadsafe(task["t"].cancel)
        thread.join(5)


@pytest.fixture
def server():
    with serving() as pair:
        yield pair


def test_metadata_frame_actions_and_timing(server):
    srv, port = server
    client = WebsocketClientPolicy("127.0.0.1", port)
    assert client.get_server_metadata() == {"policy": "echo", "chunk": 4}
    state = np.arange(8, dtype=np.float32)
    image = np.zeros((224, 224, 3), dtype=np.uint8)
    for _ in range(2):
        reply = client.infer({"state": state, "observation/image": image, "prompt": "pick up the cup"})
    assert reply["actions"].shape == (4, 8) and reply["actions"].dtype == np.float32
    assert np.array_equal(reply["actions"][2], state * 2)
    assert reply["echo"] == "pick up the cup"
    assert reply["server_timing"]["infer_ms"] >= 0 and "prev_total_ms" in reply["server_timing"]
    assert "infer_ms" in reply["policy_timing"]
    assert srv.requests == 2


def test_error_sends_traceback_text_and_closes_1011(server):
    _, port = server
    client = WebsocketClientPolicy("127.0.0.1", port)
    with pytest.raises(RuntimeError, match="the policy exploded"):
        client.infer({"boom": 1})
    with pytest.raises(ConnectionClosed):
        client._ws.recv(timeout=5)
    assert client._ws.close_code == 1011


def test_healthz_and_api_key():
    with serving(api_key="s3cret") as (_, port):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
            assert r.status == 200 and r.read() == b"OK\n"
        with pytest.raises(Exception, match="401"):
            WebsocketClientPolicy("127.0.0.1", port)
        ok = WebsocketClientPolicy("127.0.0.1", port, api_key="s3cret")
        assert ok.get_server_metadata()["policy"] == "echo"


def test_frames_are_openpi_msgpack():
    arr = np.arange(6, dtype=np.int64).reshape(2, 3)
    packed = msgpack_numpy.packb({"a": arr})
    assert msgpack_numpy.unpackb(packed)["a"].tolist() == arr.tolist()


def test_remote_policy_reports_unavailable_and_reconnects(server):
    _, port = server
    remote = RemotePolicy(f"ws://127.0.0.1:{port}", connect_timeout=2)
    reply = remote.infer({"state": np.ones(2, dtype=np.float32), "prompt": "x"})
    assert reply["actions"].shape == (4, 2)
    with pytest.raises(PolicyUnavailable, match="the policy server failed: ValueError: the policy exploded"):
        remote.infer({"boom": 1})
    assert not remote.connected
    assert remote.infer({"state": np.ones(2, dtype=np.float32), "prompt": "x"})["echo"] == "x"  # reconnected
    assert remote.connects == 2
    nobody = RemotePolicy(f"ws://127.0.0.1:{free_port()}", connect_timeout=0.5)
    with pytest.raises(PolicyUnavailable, match="cannot reach the policy server"):
        nobody.infer({"prompt": "x"})
