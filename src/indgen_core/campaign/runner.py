"""Running a planned campaign: pending trials in order, one result committed per trial.

`CampaignDriver` holds the steps every way of running goes through (choose the next trial,
its setup, take its result, report, finish); `run_campaign` drives it one trial at a time in
this process and, with the scorer as its commit, in the ROS graph's progression manager;
`run_campaign_batched` drives it a group at a time; `cluster.run_campaign_cluster` with tasks
in flight. Each result is committed before the next trial starts; killed at any instant, a
run resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from indgen_core.campaign import planning as campaign_mod
from indgen_core.errors import IndGenError
from indgen_core.records import Outcome, TaskSetup, TrialResult
from indgen_core.store import PlannedTrial, ResultsStore
from indgen_core.waiting import wait_until

Executor = Callable[[TaskSetup], TrialResult]
BatchExecutor = Callable[[list[TaskSetup]], list[TrialResult]]
#: (done, total, the trial, its result): called after every trial's result is committed
Progress = Callable[[int, int, PlannedTrial, TrialResult], None]


#: the reason of an attempt a killed run left unfinished
INTERRUPTED = "interrupted: the run stopped during this attempt and its result never reached the store"


class TooManyAborts(IndGenError):
    pass


class StopCampaign(Exception):
    """Raised by an executor to stop the campaign at once, recording nothing for the trial
    at hand (the operator stopped it): the campaign resumes from the store later."""


@dataclass
class RunSummary:
    campaign_id: str
    ran: int = 0
    skipped: int = 0
    aborted_attempts: int = 0
    remaining: int = 0


def aborts_in_a_row(store: ResultsStore, campaign_id: str, aborts: int, reason: str) -> TooManyAborts:
    """The stop both runners (in process, on a cluster) make after too many aborted attempts
    in a row: the cause is the system's (a server gone, a policy that cannot be built), and
    retrying forever would only hide it. The campaign waits in the store for a resume."""
    store.set_status(campaign_id, "waiting", f"{aborts} aborted attempts in a row: {reason}")
    return TooManyAborts(
        f"campaign '{campaign_id}' stopped after {aborts} aborted attempts in a row "
        f"({reason}); fix the cause and run `indgen campaign resume {campaign_id}`"
    )


def completed_outcomes(store: ResultsStore, campaign_id: str) -> dict[tuple[str, int], list[bool]]:
    """(policy, level) -> the scored outcomes (True: success) of the longest completed prefix
    of the level's planned trials, in trial-index order: a trial finished out of order (on a
    cluster, a success ends before a failure that started earlier) counts once every trial
    before it is done. Finished trials that are not scored (invalid, skipped by the person) are
    passed over; the first pending or rule-skipped trial ends the prefix."""
    by_level: dict[tuple[str, int], list] = {}
    for row in store.rows(campaign_id):
        by_level.setdefault((row.policy, row.level), []).append(row)
    out = {}
    for key, rows in by_level.items():
        outcomes = []
        for row in sorted(rows, key=lambda r: r.trial_index):
            if row.status != "done":
                break
            if row.outcome is not None and row.outcome.scored:
                outcomes.append(row.outcome is Outcome.SUCCESS)
        out[key] = outcomes
    return out


def completed_counts(store: ResultsStore, campaign_id: str) -> dict[tuple[str, int], tuple[int, int]]:
    """(policy, level) -> (scored trials, successes) over `completed_outcomes`."""
    return {key: (len(v), sum(v)) for key, v in completed_outcomes(store, campaign_id).items()}


def choose_next(store: ResultsStore, record, rule, candidates: list[PlannedTrial]) -> tuple[PlannedTrial | None, int]:
    """The next of `candidates` (pending trials in plan order) to run, skipping (and recording)
    those that need not run: all of them once a registered A/B is decided, else those the
    adaptive rule passes over. Skipped candidates leave `candidates`. Returns (trial or None,
    how many were skipped now); None with candidates left: what runs next waits on results."""
    from indgen_core.report.analysis import decided_reason  # (analysis reads the runner's counts)

    decided = decided_reason(store, record)
    if decided:  # an A/B that stops once decided: every trial still pending is not needed
        skipped = len(candidates)
        for trial in candidates:
            store.skip_trial(record.id, trial.trial_id, decided)
        candidates.clear()
        return None, skipped
    if rule is None:
        return (candidates[0] if candidates else None), 0
    trial, skips = rule.choose(candidates, completed_outcomes(store, record.id), level_places(record))
    for skip, reason in skips:
        store.skip_trial(record.id, skip.trial_id, reason)
        candidates.remove(skip)
    return trial, len(skips)


class CampaignDriver:
    """The steps every way of running a campaign goes through, written once: start, choose the
    next trial (the adaptive rule, a decided A/B), its setup, take its result (commit,
    certificates, counts), report progress, finish (what is left, certificates, status).
    run_campaign (one trial at a time; the ROS graph's progression manager drives it with the
    scorer as its commit), run_campaign_batched (groups stepped together) and
    cluster.run_campaign_cluster (tasks in flight) drive it; each keeps only its own pacing and
    its own answer to aborted attempts."""

    def __init__(
        self,
        store: ResultsStore,
        campaign_id: str,
        progress: Progress | None = None,
        commit: Callable[[TrialResult], bool] | None = None,
    ):
        self.store = store
        self.record = store.campaign(campaign_id)
        self.rule = campaign_mod.adaptive_rule(self.record)
        self.summary = RunSummary(campaign_id)
        self.total = len(store.planned_trials(campaign_id))
        self._progress = progress
        self._commit = commit or (lambda result: store.commit_result(campaign_id, result))

    def start(self) -> None:
        """The campaign runs; an attempt an earlier run started and never finished (it was
        killed during it) is recorded first, as interrupted: the store holds every attempt."""
        self.store.set_status(self.record.id, "running")
        for trial_id in self.store.unfinished_starts(self.record.id):
            self._commit(TrialResult(trial_id, Outcome.ABORTED, INTERRUPTED))

    def begin(self, trial: PlannedTrial) -> None:
        """An attempt of `trial` starts (kept, so that a run killed during it is known)."""
        self.store.log_event(self.record.id, "started", trial.trial_id)

    def choose(self, candidates: list[PlannedTrial]) -> PlannedTrial | None:
        trial, skipped = choose_next(self.store, self.record, self.rule, candidates)
        self.summary.skipped += skipped
        return trial

    def setup(self, trial: PlannedTrial, blind_view: bool = False) -> TaskSetup:
        return campaign_mod.setup_for(self.record, trial, blind_view)

    def take(self, trial: PlannedTrial, result: TrialResult) -> bool:
        """Commit the trial's result; True when it is final (the trial is done)."""
        if result.trial_id != trial.trial_id:
            raise IndGenError(f"the executor answered trial '{result.trial_id}' for '{trial.trial_id}'")
        final = self._commit(result)
        if final:
            self.summary.ran += 1
            campaign_mod.certify_after(self.store, self.record, result)
        elif result.outcome is not Outcome.SUPERSEDED:  # an operator's redo is no abort
            self.summary.aborted_attempts += 1
        return final

    def report(self, trial: PlannedTrial, result: TrialResult) -> None:
        if self._progress is not None:
            self._progress(self.total - len(self.store.pending_trials(self.record.id)), self.total, trial, result)

    def finish(self) -> RunSummary:
        return finish_run(self.store, self.record, self.summary)


