"""A campaign's trials as tasks on a Dask cluster: several machines, or N processes on this one.

The driver (`indgen campaign run|resume`) alone talks to the results store. It submits each
pending trial as one task; a worker builds its world once per (world, options) and keeps it,
with its policies, for the tasks that follow (one per worker thread: simulators cannot be
shared). Every result comes back to the driver and is committed keyed by its trial id, so a
task that ran twice (a retry after a worker died, a resubmission) can never be counted twice.

Faults:
- a worker that dies mid-trial: the task fails with KilledWorker (the scheduler is told not to
  retry it itself: `allowed-failures` 0), the driver records an aborted attempt and submits
  the trial again, at most `max_attempts` times in one run; a trial that used them all, or
  `max_consecutive_aborts` aborted attempts in a row, stops the run with one sentence (as in
  process: runner.aborts_in_a_row);
- a worker that cannot build the world or a policy (an unreadable checkpoint, a robot
  mismatch: an IndGenError, which every trial would meet) stops the run at once with that
  sentence, nothing committed for it, as the same campaign run in process does;
- the driver killed: the store holds every result it committed; `resume --cluster` runs the
  rest (the cluster's tasks of the dead driver are cancelled with its client);
- the scheduler gone: the run stops with one sentence; nothing committed is lost.

`--workers N` is a LocalCluster of N single-threaded worker processes bound to 127.0.0.1,
with no dashboard: the same code path as a real cluster.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

from indgen_core.campaign import runner
from indgen_core.campaign.runner import Progress, RunSummary
from indgen_core.errors import IndGenError, require
from indgen_core.records import Outcome, TaskSetup, TrialResult
from indgen_core.report import analysis
from indgen_core.store import ResultsStore

#: the scheduler must not re-run a task whose worker died (the driver does, and records the
#: aborted attempt), and hands a worker thread one trial at a time (with Dask's default 1.1 a
#: second trial waits on the worker and dies with it without having started)
SCHEDULER_CONFIG = {"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0}
CONNECT_TIMEOUT_S = 10.0


class ClusterError(IndGenError):
    pass


# -- on the worker -------------------------------------------------------------------------------
_local = threading.local()


def _executor(world: str, options_json: str, endpoints_json: str):
    """This worker thread's executor for (world, options), built on first use and kept."""
    from indgen_core import registry
    from indgen_core.campaign.inprocess import InProcessExecutor

    cache = getattr(_local, "executors", None)
    if cache is None:
        cache = _local.executors = {}
    key = (world, options_json, endpoints_json)
    if key not in cache:
        cache[key] = InProcessExecutor(
            registry.make(registry.WORLDS, world, **json.loads(options_json)), json.loads(endpoints_json)
        )
    return cache[key]


#: TrialResult.details key of a worker's refusal: the run stops with its reason
REFUSED = "worker_refused"


def run_trial(world: str, options_json: str, endpoints_json: str, setup: TaskSetup) -> TrialResult:
    """One trial on a worker (the Dask task)."""
    try:
        return _executor(world, options_json, endpoints_json)(setup)
    except IndGenError as exc:  # a refusal (a checkpoint, a robot mismatch): every trial would meet it
        return TrialResult(setup.trial_id, Outcome.ABORTED, str(exc), details={REFUSED: True})
    except Exception as exc:  # a bug in a world must not take the campaign down: an aborted attempt
        return TrialResult(setup.trial_id, Outcome.ABORTED, f"worker error: {exc.__class__.__name__}: {exc}")


def worker_facts() -> dict[str, Any]:
    """What `indgen doctor --cluster` compares across workers."""
    import platform

    from indgen_core import __version__, registry

    return {
        "indgen": __version__,
        "python": platform.python_version(),
        "worlds": sorted(registry.names(registry.WORLDS)),
        "policies": sorted(registry.names(registry.POLICIES)),
    }


# -- on the driver -------------------------------------------------------------------------------
def default_workers() -> int:
    import os

    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


@contextlib.contextmanager
def connect(address: str | None = None, workers: int = 0) -> Iterator[Any]:
    """A Dask client: of the scheduler at `address`, or of a LocalCluster of `workers`
    processes on 127.0.0.1 (closed again at the end)."""
    require("distributed", "all", "running campaigns on Dask")
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set(SCHEDULER_CONFIG):
        if address:
            try:
                client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
            except (OSError, TimeoutError) as exc:
                raise ClusterError(f"no Dask scheduler answers at {address} ({exc.__class__.__name__})") from None
            try:
                yield client
            finally:
                with contextlib.suppress(Exception):
                    client.close()
            return
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=40,
        )
        try:
            client = Client(cluster, set_as_default=False)
            try:
                yield client
            finally:
                client.close()
        finally:
            cluster.close()


