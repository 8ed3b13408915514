"""A stand-in for openpi's own server (openpi/serving/websocket_policy_server.py), written
from its source for the interoperability tests: openpi itself (JAX, model weights) does not
install here. It uses openpi-client's msgpack_numpy codec, exactly as openpi's server does,
so IndGen's client is tested against openpi's frames, not against IndGen's own."""

from __future__ import annotations

import asyncio
import contextlib
import http
import threading
import time
import traceback

from openpi_client import msgpack_numpy
from websockets.asyncio import server as ws_server
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode


class OpenpiStyleServer:
    """Serves `policy` (an object with infer(obs) -> dict) the way openpi does; `hang=True`
    sends the metadata and then never answers (a hung GPU server)."""

    def __init__(self, policy, metadata=None, hang: bool = False, reply=None):
        self.policy, self.metadata, self.hang, self.reply = policy, metadata or {}, hang, reply
        self.port = None
        self._loop = asyncio.new_event_loop()
        self._task = None

    async def _handler(self, websocket):
        packer = msgpack_numpy.Packer()
        await websocket.send(packer.pack(self.metadata))
        prev_total_time = None
        while True:
            try:
                start_time = time.monotonic()
                frame = await websocket.recv()
                if self.hang:
                    await asyncio.sleep(3600)
                if self.reply is not None:  # a raw frame, e.g. a hostile reply
                    await websocket.send(self.reply)
                    continue
                obs = msgpack_numpy.unpackb(frame)
                infer_time = time.monotonic()
                action = self.policy.infer(obs)
                infer_time = time.monotonic() - infer_time
                action["server_timing"] = {"infer_ms": infer_time * 1000}
                if prev_total_time is not None:
                    action["server_timing"]["prev_total_ms"] = prev_total_time * 1000
                await websocket.send(packer.pack(action))
                prev_total_time = time.monotonic() - start_time
            except ConnectionClosed:
                break
            except Exception:
                await websocket.send(traceback.format_exc())
                await websocket.close(code=CloseCode.INTERNAL_ERROR,
                                      reason="Internal server error. Traceback included in previous frame.")
                raise

    @staticmethod
    def _health(connection, request):
        if request.path == "/healthz":
            return connection.respond(http.HTTPStatus.OK, "OK\n")
        return None

    async def _run(self, started):
        async with ws_server.serve(self._handler, "127.0.0.1", 0, compression=None, max_size=None,
                                   process_request=self._health) as server:
            self.port = server.sockets[0].getsockname()[1]
            started.set()
            await server.serve_forever()

    def __enter__(self):
        started = threading.Event()

        def run():
            asyncio.set_event_loop(self._loop)
            self._task = self._loop.create_task(self._run(started))
            with contextlib.suppress(asyncio.CancelledError, Exception):
                self._loop.run_until_complete(self._task)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        assert started.wait(10)
        return self

    def __exit__(self, *exc):
        self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(5)
