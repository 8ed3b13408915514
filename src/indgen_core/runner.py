"""Running a planned campaign: pending trials in order, one result committed per trial.

The runner is the in-process counterpart of progression_manager (which does the same over
ROS): it asks the store what is still pending, applies the adaptive rule, runs each trial
through an executor (any callable from TaskSetup to TrialResult) and commits the result
before the next trial starts. Killed at any instant, it resumes where it stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from indgen_core import campaign as campaign_mod
from indgen_core.errors import IndGenError
from indgen_core.records import Outcome, TaskSetup, TrialResult
from indgen_core.store import PlannedTrial, ResultsStore

Executor = Callable[[TaskSetup], TrialResult]
Progress = Callable[[int, int, PlannedTrial, TrialResult | None], None]


class TooManyAborts(IndGenError):
    pass


@dataclass
class RunSummary:
    campaign_id: str
    ran: int = 0
    skipped: int = 0
    aborted_attempts: int = 0
    remaining: int = 0


def completed_counts(store: ResultsStore, campaign_id: str) -> dict[tuple[str, int], tuple[int, int]]:
    """(policy, level) -> (scored trials, successes) from the store."""
    out = {}
    for key, c in store.counts(campaign_id).items():
        out[key] = (c["success"] + c["failure"] + c["timeout"], c["success"])
    return out


def next_trial(store: ResultsStore, record, rule) -> tuple[PlannedTrial | None, int]:
    """The next trial to run, skipping (and recording) those the adaptive rule says need not
    run. Returns (trial or None, how many were skipped now)."""
    skipped = 0
    distance = {int(k): (lv["distance"], lv["side"]) for k, lv in record.axis_snapshot["levels"].items()}
    for trial in store.pending_trials(record.id):
        if rule is not None:
            reason = rule.skip_reason(trial, completed_counts(store, record.id), distance)
            if reason:
                store.skip_trial(record.id, trial.trial_id, reason)
                skipped += 1
                continue
        return trial, skipped
    return None, skipped


def run_campaign(store: ResultsStore, campaign_id: str, execute: Executor, progress: Progress | None = None,
                 max_consecutive_aborts: int = 5, abort_backoff_s: float = 1.0) -> RunSummary:
    record = store.campaign(campaign_id)
    rule = campaign_mod.adaptive_rule(record)
    summary = RunSummary(campaign_id)
    total = len(store.planned_trials(campaign_id))
    store.set_status(campaign_id, "running")
    aborts = 0
    while True:
        trial, skipped = next_trial(store, record, rule)
        summary.skipped += skipped
        if trial is None:
            break
        setup = campaign_mod.setup_for(record, trial)
        result = execute(setup)
        if result.trial_id != trial.trial_id:
            raise IndGenError(f"executor answered trial '{result.trial_id}' for '{trial.trial_id}'")
        final = store.commit_result(campaign_id, result)
        if record.purpose == campaign_mod.CERTIFY and result.outcome is Outcome.SUCCESS:
            campaign_mod.refresh_certificates(store, record)
        if progress is not None:
            done = total - len(store.pending_trials(campaign_id))
            progress(done, total, trial, result)
        if final:
            summary.ran += 1
            aborts = 0
            continue
        summary.aborted_attempts += 1
        aborts += 1
        if aborts >= max_consecutive_aborts:
            store.set_status(campaign_id, "waiting", f"{aborts} aborted attempts in a row: {result.reason}")
            raise TooManyAborts(f"campaign '{campaign_id}' stopped after {aborts} aborted attempts in a row "
                                f"({result.reason}); fix the cause and run `indgen campaign resume {campaign_id}`")
        time.sleep(abort_backoff_s * min(2 ** (aborts - 1), 30))
    summary.remaining = len(store.pending_trials(campaign_id))
    campaign_mod.refresh_certificates(store, record)
    store.set_status(campaign_id, "done" if summary.remaining == 0 else "stopped")
    return summary
