"""Blind A/B campaigns: the person who resets and labels never learns which policy ran.

Real-robot A/B evaluations hide the policy from the evaluator and randomise its order
(RoboArena, arXiv 2506.18123; TRI's LBM study, arXiv 2507.05331): a labeller who knows which
policy ran, or watches its running rate, labels the borderline episode differently. In a
campaign with `blind: true`:
- each policy gets a letter (A, B, ...) from a permutation fixed by the campaign's seed; the
  store keeps the mapping in the campaign's config (`blind_labels`);
- the plan names trials by letter, and policies of one round run in an order fixed by the seed;
- everything a person sees while trials run (the console, its prompts and live table, the task
  setup, robot status, trial ids, logs, reports and comparisons) names letters only;
- running rates are hidden until the campaign is done; names stay hidden until a person
  unblinds it (`indgen campaign unblind ID --by NAME`, an event in the store with who and when).
An adaptive campaign cannot be blind: a level that stops early tells the person how it is going.
"""

from __future__ import annotations

import string
import time
from collections.abc import Sequence

import numpy as np

from indgen_core.errors import IndGenError
from indgen_core.store import CampaignRecord, ResultsStore

UNBLIND = "unblind"
LETTERS = string.ascii_uppercase


def assign_labels(policies: Sequence[str], seed: int) -> dict[str, str]:
    """policy -> letter, a permutation fixed by the campaign's seed (so the config's order of
    policies does not say which letter is which)."""
    if len(policies) > len(LETTERS):
        raise IndGenError(f"a blind campaign takes at most {len(LETTERS)} policies, not {len(policies)}")
    order = np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFF, 11])).permutation(len(policies))
    return {policies[j]: LETTERS[i] for i, j in enumerate(order)}


def labels(record: CampaignRecord) -> dict[str, str]:
    """policy -> letter for a blind campaign, {} otherwise."""
    return dict(record.blind_labels)


def unblinding(store: ResultsStore, record: CampaignRecord) -> dict | None:
    """The event that unblinded the campaign (at, message), or None."""
    return next((e for e in store.events(record.id) if e["kind"] == UNBLIND), None)


def blinded(store: ResultsStore, record: CampaignRecord) -> bool:
    return bool(labels(record)) and unblinding(store, record) is None


def shown_names(store: ResultsStore, record: CampaignRecord) -> dict[str, str]:
    """policy -> the name a person may see now: its letter while blinded, else itself; while
    blinded in letter order (the campaign file's order would say which letter is which)."""
    names = labels(record) if blinded(store, record) else {}
    shown = {p: names.get(p, p) for p in record.policies}
    return dict(sorted(shown.items(), key=lambda kv: kv[1])) if names else shown


def rates_hidden(store: ResultsStore, record: CampaignRecord) -> bool:
    """Running rates stay hidden from the cell while trials of a blind campaign are still to run,
    whether or not someone unblinded it meanwhile (the person who resets and labels must not
    learn how it goes; the one who unblinds learns the names from `campaign unblind`)."""
    return bool(labels(record)) and record.status != "done"


def unblind(store: ResultsStore, campaign_id: str, by: str, reason: str = "") -> dict[str, str]:
    """Reveal the names: an event with who, when and (before the campaign is done: required)
    why, every time anyone unblinds; returns letter -> policy."""
    record = store.campaign(campaign_id)
    names = labels(record)
    if not names:
        raise IndGenError(f"campaign {campaign_id} is not blind; there is nothing to unblind")
    if not by.strip():
        raise IndGenError("say who unblinds the campaign (--by NAME); the store records it")
    if record.status != "done" and not reason.strip():
        raise IndGenError(
            f"campaign {campaign_id} is {record.status}, not done: unblinding it now needs --reason (recorded); "
            "the cell's console stays blind until the campaign is done"
        )
    why = f"; reason: {reason.strip()}" if reason.strip() else ""
    store.log_event(
        campaign_id,
        UNBLIND,
        f"unblinded by {by.strip()} (status {record.status}) at {time.strftime('%Y-%m-%d %H:%M:%S %Z')}{why}",
    )
    return {letter: policy for policy, letter in sorted(names.items(), key=lambda kv: kv[1])}


def unblindings(store: ResultsStore, record: CampaignRecord) -> list[dict]:
    """Every unblinding, first first."""
    return [e for e in store.events(record.id) if e["kind"] == UNBLIND]