def level_places(record) -> dict[int, tuple[int, int]]:
    """level -> (atomic steps from tau_0, side: 0 in distribution, +1 / -1 beyond)."""
    return {k: (lv.distance, lv.side) for k, lv in record.axis_snapshot.levels.items()}


def run_campaign(
    store: ResultsStore,
    campaign_id: str,
    execute: Executor,
    progress: Progress | None = None,
    max_consecutive_aborts: int = 5,
    abort_backoff_s: float = 1.0,
    commit: Callable[[TrialResult], bool] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_wait: Callable[[str, float], None] | None = None,
    max_aborts_per_trial: int = 0,
    blind_view: bool = False,
) -> RunSummary:
    """Run the pending trials in plan order until none is left (or `should_stop()`).

    `commit(result)` records a result and says whether it was final (default: straight into
    the store; the ROS progression manager hands it to the scorer and waits for the commit).
    After an aborted attempt the trial runs again after a backoff (reported through
    `on_wait`); with max_consecutive_aborts > 0 the campaign stops after that many in a row,
    with 0 it keeps waiting (the world or policy server will come back). With
    max_aborts_per_trial > 0 a trial aborted that many times in this run stops the campaign: on
    a real robot a fault that keeps coming back needs a person. `blind_view`: setups name a
    blind campaign's policies by letter (a node graph, where people see them).
    """
    driver = CampaignDriver(store, campaign_id, progress, commit)
    should_stop = should_stop or (lambda: False)
    driver.start()
    aborts = 0
    trial_aborts: dict[str, int] = {}
    while not should_stop():
        trial = driver.choose(list(store.pending_trials(campaign_id)))
        if trial is None:
            break
        driver.begin(trial)
        try:
            result = execute(driver.setup(trial, blind_view))
        except StopCampaign:
            break
        final = driver.take(trial, result)
        driver.report(trial, result)
        if final:
            aborts = 0
            continue
        if result.outcome is Outcome.SUPERSEDED:  # the operator's redo: run it again at once
            continue
        aborts += 1
        trial_aborts[trial.trial_id] = trial_aborts.get(trial.trial_id, 0) + 1
        if max_aborts_per_trial and trial_aborts[trial.trial_id] >= max_aborts_per_trial:
            message = (
                f"trial {trial.trial_id} was aborted {max_aborts_per_trial} times, the last because "
                f"{result.reason}; fix the cause and resume the campaign ({campaign_id})"
            )
            store.set_status(campaign_id, "waiting", message)
            raise TooManyAborts(f"campaign '{campaign_id}' stopped: {message}")
        if max_consecutive_aborts and aborts >= max_consecutive_aborts:
            raise aborts_in_a_row(store, campaign_id, aborts, result.reason)
        delay = abort_backoff_s * min(2 ** (aborts - 1), 30)
        if on_wait is not None:
            on_wait(result.reason, delay)
        wait_until(should_stop, delay, poll=0.05)  # the back-off, cut short by a stop
    return driver.finish()


