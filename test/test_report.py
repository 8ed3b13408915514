"""Reports for a campaign with two policies: table, Markdown, self-contained HTML, PNG, JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from helpers import toy_setup, toy_world
from indgen_core.campaign.inprocess import InProcessExecutor
from indgen_core.campaign.runner import run_campaign
from indgen_core.report import plots
from indgen_core.store import ResultsStore


@pytest.fixture
def two_policy_campaign(monkeypatch, tmp_path):
    toy_setup.toy_env(monkeypatch, tmp_path)
    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        record = toy_setup.plan_toy(store, tmp_path, policies=["skilled", "clumsy"], trials_per_level=12)
        run_campaign(store, record.id, InProcessExecutor(toy_world.ToyWorld(0.0)))
    return db, record.id


def test_report_command_writes_html_png_markdown_and_json(two_policy_campaign, tmp_path):
    db, cid = two_policy_campaign
    out = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "indgen_core.cli", "report", cid, "--db", str(db), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "skilled" in proc.stdout and "clumsy" in proc.stdout and "95% interval" in proc.stdout

    png = out / "success_per_level.png"
    with Image.open(png) as img:
        assert img.format == "PNG"
        assert img.size == plots.IMAGE_SIZE == (1050, 675)
        pixels = np.asarray(img.convert("RGB"), dtype=np.float32)
    assert pixels.std() > 10  # a drawn plot, not a blank canvas
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50  # lines, bands, text in several colours

    html = (out / "report.html").read_text()
    assert html.startswith("<!doctype html>") and "data:image/png;base64," in html
    assert "src=\"success_per_level.png\"" not in html  # self-contained
    for name in ("skilled", "clumsy", "95% interval", "exact (Clopper-Pearson)", "Monotonicity"):
        assert name in html

    md = (out / "report.md").read_text()
    assert "![success per level](success_per_level.png)" in md
    assert "Policy comparisons" in md
    # what a reviewer asks before the table: when, what, where; every word defined; one table
    # of both policies with their difference; how the failures failed
    from indgen_core import __version__

    assert "## Provenance" in md and f"IndGen {__version__}" in md and f"by `indgen report {cid}" in md
    assert "Words: **held** / **broken**" in md and "| verdict | marks |" in md
    assert "### Side by side" in md and "| `skilled` | `clumsy` | first - second (95% interval) | Holm p |" in md
    assert "### Why trials failed, per level" in md

    summary = json.loads((out / "summary.json").read_text())
    camp = summary["campaigns"][0]
    assert [p["policy"] for p in camp["policies"]] == ["skilled", "clumsy"]
    for p in camp["policies"]:
        assert [lv["k"] for lv in p["levels"]] == [0, 1, 2, 3]
        assert all(lv["n"] == 12 for lv in p["levels"])
        assert all(0 <= lv["ci_low"] <= lv["rate"] <= lv["ci_high"] <= 1 for lv in p["levels"])
        assert p["monotonicity"] is not None  # the toy axis is black-box
    assert camp["protocol"]["feasibility"] is True
    assert len(camp["comparisons"]) == 4


def test_skilled_policy_beats_clumsy_in_the_summary(two_policy_campaign):
    from indgen_core.report.analysis import summarize

    db, cid = two_policy_campaign
    with ResultsStore(db) as store:
        s = summarize(store, cid)
    skilled, clumsy = s.curves
    assert skilled.level(0).rate == 1.0
    assert sum(lv.successes for lv in skilled.levels) > sum(lv.successes for lv in clumsy.levels)
    assert skilled.breaks.point[1] is not None  # p(3) = 0.25 x skill: the toy axis breaks


def test_a_rate_is_never_rounded_across_the_threshold():
    from indgen_core.report.rows import interval_text, percent

    assert interval_text((0.0, 0.1979), 0.2) == "[0%, 19.8%]"  # a broken level's bound was printed "20%"
    assert percent(0.19999, 0.2) == "19.999%" and percent(0.2, 0.2) == "20%" and percent(0.5, 0.2) == "50%"
    assert percent(0.2049, 0.2) == "20%"  # at or above it and shown so: whole


def test_level_images_stand_in_one_row_and_are_embedded(tmp_path):
    """The level images were stacked five screens tall: now one table row, each embedded."""
    from indgen_core.report.html_page import _md_to_html

    files = {}
    for k in range(3):
        path = tmp_path / f"level_k{k}.png"
        Image.new("RGB", (8, 8), (40 * k, 0, 0)).save(path)
        files[path.name] = path
    md = "| k=0 | k=1 | k=2 |\n|---|---|---|\n| " + " | ".join(f"![k={k}](level_k{k}.png)" for k in range(3)) + " |"
    html = _md_to_html(md, files)
    row = html.split("<tr>")[2]
    assert row.count("<td><img alt=\"k=") == 3 and row.count("data:image/png;base64,") == 3, row[:300]
    assert "level_k0.png" not in html.replace('alt="k=0"', "")  # embedded, not linked
