"""The client side: openpi-client's WebsocketClientPolicy, with what a robot needs around it.

openpi-client does not retry a refused connection and raises different exceptions for a lost
server, a server-side error and a closed socket. RemotePolicy turns all of them into one
PolicyUnavailable (the trial is aborted, never failed), reconnects with backoff on the next
request, and never returns a reply it could not decode.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from indgen_core.episode import PolicyUnavailable
from indgen_core.errors import require
from indgen_core.policy import Policy

log = logging.getLogger("indgen.policy_client")


class RemotePolicy(Policy):
    def __init__(self, uri: str, api_key: str | None = None, connect_timeout: float = 10.0,
                 backoff: tuple[float, float] = (0.2, 5.0)):
        self.uri = uri if uri.startswith("ws") else f"ws://{uri}"
        self.api_key = api_key
        self.connect_timeout = connect_timeout
        self.backoff = backoff
        self._client = None
        self.metadata: dict[str, Any] = {}
        self.connects = 0

    @property
    def connected(self) -> bool:
        return self._client is not None

    def connect(self, timeout: float | None = None) -> dict[str, Any]:
        """Connect (retrying refused connections with exponential backoff) and return the
        server's metadata; PolicyUnavailable when `timeout` passes first."""
        wcp = require("openpi_client.websocket_client_policy", "all", "talking to a policy server")
        timeout = self.connect_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        delay = self.backoff[0]
        last: Exception | None = None
        while True:
            try:
                self._client = wcp.WebsocketClientPolicy(self.uri, api_key=self.api_key)
                self.metadata = dict(self._client.get_server_metadata() or {})
                self.connects += 1
                return self.metadata
            except Exception as exc:  # refused, reset, handshake rejected (401), DNS
                last = exc
                if time.monotonic() + delay > deadline:
                    raise PolicyUnavailable(f"cannot reach the policy server at {self.uri}: {exc}") from None
                time.sleep(delay)
                delay = min(delay * 2, self.backoff[1])
        raise PolicyUnavailable(str(last))  # pragma: no cover

    def close(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client._ws.close()
            self._client = None

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        if self._client is None:
            self.connect()
        try:
            return self._client.infer(obs)
        except RuntimeError as exc:  # the server sent a traceback and closed (code 1011)
            self.close()
            last = str(exc).strip().splitlines()[-1] if str(exc).strip() else "unknown error"
            raise PolicyUnavailable(f"the policy server failed: {last}") from None
        except Exception as exc:  # connection closed or reset mid-request
            self.close()
            raise PolicyUnavailable(f"lost the policy server at {self.uri}: {exc.__class__.__name__}") from None

    def reset(self) -> None:
        if self._client is not None:
            self._client.reset()
