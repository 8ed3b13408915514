"""The results index: one static page over every campaign in the store, written by `indgen
report --index` and refreshed after every campaign; it hides a blind campaign's policies
until it is unblinded, and in a real browser it loads with no console error, its filter
narrows the rows, its overlay draws the ticked campaigns, and every link resolves."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from indgen_core.campaign.config import CampaignConfig
from indgen_core.campaign.planning import plan_campaign
from indgen_core.store import ResultsStore

BIN = Path(sys.executable).parent


def indgen(tmp: Path, *args: str) -> str:
    env = {**os.environ, "INDGEN_DB": str(tmp / "results.sqlite"), "INDGEN_ARTIFACTS": str(tmp / "artifacts")}
    proc = subprocess.run([str(BIN / "indgen"), *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"indgen {' '.join(args)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Path:
    """A store with a certify campaign, two evaluations (one with its report), and a blind A/B
    that has not run yet."""
    tmp = tmp_path_factory.mktemp("lab")
    (tmp / "config").symlink_to(Path(__file__).resolve().parents[1] / "config")
    out = indgen(tmp, "campaign", "run", "config/campaigns/blockenv_oracle.yaml", "--id", "depth-cert")
    assert "index: " in out  # refreshed after the campaign
    for policy, cid in (("blockenv_random_legal", "random-depth"), ("blockenv_oracle", "oracle-depth")):
        (tmp / f"{cid}.yaml").write_text(yaml.safe_dump({
            "name": cid.replace("-", "_"), "axis": "blockenv_depth", "world": "blockenv", "policies": [policy],
            "levels": [0, 1, 2, 3], "trials_per_level": 8, "seed": 1}))
        indgen(tmp, "campaign", "run", f"{cid}.yaml", "--id", cid)
    indgen(tmp, "report", "random-depth")
    with ResultsStore(tmp / "results.sqlite") as store:
        blind_ab = CampaignConfig(name="ab_lab", axis="blockenv_depth", world="blockenv", blind=True,
                                  policies=["blockenv_oracle", "blockenv_random_legal"], levels=[0, 1],
                                  trials_per_level=2, seed=3)
        plan_campaign(store, blind_ab, campaign_id="ab-lab")
    out = indgen(tmp, "report", "--index")
    assert re.search(r"index: .*artifacts/reports/index\.html", out)
    return tmp


def entries(page: str) -> list[dict]:
    data = re.search(r'<script id="data" type="application/json">(.*?)</script>', page, re.S)
    assert data
    return json.loads(data.group(1).replace("<\\/", "</"))


def test_the_index_lists_every_campaign_and_hides_a_blind_ones_policies(lab):
    page = (lab / "artifacts" / "reports" / "index.html").read_text()
    rows = {e["id"]: e for e in entries(page)}
    assert set(rows) == {"depth-cert", "random-depth", "oracle-depth", "ab-lab"}
    assert rows["depth-cert"]["purpose"] == "certify" and rows["depth-cert"]["status"] == "done"
    assert rows["random-depth"]["done"] == rows["random-depth"]["planned"] == 32
    assert rows["oracle-depth"]["breaks"] == "blockenv_oracle: none"
    assert rows["oracle-depth"]["k_star"].startswith("blockenv_oracle: k=")
    assert [label for label, _ in rows["random-depth"]["links"]] == ["trials", "report"]
    # each campaign's page of trials: every planned trial with its outcome and reason
    trials = (lab / "artifacts" / "reports" / "trials" / "random-depth.html").read_text()
    assert trials.count("<tr><td>") == 32 and "<td>success</td>" in trials
    blind_trials = (lab / "artifacts" / "reports" / "trials" / "ab-lab.html").read_text()
    assert "hidden (blind, running)" in blind_trials and "<td>success</td>" not in blind_trials
    assert "blockenv_oracle" not in blind_trials and "random_legal" not in blind_trials
    blind = rows["ab-lab"]
    assert blind["blind"] and blind["policies"] == ["A", "B"]
    assert blind["breaks"] == "hidden (blind, running)" and blind["curves"] == []
    shown = json.dumps(blind)
    assert "blockenv_oracle" not in shown and "random_legal" not in shown
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")  # nothing from the network


def test_unblinding_shows_the_names_on_the_next_refresh(lab, tmp_path):
    copy = tmp_path / "lab"
    shutil.copytree(lab, copy, symlinks=True)
    indgen(copy, "campaign", "unblind", "ab-lab", "--by", "ada", "--reason", "a safety review needs the names")
    indgen(copy, "report", "--index")
    rows = {e["id"]: e for e in entries((copy / "artifacts" / "reports" / "index.html").read_text())}
    assert rows["ab-lab"]["policies"] == ["blockenv_oracle", "blockenv_random_legal"]
    assert not rows["ab-lab"]["blind"]


@pytest.fixture(scope="module")
def served(lab):
    handler = functools.partial(_Handler, directory=str(lab / "artifacts"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (ensure-system-deps.sh)")
def test_the_index_in_a_browser_filters_sorts_overlays_and_every_link_resolves(served):
    from helpers.browser import open_page

    script = """(async () => {
      const rows = () => Array.from(document.querySelectorAll('#campaigns tbody tr'))
                             .filter(r => !r.classList.contains('hidden')).length;
      const all = rows();
      const box = document.getElementById('filter');
      box.value = 'random'; box.dispatchEvent(new Event('input'));
      const random = rows();
      box.value = 'certify done'; box.dispatchEvent(new Event('input'));
      const certify = rows();
      box.value = ''; box.dispatchEvent(new Event('input'));
      document.querySelector('th[data-key="id"]').click();
      const sorted = Array.from(document.querySelectorAll('#campaigns tbody tr td:nth-child(2)'))
                          .map(td => td.textContent);
      const picks = Array.from(document.querySelectorAll('#campaigns tbody input:not([disabled])'));
      picks.slice(0, 2).forEach(p => { p.checked = true; });
      document.getElementById('draw').click();
      const lines = document.querySelectorAll('#plot polyline').length;
      const links = Array.from(document.querySelectorAll('#campaigns a')).map(a => a.href);
      const statuses = await Promise.all(links.map(h => fetch(h).then(r => r.status, () => 0)));
      const blindRow = Array.from(document.querySelectorAll('#campaigns tbody tr'))
                          .find(r => r.cells[1].textContent === 'ab-lab').innerText;
      const wide = document.documentElement.scrollWidth, window_ = window.innerWidth;
      const sparks = document.querySelectorAll('#campaigns td.spark svg polyline').length;
      return {all, random, certify, sorted, pickable: picks.length, lines, links, statuses, blindRow, wide,
              window_, sparks};
    })()"""
    report, got = open_page(f"{served}/reports/index.html", evaluate=script)
    assert report.problems == [] and report.title == "IndGen results"
    assert got["all"] == 4 and got["random"] == 1 and got["certify"] == 1
    assert got["sorted"] == sorted(got["sorted"])
    assert got["pickable"] == 3 and got["lines"] == 2  # the blind one has no curve to show
    assert got["links"] and all(status == 200 for status in got["statuses"]), got
    assert "A, B (blind)" in got["blindRow"] and "oracle" not in got["blindRow"]
    # every column fits a 1280 px window (its right columns were cut), and each campaign with
    # results has its per-level sparkline
    assert got["window_"] == 1280 and got["wide"] <= 1280, got
    assert got["sparks"] == 3


def test_a_campaign_without_trials_and_a_dead_run_say_so(tmp_path):
    """Found by a new user: "breaks at: none" for a campaign with 0 trials (as if it held), and a
    killed run shown `running` for good."""
    import sqlite3
    import time

    from indgen_core.report.index_page import campaign_entry

    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        config = CampaignConfig(name="idle", axis="blockenv_depth", world="blockenv", policies=["blockenv_oracle"],
                                levels=[0, 1], trials_per_level=2, seed=3, purpose="certify")
        record = plan_campaign(store, config, campaign_id="idle")
        entry = campaign_entry(store, record, tmp_path)
        assert entry["breaks"] == entry["k_star"] == "no trials yet" and entry["status"] == "planned"
        store.set_status("idle", "running")
        assert campaign_entry(store, store.campaign("idle"), tmp_path)["status"] == "running"  # just started
    with sqlite3.connect(db) as conn:  # three hours later, nothing recorded
        conn.execute("UPDATE campaigns SET updated_at=? WHERE id='idle'", (time.time() - 3 * 3600,))
    with ResultsStore(db) as store:
        status = campaign_entry(store, store.campaign("idle"), tmp_path)["status"]
    assert status == "running? nothing recorded for 3 h (killed? `indgen campaign resume idle`)", status


def test_an_index_of_an_empty_store_and_a_bad_output_are_one_sentence(tmp_path):
    out = indgen(tmp_path, "report", "--index", "--out", str(tmp_path / "site"))
    assert entries((tmp_path / "site" / "index.html").read_text()) == []
    assert "no campaign" in out
    (tmp_path / "file").write_text("x")
    env = {**os.environ, "INDGEN_DB": str(tmp_path / "results.sqlite")}
    proc = subprocess.run([str(BIN / "indgen"), "report", "--index", "--out", str(tmp_path / "file")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and proc.stderr.count("\n") == 1 and "indgen: error:" in proc.stderr
