"""`indgen dataset export`: recorded trials or oracle demonstrations as a LeRobot dataset."""

from __future__ import annotations

import argparse
from pathlib import Path

from indgen_core.cli.common import int_list, name_list


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dataset",
        help="export trials or oracle demonstrations as LeRobot datasets (DROID layout)",
        description="Datasets for training on more levels (the paper's next step after a break).",
    )
    cmds = p.add_subparsers(dest="dataset_command", metavar="COMMAND", title="commands")
    e = cmds.add_parser(
        "export",
        help="write a LeRobot dataset in DROID's layout from bags or from a world's oracle",
        description="Write a LeRobot dataset in the layout openpi's DROID fine-tuning reads "
        "(exterior_image_1_left, exterior_image_2_left, wrist_image_left at 180x320, joint_position, "
        "gripper_position, actions = the joint velocities and gripper the arm executed, 15 fps), plus "
        "commanded_actions, real_timestamp_ns and level per frame and meta/indgen_episodes.jsonl (axis, "
        "level, outcome, source per episode). Written by the lerobot library in its own environment "
        "(make lerobot), offline. Either --bag (one episode per scored attempt) or --oracle (certified "
        "demonstrations generated now). OUT is written whole or not at all.",
    )
    e.add_argument("out", type=Path, metavar="OUT", help="the dataset folder to create (must not exist)")
    e.add_argument(
        "--format",
        required=True,
        choices=["v2.1", "v3.0"],
        help="v2.1: the format openpi's pinned lerobot reads (written by lerobot 0.3.3); "
        "v3.0: current lerobot's (0.4.4)",
    )
    source = e.add_mutually_exclusive_group(required=True)
    source.add_argument("--bag", nargs="+", type=Path, metavar="BAG", help="bag folder(s), read as one recording")
    source.add_argument("--oracle", metavar="WORLD", help="oracle demonstrations generated in this world (droid_twin)")
    e.add_argument("--campaign", help="--bag: only this campaign")
    e.add_argument("--levels", type=int_list, help="only these levels, e.g. 0-2 (--oracle: required)")
    e.add_argument("--outcome", type=name_list, help="--bag: only these outcomes, e.g. success or success,failure")
    e.add_argument("--axis", help="--oracle: the axis whose levels to demonstrate")
    e.add_argument("--episodes", type=int, default=10, help="--oracle: successful episodes per level (default 10)")
    e.add_argument("--seed", type=int, default=0, help="--oracle: fixes the layouts (default 0)")
    e.add_argument("--repo-id", default="local/indgen", help="the dataset's repo id in its metadata (never pushed)")
    e.set_defaults(func=_export)


def _export(args: argparse.Namespace) -> int:
    from indgen_core import registry
    from indgen_core.datasets import export, from_bag
    from indgen_core.errors import IndGenError

    if args.bag:
        for name, value in (("--axis", args.axis),):
            if value:
                raise IndGenError(f"{name} goes with --oracle; a bag's trials bring their own axis")
        episodes = from_bag.episodes(args.bag, args.campaign, args.levels, args.outcome)
    else:
        if args.campaign or args.outcome:
            raise IndGenError("--campaign and --outcome go with --bag: oracle demonstrations are all successes")
        if not args.axis or args.levels is None:
            raise IndGenError("--oracle needs --axis and --levels (for example --axis scale --levels 0-2)")
        generate = registry.load(registry.DEMOS, args.oracle)
        episodes = generate(args.axis, args.levels, args.episodes, args.seed)
    done = export.export(episodes, args.out, args.format, args.repo_id, progress=print)
    print(
        f"wrote {done.path}: LeRobot {done.format}, {done.episodes} episodes, {done.frames} frames, "
        f"cameras {', '.join(done.cameras) or 'none'}"
    )
    return 0
