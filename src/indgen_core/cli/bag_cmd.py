"""`indgen bag info|rescore|latency|video|view|replay|repair BAG ...`

A BAG is a rosbag2 folder written by the recorder node (or several: a split recording, or
the bags of one campaign's runs, read as one). Every sub-command prints a table, and with
--json writes its figures as JSON too.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from indgen_core.cli.common import add_db_option


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bag",
        help="inspect, re-score, time, watch and replay recorded campaigns",
        description="Work with the rosbag2 (MCAP) bags the recorder node writes for every campaign.",
    )
    cmds = p.add_subparsers(dest="bag_command", metavar="COMMAND", title="commands")

    def command(name: str, help_: str, func, campaign: bool = True, db: bool = False):
        c = cmds.add_parser(name, help=help_, description=help_)
        c.add_argument("bags", nargs="+", type=Path, metavar="BAG", help="bag folder(s), read as one recording")
        if campaign:
            c.add_argument("--campaign", help="only this campaign (a bag may hold several)")
        if db:
            add_db_option(c)
        c.add_argument("--json", type=Path, help="also write the figures to this JSON file")
        c.set_defaults(func=func)
        return c

    command("info", "topics, types, counts and rates, and the campaigns and trials inside", _info, db=True)
    command(
        "rescore",
        "judge every simulated trial again from its recorded final state and compare it with "
        "the recorded result; list the operator's labels of real-robot trials",
        _rescore,
        db=True,
    )
    c = command(
        "latency",
        "tick period, missed ticks, observation-to-command latency and policy round trip, per trial and overall",
        _latency,
        db=True,
    )
    c.add_argument("--trial", help="only this trial")
    c = command(
        "video",
        "an H.264 MP4 per trial with trial, level, step and outcome drawn on the frames; "
        "one per level unless --trial or --all",
        _video,
        db=True,
    )
    c.add_argument("--trial", help="only this trial")
    c.add_argument("--all", action="store_true", help="every finished attempt, not one per level")
    c.add_argument("--camera", help="camera name (default: the first recorded)")
    c.add_argument("--out", type=Path, help="output folder (default: <artifacts>/videos/<campaign>)")
    c.add_argument("--fps", type=float, default=15.0, help="frames per second (default 15, the control rate)")
    c = command(
        "view",
        "a page per trial to look at: its outcome and reason, frames spread over the episode and the "
        "policy's actions per step; the results index links them",
        _view,
        db=True,
    )
    c.add_argument("--trial", help="only this trial")
    c.add_argument("--camera", help="camera name (default: the first recorded)")
    c.add_argument(
        "--out", type=Path, help="output folder (default: <artifacts>/reports/trials/<campaign>, beside the index)"
    )
    c = command(
        "replay",
        "send the recorded policy requests, open-loop, to another policy server and report how "
        "far its actions are from the recorded ones, per level and action dimension",
        _replay,
    )
    c.add_argument("--server", required=True, help="ws://HOST:PORT of the policy server to compare")
    c.add_argument("--api-key-file", help="file with the server's API key (default $INDGEN_POLICY_API_KEY)")
    c.add_argument("--trial", help="only this trial")
    c.add_argument("--timeout", type=float, default=30.0, help="seconds one reply may take")
    command(
        "repair",
        "close a bag whose recorder was killed: rebuild its cut .mcap files and metadata.yaml",
        _repair,
        campaign=False,
    )
    p.set_defaults(func=lambda args: p.print_help() or 2)


def _emit(args, figures) -> None:
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2, default=str))


def _recording(args, keys=None):
    from indgen_core.bags import trials

    recording = trials.read(args.bags, keys).only(getattr(args, "campaign", None))
    for name in recording.truncated:
        print(
            f"note: {name} ends inside a record (its recorder was killed); read up to its last complete chunk "
            "(`indgen bag repair` closes it)",
            file=sys.stderr,
        )
    return recording


def _hidden(args, recording) -> list[str]:
    """The campaigns of the recording whose outcomes a person may not see yet: blind (its trials
    name policies by letter, or the results store says so) and not known to be done. A bag
    read without the store that ran it is not known to be done: on doubt, hidden."""
    from indgen_core.campaign import blind
    from indgen_core.cli.common import open_store
    from indgen_core.errors import IndGenError

    lettered = {a.campaign_id for a in recording.attempts if len(a.policy) == 1 and a.policy.isupper()}
    out = []
    with open_store(args) as store:
        for campaign in recording.campaigns():
            try:
                record = store.campaign(campaign)
            except IndGenError:
                record = None
            if record is None:
                if campaign in lettered:
                    out.append(campaign)
            elif blind.rates_hidden(store, record):
                out.append(campaign)
    return out


def _refuse_hidden(args, recording) -> None:
    from indgen_core.errors import IndGenError

    hidden = _hidden(args, recording)
    if hidden:
        raise IndGenError(
            f"campaign {hidden[0]} is blind and not known to be done: its outcomes stay hidden until it is done "
            "(pass --db with the results store that ran it)"
        )


def _table(rows: list[list], header: list[str]) -> None:
    cells = [header] + [
        ["-" if v is None else v if isinstance(v, str) else f"{v:.1f}" if isinstance(v, float) else str(v) for v in row]
        for row in rows
    ]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for i, row in enumerate(cells):
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


# -- info ------------------------------------------------------------------------------------------
def _info(args) -> int:
    from indgen_core.bags import info, trials

    readers = trials.readers(args.bags)
    rows, span = info.topic_table(readers)
    recording = _recording(args)
    campaigns = info.campaign_table(recording)
    hidden = set(_hidden(args, recording))
    for c in campaigns:
        if c["campaign"] in hidden:
            c["outcomes"] = {"hidden (blind, not done)": c["trials"]}
    files = [str(p) for r in readers for p in r.files]
    print(
        f"bag: {', '.join(map(str, args.bags))}  ({len(files)} file{'s' * (len(files) != 1)}, "
        f"{span['bytes'] / 2**20:.1f} MiB, {span['duration_s']:.1f} s, {sum(r['count'] for r in rows)} messages)"
    )
    _table([[r["topic"], r["type"], r["count"], r["rate_hz"]] for r in rows], ["topic", "type", "count", "Hz"])
    print()
    _table(
        [
            [
                c["campaign"],
                c["world"],
                c["axis"],
                c["policy"],
                ",".join(map(str, c["levels"])),
                c["trials"],
                c["attempts"],
                " ".join(f"{k}={v}" for k, v in sorted(c["outcomes"].items())) or "-",
            ]
            for c in campaigns
        ],
        ["campaign", "world", "axis", "policy", "levels", "trials", "attempts", "outcomes"],
    )
    _emit(args, {"files": files, **span, "topics": rows, "campaigns": campaigns})
    return 0


# -- rescore ---------------------------------------------------------------------------------------
def _rescore(args) -> int:
    from indgen_core.bags import rescore
    from indgen_core.cli.common import open_store

    store = open_store(args)
    try:
        recording = _recording(args, keys=store.campaign_key)
    finally:
        store.close()
    _refuse_hidden(args, recording)
    rows = rescore.rescore(recording)
    _table(
        [
            [
                r.attempt.trial_id,
                r.attempt.level,
                r.recorded.word if r.recorded is not None else None,
                r.outcome.word if r.outcome is not None else None,
                "yes" if r.agrees else "NO" if r.agrees is False else "-",
                r.note or r.reason,
            ]
            for r in rows
        ],
        ["trial", "level", "recorded", "rescored", "agree", "note"],
    )
    labelled = [a for a in recording.attempts if a.relabels or a.answers]
    if labelled:
        print("\noperator labels:")
        for a in labelled:
            for ans in a.answers:
                print(f"  {a.trial_id}: {_answer(ans)}")
            for msg in a.relabels:
                print(f"  {a.trial_id}: relabelled {_outcome(msg.outcome)} ({msg.reason})")
    s = rescore.summary(rows)
    signed = {a.signed for a in recording.attempts if a.result is not None}
    check = (
        "signatures checked against the results store"
        if signed == {True}
        else "signatures not checked (the results store has no key for this campaign)"
        if None in signed
        else ""
    )
    parts = [f"{s['agree']} of {s['compared']} judged trials agree with the recorded result"]
    if s["disagree"]:
        parts.append("DISAGREE: " + ", ".join(s["disagree"]))
    if s["labelled"]:
        parts.append(f"{s['labelled']} labelled by an operator")
    if check:
        parts.append(check)
    if recording.unsigned:
        parts.append(
            f"IGNORED {len(recording.unsigned)} result(s) not signed with the campaign's key "
            f"(altered or forged): {', '.join(dict.fromkeys(recording.unsigned))}"
        )
    print("\n" + "; ".join(parts))
    _emit(
        args,
        {
            **s,
            "unsigned": list(recording.unsigned),
            "trials": [
                {
                    "trial": r.attempt.trial_id,
                    "level": r.attempt.level,
                    "agrees": r.agrees,
                    "recorded": r.recorded.name if r.recorded is not None else None,
                    "rescored": r.outcome.name if r.outcome is not None else None,
                    "recorded_score": r.recorded_score,
                    "rescored_score": r.score,
                    "note": r.note or r.reason,
                }
                for r in rows
            ],
        },
    )
    return 1 if s["disagree"] else 0


def _outcome(value: int) -> str:
    from indgen_core.records import Outcome

    try:
        return Outcome(value).word
    except ValueError:
        return str(value)


def _answer(ans) -> str:
    from indgen_core.campaign import operator

    response = operator.RESPONSE_NAMES.get(ans.response, str(ans.response))
    # a relabel's new label is a response code (OperatorAck.RESPONSE_SUCCESS ...), not an outcome
    label = f" {operator.RESPONSE_NAMES.get(ans.label, str(ans.label))}" if response == "relabel" else ""
    who = ans.operator_name or ans.console_id or "?"
    return f"{response}{label} by {who}{'' if ans.accepted else ' (refused: ' + ans.message + ')'}"


# -- latency ---------------------------------------------------------------------------------------
def _latency(args) -> int:
    from indgen_core.bags import latency, trials

    readers = trials.readers(args.bags)
    recording = _recording(args)
    wanted = None
    if args.campaign or args.trial:
        wanted = {a.trial_id for a in (recording.trial(args.trial) if args.trial else recording.attempts)}
    rows, overall = latency.measure(readers, wanted)
    if not rows:
        print("no control ticks in the bag")
        return 1
    # a trial's tick count is its episode's length: a success ends early, so per trial it tells
    # a blind campaign's outcomes by letter; only the overall row is shown until it is done
    hidden = set(_hidden(args, recording))
    secret = {a.trial_id for a in recording.attempts if a.campaign_id in hidden}
    if secret:
        rows = [r for r in rows if r["trial"] not in secret]
        print(
            f"campaign {sorted(hidden)[0]} is blind and not known to be done: its trials are in the overall row "
            "only (pass --db with the results store that ran it)"
        )
    _table(
        [
            [
                r["trial"],
                r["ticks"],
                r["missed"],
                r["period_ms_p50"],
                r["period_ms_p99"],
                r["obs_to_command_ms_p50"],
                r["obs_to_command_ms_p99"],
                r["round_trip_ms_p50"],
                r["round_trip_ms_p99"],
                r["server_ms_p50"],
            ]
            for r in [*rows, overall]
        ],
        ["trial", "ticks", "missed", "period p50", "p99", "obs->cmd p50", "p99", "round trip p50", "p99", "server p50"],
    )
    print("(milliseconds, on the recorder's receive clock)")
    _emit(args, {"trials": rows, "overall": overall})
    return 0


# -- video -----------------------------------------------------------------------------------------
def _video(args) -> int:
    from indgen_core import paths
    from indgen_core.bags import trials, video
    from indgen_core.cli.common import open_store

    recording = _recording(args)
    _refuse_hidden(args, recording)  # its frames carry the outcome
    attempts = video.pick_attempts(recording, args.trial, args.all)
    if not attempts:
        print("no finished trial in the bag")
        return 1
    out = args.out or paths.inside(
        paths.artifacts_dir() / "videos", paths.check_id(args.campaign or attempts[0].campaign_id)
    )
    videos = video.write_videos(trials.readers(args.bags), recording, attempts, out, args.camera, args.fps)
    with open_store(args) as store:
        known = {c.id for c in store.campaigns()}
        for v in videos:
            print(f"{v.path}  ({v.frames} frames, level {v.attempt.level}, {_outcome(v.attempt.result.outcome)})")
            if v.frames and v.attempt.campaign_id in known:
                store.add_artifact(
                    v.attempt.campaign_id, "video", str(v.path), trial_id=v.attempt.trial_id, level=v.attempt.level
                )
    _emit(
        args,
        [
            {"path": str(v.path), "trial": v.attempt.trial_id, "level": v.attempt.level, "frames": v.frames}
            for v in videos
        ],
    )
    return 0 if any(v.frames for v in videos) else 1


def _view(args) -> int:
    import os

    from indgen_core import paths
    from indgen_core.bags import trial_view, trials
    from indgen_core.cli.common import open_store

    recording = _recording(args)
    _refuse_hidden(args, recording)  # a page says the outcome
    last: dict[tuple[str, str], trials.Attempt] = {}
    for a in recording.attempts:  # a trial's last finished attempt is the one that counted
        if a.result is not None and (not args.trial or a.trial_id == args.trial):
            last[(a.campaign_id, a.trial_id)] = a
    if not last:
        print(f"no finished attempt at {args.trial} in the bag" if args.trial else "no finished trial in the bag")
        return 1
    traces = trial_view.collect(trials.readers(args.bags), recording, list(last.values()), args.camera)
    reports = paths.artifacts_dir() / "reports"
    written = []
    for campaign in dict.fromkeys(t.attempt.campaign_id for t in traces):
        out = args.out or paths.inside(reports / "trials", paths.check_id(campaign))
        back = os.path.relpath(reports / "trials" / f"{paths.check_id(campaign)}.html", out)
        written += trial_view.write_views([t for t in traces if t.attempt.campaign_id == campaign], out, back)
    with open_store(args) as store:
        known = {c.id for c in store.campaigns()}
        for t in written:
            a = t.attempt
            outcome = _outcome(a.result.outcome)
            print(f"{t.path}  (level {a.level}, {outcome}, {len(t.frames)} frames, {len(t.actions)} replies)")
            if a.campaign_id in known:
                store.add_artifact(a.campaign_id, "view", str(t.path), trial_id=a.trial_id, level=a.level)
    _emit(args, [{"path": str(t.path), "trial": t.attempt.trial_id, "level": t.attempt.level} for t in written])
    return 0


# -- replay ----------------------------------------------------------------------------------------
def _replay(args) -> int:
    from indgen_core.bags import info, replay, trials
    from indgen_core.campaign.progress import ProgressPrinter
    from indgen_core.episode import PolicyUnavailable
    from indgen_core.errors import IndGenError
    from indgen_core.wire.client import RemotePolicy, read_api_key

    recording = _recording(args)
    wanted = (
        {a.trial_id for a in recording.trial(args.trial)} if args.trial else {a.trial_id for a in recording.attempts}
    )
    client = RemotePolicy(args.server, api_key=read_api_key(args.api_key_file), request_timeout=args.timeout)
    readers = trials.readers(args.bags)
    total = sum(r["count"] for r in info.topic_table(readers)[0] if r["topic"] == trials.POLICY_EXCHANGE)
    try:
        client.connect()
        progress = ProgressPrinter(total, "replayed requests")
        try:
            result = replay.replay(readers, recording, client, wanted, on_request=progress.update)
        finally:
            progress.close()
    except PolicyUnavailable as exc:
        raise IndGenError(f"replay stopped: {exc}") from None
    finally:
        client.close()
    if not result.requests:
        print("no recorded policy requests in the bag (was the policy node recording its exchanges?)")
        return 1
    rows = replay.by_level(result)
    names = rows[0]["names"]
    _table(
        [[str(r["level"]), r["requests"], *[f"{v:.4f}" for v in r["mean_abs"]]] for r in rows],
        ["level", "requests", *names],
    )
    print(f"(mean |replayed - recorded| per action dimension; largest difference {result.max_abs():.4g})")
    if result.errors:
        print(f"{result.errors} replies could not be compared: {result.first_error}")
    _emit(args, {"server": args.server, "levels": rows, "max_abs": result.max_abs(), "errors": result.errors})
    return 0


# -- repair ----------------------------------------------------------------------------------------
def _repair(args) -> int:
    from indgen_core.bags.repair import repair

    for bag in args.bags:
        r = repair(bag)
        what = (
            f"closed {', '.join(r['closed_files'])} (the cut originals kept as .mcap.cut)"
            if r["closed_files"]
            else "no cut file"
        )
        print(
            f"{bag}: {what}; {'wrote' if r['wrote_metadata'] else 'kept'} metadata.yaml; "
            f"{r['messages']} messages on {r['topics']} topics"
        )
    return 0
