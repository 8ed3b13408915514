"""`indgen blockenv ...` sub-commands (registered through the `indgen.commands` entry point)."""

from __future__ import annotations

import argparse
from pathlib import Path

from indgen_core.cli.common import add_db_option, name_list, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "blockenv",
        help="the paper's BlockEnv testbed: Table 1, demonstrations, checkpoints",
        description="BlockEnv (paper section 5.1, Appendix A).",
    )
    bsub = p.add_subparsers(dest="blockenv_command", metavar="ACTION", required=True)
    t = bsub.add_parser(
        "table1",
        help="reproduce the paper's Table 1 (data, training, evaluation, report)",
        description="Generate oracle demonstrations at L0-L2, train every baseline, evaluate each at "
        "L0..L6 (the oracle at L0..L10) with 100 episodes per level and fixed seeds, store one "
        "campaign per policy and print the table. About 16 minutes on 2 CPU cores.",
    )
    t.add_argument(
        "--quick", action="store_true", help="a small configuration (tests, smoke runs): about 15 s on 2 cores"
    )
    t.add_argument("--eval-only", action="store_true", help="re-evaluate from saved checkpoints, no training")
    t.add_argument(
        "--models",
        type=name_list,
        help="comma-separated subset of: maml,rnn,transformer,transformer_rope,"
        "transformer_goal_action,trm,ind,ind_linear,equivariant",
    )
    t.add_argument("--episodes", type=int, help="episodes per level (default 100; --quick 20)")
    t.add_argument(
        "--train-seed",
        type=int,
        help="training seed (default 0): initialisation, batch order and the "
        "validation split; the demonstrations and the evaluation seeds stay fixed",
    )
    t.add_argument(
        "--noise",
        type=float,
        help="recovery-step probability in the demonstrations (default 0.5; 0: "
        "clean oracle demonstrations without recovery steps)",
    )
    t.add_argument(
        "--checkpoints",
        type=Path,
        help="checkpoint folder (default: $INDGEN_BLOCKENV_CHECKPOINTS or <data dir>/blockenv/checkpoints)",
    )
    t.add_argument("--out", type=Path, help="where table1.md, table1.json and the report go")
    t.add_argument("--group", help="campaign group name in the store (default: table1-<date>-<time>)")
    add_db_option(t)
    t.set_defaults(func=cmd_table1)


def cmd_table1(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from indgen_core.errors import IndGenError
    from indgen_sim.blockenv import table1
    from indgen_sim.blockenv.models import MODELS

    config = table1.QUICK if args.quick else table1.Table1Config()
    if args.models:
        chosen = tuple(args.models)
        unknown = [m for m in chosen if m not in MODELS]
        if unknown:
            raise IndGenError(f"unknown model(s) {unknown}; choose from {', '.join(MODELS)}")
        config = replace(config, models=chosen)
    if args.episodes:
        config = replace(config, episodes=args.episodes)
    if args.train_seed is not None:
        config = replace(config, seed=args.train_seed)
    if args.noise is not None:
        if not 0.0 <= args.noise < 1.0:
            raise IndGenError(f"--noise must be in [0, 1), got {args.noise:g}")
        config = replace(config, noise=args.noise)
    out = args.out or table1.default_out_dir() / (args.group or "table1")
    with open_store(args) as store:
        result = table1.run_table1(
            config, store, out, checkpoints=args.checkpoints, eval_only=args.eval_only, group=args.group
        )
    table1.print_table(result["rows"], config.max_level)
    t = result["timings_s"]
    print(
        f"total {t['total'] / 60:.1f} min (evaluation {t['evaluation']:.0f} s); group {result['group']}; "
        f"report {result['report']}; table {out / 'table1.md'}"
    )
    return 0
