"""Where the break lies, as a confidence set, and which level the next trial should test.

The question a user asks of an axis is "where does the policy break?": the first level, going
out from tau_0, whose success rate is below the threshold. The per-level sweep answers it by
deciding every level in order, so the axis costs what its hardest level costs (a level at 0.3
takes ~190 trials to call held at 0.2). Under the assumption that success does not rise away
from tau_0 (monotone non-increasing along the chain of levels), the break b splits the chain
into levels at or above the threshold (j < b) and levels below it (j >= b), and one hypothesis
H_b per possible break (b = L: no level breaks) can be tested with every trial at once:

- a trial at level j counts against every H_b with b > j when it shows the rate below the
  threshold, and against every H_b with b <= j when it shows it above;
- per level, the evidence is the same Robbins mixture as the per-level rule (sequential.py),
  one factor per trial: E(x | past) = E_{n+1} / E_n, which has expectation at most 1 under
  the level's null whatever the past. Each trial bets on one side only, the side the level's
  success rate before the trial points to (none before its first trial): a bet
  chosen from the past keeps the factor's expectation at most 1, and betting only where the
  evidence points keeps a clearly held level from wiping out the evidence of a broken one;
- W_b, the product over the trials of the factors that count against H_b, is a nonnegative
  supermartingale under H_b (each factor has conditional expectation <= 1 whichever level
  was chosen, as long as the choice used only the past). By Ville's inequality W_b ever
  reaches 1/alpha with probability at most alpha, whenever one looks and stops.

The break set {b : W_b < 1/alpha} therefore misses the true break with probability at most
alpha, at every look: the same "any look, any stop" validity as the per-level rule. The
construction is a test by betting (Shafer and Vovk, "Game-Theoretic Foundations for
Probability and Finance", 2019; Waudby-Smith and Ramdas, "Estimating means of bounded random
variables by betting", JRSS-B 86, 2024) applied to the ordered hypotheses of a dose-finding
design: the question isotonic and bisection-style designs ask (Ji et al., "A modified
toxicity probability interval method for dose-finding trials", Clin. Trials 7, 2010; Liu and
Yuan, "Bayesian optimal interval designs for phase I clinical trials", JRSS-C 64, 2015, BOIN)
with a frequentist error that survives adaptive sampling.

If every hypothesis is rejected, the data contradict the monotone assumption (under it the
true H_b survives with probability 1 - alpha): the campaign says so and falls back to the
per-level sweep. A curve that rises again beyond the first break may also go unnoticed: the
set is then about the first break of the monotone curve the data are consistent with.

Choosing the next level (`next_position`) cannot hurt validity; it is built for few trials.
The set narrows to {k} once level k-1 is shown held and level k broken, and to {k, k+1} once
k-1 is held and k+1 broken, skipping a level near the threshold (the expensive one) entirely.
So the search prices every such pair of witnesses with optimistic (80% Beta) bounds on each
level's rate, tightened by the monotone assumption, and runs the next trial at the cheaper
unfinished witness of the cheapest pair.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from indgen_core.stats import sequential
from indgen_core.stats.level_stats import DEFAULT_CONFIDENCE, DEFAULT_THRESHOLD

#: the optimism of the bounds that price each witness, and the looser bounds other levels
#: lend it through the monotone envelope (steering only, never a claim)
_STEER_QUANTILE = 0.1
_ENVELOPE_QUANTILE = 0.01
#: w: the share of each level's evidence a hypothesis stakes on it
STAKE = 0.8
#: the mixture's overhead above n x KL, in log-evidence (steering only)
_MIXTURE_OVERHEAD = 1.0


@functools.lru_cache(maxsize=200_000)
def _log_factor(s: int, f: int, success: bool, threshold: float, side: str) -> float:
    """log E_{n+1} / E_n of the one-sided mixture at a level with s successes, f failures so far."""
    after = (s + 1, f) if success else (s, f + 1)
    return float(sequential._log_e(*after, threshold, side) - sequential._log_e(s, f, threshold, side))


def bet_side(successes: int, n: int, threshold: float) -> str | None:
    """The side the next trial at a level bets on: the side of the threshold its success rate
    so far lies on; no bet before the first trial or on the threshold itself (a bet placed on
    no information loses about as often as it wins, and a loss at a broken level would count
    against every break beyond it)."""
    if n == 0 or successes == threshold * n:
        return None
    return sequential.UPPER if successes > threshold * n else sequential.LOWER


@dataclass
class LevelEvidence:
    """One level's trials, in trial order: counts and the log evidence of its selective bets
    for the rate above (`above`) and below (`below`) the threshold."""

    successes: int = 0
    failures: int = 0
    above: float = 0.0
    below: float = 0.0

    @property
    def n(self) -> int:
        return self.successes + self.failures

    def add(self, success: bool, threshold: float) -> None:
        side = bet_side(self.successes, self.n, threshold)
        if side == sequential.UPPER:
            self.above += _log_factor(self.successes, self.failures, success, threshold, side)
        elif side == sequential.LOWER:
            self.below += _log_factor(self.successes, self.failures, success, threshold, side)
        if success:
            self.successes += 1
        else:
            self.failures += 1


@dataclass(frozen=True)
class BreakSet:
    """The break positions (0..L along the chain; L: no level breaks) the evidence has not
    ruled out at 1 - alpha. Empty: the data contradict the monotone assumption."""

    candidates: tuple[int, ...]
    chain_length: int
    alpha: float

    @property
    def contradicted(self) -> bool:
        return not self.candidates

    @property
    def decided(self) -> bool:
        """At most two adjacent positions: "the break is at k" or "at k or k+1"."""
        return bool(self.candidates) and self.candidates[-1] - self.candidates[0] <= 1


@dataclass
class BreakSearch:
    """The evidence along one chain of levels (tau_0 outward) for one policy."""

    chain_length: int
    threshold: float = DEFAULT_THRESHOLD
    confidence: float = DEFAULT_CONFIDENCE
    levels: list[LevelEvidence] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.chain_length < 1:
            raise ValueError("a break search needs at least one level")
        if not self.levels:
            self.levels = [LevelEvidence() for _ in range(self.chain_length)]

    @classmethod
    def replay(
        cls,
        outcomes: Sequence[Sequence[bool]],
        threshold: float = DEFAULT_THRESHOLD,
        confidence: float = DEFAULT_CONFIDENCE,
    ) -> BreakSearch:
        """The search after `outcomes[j]`, level j's scored trials in trial order."""
        search = cls(len(outcomes), threshold, confidence)
        for j, level in enumerate(outcomes):
            for success in level:
                search.add(j, bool(success))
        return search

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    def add(self, position: int, success: bool) -> None:
        self.levels[position].add(success, self.threshold)

    def log_wealth(self) -> list[float]:
        """log W_b for b = 0..L: evidence below the threshold at the levels before b, above
        it at b and beyond, each level's as 1 - w + w E (a level's bets that went wrong cost
        at most log 1 / (1 - w), never the others' evidence)."""

        def kept(log_e: float) -> float:
            return math.log1p(STAKE * math.expm1(log_e)) if log_e < 30 else math.log(STAKE) + log_e

        below = [0.0]
        for lv in self.levels:
            below.append(below[-1] + kept(lv.below))
        above = [0.0]
        for lv in reversed(self.levels):
            above.append(above[-1] + kept(lv.above))
        above.reverse()
        return [below[b] + above[b] for b in range(self.chain_length + 1)]

    def break_set(self) -> BreakSet:
        bar = math.log(1.0 / self.alpha)
        kept = tuple(b for b, w in enumerate(self.log_wealth()) if w < bar)
        return BreakSet(kept, self.chain_length, self.alpha)

    def next_position(self, room: Sequence[int]) -> int | None:
        """The level to test next (`room[j]`: trials level j may still take), or None when the
        set is decided, contradicted, or no level with room can narrow it."""
        current = self.break_set()
        if current.decided or current.contradicted:
            return None
        lo, hi = current.candidates[0], current.candidates[-1]
        held_cost, broken_cost = self._witness_costs(room, current.candidates)
        best: tuple[float, int] | None = None
        # a pair (a, c), c - a <= 2, a held and c broken, leaves at most {a+1, .., c}; a = -1
        # and c = L need no witness
        for a in range(lo - 1, hi):
            for c in (a + 1, a + 2):
                if c > self.chain_length or c < lo:
                    continue
                ca = 0.0 if a < 0 else held_cost[a]
                cc = 0.0 if c >= self.chain_length else broken_cost[c]
                total = ca + cc
                if not math.isfinite(total) or total <= 0:
                    continue
                # the cheaper unfinished witness runs first: it decides the cheaper half
                options = [(cost, j) for cost, j in ((ca, a), (cc, c)) if cost > 0]
                pick = min(options)[1]
                if best is None or total < best[0]:
                    best = (total, pick)
        if best is not None:
            return best[1]
        # no pair looks reachable on the optimistic bounds: learn more where the set is
        open_levels = [j for j in range(max(lo - 1, 0), min(hi + 1, self.chain_length)) if room[j] > 0]
        return min(open_levels, key=lambda j: self.levels[j].n, default=None)

    def _witness_costs(self, room: Sequence[int], kept: Sequence[int]) -> tuple[list[float], list[float]]:
        """Optimistic trials still needed at level j to rule out every kept break at or
        before j (shown held) or after j (shown broken): 0 where nothing kept is left to rule
        out, inf where the level's rate (an optimistic bound within the monotone envelope)
        points the other way or it has no room left."""
        bar = math.log(1.0 / self.alpha)
        wealth = self.log_wealth()
        th = self.threshold
        bounds = [_bounds(lv.successes, lv.failures) for lv in self.levels]
        # monotone envelope: a level's rate is at most every nearer level's, at least every
        # further one's (their looser bounds)
        hi = [min([bounds[j][1], *(b[3] for b in bounds[:j])]) for j in range(self.chain_length)]
        lo = [max([bounds[j][0], *(b[2] for b in bounds[j + 1 :])]) for j in range(self.chain_length)]
        held, broken = [], []
        for j in range(self.chain_length):
            before = [wealth[b] for b in kept if b <= j]
            after = [wealth[b] for b in kept if b > j]
            held.append(_cost(bar - min(before, default=bar), hi[j], th, room[j], above=True))
            broken.append(_cost(bar - min(after, default=bar), lo[j], th, room[j], above=False))
        return held, broken


