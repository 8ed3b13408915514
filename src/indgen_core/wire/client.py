"""The client side of openpi's websocket protocol, with what a robot needs around it.

openpi-client's WebsocketClientPolicy decodes server replies with a decoder that trusts the
peer, has no receive deadline (a hung server blocks the caller forever) and raises different
exceptions for a lost server, a server-side error and a closed socket. RemotePolicy speaks the
same frames through IndGen's codec (every reply decoded as hostile input), gives every reply
a deadline, and turns every failure into one PolicyUnavailable: the trial is aborted, never
failed. The connection is closed on any failure, so a late reply can never answer a later
request; the next request reconnects with backoff.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from indgen_core.episode import PolicyUnavailable
from indgen_core.errors import IndGenError
from indgen_core.policy import Policy
from indgen_core.wire import codec

if TYPE_CHECKING:
    from websockets.sync.client import ClientConnection

API_KEY_ENV = "INDGEN_POLICY_API_KEY"


def read_api_key(path: str | Path | None = None) -> str | None:
    """The API key from a file (first line) or else $INDGEN_POLICY_API_KEY; never from a
    command line, where every user of the machine can read it."""
    if path:
        try:
            key = Path(path).read_text(encoding="utf-8").strip().splitlines()
        except OSError as exc:
            raise IndGenError(f"cannot read the API key file {path}: {exc.strerror or exc}") from None
        if not key or not key[0].strip():
            raise IndGenError(f"the API key file {path} is empty")
        return key[0].strip()
    return os.environ.get(API_KEY_ENV) or None


@dataclass(frozen=True)
class Exchange:
    """One request and its reply as they crossed the wire, with the client's round trip and
    the server's own inference time (server_timing.infer_ms; -1 when it sent none)."""

    request: bytes
    reply: bytes
    round_trip_ms: float
    server_infer_ms: float


def _server_ms(reply: dict[str, Any]) -> float:
    timing = reply.get("server_timing")
    sent: Any = timing.get("infer_ms") if isinstance(timing, dict) else None
    try:
        value = float(sent)
    except (TypeError, ValueError):
        return -1.0
    return value if math.isfinite(value) and value >= 0 else -1.0


class RemotePolicy(Policy):
    def __init__(
        self,
        uri: str,
        api_key: str | None = None,
        connect_timeout: float = 10.0,
        request_timeout: float = 30.0,
        backoff: tuple[float, float] = (0.2, 5.0),
        limits: codec.Limits = codec.DEFAULT_LIMITS,
    ):
        self.uri = uri if uri.startswith("ws") else f"ws://{uri}"
        self.api_key = api_key
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.backoff = backoff
        self.limits = limits
        self._ws: ClientConnection | None = None
        self.metadata: dict[str, Any] = {}
        self.connects = 0
        self.last_exchange: Exchange | None = None

    @property
    def connected(self) -> bool:
        return self._ws is not None

    def alive(self) -> bool:
        """Whether the connection is still open: a server that died between requests is
        noticed here (its socket closed), without waiting for the next request to fail."""
        from websockets.protocol import State

        ws = self._ws
        return ws is not None and ws.protocol.state is State.OPEN

    def _open(self, timeout: float) -> tuple[ClientConnection, dict[str, Any]]:
        from websockets.sync.client import connect

        headers = {"Authorization": f"Api-Key {self.api_key}"} if self.api_key else None
        ws = connect(
            self.uri,
            compression=None,
            max_size=self.limits.max_frame_bytes,
            additional_headers=headers,
            open_timeout=timeout,
            close_timeout=1.0,
            max_queue=2,
        )
        try:
            frame = ws.recv(timeout=timeout)
            if isinstance(frame, str):
                raise PolicyUnavailable(f"the policy server at {self.uri} refused the connection: {_last_line(frame)}")
            metadata = codec.decode_dict(frame, self.limits, "metadata frame")
        except BaseException:
            with contextlib.suppress(Exception):
                ws.close()
            raise
        return ws, metadata

    def connect(self, timeout: float | None = None) -> dict[str, Any]:
        """Connect (retrying refused and busy connections with exponential backoff) and return
        the server's metadata; PolicyUnavailable when `timeout` passes first, naming the
        server's last answer (a 503) over a last try cut short by the deadline. A rejected API
        key is final at once: no retry makes a wrong key right."""
        from websockets.exceptions import InvalidStatus

        timeout = self.connect_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        delay = self.backoff[0]
        answer: str | None = None
        while True:
            self.close()
            try:
                self._ws, self.metadata = self._open(max(deadline - time.monotonic(), 0.1))
                self.connects += 1
                return self.metadata
            except Exception as exc:  # refused, reset, handshake rejected (401, 503), DNS, bad metadata
                reason = _reason(exc)
                if isinstance(exc, InvalidStatus):
                    if exc.response.status_code in (401, 403):
                        raise PolicyUnavailable(
                            f"the policy server at {self.uri} rejected the API key: {reason}"
                        ) from None
                    answer = reason
                if time.monotonic() + delay > deadline:
                    if answer and answer != reason:
                        reason = f"{answer} (the last try: {reason})"
                    raise PolicyUnavailable(f"cannot reach the policy server at {self.uri}: {reason}") from None
                time.sleep(delay)
                delay = min(delay * 2, self.backoff[1])

    def _connection(self) -> ClientConnection:
        """The open connection; only asked for after connect(), which connects or raises."""
        assert self._ws is not None, "not connected"
        return self._ws

    def close(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                self._ws.close()
            self._ws = None

    def infer(self, obs: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        try:
            data = codec.encode(obs)
        except codec.FrameError as exc:
            raise PolicyUnavailable(f"the request cannot be sent: {exc}") from None
        return self.infer_frame(data, timeout)

    def infer_frame(self, data: bytes, timeout: float | None = None) -> dict[str, Any]:
        """One request already encoded: a recorded one, sent again byte for byte (`indgen bag
        replay`). The exchange is kept in last_exchange for the recorder. `timeout` replaces
        request_timeout for this request (a warm-up compiles for longer)."""
        if self._ws is None:
            self.connect()
        timeout = self.request_timeout if timeout is None else timeout
        start = time.monotonic()
        try:
            self._connection().send(data)
            frame = self._connection().recv(timeout=timeout)
        except TimeoutError:
            self.close()
            raise PolicyUnavailable(f"the policy server at {self.uri} did not answer within {timeout:g} s") from None
        except Exception as exc:  # connection closed or reset mid-request
            self.close()
            raise PolicyUnavailable(f"lost the policy server at {self.uri}: {_reason(exc)}") from None
        round_trip_ms = (time.monotonic() - start) * 1000
        if isinstance(frame, str):  # openpi: the server's error text, then close 1011
            self.close()
            raise PolicyUnavailable(f"the policy server failed: {_last_line(frame)}")
        try:
            reply = codec.decode_dict(frame, self.limits, "reply")
        except codec.FrameError as exc:
            self.close()
            raise PolicyUnavailable(f"the policy server sent a malformed reply: {exc}") from None
        self.last_exchange = Exchange(data, frame, round_trip_ms, _server_ms(reply))
        return reply

    def reset(self) -> None:
        """openpi's client does nothing here either: a server keeps no episode state beyond
        the connection, and stateful local policies restart on episode/step 0."""


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else "unknown error"


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{exc.__class__.__name__}: {text[:200]}" if text else exc.__class__.__name__
