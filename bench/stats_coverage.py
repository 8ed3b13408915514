"""Monte Carlo checks of every guarantee IndGen's statistics state (not part of `make test`).

    .venv/bin/python bench/stats_coverage.py [--runs 10000] [--seed 0] [--only NAME ...]

Seeded; at least 10,000 runs per setting by default. Prints, as rates and ratios:
  sequential  the sequential rule's wrong verdicts when it looks after every trial (up to 500),
              for true rates around the threshold 0.2: at most 2.5% each way (+ 3 Monte Carlo
              standard errors); beside it the old rule (a fixed-n Wilson interval re-checked
              after every trial from 5 to 50), for contrast
  intervals   coverage of the intervals IndGen prints, n 5-100, rates 0.01-0.99: Clopper-Pearson
              (at least 95% at each n; the exact coverage, from the binomial, beside the
              simulated one), the confidence sequence (95% at every n <= 100 at once), Tango's
              paired interval and Newcombe's unpaired one (`indgen compare`; approximate
              methods: their coverage is measured, not promised)
  guarantee   "held at every level through k*" and "broken at k" on simulated axes, one- and
              two-sided, for fixed-n (exact tests) and sequential levels: the chance of any
              false claim on a side (stated: 5%) and on both sides of a two-sided axis (10%)
  trials      expected trials per level of the sequential rule against the fixed exact design
              sized at threshold +- 0.15 (95% confidence, 80% power; target: 30% fewer where the
              true rate is >= 0.5 or <= 0.05) and against Wald's SPRT of the same two hypotheses
              (the threshold against the planning alternative on the true rate's side) at the same
              errors, the fewest trials any test of them needs on average (target: within 2x)
  ppi         the prediction-powered interval shown beside the real-only one (ppi.py):
              coverage at 10, 20, 40 pairs, rates 0.1-0.9, agreement 50% and 90%, a twin unbiased
              and one biased by +0.1; beside it the normal-approximation PPI; the mean width
              against the real-only exact interval
  boschloo, compare   `indgen compare`'s tests: bench/stats_comparisons.py says what they print
  break       the break search against the per-level sweep: bench/stats_break_search.py
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from indgen_core.stats import comparisons, level_stats, ppi, sample_sizes, sequential

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stats_break_search import bench_break_search
from stats_comparisons import bench_boschloo, bench_compare

THRESHOLD = 0.2
ALPHA = 0.05


def se(p: float, runs: int) -> float:
    return math.sqrt(max(p * (1 - p), 1e-12) / runs)


def ok(flag: bool) -> str:
    return "ok" if flag else "FAILS"


# -- 1. the sequential rule ----------------------------------------------------------------------
def bench_sequential(runs: int, rng) -> bool:
    print(f"\n== sequential verdicts, a look after every trial (threshold {THRESHOLD}, up to 500 trials, "
          f"{runs} runs per rate) ==")
    print(f"{'true rate':>10} {'wrong':>8} {'rate':>8} {'3 SE':>7} {'limit':>7} {'':>6}  "
          f"{'the old rule (Wilson peek, 5..50)':>34}")
    edges = sequential.boundaries(THRESHOLD, 500)
    good = True
    for p in (0.10, 0.15, 0.18, 0.22, 0.25, 0.30):
        wrong_kind = sequential.HELD if p < THRESHOLD else sequential.BROKEN
        wrong = 0
        for start in range(0, runs, 2000):
            k = min(2000, runs - start)
            verdicts, _ = sequential.first_decisions(rng.random((k, 500)) < p, THRESHOLD, edges=edges)
            wrong += verdicts.count(wrong_kind)
        rate = wrong / runs
        fine = rate <= 0.025 + 3 * se(0.025, runs)
        good &= fine
        old = old_rule_wrong(p, runs, rng)
        print(f"{p:>10.2f} {wrong_kind:>8} {rate:>8.2%} {3 * se(0.025, runs):>7.2%} {'2.5%':>7} {ok(fine):>6}  "
              f"{old:>34.2%}")
    return good


def old_rule_wrong(p: float, runs: int, rng) -> float:
    """plan.AdaptiveRule until 2026-12: a 95% Wilson interval re-checked after every trial from
    5 to 50, held once its lower end is at or above the threshold, broken once its upper end is
    below it."""
    from statsmodels.stats.proportion import proportion_confint

    s = np.cumsum(rng.random((runs, 50)) < p, axis=1)
    n = np.arange(1, 51)[None, :].repeat(runs, 0)
    low, high = proportion_confint(s, n, alpha=ALPHA, method="wilson")
    look = n >= 5
    held, broken = look & (low >= THRESHOLD), look & (high < THRESHOLD)
    first_held = np.where(held.any(1), held.argmax(1), 99)
    first_broken = np.where(broken.any(1), broken.argmax(1), 99)
    if p < THRESHOLD:
        return float(np.mean(first_held < first_broken))
    return float(np.mean(first_broken < first_held))


# -- 2. the intervals ------------------------------------------------------------------------------
NS = (5, 10, 20, 30, 50, 75, 100)
RATES = (0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99)


def bench_intervals(runs: int, rng) -> bool:
    good = True
    print(f"\n== Clopper-Pearson coverage (95%, n fixed): simulated over {runs} runs / exact from the binomial ==")
    print(f"{'n':>4} " + " ".join(f"{p:>11}" for p in RATES))
    for n in NS:
        table = np.array([level_stats.exact_interval(s, n) for s in range(n + 1)])
        cells = []
        for p in RATES:
            s = rng.binomial(n, p, size=runs)
            sim = float(np.mean((table[s, 0] <= p) & (p <= table[s, 1])))
            exact = float(sum(sps.binom.pmf(k, n, p) for k in range(n + 1) if table[k, 0] <= p <= table[k, 1]))
            good &= exact >= 0.95 - 1e-9 and sim >= 0.95 - 3 * se(0.05, runs)
            cells.append(f"{sim:5.1%}/{exact:5.1%}")
        print(f"{n:>4} " + " ".join(f"{c:>11}" for c in cells))

    print(f"\n== confidence sequence: the chance it holds the true rate at every n <= 100 at once ({runs} runs) ==")
    print(f"{'rate':>6} {'all n':>8} {'at n=100 only':>14}")
    for p in RATES:
        edges = sequential.boundaries(p, 100)  # the rate is outside the sequence <=> the evidence at p0 = p decides
        s = np.cumsum(rng.random((runs, 100)) < p, axis=1)
        outside = (s >= edges[0]) | (s <= edges[1])
        uniform = 1 - float(np.mean(outside.any(axis=1)))
        last = 1 - float(np.mean(outside[:, -1]))
        good &= uniform >= 0.95 - 3 * se(0.05, runs)
        print(f"{p:>6} {uniform:>8.2%} {last:>14.2%}")

    print(f"\n== Tango's paired interval (`indgen compare`, same seeds), {runs} runs; approximate: measured ==")
    print(f"{'pairs':>6} {'rate A':>7} {'rate B':>7} {'agree':>6} {'coverage':>9}")
    for n in (10, 20, 50, 100):
        for pa, pb, agree in ((0.5, 0.5, 0.8), (0.7, 0.5, 0.7), (0.9, 0.8, 0.9), (0.3, 0.1, 0.8), (0.95, 0.95, 0.95)):
            b, c = (1 - agree + pa - pb) / 2, (1 - agree - pa + pb) / 2
            a = pa - b
            cells = np.clip([a, b, c, 1 - a - b - c], 0, 1)
            cells /= cells.sum()
            counts = rng.multinomial(n, cells, size=runs)
            table = {}
            cover = 0
            for bo, co in zip(counts[:, 1], counts[:, 2], strict=True):
                key = (int(bo), int(co))
                if key not in table:
                    table[key] = comparisons.tango_interval(*key, n)
                lo, hi = table[key]
                cover += lo <= pa - pb <= hi
            print(f"{n:>6} {pa:>7} {pb:>7} {agree:>6} {cover / runs:>9.2%}")

    print(f"\n== Newcombe's unpaired interval (`indgen compare`, seeds differ), {runs} runs; approximate: measured ==")
    from statsmodels.stats.proportion import confint_proportions_2indep

    print(f"{'n each':>7} {'rate A':>7} {'rate B':>7} {'coverage':>9}")
    for n in (10, 30, 100):
        for pa, pb in ((0.5, 0.5), (0.9, 0.6), (0.2, 0.05), (0.98, 0.9)):
            sa, sb = rng.binomial(n, pa, runs), rng.binomial(n, pb, runs)
            table = {}
            cover = 0
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                for x, y in zip(sa, sb, strict=True):
                    key = (int(x), int(y))
                    if key not in table:
                        table[key] = confint_proportions_2indep(key[0], n, key[1], n, method="newcomb", compare="diff")
                    lo, hi = table[key]
                    cover += lo <= pa - pb <= hi
            print(f"{n:>7} {pa:>7} {pb:>7} {cover / runs:>9.2%}")
    print("exact, by enumerating both arms' successes, where it is lowest: n = 30 each, rates 0.02 vs 0.98: "
          f"{newcombe_exact(30, 0.02, 0.98):.2%}")
    return good


def newcombe_exact(n: int, pa: float, pb: float) -> float:
    """Newcombe's interval's exact coverage of pa - pb with n trials per arm."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    wa, wb = sps.binom.pmf(np.arange(n + 1), n, pa), sps.binom.pmf(np.arange(n + 1), n, pb)
    cover = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for sa in range(n + 1):
            lo, hi = confint_proportions_2indep(sa, n, np.arange(n + 1), n, method="newcomb", compare="diff")
            cover += wa[sa] * float((wb * ((lo <= pa - pb) & (pa - pb <= hi))).sum())
    return cover


