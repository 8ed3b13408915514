"""The results store: durable, atomic, no double counting; planning with feasibility certificates."""

from __future__ import annotations

import csv
import json
import sqlite3
import subprocess
import sys

import pytest

from helpers import toy_setup, toy_world
from indgen_core.axes import conditions
from indgen_core.campaign.config import CampaignConfig
from indgen_core.campaign.operator_flow import attempt_note
from indgen_core.campaign.planning import plan_campaign, setup_for
from indgen_core.errors import IndGenError
from indgen_core.records import Outcome, TrialResult
from indgen_core.store import DuplicateResult, RepeatedAttempt, ResultsStore, StoreError


@pytest.fixture
def toy(monkeypatch, tmp_path):
    toy_setup.toy_env(monkeypatch, tmp_path)
    return tmp_path


def test_wal_mode_and_default_location(tmp_path, monkeypatch):
    monkeypatch.setenv("INDGEN_DB", str(tmp_path / "x" / "results.sqlite"))
    with ResultsStore() as store:
        assert store.path == tmp_path / "x" / "results.sqlite"
        assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    monkeypatch.delenv("INDGEN_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    with ResultsStore() as store:
        assert store.path == tmp_path / "xdg" / "indgen" / "results.sqlite"


def test_not_a_store_is_one_sentence(tmp_path):
    bad = tmp_path / "junk.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable IndGen results store"):
        ResultsStore(bad)


def test_commit_is_final_once_and_aborts_rerun(toy):
    with ResultsStore(toy / "r.sqlite") as store:
        record = toy_setup.plan_toy(store, toy)
        first = store.pending_trials(record.id)[0]
        # the aborted attempt carried the level's image (a world saves it once, with the first
        # attempt at the level): it is kept
        image = str(toy / "level_image_k0.png")
        assert not store.commit_result(record.id, TrialResult(first.trial_id, Outcome.ABORTED, "server gone",
                                                              artifacts=(image,)))
        assert store.pending_trials(record.id)[0] == first  # still pending, runs again
        # the person at the robot is told why the same scene prompt comes back
        assert attempt_note(store.attempts(record.id, first.trial_id)) == (
            "attempt 2 of this trial: attempt 1 was aborted (server gone), not scored")
        assert attempt_note(store.attempts(record.id, "another trial")) == ""
        # the next attempt saved the level's image again (the world could not know the aborted
        # one reached the store): one image
        assert store.commit_result(record.id, TrialResult(first.trial_id, Outcome.SUCCESS, "ok", steps=3,
                                                          artifacts=(image,)))
        assert [a["path"] for a in store.artifacts(record.id, kind="level_image")] == [image]
        with pytest.raises(DuplicateResult, match="already has a result"):
            store.commit_result(record.id, TrialResult(first.trial_id, Outcome.FAILURE, "late duplicate"))
        rows = {r.trial_id: r for r in store.rows(record.id)}
        assert rows[first.trial_id].outcome is Outcome.SUCCESS
        assert rows[first.trial_id].aborted_attempts == 1
        counts = store.counts(record.id)[(first.policy, first.level)]
        assert counts.successes == 1 and counts.aborted == 1 and counts.of(Outcome.FAILURE) == 0
        with pytest.raises(StoreError, match="has no trial 'nope'"):
            store.commit_result(record.id, TrialResult("nope", Outcome.SUCCESS))


def test_an_attempt_sent_again_is_recorded_once_by_any_store_handle_and_an_older_store_learns_it(toy):
    """The graph's scorer gives each attempt its signature as key; a scorer restarted between two
    republishes of an aborted attempt is a new handle on the store, and must refuse it too."""
    db = toy / "r.sqlite"
    with ResultsStore(db) as store:
        record = toy_setup.plan_toy(store, toy)
        first = store.pending_trials(record.id)[0]
        # a store written before attempts had a key: the column and its index are added on open
        store._db.execute("DROP INDEX attempts_key")
        store._db.execute("ALTER TABLE attempts DROP COLUMN attempt_key")
        store._db.execute("INSERT INTO attempts (campaign_id, trial_id, outcome, reason, recorded_at) "
                          "VALUES (?, ?, 'aborted', 'recorded before keys', 0)", (record.id, first.trial_id))
    aborted = TrialResult(first.trial_id, Outcome.ABORTED, "the world went silent")
    with ResultsStore(db) as store:
        assert not store.commit_result(record.id, aborted, attempt_key="sig-1")
    with ResultsStore(db) as again:  # the restarted scorer
        with pytest.raises(RepeatedAttempt):
            again.commit_result(record.id, aborted, attempt_key="sig-1")
        assert not again.commit_result(record.id, aborted, attempt_key="sig-2")  # a new attempt counts
        assert not again.commit_result(record.id, aborted)  # unkeyed ones (in-process runner) never clash
        success = TrialResult(first.trial_id, Outcome.SUCCESS, "ok", steps=3)
        assert again.commit_result(record.id, success, attempt_key="sig-3")
        with pytest.raises(RepeatedAttempt):  # the final one sent again: quiet, not a duplicate warning
            again.commit_result(record.id, success, attempt_key="sig-3")
        outcomes = [a.outcome for a in again.attempts(record.id, first.trial_id)]
        assert outcomes == [Outcome.ABORTED] * 4 + [Outcome.SUCCESS]
        assert {r.trial_id: r for r in again.rows(record.id)}[first.trial_id].aborted_attempts == 4


