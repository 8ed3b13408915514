"""Where a report's numbers come from, on every report: when and by what command it was
written, which IndGen (version and git commit), on which machine, and per campaign its plan
(created, campaign file, seed, order) and each policy's identity as its policy said it (the
metadata a policy or its server sent: checkpoint, name, version), as the store recorded it.
A reviewer reads this before the table. A blind campaign's identities stay out until it is
unblinded (the metadata names the policy)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from indgen_core import __version__
from indgen_core.campaign import blind
from indgen_core.report.analysis import CampaignSummary
from indgen_core.store import ResultsStore

#: the store's event kind that keeps what a policy said of itself when a run made it
POLICY_EVENT = "policy"


@cache
def git_commit() -> str:
    """The commit IndGen runs from, where it runs from a git checkout; "" otherwise."""
    source = Path(__file__).resolve().parents[3]
    try:
        out = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    if out.returncode != 0:
        return ""
    dirty = subprocess.run(
        ["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        timeout=5,
    ).stdout.strip()
    return out.stdout.strip() + (" (with uncommitted changes)" if dirty else "")


def record_policy(store: ResultsStore, campaign_id: str, name: str, metadata: dict) -> None:
    """Keep what a policy said of itself (called when a run has made it)."""
    text = json.dumps(metadata or {}, sort_keys=True, default=str)[:2000]
    store.log_event(campaign_id, POLICY_EVENT, f"{name}: {text}")


def _policies(store: ResultsStore, campaign_id: str) -> dict[str, str]:
    said: dict[str, str] = {}
    for event in store.events(campaign_id):
        if event["kind"] == POLICY_EVENT:
            name, _, text = event["message"].partition(": ")
            said[name] = text  # the newest run's
    return said


def _day(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


def provenance_lines(store: ResultsStore, summaries: Sequence[CampaignSummary]) -> list[str]:
    commit = git_commit()
    command = " ".join(["indgen", *sys.argv[1:]]) if Path(sys.argv[0]).name in ("indgen", "__main__.py") else ""
    lines = [
        "## Provenance",
        "",
        f"- written {_day(time.time())}" + (f" by `{command}`" if command else ""),
        f"- IndGen {__version__}" + (f", commit {commit}" if commit else ""),
        f"- machine: {platform.node()}, {platform.platform()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
    ]
    for s in summaries:
        r = s.record
        lines.append(
            f"- campaign `{r.id}` ({r.name}): planned {_day(r.created_at)}; seed {r.seed}; {r.order_mode} order; "
            f"status {r.status}"
        )
        if blind.labels(r) and blind.blinded(store, r):
            lines.append("  - policies: blind (their identities are shown once the campaign is unblinded)")
            continue
        said = _policies(store, r.id)
        for policy in r.policies:
            identity = said.get(policy) or "no identity recorded (a run before 2026-12-07)"
            lines.append(f"  - `{policy}`: {identity}")
    lines.append("")
    return lines