# -- 3. the break level's guarantee ------------------------------------------------------------------
AXES = {
    "one-sided decline": {0: 0.95, 1: 0.85, 2: 0.6, 3: 0.3, 4: 0.2, 5: 0.1, 6: 0.05},
    "one-sided, hugging the threshold": {0: 0.9, 1: 0.26, 2: 0.21, 3: 0.19, 4: 0.17, 5: 0.15},
    "two-sided": {-3: 0.1, -2: 0.3, -1: 0.6, 0: 0.9, 1: 0.7, 2: 0.4, 3: 0.15},
}


def bench_guarantee(runs: int, rng) -> bool:
    print(f"\n== 'held through k*' and 'broken at k' with a stated error ({runs} simulated axes each; "
          f"threshold {THRESHOLD}) ==")
    print(f"{'axis':>34} {'levels':>22} {'false claim, a side (max)':>26} {'either side':>12} {'stated':>8}")
    good = True
    for name, rates in AXES.items():
        for mode in ("fixed n = 20", "sequential, <= 60"):
            side_errors: dict[int, int] = {}
            either = 0
            for _ in range(runs):
                levels = []
                for k, p in rates.items():
                    if mode.startswith("fixed"):
                        n, s = 20, int(rng.binomial(20, p))
                    else:
                        outcomes = rng.random(60) < p
                        _, n = sequential.first_decision(outcomes, THRESHOLD)
                        s = int(outcomes[:n].sum())
                    levels.append(level_stats.LevelStat(
                        level=k, n=n, successes=s, in_distribution=k == 0, distance=abs(k),
                        side=int(np.sign(k)), threshold=THRESHOLD, anytime=not mode.startswith("fixed")))
                wrong_any = False
                for side, g in level_stats.guarantee(levels, THRESHOLD).items():
                    chain = sorted((k for k in rates if k * side >= 0), key=abs)
                    held = chain[:chain.index(g.held_through) + 1] if g.held_through is not None else []
                    wrong = any(rates[k] < THRESHOLD for k in held) or (
                        g.broken_at is not None and rates[g.broken_at] >= THRESHOLD)
                    side_errors[side] = side_errors.get(side, 0) + wrong
                    wrong_any |= wrong
                either += wrong_any
            worst = max(side_errors.values()) / runs
            both = either / runs
            fine = worst <= ALPHA + 3 * se(ALPHA, runs) and both <= 2 * ALPHA + 3 * se(2 * ALPHA, runs)
            good &= fine
            stated = "5% / 10%" if len(side_errors) > 1 else "5%"
            print(f"{name:>34} {mode:>22} {worst:>26.2%} {both:>12.2%} {stated:>8} ({ok(fine)})")
    return good


