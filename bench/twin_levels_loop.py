"""The paper's section-4 loop, once, on the twin's Scale axis: does training the camera policy
on tau_0..tau_n (instead of tau_0 alone, with the same number of episodes) help beyond tau_n?

For each training seed (default 0, 1, 2) it trains two camera policies,

- `tau0`:   `indgen twin train-bc --vision --seed S`
- `levels`: `indgen twin train-bc --vision --seed S --axis scale --levels 0-n`

then certifies the Scale levels with the oracle and runs one campaign per checkpoint on every
level, tau_0..tau_4 (Definition 4's nesting check refuses a progression that skips levels or
lacks tau_0), the same setups for every checkpoint (seed 2000, 20 trials a level); the claim
is read on the levels above n only (below, the `levels` arm was trained there), and
prints each checkpoint's and each arm's success per level with exact 95% intervals, the ratio of
the two arms, and a plot of both curves (`--out`/loop_scale.png).

    .venv/bin/python bench/twin_levels_loop.py --out artifacts/loop [--n 2] [--seeds 0,1,2] [--trials 20]

Checkpoints already in --out are kept (delete one to retrain it), and so are finished campaigns.
A training took 38 minutes on the 2-core development machine on 2026-12-03 (12 the day before,
not explained), one at a time: two side by side, each pinned to a core, are slower still (46 and
49 minutes; the software renderer's threads fight over one core).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARMS = ("tau0", "levels")


def indgen(*args: str, env: dict | None = None, log: Path | None = None) -> None:
    """Run one `indgen` command (its output to `log` when given); stop the loop if it fails."""
    print(f"  $ indgen {' '.join(args)}" + (f"  > {log}" if log else ""), flush=True)
    command = [sys.executable, "-m", "indgen_core.cli", *args]
    with open(log, "w") if log else contextlib.nullcontext() as out:
        env = {**os.environ, **(env or {})}
        code = subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    if code != 0:
        raise SystemExit(f"a step failed (exit {code}); its output is in {log or 'the output above'}")


def train(out: Path, n: int, seeds: list[int]) -> dict[tuple[str, int], Path]:
    checkpoints, todo = {}, []
    for seed in seeds:
        for arm in ARMS:
            path = out / f"vision_{arm}_s{seed}.pt"
            checkpoints[(arm, seed)] = path
            if not path.is_file():
                extra = ["--axis", "scale", "--levels", f"0-{n}"] if arm == "levels" else []
                todo.append((path, ["twin", "train-bc", "--vision", "--seed", str(seed), *extra, "--out", str(path)]))
    t0 = time.monotonic()
    for i, (path, args) in enumerate(todo):
        indgen(*args, log=path.with_suffix(".log"))
        print(f"  trained {i + 1}/{len(todo)} ({(time.monotonic() - t0) / 60:.0f} min)", flush=True)
    return checkpoints


def evaluate(out: Path, n: int, checkpoints: dict, trials: int) -> dict[tuple[str, int], str]:
    import yaml

    db = out / "loop.sqlite"
    base = yaml.safe_load((ROOT / "config/campaigns/twin_scale_vision.yaml").read_text())
    beyond = {**base, "name": f"twin_scale_vision_beyond_{n}", "levels": [0, 1, 2, 3, 4]}
    beyond["trials_per_level"] = trials
    config = out / f"twin_scale_vision_beyond_{n}.yaml"
    config.write_text(yaml.safe_dump(beyond, sort_keys=False))
    ids: dict[tuple[str, int], str] = {}
    if not (out / "certified").is_file():
        oracle = str(ROOT / "config/campaigns/twin_scale_vision_oracle.yaml")
        indgen("campaign", "run", oracle, "--db", str(db), "--id", "loop-oracle", "--workers", "2")
        (out / "certified").write_text("loop-oracle\n")
    for (arm, seed), path in checkpoints.items():
        cid = f"loop-{arm}-s{seed}"
        ids[(arm, seed)] = cid
        done = out / f"{cid}.done"
        if not done.is_file():
            env = {"INDGEN_TWIN_VISION_CHECKPOINT": str(path)}
            indgen("campaign", "run", str(config), "--db", str(db), "--id", cid, "--workers", "2", env=env)
            done.write_text(cid + "\n")
    return ids


def report(out: Path, n: int, ids: dict, seeds: list[int]) -> None:
    from indgen_core.report import plots
    from indgen_core.report.analysis import summarize
    from indgen_core.stats.level_stats import exact_interval
    from indgen_core.store import ResultsStore

    pooled: dict[str, dict[int, list[int]]] = {arm: {} for arm in ARMS}
    print(f"\nScale levels 0..4 (the claim: above {n}), trained on tau_0 alone (tau0) or on levels 0..{n} (levels):")
    with ResultsStore(out / "loop.sqlite") as store:
        for (arm, seed), cid in ids.items():
            curve = summarize(store, cid).curves[0]
            empty = [s.level for s in curve.levels if s.n == 0]
            if empty:  # every trial invalid or aborted (an unreadable checkpoint, say): no rate to show
                where = f"indgen report {cid} --db {store.path}"
                raise SystemExit(f"{cid} has no scored trial at levels {empty}: see `{where}`")
            cells = []
            for s in curve.levels:
                k, n_ok = pooled[arm].setdefault(s.level, [0, 0]), s.successes
                k[0], k[1] = k[0] + n_ok, k[1] + s.n
                cells.append(f"tau_{s.level} {n_ok}/{s.n}")
            print(f"  {arm:6} seed {seed}: " + ", ".join(cells) + f"   ({cid})")
    print(f"pooled over seeds {', '.join(map(str, seeds))} (the seeds share the evaluation setups):")
    for level in sorted(pooled["tau0"]):
        row = []
        for arm in ARMS:
            ok, total = pooled[arm][level]
            lo, hi = exact_interval(ok, total)
            row.append(f"{arm} {ok}/{total} = {100 * ok / total:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]")
        ratio = (pooled["levels"][level][0] / max(1, pooled["tau0"][level][0])) if pooled["tau0"][level][0] else None
        print(f"  tau_{level}: " + "; ".join(row) + (f"; ratio levels/tau0 {ratio:.2f}" if ratio is not None else ""))
    plot(out / "loop_scale.png", n, pooled, plots)


def plot(path: Path, n: int, pooled: dict, plots) -> None:
    from indgen_core.stats.level_stats import exact_interval

    with plots._figure() as (fig, ax, _):
        for arm, label in (("tau0", "trained on tau_0"), ("levels", f"trained on tau_0..tau_{n}")):
            ks = sorted(pooled[arm])
            rates = [pooled[arm][k][0] / pooled[arm][k][1] for k in ks]
            ci = [exact_interval(*pooled[arm][k]) for k in ks]
            low = [r - lo for r, (lo, _) in zip(rates, ci, strict=True)]
            high = [hi - r for r, (_, hi) in zip(rates, ci, strict=True)]
            ax.errorbar(ks, rates, yerr=[low, high], marker="o", capsize=4, label=label)
        ax.axhline(0.2, color="grey", linestyle=":", label="break threshold (20%)")
        ax.set_xticks(sorted(pooled["tau0"]))
        ax.set_xticklabels([f"tau_{k}" for k in sorted(pooled["tau0"])])
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel("success (seeds pooled, exact 95% CI)")
        ax.axvspan(-0.3, n + 0.3, color="grey", alpha=0.08, label=f"levels 0..{n}: trained on by the second")
        ax.set_title(f"Twin camera policy on Scale: tested beyond tau_{n} (right of the shading)")
        ax.legend()
        print(f"plot: {plots._save(fig, path)}")


def main() -> int:
    from indgen_core.lists import parse_int_list

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="folder for checkpoints, logs, the store and the plot")
    p.add_argument("--n", type=int, default=2, help="train on Scale levels 0..n, evaluate n+1..4 (default 2)")
    p.add_argument("--seeds", default="0,1,2", help="training seeds (default 0,1,2)")
    p.add_argument("--trials", type=int, default=20, help="trials per evaluated level (default 20)")
    args = p.parse_args()
    if not 0 <= args.n <= 3:
        p.error("--n must be 0..3 (Scale has levels 0..4, and one must be left to evaluate)")
    seeds = parse_int_list(args.seeds)
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    checkpoints = train(args.out, args.n, seeds)
    ids = evaluate(args.out, args.n, checkpoints, args.trials)
    report(args.out, args.n, ids, seeds)
    print(f"done in {(time.monotonic() - t0) / 60:.0f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
