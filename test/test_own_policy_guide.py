"""The own-policy guide's commands, as a user runs them (docs/guides/own-policy.md): the
example policy checked against BlockEnv, a campaign beside the control, the break at k=1, the
comparison, in a fresh store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_guides_commands_check_run_and_compare_the_example_policy(tmp_path):
    env = dict(os.environ, INDGEN_DB=str(tmp_path / "r.sqlite"), XDG_DATA_HOME=str(tmp_path / "data"),
               INDGEN_POLICIES="goal_grasper=goal_grasper:GoalGrasper",
               PYTHONPATH=os.pathsep.join([str(REPO / "examples" / "own_policy"), os.environ.get("PYTHONPATH", "")]))
    env.pop("INDGEN_ARTIFACTS", None)

    def indgen(*args):
        proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", *args], env=env, capture_output=True,
                              text=True, timeout=300, cwd=REPO)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc.stdout

    checked = indgen("policy", "check", "goal_grasper", "--world", "blockenv")
    assert checked.splitlines()[-1] == "ok: 1 action(s) per reply, 1 executed before the next request (row, col, theta)"
    indgen("campaign", "run", "config/campaigns/blockenv_oracle.yaml", "--id", "depth-cert")
    ran = indgen("campaign", "run", "examples/own_policy/mine.yaml", "--id", "mine")
    assert "mine: goal_grasper on 'blockenv_depth' (blockenv) - breaks at k=1" in " ".join(ran.split())
    compared = indgen("compare", "mine")
    data = json.loads(Path(compared.split("data: ")[1].strip()).read_text())
    better = {row["level"]: row["better"] for row in data["comparisons"]}
    assert better == {0: None, 1: "blockenv_random_legal", 2: "blockenv_random_legal", 3: "blockenv_random_legal",
                      4: "blockenv_random_legal"}, better
    # the report says who ran: each policy's identity as it gave it, IndGen's version and commit
    report = Path(indgen("report", "mine").split("markdown: ")[1].split()[0]).read_text()
    assert '- `goal_grasper`: {"policy": "goal_grasper", "spec": "blockenv"}' in report, report[:2000]
