"""`indgen serve-policy NAME`: serve a local policy over openpi's websocket protocol, so the
policy node (or any openpi client) cannot tell it from a pi0.5 server on a GPU host.

Each connection gets its own policy instance from the factory (a stateful policy keeps one
episode's history per client). Every frame from a client is hostile input: it is decoded by
IndGen's codec (numeric dtypes only, shapes checked, bounded expansion) on a small thread
pool, never on the event loop, so one client's frame can neither crash the process nor stall
the others. A malformed frame closes only its own connection (close code 1007, one log line);
a frame over `Limits.max_frame_bytes` is refused by the websocket layer before it is read
(close code 1009); past `max_connections` clients a new one is refused (HTTP 503).

Differences from openpi's server, all on the error path: error replies carry the error's type
and message (the traceback only with debug=True), and a client's decoding error closes with
1007 instead of 1011.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hmac
import http
import ipaddress
import logging
import time
import traceback
from collections.abc import Callable
from typing import Any

from websockets.asyncio import server as ws_server
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from indgen_core.policy import Policy
from indgen_core.specs import WARMUP_KEY
from indgen_core.wire import codec

log = logging.getLogger("indgen.serve")


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class PolicyServer:
    def __init__(
        self,
        factory: Callable[[], Policy],
        host: str = "127.0.0.1",
        port: int = 8000,
        api_key: str | None = None,
        metadata: dict[str, Any] | None = None,
        limits: codec.Limits = codec.DEFAULT_LIMITS,
        max_connections: int = 8,
        debug: bool = False,
        record_requests: str | None = None,
    ):
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {max_connections}")
        self.factory = factory
        self.host, self.port = host, port
        self.api_key = api_key
        self.metadata = metadata
        self.limits = limits
        self.max_connections = max_connections
        self.debug = debug
        self.record_requests = record_requests
        self.requests = 0
        self.refused_frames = 0
        self.active = 0
        # decoding and encoding run here: off the event loop, at most two frames at a time,
        # so memory for frames being decoded is bounded whatever the number of clients
        self._codec_pool = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="codec")
        self._server: ws_server.Server | None = None
        if not is_loopback(host) and not api_key:
            log.warning(
                "listening on %s without an API key: anyone who can reach this port can drive the "
                "policy; set INDGEN_POLICY_API_KEY or --api-key-file, or keep it on loopback",
                host,
            )

    def _authorized(self, header: str | None) -> bool:
        expected = f"Api-Key {self.api_key}".encode()
        return hmac.compare_digest((header or "").encode(), expected)

    def _process_request(self, connection, request):
        if request.path == "/healthz":
            return connection.respond(http.HTTPStatus.OK, "OK\n")
        if self.api_key and not self._authorized(request.headers.get("Authorization")):
            return connection.respond(http.HTTPStatus.UNAUTHORIZED, "missing or wrong API key\n")
        if self.active >= self.max_connections:
            log.warning("refused a client from %s: already %d connections", connection.remote_address, self.active)
            return connection.respond(
                http.HTTPStatus.SERVICE_UNAVAILABLE,
                f"busy: {self.active} clients connected (limit {self.max_connections})\n",
            )
        return None

    async def _in_pool(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self._codec_pool, fn, *args)

    async def _handle(self, websocket) -> None:
        peer = _peer(websocket)
        if self.active >= self.max_connections:  # two handshakes raced past _process_request
            await websocket.close(code=CloseCode.TRY_AGAIN_LATER, reason="too many connections")
            return
        self.active += 1
        try:
            await self._serve_client(websocket, peer)
        finally:
            self.active -= 1

    async def _serve_client(self, websocket, peer: str) -> None:
        log.info("client connected: %s", peer)
        try:
            policy = await asyncio.to_thread(self.factory)
            metadata = self.metadata if self.metadata is not None else dict(getattr(policy, "metadata", {}) or {})
            await websocket.send(await self._in_pool(codec.encode, metadata))
        except ConnectionClosed as exc:
            self._closed(exc, peer)
            return
        except Exception as exc:
            await self._fail(websocket, peer, exc)
            return
        prev_total_ms = None
        while True:
            try:
                frame = await websocket.recv()
                start = time.monotonic()
                obs = await self._in_pool(codec.decode_dict, frame, self.limits, "request")
                infer_start = time.monotonic()
                reply: dict[str, Any]
                if obs.get(WARMUP_KEY) is not None:  # the policy node's warm-up: a local policy needs none
                    reply = {"warmup": True}
                else:
                    if self.record_requests:
                        await self._in_pool(_record, self.record_requests, obs)
                    infer_start = time.monotonic()
                    reply = await asyncio.to_thread(policy.infer, obs)
                infer_ms = (time.monotonic() - infer_start) * 1000
                reply = dict(reply)
                reply.setdefault("policy_timing", {"infer_ms": infer_ms})
                reply["server_timing"] = {"infer_ms": infer_ms}
                if prev_total_ms is not None:
                    reply["server_timing"]["prev_total_ms"] = prev_total_ms
                data = await self._in_pool(codec.encode, reply)
                self.requests += 1
                await websocket.send(data)
                prev_total_ms = (time.monotonic() - start) * 1000
            except ConnectionClosed as exc:
                self._closed(exc, peer)
                return
            except codec.FrameError as exc:
                self.refused_frames += 1
                log.warning("client %s sent a malformed request (%s); its connection is closed", peer, exc)
                await _close(websocket, f"FrameError: {exc}", CloseCode.INVALID_DATA, "malformed request")
                return
            except Exception as exc:
                await self._fail(websocket, peer, exc)
                return

    def _closed(self, exc: ConnectionClosed, peer: str) -> None:
        if exc.sent is not None and exc.sent.code == CloseCode.MESSAGE_TOO_BIG:
            self.refused_frames += 1
            log.warning(
                "client %s sent a frame over %d bytes; its connection is closed (1009)",
                peer,
                self.limits.max_frame_bytes,
            )
        else:
            log.info("client disconnected: %s", peer)

    async def _fail(self, websocket, peer: str, exc: BaseException) -> None:
        text = f"{exc.__class__.__name__}: {exc}"
        if self.debug:
            text = traceback.format_exc()
            log.error("policy error for %s, closing its connection:\n%s", peer, text)
        else:
            log.error("policy error for %s, closing its connection: %s", peer, text)
        await _close(
            websocket, text, CloseCode.INTERNAL_ERROR, "Internal server error. Error included in previous frame."
        )

    async def serve_forever(self, ready: Callable[[int], None] | None = None) -> None:
        async with ws_server.serve(
            self._handle,
            self.host,
            self.port,
            compression=None,
            max_size=self.limits.max_frame_bytes,
            max_queue=2,
            process_request=self._process_request,
        ) as server:
            self._server = server
            self.port = server.sockets[0].getsockname()[1]
            if ready:
                ready(self.port)
            try:
                await server.serve_forever()
            finally:
                self._codec_pool.shutdown(wait=False, cancel_futures=True)


async def _close(websocket, text: str, code: CloseCode, reason: str) -> None:
    try:
        await websocket.send(text)
        await websocket.close(code=code, reason=reason)
    except ConnectionClosed:
        pass


def _peer(websocket) -> str:
    address = websocket.remote_address
    return f"{address[0]}:{address[1]}" if isinstance(address, tuple) and len(address) >= 2 else str(address)


def _record(path: str, obs: dict[str, Any]) -> None:
    """One JSON line per request: each key's dtype and shape (strings: their type), for
    checking on the server side what a client really sent."""
    import json

    import numpy as np

    summary = {
        k: [v.dtype.str, list(v.shape)] if isinstance(v, np.ndarray | np.generic) else type(v).__name__
        for k, v in obs.items()
    }
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(
            json.dumps(
                {
                    "at": time.time(),
                    "keys": summary,
                    "prompt": obs.get("prompt", "") if isinstance(obs.get("prompt"), str) else "",
                }
            )
            + "\n"
        )
