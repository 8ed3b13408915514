"""`indgen serve-policy NAME`"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve-policy", help="serve a local policy over openpi's websocket protocol",
                       description="Serve a registered local policy (for example blockenv_oracle, blockenv_rnn) "
                       "with the same websocket protocol as openpi's serve_policy.py: metadata on connect, "
                       "msgpack observations in, actions out, /healthz, optional API key. Loopback by default.")
    p.add_argument("name", help="registered policy name (see `indgen serve-policy --list`), or module:attribute")
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=8000, help="port (0: any free port; default 8000)")
    p.add_argument("--api-key", default=os.environ.get("INDGEN_POLICY_API_KEY"),
                   help="require 'Authorization: Api-Key KEY' (default: $INDGEN_POLICY_API_KEY)")
    p.add_argument("--checkpoint", type=Path, help="checkpoint file for policies that load one")
    p.add_argument("--list", action="store_true", help="list the registered policies and exit")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from indgen_core import registry
    from indgen_core.wire.server import PolicyServer

    if args.list:
        print("\n".join(registry.names(registry.POLICIES)))
        return 0
    factory_cls = registry.load(registry.POLICIES, args.name)
    kwargs = {"checkpoint": args.checkpoint} if args.checkpoint else {}
    factory_cls(**kwargs)  # load once up front: a bad name or checkpoint fails here, not at the first client

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    server = PolicyServer(lambda: factory_cls(**kwargs), host=args.host, port=args.port, api_key=args.api_key)

    def ready(port: int) -> None:
        print(f"serving {args.name} on ws://{args.host}:{port} (healthz: http://{args.host}:{port}/healthz)",
              flush=True)

    try:
        asyncio.run(server.serve_forever(ready))
    except OSError as exc:
        from indgen_core.errors import IndGenError

        raise IndGenError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    return 0