def test_second_process_reads_while_first_writes(toy):
    db = toy / "r.sqlite"
    with ResultsStore(db) as store:
        record = toy_setup.plan_toy(store, toy)
        trials = store.pending_trials(record.id)
        store.commit_result(record.id, TrialResult(trials[0].trial_id, Outcome.SUCCESS))
        code = ("import sys; from indgen_core.store import ResultsStore; s = ResultsStore(sys.argv[1]); "
                "print(sum(r.status == 'done' for r in s.rows(sys.argv[2])))")
        out = subprocess.run([sys.executable, "-c", code, str(db), record.id], capture_output=True, text=True)
        assert out.stdout.strip() == "1", out.stderr


def test_export_csv_and_json(toy):
    with ResultsStore(toy / "r.sqlite") as store:
        record = toy_setup.plan_toy(store, toy)
        t = store.pending_trials(record.id)[0]
        store.commit_result(record.id, TrialResult(t.trial_id, Outcome.TIMEOUT, "slow", steps=5, duration_s=0.5))
        csv_path = store.export(record.id, toy / "out.csv", "csv")
        json_path = store.export(record.id, toy / "out.json", "json")
    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == 16
    done = next(r for r in rows if r["trial_id"] == t.trial_id)
    assert done["outcome"] == "timeout" and done["steps"] == "5"
    doc = json.loads(json_path.read_text())
    assert doc["campaign"]["id"] == record.id and len(doc["trials"]) == 16
    assert any(e["kind"] == "created" for e in doc["events"])


def test_uncertified_levels_are_refused_then_certified_by_the_oracle(toy):
    with ResultsStore(toy / "r.sqlite") as store:
        with pytest.raises(conditions.ProtocolViolation, match=r"levels \[0, 1, 2, 3\] .* no feasibility certificate"):
            toy_setup.plan_toy(store, toy, certify_first=False)
        record = toy_setup.plan_toy(store, toy, certify_first=True)
        assert not record.override_uncertified
        assert record.protocol["summary"] == {"single_axis": True, "atomic_step": True, "nesting": True,
                                              "feasibility": True}
        certs = store.certificates(world="toy", axis="toy_depth")
        assert {c["level"] for c in certs} >= {0, 1, 2, 3}
        assert all(c["successes"] >= 1 for c in certs)


def test_override_needs_a_reason_and_is_written_into_the_results(toy):
    lib = toy_setup.AxisLibrary([toy / "config" / "axes"])
    cfg = CampaignConfig(name="c", axis="toy_depth", world="toy", policies=["skilled"], trials_per_level=2)
    with ResultsStore(toy / "r.sqlite") as store:
        with pytest.raises(IndGenError, match="needs --reason"):
            plan_campaign(store, cfg, allow_uncertified=True, axes=lib)
        record = plan_campaign(store, cfg, allow_uncertified=True, override_reason="dry run of the rig", axes=lib)
        again = store.campaign(record.id)
        assert again.override_uncertified and again.override_reason == "dry run of the rig"
        assert any(e["kind"] == "override" and "dry run of the rig" in e["message"] for e in store.events(record.id))
        assert not again.protocol["summary"]["feasibility"]


