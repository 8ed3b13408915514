"""How many trials a campaign needs before it runs, so a person can size a robot session.

Per level, for the rate the user expects there (or, with no expectation, the threshold +- 0.15,
the smallest difference worth a real-robot session), three numbers:
- the trials a **fixed exact design** needs: the smallest n at which the one-sided exact
  binomial test of "at or above the threshold" (or "below it") at (1 - confidence) / 2 has the
  stated power at the expected rate (the power of an exact test saw-tooths in n; this is the
  first n that reaches it);
- the **sequential rule**'s expected and 90th-percentile trials (plan.AdaptiveRule), and how
  often it ends undecided at the campaign's cap, computed exactly (sequential_run);
- the **robot time** both take at the stated seconds per trial (reset included), for every
  policy of the campaign.
The planner refuses asks no number of trials can answer (a rate equal to the threshold) in
one sentence, like the rest of the CLI.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from indgen_core.errors import IndGenError
from indgen_core.stats import sequential
from indgen_core.stats.level_stats import DEFAULT_CONFIDENCE

#: the planning alternative when the user states no expected rate: threshold +- this
PLANNING_MARGIN = 0.15
DEFAULT_POWER = 0.8
#: beyond this a plan is not a plan: the expected rate is too close to the threshold
MAX_TRIALS = 5000
SIMULATED_RUNS = 2000


class PlanError(IndGenError):
    """An ask no design can answer."""


def exact_power(n, rate: float, threshold: float, alpha: float):
    """Chance that n trials (an int or an array of them) at `rate` show the rate on its side of
    the threshold with the one-sided exact binomial test at alpha."""
    from scipy import stats as _sps  # imported when used (stats.py says why)

    n = np.asarray(n)
    if rate > threshold:
        # the fewest successes that show "above": the smallest c with P(S >= c | threshold) <= alpha
        c = _sps.binom.isf(alpha, n, threshold) + 1
        return np.where(c <= n, _sps.binom.sf(c - 1, n, rate), 0.0)
    # the most successes that show "below": the largest c with P(S <= c | threshold) <= alpha
    c = _sps.binom.ppf(alpha, n, threshold)
    c = np.where(_sps.binom.cdf(c, n, threshold) > alpha, c - 1, c)
    return np.where(c >= 0, _sps.binom.cdf(c, n, rate), 0.0)


def fixed_trials(
    rate: float, threshold: float, confidence: float = DEFAULT_CONFIDENCE, power: float = DEFAULT_POWER
) -> int:
    """The fixed exact design: the smallest n whose one-sided exact test at (1 - confidence) / 2
    shows `rate` on its side of the threshold with probability `power` (the exact power
    saw-tooths in n; this is the first n that reaches it)."""
    _check_rate(rate, threshold)
    reached = np.flatnonzero(exact_power(np.arange(1, MAX_TRIALS + 1), rate, threshold, (1 - confidence) / 2) >= power)
    if not reached.size:
        raise PlanError(_too_many(rate, threshold))
    return int(reached[0]) + 1


def _too_many(rate: float, threshold: float) -> str:
    return (
        f"telling a rate of {rate:g} from the threshold {threshold:g} takes more than {MAX_TRIALS} trials "
        "per level; plan against a rate further from it"
    )


def _check_rate(rate: float, threshold: float) -> None:
    if not 0.0 <= rate <= 1.0 or math.isnan(rate):
        raise PlanError(f"an expected success rate must lie between 0 and 1, not {rate:g}")
    if rate == threshold:
        raise PlanError(
            f"a rate equal to the threshold {threshold:g} cannot be told from it by any number of "
            "trials; expect a rate above or below it"
        )


@dataclass(frozen=True)
class SequentialRun:
    mean: float
    p90: int
    undecided: float  # share of runs still undecided at the cap
    wrong: float  # share of runs that called the wrong side


def sequential_run(rate: float, threshold: float, cap: int, confidence: float = DEFAULT_CONFIDENCE) -> SequentialRun:
    """The sequential rule's trials at `rate` up to `cap`, exactly: the distribution of the
    successes among runs still undecided, carried trial by trial (dynamic programming over
    trials and successes), each run leaving it at the trial its evidence shows a side."""
    held_at, broken_at = sequential.boundaries(threshold, cap, confidence)
    alive = np.zeros(cap + 2)
    alive[0] = 1.0
    stopped = np.zeros(cap)  # probability of stopping at trial n + 1
    held = broken = 0.0
    s = np.arange(cap + 2)
    for i in range(cap):
        alive = alive * (1 - rate) + np.concatenate(([0.0], alive[:-1])) * rate
        up, down = s >= held_at[i], s <= broken_at[i]
        held += alive[up].sum()
        broken += alive[down].sum()
        stopped[i] = alive[up | down].sum()
        alive[up | down] = 0.0
    undecided = max(0.0, 1.0 - stopped.sum())
    trials = np.arange(1, cap + 1)
    mean = float((trials * stopped).sum() + cap * undecided)
    cdf = np.cumsum(stopped)
    p90 = int(trials[np.searchsorted(cdf, 0.9 - 1e-12)]) if cdf[-1] >= 0.9 - 1e-12 else cap
    wrong = broken if rate >= threshold else held
    return SequentialRun(mean, p90, float(undecided), float(wrong))


@dataclass(frozen=True)
class LevelPlan:
    level: int
    rates: tuple[float, ...]  # the rates planned against (the expectation, or threshold +- margin)
    fixed: int  # trials of the fixed exact design (the larger over `rates`)
    sequential: SequentialRun  # the sequential rule at the rate that needs more trials, up to the cap
    cap: int
    to_decision: SequentialRun  # the same without a cap (to MAX_TRIALS): like with like against the fixed design


@dataclass(frozen=True)
class CampaignPlan:
    levels: list[LevelPlan]
    threshold: float
    confidence: float
    power: float
    policies: int
    trial_s: float
    trials_per_level: int
    adaptive: bool

    def robot_hours(self, per_level: Sequence[float]) -> float:
        return sum(per_level) * self.policies * self.trial_s / 3600.0


def plan_levels(
    levels: Sequence[int],
    threshold: float,
    trials_per_level: int,
    adaptive: bool,
    expect: Mapping[int, float],
    policies: int = 1,
    trial_s: float = 60.0,
    confidence: float = DEFAULT_CONFIDENCE,
    power: float = DEFAULT_POWER,
) -> CampaignPlan:
    """Size every level. `expect[k]`: the rate expected at level k; levels without one are
    planned against threshold +- PLANNING_MARGIN (whichever needs more trials). The sequential
    rule is simulated up to the campaign's cap (trials_per_level when adaptive; otherwise the
    fixed design's n times three, to say what an adaptive campaign would save)."""
    unknown = sorted(set(expect) - set(levels))
    if unknown:
        raise PlanError(
            f"--expect names level(s) {unknown}, which the campaign does not run (its levels: {sorted(levels)})"
        )
    if not trial_s > 0 or math.isinf(trial_s):
        raise PlanError(f"--trial-s must be a positive number of seconds, not {trial_s:g}")
    out = []
    for k in levels:
        rates: tuple[float, ...]
        if k in expect:
            rates = (float(expect[k]),)
        else:
            rates = tuple(r for r in (threshold + PLANNING_MARGIN, threshold - PLANNING_MARGIN) if 0 <= r <= 1)
        fixed = [fixed_trials(r, threshold, confidence, power) for r in rates]
        cap = trials_per_level if adaptive else 3 * max(fixed)
        runs_at = [sequential_run(r, threshold, cap, confidence) for r in rates]
        # the rate that needs more trials; capped means tie, then the one more often undecided
        worst = max(range(len(rates)), key=lambda i: (runs_at[i].mean, runs_at[i].undecided))
        uncapped = sequential_run(rates[worst], threshold, MAX_TRIALS, confidence)
        out.append(LevelPlan(k, rates, max(fixed), runs_at[worst], cap, uncapped))
    return CampaignPlan(out, threshold, confidence, power, policies, trial_s, trials_per_level, adaptive)