# -- 4. expected trials ---------------------------------------------------------------------------------
def sprt_trials(p: float, p0: float, p1: float, alpha: float, beta: float, cap: int = 5000) -> float:
    """Wald's SPRT of p0 against p1: mean trials to a decision at true rate p (A. Wald,
    "Sequential tests of statistical hypotheses", Ann. Math. Statist. 16, 1945), exactly: the
    log-likelihood ratio after n trials is a function of the successes, so the distribution of
    the successes among undecided runs is carried trial by trial."""
    upper, lower = math.log((1 - beta) / alpha), math.log(beta / (1 - alpha))
    win, loss = math.log(p1 / p0), math.log((1 - p1) / (1 - p0))
    alive = np.zeros(cap + 2)
    alive[0] = 1.0
    s = np.arange(cap + 2)
    mean = 0.0
    for n in range(1, cap + 1):
        alive = alive * (1 - p) + np.concatenate(([0.0], alive[:-1])) * p
        llr = s * win + (n - s) * loss
        stop = (llr >= upper) | (llr <= lower)
        mean += n * alive[stop].sum()
        alive[stop] = 0.0
    return mean + cap * alive.sum()


def bench_trials(runs: int, rng) -> bool:
    low, high = THRESHOLD - sample_sizes.PLANNING_MARGIN, THRESHOLD + sample_sizes.PLANNING_MARGIN
    fixed = max(sample_sizes.fixed_trials(high, THRESHOLD), sample_sizes.fixed_trials(low, THRESHOLD))
    print("\n== expected trials per level, exact (dynamic programming over trials and successes): the sequential rule, "
          "the fixed exact design sized "
          f"at {low:g} / {high:g} ({fixed} trials), Wald's SPRT of the threshold {THRESHOLD:g} against the planning "
          f"alternative on the true rate's side ({high:g} or {low:g}; errors 2.5% both ways) ==")
    print(f"{'true rate':>10} {'sequential':>11} {'p90':>5} {'fixed':>6} {'fewer':>7} {'SPRT':>7} {'seq/SPRT':>9} "
          f"{'targets (>= 30% fewer, <= 2x SPRT)':>36}")
    good = True
    for p in (0.0, 0.02, 0.05, 0.35, 0.5, 0.7, 0.9, 1.0):
        run = sample_sizes.sequential_run(p, THRESHOLD, cap=2000)  # exact
        sprt = sprt_trials(p, THRESHOLD, high if p >= THRESHOLD else low, 0.025, 0.025)
        saving = 1 - run.mean / fixed
        ratio = run.mean / sprt
        target = p >= 0.5 or p <= 0.05
        fine = saving >= 0.30 and ratio <= 2.0
        if target:
            good &= fine
        print(f"{p:>10.2f} {run.mean:>11.1f} {run.p90:>5} {fixed:>6} {saving:>7.0%} {sprt:>7.1f} {ratio:>9.2f} "
              f"{ok(fine) if target else '(not a target rate)':>36}")
    return good


