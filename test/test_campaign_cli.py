"""`indgen campaign ...` end to end on the toy world, in child processes."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

from helpers import toy_setup
from indgen_core.records import Outcome


def indgen(env, *args):
    return subprocess.run([sys.executable, "-m", "indgen_core.cli", *args], env=env, capture_output=True, text=True,
                          timeout=120)


def test_plan_run_status_export_list(monkeypatch, tmp_path):
    env = dict(os.environ, **toy_setup.toy_env(monkeypatch, tmp_path))
    db = str(tmp_path / "r.sqlite")
    cert = toy_setup.campaign_yaml(tmp_path, "cert", purpose="certify", trials_per_level=4, levels=[0, 1])
    proc = indgen(env, "campaign", "run", str(cert), "--id", "cert-1", "--db", db)
    assert proc.returncode == 0, proc.stderr
    assert "ran 8 trials" in proc.stdout

    cfg = toy_setup.campaign_yaml(tmp_path, "eval", levels=[0, 1, 2], trials_per_level=3)
    proc = indgen(env, "campaign", "plan", str(cfg), "--id", "eval-1", "--db", db)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("indgen: error: levels [2] of axis 'toy_depth' in world 'toy' have no "
                                          "feasibility certificate")
    proc = indgen(env, "campaign", "run", str(cfg), "--id", "eval-1", "--db", db, "--allow-uncertified",
                  "--reason", "k=2 was never certified")
    assert proc.returncode == 0, proc.stderr

    status = indgen(env, "campaign", "status", "eval-1", "--db", db)
    assert status.returncode == 0
    assert "9/9 trials finished" in status.stdout
    assert "uncertified levels allowed: k=2 was never certified" in status.stdout

    out = tmp_path / "eval.csv"
    assert indgen(env, "campaign", "export", "eval-1", "--db", db, "--out", str(out)).returncode == 0
    assert len(list(csv.DictReader(out.open()))) == 9
    jout = tmp_path / "eval.json"
    proc = indgen(env, "campaign", "export", "eval-1", "--db", db, "--format", "json", "--out", str(jout))
    assert proc.returncode == 0
    assert json.loads(jout.read_text())["campaign"]["override_reason"] == "k=2 was never certified"

    listing = indgen(env, "campaign", "list", "--db", db)
    assert "cert-1" in listing.stdout and "eval-1" in listing.stdout

    missing = indgen(env, "campaign", "status", "nope", "--db", db)
    assert missing.returncode == 2 and "no campaign 'nope'" in missing.stderr and "Traceback" not in missing.stderr


def test_malformed_campaign_config_is_one_sentence(monkeypatch, tmp_path):
    env = dict(os.environ, **toy_setup.toy_env(monkeypatch, tmp_path))
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("name: bad\naxis: toy_depth\nworld: toy\npolicies: [skilled]\ntrials_per_level: 0\n")
    proc = indgen(env, "campaign", "plan", str(cfg), "--db", str(tmp_path / "r.sqlite"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"indgen: error: {cfg}: field 'trials_per_level': input should be greater than or " \
                                  "equal to 1"
    # a misspelt required key: the misspelling named first, not its right spelling as "missing"
    cfg.write_text("name: bad\naxis: toy_depth\nworld: toy\npolicies: [skilled]\ntrial_per_level: 5\n")
    proc = indgen(env, "campaign", "plan", str(cfg), "--db", str(tmp_path / "r.sqlite"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"indgen: error: {cfg}: field 'trial_per_level': is not a known field (did you "
                                   "mean 'trials_per_level'?) (and 1 more problem)"), proc.stderr


def test_run_with_worker_processes(monkeypatch, tmp_path):
    env = dict(os.environ, **toy_setup.toy_env(monkeypatch, tmp_path))
    db = str(tmp_path / "r.sqlite")
    cert = toy_setup.campaign_yaml(tmp_path, "cert", purpose="certify", trials_per_level=5, levels=[0, 1, 2])
    proc = indgen(env, "campaign", "run", str(cert), "--id", "cert-w", "--db", db, "--workers", "2")
    assert proc.returncode == 0, proc.stderr
    assert "ran 15 trials" in proc.stdout
    status = indgen(env, "campaign", "status", "cert-w", "--db", db)
    assert "15/15 trials finished" in status.stdout
    # a sequential campaign on workers: the rule decides on each level's completed prefix, and
    # level 0 (the skilled policy never fails there) is held after 4 trials, the rest skipped
    adaptive = toy_setup.campaign_yaml(tmp_path, "adapt", purpose="certify", trials_per_level=10, levels=[0, 1],
                                       adaptive={"enabled": True})
    proc = indgen(env, "campaign", "run", str(adaptive), "--id", "adapt-w", "--db", db, "--workers", "2")
    assert proc.returncode == 0, proc.stderr
    from indgen_core.store import ResultsStore

    with ResultsStore(db) as store:
        level0 = [r for r in store.rows("adapt-w") if r.level == 0]
    done = [r for r in level0 if r.status == "done"]
    assert all(r.outcome is Outcome.SUCCESS for r in done) and 4 <= len(done) <= 6  # 4 decide; 2 may be in flight
    assert [r.status for r in level0].count("skipped") == 10 - len(done)


def _one_sentence(proc) -> str:
    assert proc.returncode != 0, proc.stdout
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]  # argparse adds its usage lines
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return errors[0]


def test_bad_inputs_found_by_a_new_user_are_one_sentence(monkeypatch, tmp_path, repo):
    env = dict(os.environ, **toy_setup.toy_env(monkeypatch, tmp_path))
    cfg = toy_setup.campaign_yaml(tmp_path, "cert", purpose="certify", trials_per_level=1, levels=[0])
    assert "--workers must be 0 (one per core) or more, not -2" in _one_sentence(
        indgen(env, "campaign", "run", str(cfg), "--workers", "-2", "--db", str(tmp_path / "r.sqlite")))
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    assert "cannot create the folder of the results store" in _one_sentence(
        indgen(env, "campaign", "list", "--db", str(blocker / "sub" / "r.sqlite")))
    listed = indgen(env, "serve-policy", "--list")
    assert listed.returncode == 0 and "blockenv_oracle" in listed.stdout.split()
    fake = tmp_path / "not_a_checkpoint.pt"
    fake.write_bytes(b"this is not a checkpoint")
    assert "is not a readable BlockEnv checkpoint" in _one_sentence(
        indgen(env, "serve-policy", "blockenv_rnn", "--checkpoint", str(fake), "--port", "0"))
    # an edited copy of a shipped axis is checked in its place, not refused as a duplicate
    copy = tmp_path / "copies" / "stack.yaml"
    copy.parent.mkdir()
    copy.write_text((repo / "config" / "axes" / "stack.yaml").read_text())
    checked = indgen(env, "axes", "check", str(copy))
    assert checked.returncode == 0 and checked.stdout.startswith("ok"), checked.stdout + checked.stderr
    twice = tmp_path / "other" / "stack.yaml"
    twice.parent.mkdir()
    twice.write_text(copy.read_text())
    both = indgen(env, "axes", "check", str(copy), str(twice))
    assert both.returncode == 1 and "also defined in" in both.stdout


def test_a_clean_store_misspelt_policy_ctrl_c_and_delete(monkeypatch, tmp_path):
    """Found by a new user: a misspelt policy planned its trials and then failed, leaving a
    campaign `running 0/100` for good; Ctrl-C left it `running` with no count and no way on;
    nothing deleted a campaign. Now the names resolve before anything is written, an interrupted
    run says where it stands and how to resume, and `campaign delete` removes it."""
    import signal
    import sqlite3
    import time

    env = dict(os.environ, **toy_setup.toy_env(monkeypatch, tmp_path), INDGEN_ARTIFACTS=str(tmp_path / "art"))
    db = str(tmp_path / "r.sqlite")
    typo = toy_setup.campaign_yaml(tmp_path, "typo", policies=["skiled"], purpose="certify")
    assert "unknown policy 'skiled'; did you mean 'skilled'?" in _one_sentence(
        indgen(env, "campaign", "run", str(typo), "--db", db))
    if os.path.exists(db):
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT COUNT(*) FROM campaigns").fetchone() == (0,)
    # Ctrl-C in the middle of a long run
    long = toy_setup.campaign_yaml(tmp_path, "long", purpose="certify", trials_per_level=5000)
    proc = subprocess.Popen([sys.executable, "-m", "indgen_core.cli", "campaign", "run", str(long), "--id", "long",
                             "--db", db], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    line = next(line for line in err.splitlines() if line.startswith("campaign long interrupted"))
    assert line.endswith("pending; `indgen campaign resume long` goes on"), line
    listed = indgen(env, "campaign", "list", "--db", db).stdout
    assert "interrupted" in listed, listed
    # a report written, then the campaign deleted with it
    assert indgen(env, "report", "long", "--db", db).returncode == 0
    assert (tmp_path / "art" / "reports" / "long").is_dir()
    refused = indgen(env, "campaign", "delete", "long", "--db", db)  # nobody to answer, no --yes
    assert "needs --yes" in _one_sentence(refused)
    deleted = indgen(env, "campaign", "delete", "long", "--yes", "--db", db)
    assert deleted.returncode == 0 and deleted.stdout.startswith("deleted campaign long (25000 trials"), deleted.stdout
    assert not (tmp_path / "art" / "reports" / "long").exists()
    with sqlite3.connect(db) as conn:
        for table in ("campaigns", "trials", "attempts", "results", "events", "artifacts", "campaign_keys"):
            column = "id" if table == "campaigns" else "campaign_id"
            assert conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {column}='long'").fetchone() == (0,), table
    assert "no campaign 'long'" in _one_sentence(indgen(env, "campaign", "status", "long", "--db", db))
    # the id is free again
    again = indgen(env, "campaign", "plan", str(long), "--id", "long", "--db", db)
    assert again.returncode == 0, again.stderr


def test_the_time_left_after_a_resume_counts_this_runs_pace_only():
    """At 147 of 1000 after a resume it said "~1 s": the 140 done before counted as this run's."""
    import io

    from indgen_core.campaign.progress import ProgressPrinter

    out = io.StringIO()
    printer = ProgressPrinter(1000, "campaign c", stream=out, every_s=0.0, already=140)
    printer._start -= 7.0  # seven trials in 7 s: 1 per second
    printer.update(147)
    eta = float(out.getvalue().split("~")[1].split(" s")[0])
    assert 800 <= eta <= 900, out.getvalue()