@dataclass(frozen=True)
class SearchPlan:
    """The break search (plan.BreakSearchRule) on one side's expected curve, against the
    per-level sweep (plan.AdaptiveRule, levels in order up to the first shown break) on the
    same curve and caps, each over `runs` seeded simulations."""

    chain: list[int]
    rates: list[float]
    mean: float
    p90: int
    narrowed: float  # share of runs that end with one level or two adjacent ones
    missed: float  # share of runs whose set leaves out the true break
    sweep_mean: float  # the sweep in sequential order (level by level, the cheapest order)
    sweep_missed: float  # share of sweeps that name another level than the true break
    interleaved_mean: float  # the sweep in interleaved order (one trial per open level per round)


def simulate_search(
    chain: Sequence[int],
    rates: Sequence[float],
    threshold: float,
    cap: int,
    confidence: float = DEFAULT_CONFIDENCE,
    runs: int = SIMULATED_RUNS,
    seed: int = 0,
) -> SearchPlan:
    """The break search and the per-level sweep on the expected curve `rates` (tau_0 outward)."""
    from indgen_core.stats import break_search

    rng = np.random.default_rng(seed)
    truth = next((j for j, r in enumerate(rates) if r < threshold), len(rates))
    used, narrowed, missed = [], 0, 0
    for _ in range(runs):
        n, found = break_search.decide(rates, rng, cap, cap * len(rates), threshold, confidence)
        used.append(n)
        narrowed += found.decided
        missed += truth not in found.candidates
    edges = sequential.boundaries(threshold, cap, confidence)
    sweep, interleaved = np.zeros(runs), np.zeros(runs)
    named = np.full(runs, len(rates))
    open_runs = np.ones(runs, dtype=bool)
    cut = np.full(runs, np.inf)  # interleaved: the round after which a nearer shown break stops a level
    for j, rate in enumerate(rates):
        verdicts, n_used = sequential.first_decisions(rng.random((runs, cap)) < rate, threshold, confidence, edges)
        broken = np.array([v == sequential.BROKEN for v in verdicts])
        sweep += np.where(open_runs, n_used, 0)
        named = np.where(open_runs & broken, j, named)
        open_runs &= ~broken
        interleaved += np.minimum(n_used, cut)
        cut = np.where(broken & (n_used <= cut), np.minimum(cut, n_used), cut)
    arr = np.asarray(used)
    return SearchPlan(
        list(chain),
        [float(r) for r in rates],
        float(arr.mean()),
        int(np.percentile(arr, 90, method="higher")),
        narrowed / runs,
        missed / runs,
        float(sweep.mean()),
        float(np.mean(named != truth)),
        float(interleaved.mean()),
    )


def parse_expect(items: Sequence[str]) -> dict[int, float]:
    """`k=rate` items of --expect, as {level: rate}; a malformed one is refused in one sentence."""
    out: dict[int, float] = {}
    for item in items:
        k, sep, rate = item.partition("=")
        try:
            level, value = int(k), float(rate)
        except ValueError:
            raise PlanError(f"--expect takes LEVEL=RATE (e.g. 3=0.6), not {item!r}") from None
        if not sep:
            raise PlanError(f"--expect takes LEVEL=RATE (e.g. 3=0.6), not {item!r}")
        if level in out:
            raise PlanError(f"--expect gives level {level} twice")
        out[level] = value
    return out