# -- 5. the twin beside the robot (prediction-powered) ---------------------------------------------
def bench_ppi(runs: int, rng, twin_trials: int = 200) -> bool:
    print(f"\n== prediction-powered interval (ppi.py; {twin_trials} twin trials with the pairs, {runs} runs each): "
          "coverage, and mean width against the real-only exact interval ==")
    print(f"{'pairs':>5} {'rate':>5} {'agree':>6} {'twin':>9} {'coverage':>9} {'normal PPI':>11} {'width':>7} "
          f"{'real-only':>10} {'ratio':>6}")
    good = True
    ratios: dict[int, list[float]] = {}
    for n in (10, 20, 40):
        real_table = np.array([level_stats.exact_interval(s, n) for s in range(n + 1)])
        twin_table = np.array([level_stats.exact_interval(s, twin_trials, 1 - ppi.ALPHA_TWIN_SHARE * ALPHA)
                               for s in range(twin_trials + 1)])
        rest = 1 - (1 - ppi.ALPHA_TWIN_SHARE) * ALPHA
        diff_table = np.array([[ppi.difference_bounds(b, c, n, rest) if b + c <= n else (np.nan, np.nan)
                                for c in range(n + 1)] for b in range(n + 1)])
        for p in (0.1, 0.3, 0.5, 0.7, 0.9):
            for agree in (0.5, 0.9):
                for bias in (0.0, 0.1):
                    pt = p + bias
                    b, c = (1 - agree + p - pt) / 2, (1 - agree - p + pt) / 2  # real-only / twin-only success cells
                    a = p - b
                    d = 1 - a - b - c
                    if min(a, b, c, d) < -1e-12 or pt > 1:
                        continue
                    cells = np.clip([a, b, c, d], 0, 1)
                    counts = rng.multinomial(n, cells / cells.sum(), size=runs)
                    real_s = counts[:, 0] + counts[:, 1]
                    twin_pairs = counts[:, 0] + counts[:, 2]
                    twin_s = twin_pairs + rng.binomial(twin_trials - n, pt, runs)
                    delta = diff_table[counts[:, 1], counts[:, 2]]
                    low = np.maximum(0, twin_table[twin_s, 0] + delta[:, 0])
                    high = np.minimum(1, twin_table[twin_s, 1] + delta[:, 1])
                    cover = float(np.mean((low <= p) & (p <= high)))
                    # the normal-approximation PPI, for contrast
                    diff_mean = (counts[:, 1] - counts[:, 2]) / n
                    diff_var = (counts[:, 1] + counts[:, 2] - n * diff_mean ** 2) / (n - 1)
                    tm = twin_s / twin_trials
                    est = tm + diff_mean
                    half = 1.96 * np.sqrt(tm * (1 - tm) / (twin_trials - 1) + diff_var / n)
                    normal = float(np.mean((est - half <= p) & (p <= est + half)))
                    width = float(np.mean(high - low))
                    real_width = float(np.mean(real_table[real_s, 1] - real_table[real_s, 0]))
                    fine = cover >= 0.95 - 3 * se(0.05, runs)
                    good &= fine
                    ratios.setdefault(n, []).append(width / real_width)
                    print(f"{n:>5} {p:>5} {agree:>6.0%} {('+' + str(bias)) if bias else 'unbiased':>9} {cover:>9.2%} "
                          f"{normal:>11.2%} {width:>7.3f} {real_width:>10.3f} {width / real_width:>6.2f}"
                          f"{'' if fine else '  FAILS'}")
    print("width with the twin / real-only, mean over the settings above: " +
          ", ".join(f"n={n}: {np.mean(r):.2f}" for n, r in ratios.items()))
    return good


BENCHES = {"sequential": bench_sequential, "intervals": bench_intervals, "guarantee": bench_guarantee,
           "trials": bench_trials, "ppi": bench_ppi, "boschloo": bench_boschloo, "compare": bench_compare,
           "break": bench_break_search}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="Monte Carlo runs per setting (default 10000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHES), help="run only these parts")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    results = {}
    for name, bench in BENCHES.items():
        if args.only and name not in args.only:
            continue
        started = time.monotonic()
        results[name] = bench(args.runs, rng)
        print(f"({name}: {time.monotonic() - started:.0f} s)")
    print("\n" + ", ".join(f"{name}: {ok(flag)}" for name, flag in results.items()))
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
