"""A small LIBERO campaign through the whole ROS graph: one task, one axis, k = -1..1, one
trial each (LIBERO's episodes are the suite's dearest), the oracle behind `indgen serve-policy`
and openpi's LIBERO spec on the policy node."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import servers
from indgen_core.records import Outcome
from indgen_core.store import ResultsStore

pytestmark = [pytest.mark.slow, pytest.mark.ros]


def test_libero_oracle_campaign_through_the_graph(tmp_path, monkeypatch):
    monkeypatch.setenv("INDGEN_ARTIFACTS", str(tmp_path / "artifacts"))
    port = servers.free_port()
    db = tmp_path / "r.sqlite"
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "launch", "libero_axis", "axis:=libero_goal_y",
                           "task:=2", "levels:=-1,0,1", "trials:=1", "campaign_id:=lib", f"db:={db}",
                           f"port:={port}", f"server_uri:=ws://127.0.0.1:{port}", f"report_dir:={tmp_path / 'rep'}"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert "campaign lib done: 3 trials run" in proc.stdout
    with ResultsStore(db) as store:
        rows = store.rows("lib")
        assert sorted(r.level for r in rows) == [-1, 0, 1]
        assert all(r.outcome is Outcome.SUCCESS for r in rows), [(r.level, r.reason) for r in rows]
        record = store.campaign("lib")
        assert record.axis == "libero_goal_y" and record.config.world_options == {"task": 2}
        certs = store.certificates(world="libero", axis="libero_goal_y")
        assert {c["level"] for c in certs} == {-1, 0, 1}
        images = sorted(a["level"] for a in store.artifacts("lib", kind="level_image"))
        if images != [-1, 0, 1]:  # the graph's own account, whole (an assertion's repr is cut short)
            lines = [line for line in proc.stdout.splitlines() if "level image" in line or "[sim_bridge]" in line]
            pytest.fail(f"level images of {images}:\n" + "\n".join(lines[-60:]))
    assert (tmp_path / "rep" / "lib" / "report.html").is_file()
    report = (tmp_path / "rep" / "lib" / "report.md").read_text()
    assert "| policy | k | n | libero_success | strict_success |" in report  # both checks, per level
    assert "| libero_oracle | 0 | 1 | 1 | 1 |" in report
    # the bag (recorded by default) is enough to judge every episode again with LIBERO's checks
    [bag] = [p for p in (tmp_path / "artifacts" / "bags").iterdir() if p.is_dir()]
    rescored = subprocess.run([sys.executable, "-m", "indgen_core.cli", "bag", "rescore", str(bag), "--db", str(db)],
                              capture_output=True, text=True, timeout=600)
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    assert "3 of 3 judged trials agree with the recorded result" in rescored.stdout