def finish_run(store: ResultsStore, record, summary: RunSummary) -> RunSummary:
    """Every way of running ends here: what is left, the certificates, the status (done when
    nothing is pending, stopped otherwise)."""
    summary.remaining = len(store.pending_trials(record.id))
    campaign_mod.certify_after(store, record)
    store.set_status(record.id, "done" if summary.remaining == 0 else "stopped")
    return summary


def run_campaign_batched(
    store: ResultsStore, campaign_id: str, execute_batch: BatchExecutor, progress: Progress | None = None
) -> RunSummary:
    """Run the pending trials one (policy, level) group at a time through a batch executor
    (many episodes stepped together), committing every result as it comes. Outcomes do not
    depend on the grouping: each trial's episode is fixed by its seed. The adaptive rule is
    not applied here (it decides trial by trial)."""
    driver = CampaignDriver(store, campaign_id, progress)
    if driver.rule is not None:
        raise IndGenError(f"campaign '{campaign_id}' is adaptive; run it trial by trial (run_campaign)")
    driver.start()
    groups: dict[tuple[str, int], list[PlannedTrial]] = {}
    for trial in store.pending_trials(campaign_id):
        groups.setdefault((trial.policy, trial.level), []).append(trial)
    for trials in groups.values():
        for trial in trials:
            driver.begin(trial)
        results = execute_batch([driver.setup(t) for t in trials])
        for trial, result in zip(trials, results, strict=True):
            driver.take(trial, result)
            driver.report(trial, result)
    return driver.finish()
