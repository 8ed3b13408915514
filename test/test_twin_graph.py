"""The DROID twin through the whole ROS graph, as separate processes on loopback: the oracle
certifies two levels over the FR3's real topic interface (with camera images on the wire), then
the tau_0 policy runs on it and gives exactly what an in-process run of the same setup gives."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from helpers import servers
from indgen_core.campaign.planning import setup_for
from indgen_core.episode import run_episode
from indgen_core.records import Outcome
from indgen_core.specs.droid import DroidSpec
from indgen_core.store import ResultsStore

pytestmark = [pytest.mark.slow, pytest.mark.ros]


def campaign(path, name, policy, purpose, seed):
    path.write_text(yaml.safe_dump({"name": name, "axis": "stack", "world": "droid_twin", "policies": [policy],
                                    "levels": [0, 1], "trials_per_level": 1, "seed": seed, "purpose": purpose}))
    return path


def run_graph(tmp_path, *assignments, timeout=180):
    port = servers.free_port()
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "launch", "stack_axis", "sim:=true",
                           f"port:={port}", f"server_uri:=ws://127.0.0.1:{port}", f"db:={tmp_path / 'r.sqlite'}",
                           f"report_dir:={tmp_path / 'reports'}", *assignments],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-5000:]
    return proc.stdout


def test_oracle_then_tau0_policy_through_the_graph(tmp_path, monkeypatch):
    monkeypatch.setenv("INDGEN_ARTIFACTS", str(tmp_path / "artifacts"))
    # the oracle certifies tau_0 and tau_1 over the real interface, cameras on the wire: the
    # built-in FR3's, as the graph carries any model's frames alike and with the menagerie's
    # meshes this campaign took twice the CPU (31 s against 15 s, measured once); the tau_0 policy below runs
    # on the menagerie's FR3 where MENAGERIE_ROOT is set, and test_twin.py renders its cameras
    out = run_graph(tmp_path, f"campaign:={campaign(tmp_path / 'o.yaml', 'o', 'droid_twin_oracle', 'certify', 0)}",
                    "campaign_id:=oracle", "cameras:=exterior_1,wrist", "builtin_fr3:=true")
    assert "campaign oracle done: 2 trials run" in out
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert [(r.level, r.outcome) for r in store.rows("oracle")] == [(0, Outcome.SUCCESS), (1, Outcome.SUCCESS)]
        assert {c["level"] for c in store.certificates(world="droid_twin", axis="stack")} == {0, 1}
        assert sorted(a["level"] for a in store.artifacts("oracle", kind="level_image")) == [0, 1]
    assert (tmp_path / "reports" / "oracle" / "report.html").is_file()

    # a small tau_0 policy (the real training code, a few episodes) on the certified level
    from indgen_sim.twin import bc

    ckpt = bc.train_and_save(tmp_path / "bc.pt", demo_episodes=4, rounds=1,
                             episodes_per_round=2, epochs=3)
    run_graph(tmp_path, f"campaign:={campaign(tmp_path / 'b.yaml', 'b', 'droid_twin_bc', 'evaluate', 5)}",
              "campaign_id:=bc", "policy:=droid_twin_bc", f"checkpoint:={ckpt}")
    with ResultsStore(tmp_path / "r.sqlite") as store:
        rows = {r.trial_id: r for r in store.rows("bc")}
        assert all(r.outcome in (Outcome.SUCCESS, Outcome.FAILURE) and r.steps > 0 for r in rows.values())
        record, trials = store.campaign("bc"), store.planned_trials("bc")
    # lock-step: the same setups in-process give the same episodes
    from indgen_sim.twin.world import DroidTwinWorld

    policy = bc.TwinBCPolicy(ckpt)
    with DroidTwinWorld(cameras=False) as world:
        for trial in trials:
            local = run_episode(world, policy.infer, DroidSpec(), setup_for(record, trial))
            row = rows[trial.trial_id]
            assert (local.outcome, local.steps) == (row.outcome, row.steps), trial.trial_id


def test_the_camera_policy_sees_only_pi05s_request_through_the_graph_and_matches_in_process(tmp_path, monkeypatch,
                                                                                          vision_checkpoint):
    """droid_twin_vision (conftest's small checkpoint from the real training command) on two levels with
    cameras on the wire and nothing privileged: the server saw only pi0.5-DROID's keys and
    224 x 224 RGB images, and each trial ends as the same trial run in-process."""
    import json

    from indgen_core.campaign.inprocess import InProcessExecutor
    from indgen_sim.twin.vision import TwinVisionPolicy
    from indgen_sim.twin.vision.policy import CHUNK

    monkeypatch.setenv("INDGEN_ARTIFACTS", str(tmp_path / "artifacts"))
    ckpt = vision_checkpoint
    path = tmp_path / "v.yaml"
    path.write_text(yaml.safe_dump({"name": "v", "axis": "stack", "world": "droid_twin",
                                    "policies": ["droid_twin_vision"], "levels": [0, 1], "trials_per_level": 1,
                                    "seed": 8, "purpose": "evaluate", "max_steps": 48}))
    requests = tmp_path / "requests.jsonl"
    run_graph(tmp_path, f"campaign:={path}", "campaign_id:=vision", "policy:=droid_twin_vision",
              f"checkpoint:={ckpt}", "cameras:=exterior_1,wrist", "privileged:=false", "builtin_fr3:=true",
              f"record_requests:={requests}", "allow_uncertified:=true", "override_reason:=a wire test")
    seen = [json.loads(line)["keys"] for line in requests.read_text().splitlines()]
    assert len(seen) >= 2 * 48 // CHUNK  # one request per chunk of 8 ticks, both trials
    for keys in seen:
        assert not [k for k in keys if k.startswith("privileged/")], keys
        for image in ("observation/exterior_image_1_left", "observation/wrist_image_left"):
            assert keys[image] == ["|u1", [224, 224, 3]], keys
    with ResultsStore(tmp_path / "r.sqlite") as store:
        rows = {r.trial_id: r for r in store.rows("vision")}
        record, trials = store.campaign("vision"), store.planned_trials("vision")
    assert len(rows) == 2 and all(r.outcome in (Outcome.SUCCESS, Outcome.FAILURE) for r in rows.values())
    from indgen_sim.twin.world import DroidTwinWorld

    executor = InProcessExecutor(DroidTwinWorld(cameras=["exterior_1", "wrist"], builtin=True),
                                 policies={"droid_twin_vision": TwinVisionPolicy(ckpt)})
    try:
        for trial in trials:
            local = executor(setup_for(record, trial))
            row = rows[trial.trial_id]
            assert (local.outcome, local.steps) == (row.outcome, row.steps), trial.trial_id
    finally:
        executor.close()
