"""`indgen campaign ...` end to end on the toy world, in child processes."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import toy_setup


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
    assert all(r.outcome == "success" for r in done) and 4 <= len(done) <= 6  # 4 decide; 2 may be in flight
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
