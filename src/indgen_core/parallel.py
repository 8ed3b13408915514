"""A campaign's trials spread over N worker processes, each with its own simulator.

Simulators are single-threaded and cannot be shared, so each worker builds its own world
once and then runs the trials it is handed, one at a time. Only the parent touches the
results store: it commits each result as it arrives, so nothing is committed twice. The
parent always knows which trial each worker holds; when a worker dies (a simulator crash, the
OOM killer) its trial is recorded as an aborted attempt, handed to a fresh worker, and run
again (at most `max_attempts` times in one run, after which it stays pending for the next
run) - never lost, never doubled. Killed itself, the run resumes from the store like any other.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import time
from collections import Counter
from typing import Any

from indgen_core import campaign as campaign_mod
from indgen_core.errors import IndGenError
from indgen_core.records import Outcome, TrialResult
from indgen_core.runner import Progress, RunSummary
from indgen_core.store import PlannedTrial, ResultsStore


def _worker_main(world: str, world_options: dict, endpoints: dict, inbox, outbox) -> None:
    from indgen_core import registry
    from indgen_core.inprocess import InProcessExecutor

    executor = InProcessExecutor(registry.make(registry.WORLDS, world, **world_options), endpoints)
    outbox.put(("ready", os.getpid(), None))
    try:
        while True:
            setup = inbox.get()
            if setup is None:
                return
            try:
                result = executor(setup)
            except Exception as exc:  # a bug in a world must not take the campaign down
                result = TrialResult(setup.trial_id, Outcome.ABORTED, f"worker error: {exc.__class__.__name__}: {exc}")
            outbox.put(("result", os.getpid(), result))
    finally:
        executor.close()


class _Worker:
    def __init__(self, ctx, args: tuple, outbox):
        self.inbox = ctx.Queue()
        self.proc = ctx.Process(target=_worker_main, args=(*args, self.inbox, outbox), daemon=True)
        self.proc.start()
        self.trial: PlannedTrial | None = None

    def give(self, trial: PlannedTrial, setup) -> None:
        self.trial = trial
        self.inbox.put(setup)

    def stop(self) -> None:
        if self.proc.is_alive():
            self.inbox.put(None)
            self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def run_campaign_parallel(store: ResultsStore, campaign_id: str, workers: int | None = None,
                          world_options: dict[str, Any] | None = None, progress: Progress | None = None,
                          max_attempts: int = 3) -> RunSummary:
    """Run every pending trial of the campaign on `workers` processes (default: the cores)."""
    record = store.campaign(campaign_id)
    # `world_options` build each worker's world; the campaign's own reach every TaskSetup
    args = (record.world, dict(world_options or {}), dict(record.config.get("endpoints") or {}))
    summary = RunSummary(campaign_id)
    total = len(store.planned_trials(campaign_id))
    todo = list(store.pending_trials(campaign_id))
    store.set_status(campaign_id, "running")
    ctx = mp.get_context("spawn")
    outbox = ctx.Queue()
    pool = [_Worker(ctx, args, outbox) for _ in range(min(workers or default_workers(), max(1, len(todo))))]
    tries: Counter[str] = Counter()
    ready: set[int] = set()
    try:
        while todo or any(w.trial for w in pool):
            for w in pool:
                if w.trial is None and todo and w.proc.is_alive():
                    trial = todo.pop(0)
                    tries[trial.trial_id] += 1
                    w.give(trial, campaign_mod.setup_for(record, trial))
            try:
                kind, pid, result = outbox.get(timeout=0.5)
            except queue.Empty:
                kind = None
            if kind == "ready":
                ready.add(pid)
            elif kind == "result":
                worker = next((w for w in pool if w.proc.pid == pid), None)
                trial, worker.trial = worker.trial, None
                if store.commit_result(campaign_id, result):
                    summary.ran += 1
                else:
                    summary.aborted_attempts += 1
                    if tries[trial.trial_id] < max_attempts:
                        todo.append(trial)
                if progress is not None:
                    progress(total - len(store.pending_trials(campaign_id)), total, trial, result)
            for i, w in enumerate(pool):
                if not w.proc.is_alive() and w.proc.pid not in ready:
                    raise IndGenError(f"a worker process could not build the world '{record.world}' "
                                      f"(exit code {w.proc.exitcode}; its error is printed above)")
                if not w.proc.is_alive() and (w.trial is not None or todo):
                    lost, w.trial = w.trial, None
                    if lost is not None:
                        store.commit_result(campaign_id, TrialResult(
                            lost.trial_id, Outcome.ABORTED,
                            f"worker process died (exit code {w.proc.exitcode}) during the trial"))
                        summary.aborted_attempts += 1
                        if tries[lost.trial_id] < max_attempts:
                            todo.insert(0, lost)
                    pool[i] = _Worker(ctx, args, outbox)
            time.sleep(0)
    finally:
        for w in pool:
            w.stop()
    summary.remaining = len(store.pending_trials(campaign_id))
    campaign_mod.refresh_certificates(store, record)
    store.set_status(campaign_id, "done" if summary.remaining == 0 else "stopped")
    return summary
