"""Blind campaigns (blind.py) without ROS: letters in the plan and everything shown, the order
fixed by the seed, rates hidden until done, the unblinding event, the pre-registered analysis,
and the policy routes the graph uses. The console's side: test_console_tmux.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pydantic import ValidationError

from helpers import toy_setup, toy_world
from indgen_core.campaign import blind, routes
from indgen_core.campaign.config import CampaignConfig, identity_in, identity_words
from indgen_core.campaign.inprocess import InProcessExecutor
from indgen_core.campaign.planning import setup_for
from indgen_core.campaign.runner import run_campaign
from indgen_core.errors import IndGenError
from indgen_core.records import Outcome
from indgen_core.report import analysis
from indgen_core.store import ResultsStore

POLICIES = ["skilled", "clumsy"]


def _blind(store, tmp_path, **overrides):
    return toy_setup.plan_toy(store, tmp_path, campaign_id="ab", **{
        "name": "ab_test", "policies": POLICIES, "blind": True, "levels": [0, 1, 2], "trials_per_level": 10,
        "order": "sequential", "analysis": {"compare": ["skilled", "clumsy"], "alpha": 0.1},
        "endpoints": {"skilled": "ws://gpu-1:8000"}, **overrides})


def _executor():
    return InProcessExecutor(toy_world.ToyWorld(), policies={"skilled": toy_world.Skilled(),
                                                             "clumsy": toy_world.Clumsy()})


def test_the_plan_names_letters_in_a_seeded_order(monkeypatch, tmp_path):
    toy_setup.toy_env(monkeypatch, tmp_path)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        record = _blind(store, tmp_path)
        letters = blind.labels(record)
        assert sorted(letters.values()) == ["A", "B"] and set(letters) == set(POLICIES)
        assert letters == blind.assign_labels(POLICIES, 11)  # the seed fixes it
        trials = store.planned_trials("ab")
        assert not any(p in t.trial_id for t in trials for p in POLICIES)
        assert {t.trial_id.split("/")[0] for t in trials} == {"A", "B"}
        # each round of the sequential order runs both policies, in an order the seed fixes, not the file's
        firsts = [trials[i].policy for i in range(0, len(trials), 2)]
        assert set(firsts) == set(POLICIES)
        assert all(trials[i].level == trials[i + 1].level and trials[i].policy != trials[i + 1].policy
                   for i in range(0, len(trials), 2))
        # the graph's setups carry the letter; the in-process executor makes the policy by name
        trial = trials[0]
        assert setup_for(record, trial, blind_view=True).policy == letters[trial.policy]
        assert setup_for(record, trial).policy == trial.policy
        # the policy node's routes are keyed by letter
        assert routes.routes(record) == {letters["skilled"]: "ws://gpu-1:8000"}


def test_rates_hidden_until_done_then_letters_until_unblinded(monkeypatch, tmp_path):
    env = dict(os.environ, **toy_setup.toy_env(monkeypatch, tmp_path), INDGEN_ARTIFACTS=str(tmp_path / "art"))
    db = tmp_path / "r.sqlite"

    def indgen(*args):
        return subprocess.run([sys.executable, "-m", "indgen_core.cli", *args, "--db", str(db)], env=env,
                              capture_output=True, text=True, timeout=120)

    with ResultsStore(db) as store:
        record = _blind(store, tmp_path)
        letters = blind.labels(record)
        run_campaign(store, "ab", _executor(), should_stop=lambda: len(store.pending_trials("ab")) < 50)
        assert blind.rates_hidden(store, store.campaign("ab"))
    status = indgen("campaign", "status", "ab")
    assert status.returncode == 0 and "hidden" in status.stdout
    assert not any(p in status.stdout for p in POLICIES)
    for args in (("report", "ab"), ("compare", "ab")):
        proc = indgen(*args)
        assert proc.returncode == 2
        assert proc.stderr.strip() == ("indgen: error: campaign ab is blind and not done: its rates stay hidden until "
                                       "it is done or a person unblinds it (`indgen campaign unblind ab --by NAME`)")
    export = indgen("campaign", "export", "ab")
    assert export.returncode == 2 and "waits for `indgen campaign unblind ab --by NAME`" in export.stderr

    with ResultsStore(db) as store:
        run_campaign(store, "ab", _executor())
        summary = analysis.summarize(store, "ab")
        assert [c.policy for c in summary.curves] == ["A", "B"]  # letter order, never the file's
        assert list(blind.shown_names(store, store.campaign("ab")).values()) == ["A", "B"]
        assert {c.a for c in summary.comparisons} <= {"A", "B"}
        # the pre-registered analysis ran as registered: alpha 0.1, paired, between the letters
        assert summary.registered and all(c.alpha == pytest.approx(0.1) and c.pairs == 10 for c in summary.registered)
        assert summary.registered_plan.startswith(f"{letters['skilled']} vs {letters['clumsy']}, alpha 0.1")
    report = indgen("report", "ab", "--out", str(tmp_path / "rep"))
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "rep" / "report.md").read_text() + report.stdout
    assert "### Pre-registered analysis" in text
    assert not any(p in text for p in POLICIES)
    compare = indgen("compare", "ab", "--out", str(tmp_path / "cmp"))
    assert compare.returncode == 0 and "pre-registered analysis:" in compare.stdout
    assert not any(p in compare.stdout for p in POLICIES)

    unblind = indgen("campaign", "unblind", "ab", "--by", "grace")
    assert unblind.returncode == 0, unblind.stderr
    assert f"A = {next(p for p, x in letters.items() if x == 'A')}" in unblind.stdout
    assert "unblinded by grace (status done)" in unblind.stdout
    with ResultsStore(db) as store:
        assert [c.policy for c in analysis.summarize(store, "ab").curves] == POLICIES
        assert [e["kind"] for e in store.events("ab")].count(blind.UNBLIND) == 1
    assert "unblinded by grace" in indgen("campaign", "status", "ab").stdout


def test_unblinding_a_running_campaign_needs_a_reason_and_leaves_the_cell_blind(monkeypatch, tmp_path):
    env = dict(os.environ, **toy_setup.toy_env(monkeypatch, tmp_path))
    db = tmp_path / "r.sqlite"

    def indgen(*args):
        return subprocess.run([sys.executable, "-m", "indgen_core.cli", "campaign", "unblind", "ab", *args, "--db",
                               str(db)], env=env, capture_output=True, text=True, timeout=120)

    with ResultsStore(db) as store:
        _blind(store, tmp_path)
        run_campaign(store, "ab", _executor(), should_stop=lambda: len(store.pending_trials("ab")) < 50)
    early = indgen("--by", "ada")
    assert early.returncode == 2 and "is stopped, not done: unblinding it now needs --reason" in early.stderr
    early = indgen("--by", "ada", "--reason", "a safety review")
    assert early.returncode == 0 and "reason: a safety review" in early.stdout
    again = indgen("--by", "bob", "--reason", "audit")  # every unblinding by anyone is recorded
    assert again.stdout.count("unblinded by") == 2 and "unblinded by bob" in again.stdout
    with ResultsStore(db) as store:
        record = store.campaign("ab")
        assert not blind.blinded(store, record)  # reports may name the policies now
        assert blind.rates_hidden(store, record)  # the cell's console still shows no rate
        assert [e["kind"] for e in store.events("ab")].count(blind.UNBLIND) == 2


@pytest.mark.parametrize("change, sentence", [
    ({"adaptive": {"enabled": True}}, "a blind campaign cannot stop levels early (adaptive)"),
    ({"name": "skilled_vs_clumsy"}, "a blind campaign's name must not contain 'skilled', part of a policy's name"),
    # the names: a part of a name, any case, inside a word; a server's host name
    ({"name": "zebra_vs_yak", "policies": ["zebra_policy", "yak_policy"], "analysis": None},
     "a blind campaign's name must not contain 'zebra'"),
    ({"name": "yak_lab_day2", "policies": ["zebra_policy", "yak_policy"], "analysis": None},
     "a blind campaign's name must not contain 'yak'"),
    ({"name": "ab_on_gpu7", "endpoints": {"skilled": "ws://gpu7.lab:8000"}},
     "a blind campaign's name must not contain 'gpu7'"),
    ({"name": "ab", "group": "clumsy_week"}, "a blind campaign's group must not contain 'clumsy'"),
    ({"policies": ["skilled"], "analysis": None}, "blind: true needs at least two policies to hide among"),
    ({"analysis": {"compare": ["skilled", "pi05"]}}, "analysis compares ['pi05'], which are not among the policies"),
])
def test_blind_configs_that_cannot_work_are_refused(change, sentence):
    doc = {"name": "ab", "axis": "toy_depth", "world": "toy", "policies": POLICIES, "trials_per_level": 4,
           "blind": True, **change}
    with pytest.raises(ValidationError, match=sentence.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]")):
        CampaignConfig(**doc)


def test_words_shared_by_every_policy_give_nothing_away():
    words = identity_words(["droid_twin_oracle", "droid_twin_bc"], {"droid_twin_bc": "ws://10.0.0.7:8000"})
    assert "droid" not in words and "twin" not in words and words["oracle"] == "droid_twin_oracle"
    assert words["10.0.0.7:8000"] == "droid_twin_bc" and "10" not in words  # an IP's octets are no word
    assert identity_in("Pi05-ORACLE-day2", words) == "oracle"


def test_a_blind_campaign_id_naming_a_policy_is_refused(monkeypatch, tmp_path):
    toy_setup.toy_env(monkeypatch, tmp_path)
    with ResultsStore(tmp_path / "r.sqlite") as store, pytest.raises(IndGenError) as err:
        toy_setup.plan_toy(store, tmp_path, campaign_id="Skilled_Policy_vs_Clumsy", name="ab_test",
                           policies=POLICIES, blind=True, levels=[0])
    assert str(err.value).startswith("a blind campaign's id must not contain 'skilled'")


@pytest.mark.parametrize("text", [
    '{"serial": 1}', '{"serial": "1", "blind": true}', '{"serial": true, "blind": true}', '{"serial": 1, "blind": 1}',
    "[1, true]", "{", '{"serial": 1, "blind": true, "x": 0}'])
def test_garbled_routes_notices_are_refused_whole(text):
    with pytest.raises(ValueError):
        routes.parse_notice(text)
    assert routes.parse_notice('{"serial": 7, "blind": true}') == routes.RoutesNotice(7, True)


@pytest.mark.parametrize("text", [
    '{"routes": {"A": "http://x:1"}, "blind": true}', '{"routes": {"A": "ws://:80"}, "blind": true}',
    '["ws://x:1"]', "{", '{"routes": {"A": 3}, "blind": false}', '{"routes": {"A": "ws://[::1"}, "blind": true}',
    '{"routes": {"A": "ws://host"}, "blind": true}', '{"A": "ws://10.0.0.2:8000"}',
    '{"routes": {}, "blind": "yes"}', '{"routes": {}, "blind": true, "extra": 1}'])
def test_garbled_routes_are_refused_whole(text):
    with pytest.raises(ValueError):
        routes.parse_routes(text)
    parsed = routes.parse_routes('{"routes": {"A": "ws://10.0.0.2:8000", "B": "wss://gpu.lab:443"}, "blind": true}')
    assert parsed.routes == {"A": "ws://10.0.0.2:8000", "B": "wss://gpu.lab:443"} and parsed.blind


def test_a_blind_ab_stops_once_decided_and_stays_blind(monkeypatch, tmp_path):
    """A blind A/B registered with `stop_when_decided`: the anytime-valid paired test, looked at
    after every trial, decides early on a clear difference (the skilled policy against the
    clumsy one) and the remaining trials are skipped with a reason that names no policy and no
    rate; the campaign is done and its rates stay letters until the unblinding. The test is
    valid at the stopping time (bench/stats_coverage.py --only compare measures its errors)."""
    toy_setup.toy_env(monkeypatch, tmp_path)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        _blind(store, tmp_path, levels=[0], trials_per_level=40,
               analysis={"compare": ["skilled", "clumsy"], "alpha": 0.05, "stop_when_decided": True})
        summary = run_campaign(store, "ab", _executor())
        rows = store.rows("ab")
        ran = [r for r in rows if r.outcome is not None and r.outcome.scored]
        skipped = [r for r in rows if r.status == "skipped"]
        assert len(ran) < 80 and skipped and summary.skipped == len(skipped), (len(ran), len(skipped))
    import sqlite3

    with sqlite3.connect(tmp_path / "r.sqlite") as db:
        query = "SELECT skip_reason FROM trials WHERE campaign_id='ab' AND status='skipped'"
        reasons = {r for (r,) in db.execute(query)}
    assert len(reasons) == 1 and next(iter(reasons)).startswith("the registered comparison is decided at every level")
    assert not any(p in r for r in reasons for p in POLICIES)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.campaign("ab").status == "done"
        registered = analysis.summarize(store, "ab").registered
        assert registered and registered[0].method.startswith("paired, anytime-valid") and registered[0].better
        assert registered[0].better in ("A", "B")  # letters until the unblinding


def test_an_invalid_label_drops_its_pair_not_the_registered_analysis(monkeypatch, tmp_path):
    """Found by hand: one trial labelled invalid voided the pre-registered paired analysis, and
    `indgen compare` then said the policies shared no level."""
    toy_setup.toy_env(monkeypatch, tmp_path)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        _blind(store, tmp_path, levels=[0, 1], trials_per_level=6, analysis={"compare": POLICIES, "pairing": "paired"})
        run_campaign(store, "ab", _executor())
        first = next(r for r in store.rows("ab") if r.level == 0)
        store.relabel("ab", first.trial_id, Outcome.INVALID, 0.0, "ada", "the scene was knocked over")
        summary = analysis.summarize(store, "ab")
    at_0 = next(c for c in summary.registered if c.level == 0)
    assert (at_0.pairs, at_0.dropped) == (5, 1) and summary.registered_plan.endswith("every level")
    assert next(c for c in summary.registered if c.level == 1).dropped == 0


def test_stop_when_decided_needs_pairs():
    with pytest.raises(ValueError, match="stop_when_decided needs the paired comparison"):
        CampaignConfig(name="x", axis="a", world="w", policies=["p", "q"], trials_per_level=4,
                       analysis={"compare": ["p", "q"], "pairing": "unpaired", "stop_when_decided": True})
