"""The tau_0 checkpoint IndGen ships for the built-in FR3 (`bc.SHIPPED_BUILTIN`), which a first
`make demo` starts from instead of training for three minutes: it must be current with this
IndGen's input layout, say it was trained on the built-in FR3 at tau_0, and still solve tau_0
on the built-in twin. A change to the twin, its oracle or the policy's input that breaks it fails
here (`make twin-checkpoint` trains it again)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("mujoco")

from indgen_sim.twin import bc
from indgen_sim.twin.cli import tau0_checkpoint


def test_the_shipped_checkpoint_is_current_and_solves_tau0_on_the_builtin_twin():
    assert bc.SHIPPED_BUILTIN.is_file(), "the shipped checkpoint is missing: make twin-checkpoint"
    assert not bc.outdated(bc.SHIPPED_BUILTIN), "the shipped checkpoint predates the input layout"
    info = bc.load_checkpoint(bc.SHIPPED_BUILTIN, "twin policy", "make twin-checkpoint")["info"]
    assert info["robot_model"] == "builtin"
    assert set(map(tuple, info["plan"]["levels"].values())) == {(0,)}, info["plan"]
    policy = bc.TwinBCPolicy(bc.SHIPPED_BUILTIN, builtin=True)
    # layouts neither its demonstrations (7,000,000+) nor its DAgger rounds (8,000,000+) used
    _, _, stats = bc.collect(10, policy=policy, seed_base=9_500_000, builtin=True)
    assert stats["solved"] >= 9, stats


def test_the_demo_starts_from_the_shipped_checkpoint_only_where_it_has_none(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.delenv("INDGEN_TWIN_CHECKPOINT", raising=False)
    monkeypatch.setenv("MENAGERIE_ROOT", "")  # a fresh machine: the world renders the built-in FR3
    tau0_checkpoint(retrain=False)
    mine = bc.checkpoint_path()
    assert mine.read_bytes() == bc.SHIPPED_BUILTIN.read_bytes()
    assert "IndGen's checkpoint for the built-in FR3, copied to" in capsys.readouterr().out
    # a current checkpoint in the user's place is theirs: never replaced
    before = mine.stat().st_mtime_ns
    tau0_checkpoint(retrain=False)
    assert mine.stat().st_mtime_ns == before and capsys.readouterr().out == ""