def test_planning_rejects_wrong_world_and_levels(toy):
    lib = toy_setup.AxisLibrary([toy / "config" / "axes"])
    with ResultsStore(toy / "r.sqlite") as store:
        with pytest.raises(IndGenError, match=r"defined for worlds \['toy'\], not 'blockenv'"):
            plan_campaign(store, CampaignConfig(name="c", axis="toy_depth", world="blockenv", policies=["a"],
                                                trials_per_level=1), axes=lib)
        with pytest.raises(IndGenError, match=r"levels \[9\] are outside"):
            plan_campaign(store, CampaignConfig(name="c", axis="toy_depth", world="toy", policies=["a"],
                                                trials_per_level=1, levels=[0, 9]), axes=lib)
        with pytest.raises(conditions.ProtocolViolation, match=r"nesting check.*skip"):
            plan_campaign(store, CampaignConfig(name="c", axis="toy_depth", world="toy", policies=["a"],
                                                trials_per_level=1, levels=[0, 2]), axes=lib)


def test_setups_come_from_the_store_snapshot(toy):
    with ResultsStore(toy / "r.sqlite") as store:
        record = toy_setup.plan_toy(store, toy)
        trial = next(t for t in store.planned_trials(record.id) if t.level == 2)
        setup = setup_for(store.campaign(record.id), trial)
    assert setup.value("depth") == 2.0 and setup.seed == trial.seed and setup.policy == "skilled"
    assert setup.language_instruction == "do the toy task"


def test_a_killed_transaction_leaves_no_partial_result(toy):
    """A transaction cut off before COMMIT (what SIGKILL does) is rolled back on the next open."""
    db = toy / "r.sqlite"
    with ResultsStore(db) as store:
        record = toy_setup.plan_toy(store, toy)
        trial = store.pending_trials(record.id)[0]
    code = f"""
import os, sqlite3
db = sqlite3.connect({str(db)!r}, isolation_level=None)
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO results VALUES (?,?,'success','x',1,1,1,1,'auto','{{}}',0)",
           ({record.id!r}, {trial.trial_id!r}))
os.kill(os.getpid(), 9)
"""
    subprocess.run([sys.executable, "-c", code])
    with ResultsStore(db) as store:
        assert store.pending_trials(record.id)[0] == trial
        n = store._db.execute("SELECT COUNT(*) FROM results WHERE campaign_id=?", (record.id,)).fetchone()[0]
        assert n == 0
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_operator_labels_relabels_redos_and_skips_are_kept_as_history(toy):
    from indgen_core.records import Source

    with ResultsStore(toy / "r.sqlite") as store:
        cid = toy_setup.plan_toy(store, toy).id
        trials = [t.trial_id for t in store.planned_trials(cid)][:3]
        who = {"operator": "ada", "note": ""}
        redo = TrialResult(trials[0], Outcome.SUPERSEDED, "redo requested by ada", source=Source.OPERATOR,
                           details={**who, "label": "superseded"})
        assert store.commit_result(cid, redo) is False  # the trial runs again
        assert trials[0] in [t.trial_id for t in store.pending_trials(cid)]
        assert attempt_note(store.attempts(cid, trials[0])) == (
            "attempt 2 of this trial: attempt 1 was superseded (redo requested by ada)")
        label = TrialResult(trials[0], Outcome.FAILURE, "labelled failure by ada", 0.4, source=Source.OPERATOR,
                            details={**who, "note": "slipped"})
        assert store.commit_result(cid, label) is True
        assert store.relabel(cid, trials[0], Outcome.SUCCESS, 1.0, "ada", "looked again", ref="r1") == "failure"
        assert store.relabel(cid, trials[0], Outcome.SUCCESS, 1.0, "ada", "looked again", ref="r1") == "failure"
        skip = TrialResult(trials[1], Outcome.SKIPPED, "skipped by ada", source=Source.OPERATOR, details=who)
        assert store.commit_result(cid, skip) is True
        rows = {r.trial_id: r for r in store.rows(cid)}
        assert (rows[trials[0]].outcome, rows[trials[0]].partial_score) == (Outcome.SUCCESS, 1.0)
        assert rows[trials[1]].status == "skipped" and rows[trials[1]].outcome is None
        assert [(h["kind"], h["outcome"], h["previous"]) for h in store.label_history(cid)] == [
            ("superseded", "superseded", ""), ("label", "failure", ""), ("relabel", "success", "failure")]
        with pytest.raises(StoreError, match="no result to relabel"):
            store.relabel(cid, trials[2], Outcome.SUCCESS, 1.0, "ada", "")
        with pytest.raises(StoreError, match="success, failure or invalid"):
            store.relabel(cid, trials[0], Outcome.ABORTED, 0.0, "ada", "")
        counts = store.operator_counts(cid)
        level = rows[trials[0]].level
        c = counts[(rows[trials[0]].policy, level)]
        assert (c["labelled"], c["relabelled"], c["redone"]) == (1, 1, 1)
        assert store.counts(cid)[(rows[trials[0]].policy, level)].aborted == 0  # a redo is not an abort


