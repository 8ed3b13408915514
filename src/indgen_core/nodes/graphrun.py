"""Run one campaign through a node graph from Python, with a progress line: what `indgen
twin demo` (and a user's own dry-run script) does instead of `indgen launch` in a terminal.

The graph's processes log to a file (a campaign of hundreds of episodes would otherwise
bury the progress); the progress comes from the results store, which the scorer commits
to as results arrive, so it shows exactly what is durable.
"""

from __future__ import annotations

import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from indgen_core import graph, paths
from indgen_core.errors import IndGenError
from indgen_core.nodes import launcher
from indgen_core.records import Outcome


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def campaign_file(name: str) -> Path:
    path = Path(name)
    return path if path.is_file() else paths.config_dir() / path


def with_trials(campaign: str, trials: int, folder: Path) -> str:
    """A copy of a campaign config with another number of trials per level."""
    data = yaml.safe_load(campaign_file(campaign).read_text())
    data["trials_per_level"] = int(trials)
    out = folder / f"{data.get('name', 'campaign')}_{trials}.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(out)


def run_graph(
    profile: str,
    overrides: dict[str, Any],
    db: Path,
    campaign_id: str,
    log_path: Path,
    trials: int | None = None,
    out=sys.stdout,
) -> None:
    """Bring the profile's graph up for campaign `campaign_id`, show progress until the
    progression manager finishes, and raise IndGenError (with the log's tail) if it failed."""
    from indgen_core.store import ResultsStore

    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    overrides = dict(overrides)
    if trials:
        overrides["campaign"] = with_trials(overrides["campaign"], trials, log_path.parent)
    port = free_port()
    overrides.update(port=str(port), server_uri=f"ws://127.0.0.1:{port}", campaign_id=campaign_id, db=str(db))
    nodes = graph.load_profile(profile).resolve(overrides)
    done = threading.Event()
    t0 = time.monotonic()

    tty = getattr(out, "isatty", lambda: False)()

    def progress() -> None:
        shown = -1
        with ResultsStore(db) as store:
            while not done.wait(1.0):
                if not store.has_campaign(campaign_id):
                    continue
                rows = store.rows(campaign_id)
                finished = sum(r.outcome is not None for r in rows)
                ok = sum(r.outcome is Outcome.SUCCESS for r in rows)
                line = f"  {finished}/{len(rows)} trials, {ok} successes ({time.monotonic() - t0:.0f} s)"
                if tty:  # one line, rewritten in place
                    out.write("\r" + line)
                elif finished != shown and (finished % 10 == 0 or finished == len(rows)):
                    out.write(line + "\n")  # a log: every tenth trial
                else:
                    continue
                shown = finished
                out.flush()
        if tty and shown >= 0:
            out.write("\n")

    with open(log_path, "a", encoding="utf-8") as log:
        runner = launcher.Launcher(nodes, out=log)
        previous = {sig: signal.signal(sig, runner.stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        watcher = threading.Thread(target=progress, daemon=True)
        try:
            runner.start()
            watcher.start()
            code = runner.wait()
        finally:
            done.set()
            runner.shutdown()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    if code != 0:
        tail = "".join(log_path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)[-15:])
        raise IndGenError(f"the {profile} graph stopped with status {code} (log: {log_path}); its last lines:\n{tail}")
