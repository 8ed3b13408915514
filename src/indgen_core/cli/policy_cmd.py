"""`indgen policy check TARGET --world W`: one real request of a world, the policy's reply
judged before any rollout (policy_check.py)."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "policy",
        help="check that your policy answers what a world sends, before a campaign",
        description="Work with your own policy (docs/guides/own-policy.md).",
    )
    psub = p.add_subparsers(dest="policy_command", metavar="ACTION", required=True)
    c = psub.add_parser(
        "check",
        help="send one real request of a world to a policy and judge its reply",
        description="Build the first request a trial of WORLD sends at a level of an axis (the world reset, "
        "its spec's request: the keys, dtypes and shapes listed in docs/guides/own-policy.md), send it to the "
        "policy, and judge the reply as the episode loop would: its keys, shape and values, and the time it "
        "took. Each problem is one sentence; exit 1 if there is any. TARGET is a policy server (ws://HOST:PORT, "
        "openpi's protocol) or a registered policy name (INDGEN_POLICIES=name=module:Class).",
    )
    c.add_argument("target", help="ws://HOST:PORT of a policy server, or a registered policy name")
    c.add_argument(
        "--world", required=True, help="the world whose request to send (blockenv, droid_twin, libero, robocasa)"
    )
    c.add_argument("--axis", help="the axis (default: the first defined for the world)")
    c.add_argument("--level", type=int, default=0, help="the level k (default 0)")
    c.add_argument("--seed", type=int, default=0, help="the trial's seed (default 0)")
    c.add_argument(
        "--privileged",
        action="store_true",
        help="send the simulator's privileged keys too (object poses: only policies built on simulator state)",
    )
    c.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="seconds the reply may take (default 10, the sim bridge's action_timeout_s)",
    )
    c.add_argument("--world-options", default="{}", help="the world's options as JSON (e.g. '{\"builtin\": true}')")
    c.add_argument("--api-key-file", help="file with the server's API key (default $INDGEN_POLICY_API_KEY)")
    c.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    import numpy as np

    from indgen_core.errors import IndGenError
    from indgen_core.specs import policy_check
    from indgen_core.wire.client import read_api_key

    try:
        options = json.loads(args.world_options)
    except ValueError:
        raise IndGenError(f"--world-options must be a JSON object, got {args.world_options!r}") from None
    if not isinstance(options, dict):
        raise IndGenError(f"--world-options must be a JSON object, got {args.world_options!r}")
    setup = policy_check.sample_setup(args.world, args.axis, args.level, args.seed)
    report = policy_check.check(
        args.target,
        args.world,
        setup,
        privileged=args.privileged,
        timeout=args.timeout,
        options=options,
        api_key=read_api_key(args.api_key_file) if args.target.startswith("ws") else None,
    )
    print(f"{args.world}, axis {setup.axis}, level {setup.level} ({report.spec.name} spec): sent")
    for key, value in report.request.items():
        shown = (
            f"str {value[:48]!r}" if isinstance(value, str) else f"{np.asarray(value).dtype} {np.asarray(value).shape}"
        )
        print(f"  {key:<36} {shown}")
    if report.metadata:
        print(f"server metadata: {json.dumps(report.metadata, default=str)[:300]}")
    if isinstance(report.reply, dict):
        print(f"reply in {report.seconds:.2f} s:")
        for key, value in report.reply.items():
            arr = np.asarray(value) if not isinstance(value, str) else None
            print(f"  {key:<36} {f'{arr.dtype} {arr.shape}' if arr is not None else 'str'}")
    if report.problems:
        for problem in report.problems:
            print(f"problem: {problem}")
        return 1
    actions = np.asarray(report.reply["actions"])
    chunk = actions.shape[0] if actions.ndim == 2 else 1
    print(
        f"ok: {chunk} action(s) per reply, {min(chunk, report.spec.horizon)} executed before the next request "
        f"({', '.join(report.spec.action_names)})"
    )
    return 0