def test_the_sequential_rule_counts_only_the_completed_prefix_of_the_planned_order(toy):
    """On workers a success ends early and a failure runs to the step limit, so what finished
    first depends on the outcome; the rule must see trial i only once trials 0..i-1 are in."""
    from indgen_core.campaign.runner import completed_counts

    with ResultsStore(toy / "r.sqlite") as store:
        record = toy_setup.plan_toy(store, toy, trials_per_level=6, levels=[0])
        trials = sorted(store.pending_trials(record.id), key=lambda t: t.trial_index)
        for trial in trials[1:4]:  # trials 1-3 succeed quickly while trial 0 is still running
            assert store.commit_result(record.id, TrialResult(trial.trial_id, Outcome.SUCCESS, "ok"))
        assert completed_counts(store, record.id) == {("skilled", 0): (0, 0)}
        assert store.commit_result(record.id, TrialResult(trials[0].trial_id, Outcome.FAILURE, "slow failure"))
        assert completed_counts(store, record.id) == {("skilled", 0): (4, 3)}
        # an invalid trial is passed over, not counted; a pending one ends the prefix again
        assert store.commit_result(record.id, TrialResult(trials[4].trial_id, Outcome.INVALID, "scene knocked"))
        assert completed_counts(store, record.id) == {("skilled", 0): (4, 3)}


def test_a_campaign_comes_back_typed_and_an_older_stores_extra_key_is_left_out(toy):
    """The store hands a campaign back with its configuration validated into the schema again
    and its axis snapshot typed; the stored JSON keeps the layout stores have always had (a
    blind campaign's letters beside the schema's fields), and a key an older IndGen wrote that
    the schema no longer has is left out, not an error."""
    from indgen_core.axes.progression import Level
    from indgen_core.campaign.snapshot import AxisSnapshot

    with ResultsStore(toy / "r.sqlite") as store:
        planned = toy_setup.plan_toy(store, toy, campaign_id="typed", policies=["skilled", "clumsy"], blind=True)
        back = store.campaign("typed")
        assert isinstance(back.config, CampaignConfig) and back.config == planned.config
        assert back.config.trials_per_level == 4 and back.config.policies == ["skilled", "clumsy"]
        assert isinstance(back.axis_snapshot, AxisSnapshot) and back.axis_snapshot == planned.axis_snapshot
        assert sorted(back.axis_snapshot.levels) == [0, 1, 2, 3]
        assert all(isinstance(lv, Level) for lv in back.axis_snapshot.levels.values())
        assert back.blind_labels == planned.blind_labels and sorted(back.blind_labels.values()) == ["A", "B"]
        with sqlite3.connect(store.path) as conn:
            (raw,) = conn.execute("SELECT config_json FROM campaigns WHERE id='typed'").fetchone()
            stored = json.loads(raw)
            assert stored["blind_labels"] == back.blind_labels and stored["trials_per_level"] == 4
            conn.execute("UPDATE campaigns SET config_json=? WHERE id='typed'", (json.dumps(stored | {"retired": 1}),))
        assert store.campaign("typed").config == planned.config


def test_an_attempt_a_killed_run_left_unfinished_is_recorded_as_interrupted_by_the_next(toy):
    """A run killed during a trial's attempt leaves its start and no attempt; the next run
    records that attempt (aborted, interrupted) before it goes on, so the store holds every
    attempt."""
    from indgen_core.campaign.inprocess import InProcessExecutor
    from indgen_core.campaign.runner import INTERRUPTED, run_campaign

    with ResultsStore(toy / "r.sqlite") as store:
        record = toy_setup.plan_toy(store, toy)
        first = store.pending_trials(record.id)[0]
        store.log_event(record.id, "started", first.trial_id)  # what a run does before the attempt; then killed
        assert store.unfinished_starts(record.id) == [first.trial_id]
        executor = InProcessExecutor(toy_world.ToyWorld(), policies={"skilled": toy_world.Skilled()})
        run_campaign(store, record.id, executor)
        attempts = [(a.outcome.word, a.reason) for a in store.attempts(record.id, first.trial_id)]
        assert attempts[0] == ("aborted", INTERRUPTED) and attempts[1][0] != "aborted" and len(attempts) == 2
        assert store.unfinished_starts(record.id) == []