def run_campaign_cluster(
    store: ResultsStore,
    campaign_id: str,
    client,
    world_options: dict[str, Any] | None = None,
    progress: Progress | None = None,
    max_attempts: int = 3,
    max_consecutive_aborts: int = 5,
) -> RunSummary:
    """Run every pending trial of the campaign as tasks through `client`.

    A sequential (adaptive) campaign keeps at most one trial per worker thread in flight,
    submitted in plan order, and asks the rule before each submission; the rule sees only each
    level's longest completed prefix of planned trials (runner.completed_outcomes), so the order
    in which trials happen to finish (a success ends early, a failure runs to the step limit)
    never steers a verdict."""
    from distributed import as_completed

    driver = runner.CampaignDriver(store, campaign_id, progress)
    record = driver.record
    args = (
        record.world,
        json.dumps(dict(world_options or {}), sort_keys=True),
        json.dumps(dict(record.config.endpoints), sort_keys=True),
    )
    queue = list(store.pending_trials(campaign_id))
    if not queue:
        return driver.finish()
    _check_workers(client, record.world)
    driver.start()
    # trials chosen by results (a rule, an A/B that stops once decided): one in flight per thread
    stops = driver.rule is not None or _stops_when_decided(record)
    window = max(sum(client.nthreads().values()), 1) if stops else len(queue)
    tries: Counter[str] = Counter()
    held: dict[str, Any] = {}  # future key -> trial

    def submit(trial):
        driver.begin(trial)
        tries[trial.trial_id] += 1
        key = f"indgen-{campaign_id}-{trial.trial_id}-{tries[trial.trial_id]}"
        future = client.submit(run_trial, *args, driver.setup(trial), key=key, pure=False, retries=0)
        held[future.key] = trial
        return future

    def fill(futures) -> list:
        """Submit queued trials in plan order up to the window, the rule skipping the decided."""
        added = []
        while queue and len(held) < window:
            chosen = driver.choose(queue)
            if chosen is None:
                break  # what runs next waits on results in flight
            queue.remove(chosen)
            added.append(submit(chosen))
        if futures is not None:
            for future in added:
                futures.add(future)
        return added

    aborts = 0  # in a row, in the order results come back
    given_up: list[TrialResult] = []  # trials that used all their attempts
    futures = as_completed(fill(None), loop=client.loop)
    try:
        for future in futures:
            trial = held.pop(future.key)
            result = _result_of(future, trial, client)
            if result.details.get(REFUSED):
                store.set_status(campaign_id, "stopped", result.reason)
                raise IndGenError(result.reason)
            if driver.take(trial, result):
                aborts = 0
            else:
                aborts += 1
                if max_consecutive_aborts and aborts >= max_consecutive_aborts:
                    raise runner.aborts_in_a_row(store, campaign_id, aborts, result.reason)
                if tries[trial.trial_id] < max_attempts:
                    queue.insert(0, trial)  # first in line again: the prefix waits for it
                else:
                    given_up.append(result)
            fill(futures)
            driver.report(trial, result)
    except ClusterError:
        store.set_status(campaign_id, "stopped", "the Dask scheduler went away")
        raise
    finally:
        for future in list(futures.futures):
            with contextlib.suppress(Exception):
                future.cancel()
    summary = driver.finish()
    if given_up:
        message = (
            f"{len(given_up)} trial(s) aborted {max_attempts} times each, the last ({given_up[-1].trial_id}) "
            f"because {given_up[-1].reason}; fix the cause and run `indgen campaign resume {campaign_id}`"
        )
        store.set_status(campaign_id, "waiting", message)
        raise runner.TooManyAborts(f"campaign '{campaign_id}' stopped: {message}")
    return summary


def _stops_when_decided(record) -> bool:
    plan = analysis.registered_analysis(record)
    return plan is not None and plan.stop_when_decided


def _result_of(future, trial, client) -> TrialResult:
    from distributed import KilledWorker

    try:
        result = future.result()
    except KilledWorker:
        return TrialResult(trial.trial_id, Outcome.ABORTED, "the worker running the trial died")
    except Exception as exc:
        # this driver cancels nothing while the run goes on: a cancelled task is the scheduler's
        # connection lost ("scheduler-connection-lost"), seen before the client's status says so
        if client.status not in ("running", "connecting") or isinstance(exc, concurrent.futures.CancelledError):
            raise ClusterError(
                f"lost the Dask scheduler ({client.status}): the campaign stopped; every result "
                "so far is in the store, and `indgen campaign resume ID --cluster ADDRESS` "
                "runs the rest"
            ) from None
        return TrialResult(
            trial.trial_id, Outcome.ABORTED, f"the trial's task failed: {exc.__class__.__name__}: {str(exc)[:200]}"
        )
    if not isinstance(result, TrialResult) or result.trial_id != trial.trial_id:
        return TrialResult(trial.trial_id, Outcome.ABORTED, "the worker answered with something else")
    return result


def _check_workers(client, world: str) -> None:
    facts = cluster_facts(client)
    if not facts:
        raise ClusterError("the Dask cluster has no workers")
    missing = [addr for addr, f in facts.items() if world not in f["worlds"]]
    if missing:
        raise ClusterError(f"world '{world}' is not installed on the worker(s) {', '.join(sorted(missing))}")
    from indgen_core import __version__

    other = {addr: f["indgen"] for addr, f in facts.items() if f["indgen"] != __version__}
    if other:
        raise ClusterError(
            f"the workers must run IndGen {__version__} like this driver; "
            + ", ".join(f"{a} runs {v}" for a, v in sorted(other.items()))
        )


def cluster_facts(client, wait_s: float = 5.0) -> dict[str, dict[str, Any]]:
    """worker_facts() of every worker (waiting up to `wait_s` for the first one)."""
    with contextlib.suppress(Exception):
        client.wait_for_workers(1, timeout=wait_s)
    try:
        return client.run(worker_facts)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"the Dask scheduler stopped answering ({exc.__class__.__name__})") from None
