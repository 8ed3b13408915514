"""`indgen serve-policy NAME`"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve-policy",
        help="serve a local policy over openpi's websocket protocol",
        description="Serve a registered local policy (for example blockenv_oracle, blockenv_rnn) "
        "with the same websocket protocol as openpi's serve_policy.py: metadata on connect, "
        "msgpack observations in, actions out, /healthz, optional API key. Loopback by default. "
        "Every client frame is decoded as hostile input (numeric arrays only, bounded sizes); a "
        "malformed one closes only that client's connection.",
    )
    p.add_argument(
        "name", nargs="?", help="registered policy name (see `indgen serve-policy --list`), or module:attribute"
    )
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=8000, help="port (0: any free port; default 8000)")
    p.add_argument(
        "--api-key-file",
        type=Path,
        metavar="FILE",
        help="require 'Authorization: Api-Key KEY' with KEY the file's first line (default: "
        "$INDGEN_POLICY_API_KEY; a key is never given on the command line, where `ps` shows it)",
    )
    p.add_argument("--api-key", help=argparse.SUPPRESS)
    p.add_argument("--checkpoint", type=Path, help="checkpoint file for policies that load one")
    p.add_argument(
        "--max-frame-mb",
        type=float,
        default=64.0,
        metavar="MB",
        help="largest request frame accepted (default 64 MiB; larger frames close the connection)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=8,
        metavar="N",
        help="clients served at once (default 8; more are refused with HTTP 503)",
    )
    p.add_argument("--debug", action="store_true", help="send the full traceback with an error reply")
    p.add_argument(
        "--record-requests",
        type=Path,
        metavar="FILE",
        help="append one JSON line per request (each key's dtype and shape) to FILE: what clients sent",
    )
    p.add_argument("--list", action="store_true", help="list the registered policies and exit")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from indgen_core import registry
    from indgen_core.cli import Terminated
    from indgen_core.errors import IndGenError
    from indgen_core.wire import codec
    from indgen_core.wire.client import read_api_key
    from indgen_core.wire.server import PolicyServer

    if args.list:
        print("\n".join(registry.names(registry.POLICIES)))
        return 0
    if not args.name:
        raise IndGenError("name the policy to serve (`indgen serve-policy --list` shows them)")
    if args.api_key is not None:
        raise IndGenError(
            "an API key is never given on the command line (every user can read it with ps): "
            "set INDGEN_POLICY_API_KEY or pass --api-key-file FILE"
        )
    if args.max_connections < 1:
        raise IndGenError(f"--max-connections must be at least 1, got {args.max_connections}")
    if not 0.001 <= args.max_frame_mb <= 4096:
        raise IndGenError(f"--max-frame-mb must be between 0.001 and 4096, got {args.max_frame_mb:g}")
    api_key = read_api_key(args.api_key_file)
    factory_cls = registry.load(registry.POLICIES, args.name)
    kwargs = {"checkpoint": args.checkpoint} if args.checkpoint else {}
    load_policy(factory_cls, kwargs, args.name)  # a bad name or checkpoint fails here, not at the first client

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    limits = codec.Limits(max_frame_bytes=max(int(args.max_frame_mb * codec.MiB), 1024))
    server = PolicyServer(
        lambda: factory_cls(**kwargs),
        host=args.host,
        port=args.port,
        api_key=api_key,
        limits=limits,
        max_connections=args.max_connections,
        debug=args.debug,
        record_requests=str(args.record_requests) if args.record_requests else None,
    )

    def ready(port: int) -> None:
        print(
            f"serving {args.name} on ws://{args.host}:{port} (healthz: http://{args.host}:{port}/healthz)", flush=True
        )

    async def serve_until_terminated() -> None:
        # SIGTERM cancels the server's task: the Terminated that `indgen`'s own handler raises
        # wherever the program is would land inside a connection's task, which asyncio logs as
        # a traceback ("Task exception was never retrieved")
        serving = asyncio.ensure_future(server.serve_forever(ready))
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, serving.cancel)
        try:
            await serving
        except asyncio.CancelledError:
            raise Terminated from None

    try:
        asyncio.run(serve_until_terminated())
    except OSError as exc:
        raise IndGenError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    return 0


def load_policy(factory, kwargs: dict, name: str):
    """One instance, or one sentence saying why not (a checkpoint that is not one, a missing
    file): the loader's own multi-line messages stay out of the user's terminal."""
    from indgen_core.errors import IndGenError, first_line

    try:
        return factory(**kwargs)
    except IndGenError as exc:
        lines = str(exc).strip().splitlines()
        if len(lines) <= 1:
            raise
        raise IndGenError(lines[0]) from None
    except FileNotFoundError as exc:
        raise IndGenError(f"policy '{name}': no such file {exc.filename or exc}") from None
    except Exception as exc:
        where = f" from {kwargs['checkpoint']}" if "checkpoint" in kwargs else ""
        raise IndGenError(f"policy '{name}' could not be loaded{where}: {first_line(exc, 200)}") from None
