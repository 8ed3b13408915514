"""`indgen serve-policy NAME`: serve a local policy over openpi's websocket protocol, so the
policy node (or any openpi client) cannot tell it from a pi0.5 server on a GPU host.

Each connection gets its own policy instance from the factory (a stateful policy keeps one
episode's history per client); loading is done once by the factory where it can be.
"""

from __future__ import annotations

import asyncio
import http
import logging
import time
import traceback
from collections.abc import Callable
from typing import Any

from openpi_client import msgpack_numpy
from websockets.asyncio import server as ws_server
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from indgen_core.policy import Policy

log = logging.getLogger("indgen.serve")


class PolicyServer:
    def __init__(self, factory: Callable[[], Policy], host: str = "127.0.0.1", port: int = 8000,
                 api_key: str | None = None, metadata: dict[str, Any] | None = None):
        self.factory = factory
        self.host, self.port = host, port
        self.api_key = api_key
        self.metadata = metadata
        self.requests = 0
        self._server: ws_server.Server | None = None

    def _process_request(self, connection, request):
        if request.path == "/healthz":
            return connection.respond(http.HTTPStatus.OK, "OK\n")
        if self.api_key and request.headers.get("Authorization") != f"Api-Key {self.api_key}":
            return connection.respond(http.HTTPStatus.UNAUTHORIZED, "missing or wrong API key\n")
        return None

    async def _handle(self, websocket) -> None:
        peer = websocket.remote_address
        log.info("client connected: %s", peer)
        packer = msgpack_numpy.Packer()
        try:
            policy = await asyncio.to_thread(self.factory)
            metadata = self.metadata if self.metadata is not None else dict(getattr(policy, "metadata", {}) or {})
            await websocket.send(packer.pack(metadata))
        except Exception:
            await self._fail(websocket)
            return
        prev_total_ms = None
        while True:
            try:
                start = time.monotonic()
                obs = msgpack_numpy.unpackb(await websocket.recv())
                infer_start = time.monotonic()
                reply = await asyncio.to_thread(policy.infer, obs)
                infer_ms = (time.monotonic() - infer_start) * 1000
                reply = dict(reply)
                reply.setdefault("policy_timing", {"infer_ms": infer_ms})
                reply["server_timing"] = {"infer_ms": infer_ms}
                if prev_total_ms is not None:
                    reply["server_timing"]["prev_total_ms"] = prev_total_ms
                self.requests += 1
                await websocket.send(packer.pack(reply))
                prev_total_ms = (time.monotonic() - start) * 1000
            except ConnectionClosed:
                log.info("client disconnected: %s", peer)
                return
            except Exception:
                await self._fail(websocket)
                return

    @staticmethod
    async def _fail(websocket) -> None:
        text = traceback.format_exc()
        log.error("policy error, closing the connection:\n%s", text)
        try:
            await websocket.send(text)
            await websocket.close(code=CloseCode.INTERNAL_ERROR,
                                  reason="Internal server error. Traceback included in previous frame.")
        except ConnectionClosed:
            pass

    async def serve_forever(self, ready: Callable[[int], None] | None = None) -> None:
        async with ws_server.serve(self._handle, self.host, self.port, compression=None, max_size=None,
                                   process_request=self._process_request) as server:
            self._server = server
            self.port = server.sockets[0].getsockname()[1]
            if ready:
                ready(self.port)
            await server.serve_forever()