@functools.lru_cache(maxsize=100_000)
def _bounds(successes: int, failures: int) -> tuple[float, float, float, float]:
    """(own low, own high, envelope low, envelope high): Beta(s + 1/2, f + 1/2) quantiles."""
    from scipy import stats as st

    q = [_STEER_QUANTILE, 1 - _STEER_QUANTILE, _ENVELOPE_QUANTILE, 1 - _ENVELOPE_QUANTILE]
    lo, hi, far_lo, far_hi = st.beta.ppf(q, successes + 0.5, failures + 0.5)
    return float(lo), float(hi), float(far_lo), float(far_hi)


def _cost(deficit: float, rate: float, threshold: float, room: int, above: bool) -> float:
    if deficit <= 0:
        return 0.0
    if room <= 0 or (rate <= threshold if above else rate >= threshold):
        return math.inf
    rate = min(max(rate, 1e-6), 1 - 1e-6)
    kl = rate * math.log(rate / threshold) + (1 - rate) * math.log((1 - rate) / (1 - threshold))
    need = (deficit + _MIXTURE_OVERHEAD) / kl
    return max(need, 1.0) if need <= room else math.inf


def decide(
    chain_rates: Sequence[float],
    rng,
    cap: int,
    budget: int,
    threshold: float = DEFAULT_THRESHOLD,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[int, BreakSet]:
    """One simulated search on true rates `chain_rates` (per-level cap, total budget):
    (trials used, final set). The planner and bench/stats_coverage.py use it."""
    search = BreakSearch(len(chain_rates), threshold, confidence)
    used = 0
    while used < budget:
        room = [cap - lv.n for lv in search.levels]
        j = search.next_position(room)
        if j is None:
            break
        search.add(j, bool(rng.random() < chain_rates[j]))
        used += 1
    return used, search.break_set()
