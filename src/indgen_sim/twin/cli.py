"""`indgen twin ...`: the DROID FR3 twin's tau_0 policy and the sim-in-the-loop dry run."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from indgen_core.cli.common import add_db_option, int_list

AXES = ("stack", "scale")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "twin",
        help="the DROID FR3 twin in MuJoCo: tau_0 policy training and the dry run",
        description="The MuJoCo twin of the DROID FR3 set-up (paper section 5.3).",
    )
    tsub = p.add_subparsers(dest="twin_command", metavar="ACTION", required=True)
    t = tsub.add_parser(
        "train-bc",
        help="behaviour-clone the tau_0 policy on oracle demonstrations at tau_0 (or more levels)",
        description="Collect oracle demonstrations at tau_0 (both tasks), train a small state-based "
        "MLP (privileged object poses: simulation only), then run DAgger rounds at tau_0 in which "
        "the policy drives and the oracle labels. About 4 minutes on 2 CPU cores. With --axis and "
        "--levels, all of it at those levels of that axis instead (same number of episodes).",
    )
    t.add_argument(
        "--vision",
        action="store_true",
        help="the camera-based policy (droid_twin_vision): it sees "
        "only pi0.5-DROID's request (two images, joints, gripper, prompt); trained on the built-in FR3 "
        "unless --robot menagerie; 12 to 40 minutes on 2 CPU cores",
    )
    t.add_argument(
        "--robot",
        choices=("builtin", "menagerie"),
        help="the FR3 model to train on (default: --vision "
        "builtin, which renders 10x faster; the state-based policy menagerie where MENAGERIE_ROOT finds "
        "it); a vision checkpoint records it and refuses the other",
    )
    t.add_argument(
        "--out",
        type=Path,
        help="checkpoint path (default: $INDGEN_TWIN_CHECKPOINT or "
        "<data dir>/twin/bc_tau0.pt; --vision: $INDGEN_TWIN_VISION_CHECKPOINT or "
        "<data dir>/twin/vision_tau0.pt)",
    )
    t.add_argument("--demos", type=int, default=None, help="oracle demonstration episodes")
    t.add_argument("--rounds", type=int, default=None, help="DAgger rounds")
    t.add_argument("--episodes-per-round", type=int, default=None, help="policy-driven episodes per DAgger round")
    t.add_argument(
        "--views",
        type=int,
        default=None,
        help="--vision: extra tau_0 layouts perception sees from the "
        "demonstrations' arm poses, 4 frames each (default 1500)",
    )
    t.add_argument("--epochs", type=int, default=None, help="training epochs after each round")
    t.add_argument(
        "--levels",
        type=int_list,
        default=None,
        help="train on these levels of --axis instead of tau_0 alone, e.g. 0-2: that task's "
        "episodes cycle through them, the other task's stay at tau_0, and the number of episodes "
        "is the same as for tau_0 alone (the paper's train-on-tau_0..tau_n experiment)",
    )
    t.add_argument("--axis", choices=AXES, default=None, help="the axis whose levels --levels names")
    t.add_argument(
        "--seed",
        type=int,
        default=0,
        help="training seed, 0-99 (default 0): shifts every layout, noise and network seed, so "
        "that seeds are independent trainings; seed 0 is the training without it",
    )
    t.set_defaults(func=cmd_train_bc)

    v = tsub.add_parser(
        "views",
        help="save what a camera policy sees at a level: the request's two images",
        description="Reset the twin at the given levels of an axis (the built-in FR3 unless "
        "--robot menagerie) and save the exterior and wrist images exactly as pi0.5-DROID's request "
        "carries them (224 x 224, letterboxed), side by side, one PNG per level.",
    )
    v.add_argument("--axis", choices=AXES, default="stack")
    v.add_argument("--levels", type=int_list, default="0", help="levels, e.g. 0,2 or 0-3 (default: 0)")
    v.add_argument("--seed", type=int, default=2000, help="the layout's seed (default: 2000)")
    v.add_argument("--robot", choices=("builtin", "menagerie"), default="builtin")
    v.add_argument("--out", type=Path, default=Path("."), help="folder for <axis>_k<level>_request.png")
    v.set_defaults(func=cmd_views)

    d = tsub.add_parser(
        "demo",
        help="dry-run an axis through the full ROS graph: oracle, then the tau_0 policy",
        description="The sim-in-the-loop dry run (what `make demo` runs): bring the axis graph up "
        "with the twin and the oracle, which certifies tau_0..tau_4; then again with the tau_0 "
        "policy (trained first when its checkpoint is missing). Prints the per-level tables with "
        "95% intervals and the break level, and writes one report with both curves and an "
        "exterior image per level.",
    )
    d.add_argument("--axis", choices=AXES, default="stack")
    d.add_argument("--trials", type=int, default=None, help="trials per level (default: the campaign's, 10)")
    d.add_argument("--retrain", action="store_true", help="train the tau_0 policy even if its checkpoint exists")
    d.add_argument("--out", type=Path, help="report folder (default: <artifacts>/reports/twin-demo-<axis>-<time>)")
    d.add_argument("--log", type=Path, help="graph log file (default: <report folder>/graph.log)")
    add_db_option(d)
    d.set_defaults(func=cmd_demo)


def cmd_train_bc(args: argparse.Namespace) -> int:
    from indgen_core.errors import IndGenError
    from indgen_sim.twin import bc
    from indgen_sim.twin.training_plan import TrainingPlan
    from indgen_sim.twin.vision import training

    plan = TrainingPlan.spread(args.axis, args.levels, args.seed)
    options: dict = {
        k: v
        for k, v in {
            "demo_episodes": args.demos,
            "rounds": args.rounds,
            "episodes_per_round": args.episodes_per_round,
        }.items()
        if v is not None
    }
    options["plan"] = plan
    if args.robot == "menagerie":
        from indgen_sim.twin import assets

        if assets.robot_source().kind != "menagerie":
            raise IndGenError("--robot menagerie needs mujoco_menagerie's FR3: set MENAGERIE_ROOT")
    negative = [
        f"--{k.replace('_', '-')}"
        for k in ("demos", "rounds", "episodes_per_round", "views", "epochs")
        if (getattr(args, k) or 0) < 0
    ]
    if negative:
        raise IndGenError(f"{', '.join(negative)} cannot be negative")
    if args.vision:  # --demos and --rounds count for both stages: the control MLP's and the cameras'
        if args.epochs is not None:
            options["perception_epochs"] = args.epochs
        if args.demos is not None:
            options["control_demos"] = args.demos
        if args.rounds is not None:
            options["state_rounds"] = args.rounds
        if args.views is not None:
            options["view_layouts"] = args.views
        path = training.train_and_save(args.out, builtin=args.robot != "menagerie", **options)
    else:
        if args.epochs is not None:
            options["epochs"] = args.epochs
        path = bc.train_and_save(args.out, builtin=args.robot == "builtin", **options)
    print(f"checkpoint: {path}")
    return 0


def cmd_views(args: argparse.Namespace) -> int:
    import numpy as np
    from PIL import Image

    from indgen_core.axes.progression import library
    from indgen_core.records import TaskSetup
    from indgen_core.specs.droid import EXTERIOR, WRIST, DroidSpec
    from indgen_sim.twin.world import DroidTwinWorld

    levels = args.levels
    axis = library().get(args.axis)
    args.out.mkdir(parents=True, exist_ok=True)
    with DroidTwinWorld(cameras=[EXTERIOR, WRIST], builtin=args.robot == "builtin") as world:
        for k in levels:
            level = axis.level(k)
            setup = TaskSetup(
                "views",
                f"views-{k}",
                "droid_twin",
                args.axis,
                k,
                k == 0,
                level.parameters,
                0,
                args.seed,
                "views",
                level.language_instruction or "",
            )
            request = DroidSpec().request(world.reset(setup), setup, 0)
            pair = np.concatenate(
                [request["observation/exterior_image_1_left"], request["observation/wrist_image_left"]], axis=1
            )
            path = args.out / f"{args.axis}_k{k}_request.png"
            Image.fromarray(pair).save(path)
            values = ", ".join(f"{p.name}={p.value:g} {p.unit}" for p in level.parameters)
            print(f"{path}  ({level.label}: {values})")
    return 0


def tau0_checkpoint(retrain: bool) -> None:
    """The state-based tau_0 checkpoint the demo runs: the user's when it is current; else the one
    IndGen ships, where the world renders the built-in FR3 it was trained on (a menagerie world
    would refuse it); else one trained here."""
    import shutil

    from indgen_sim.twin import assets, bc

    path = bc.checkpoint_path()
    if not retrain and path.is_file() and not bc.outdated(path):
        return
    shipped = bc.SHIPPED_BUILTIN
    if not retrain and assets.robot_source().kind == "builtin" and shipped.is_file() and not bc.outdated(shipped):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        shutil.copyfile(shipped, tmp)
        tmp.replace(path)
        print(
            f"the tau_0 policy: IndGen's checkpoint for the built-in FR3, copied to {path} "
            "(`indgen twin demo --retrain` trains one here, about 3 minutes)",
            flush=True,
        )
        return
    why = (
        "retrain"
        if retrain
        else "no checkpoint"
        if not path.is_file()
        else "the checkpoint predates the current input layout"
    )
    print(f"training the tau_0 policy ({why}: {path}) ...", flush=True)
    bc.train_and_save(None)


def cmd_demo(args: argparse.Namespace) -> int:
    from indgen_core import paths
    from indgen_core.nodes.graphrun import run_graph
    from indgen_core.report import print_table, write_report
    from indgen_core.report.analysis import summarize
    from indgen_core.store import ResultsStore

    t0 = time.monotonic()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = args.out or paths.artifacts_dir() / "reports" / f"twin-demo-{args.axis}-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    log = args.log or out / "graph.log"
    db = Path(args.db) if args.db else paths.default_db()
    tau0_checkpoint(args.retrain)
    ids = []
    for policy, campaign in (
        ("droid_twin_oracle", f"campaigns/twin_{args.axis}_oracle.yaml"),
        ("droid_twin_bc", f"campaigns/twin_{args.axis}_bc.yaml"),
    ):
        cid = f"twin-{args.axis}-{policy.removeprefix('droid_twin_')}-{stamp}"
        print(f"{policy}: {args.axis} axis through the ROS graph (campaign {cid}; log {log})", flush=True)
        run_graph(
            f"{args.axis}_axis",
            {"campaign": campaign, "policy": policy, "report_dir": str(out / "campaigns")},
            db,
            cid,
            log,
            trials=args.trials,
        )
        ids.append(cid)
    with ResultsStore(db) as store:
        print_table([summarize(store, cid) for cid in ids])
        files = write_report(store, ids, out)
    print(f"report: {files.html}")
    print(f"dry run done in {(time.monotonic() - t0) / 60:.1f} min; results in {db}")
    return 0
