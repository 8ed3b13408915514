"""The console's screen as text, drawn from a ConsoleModel: the campaign, the level with its
parameter values, the trial, the live per-level table, the policy and robot state, the
episode's timer and tick rate, and one large prompt with the keys it takes. Plain text, so the
terminal program only paints it and a test can read it. Every line is wrapped to the terminal's
width (the program passes it; 96 columns by default), never cut: an abort reason is read whole."""

from __future__ import annotations

import textwrap

from indgen_robot.console import model as m

WIDTH = 96
#: narrower than this and the key lines no longer fit; wider and a line is hard to follow
MIN_WIDTH, MAX_WIDTH = 60, 160


def fit(columns: int) -> int:
    """The screen's width for a terminal of `columns`."""
    return max(MIN_WIDTH, min(int(columns), MAX_WIDTH))


def _wrap(line: str, width: int, indent: str = "") -> list[str]:
    return textwrap.wrap(line, width, subsequent_indent=indent or "  ", drop_whitespace=True) or [""]


def _box(title: str, lines: list[str], keys: list[tuple[str, str]], width: int = WIDTH) -> list[str]:
    inner = width - 4
    out = ["=" * 3 + f" {title} " + "=" * max(width - len(title) - 5, 0)]
    for line in lines:
        for piece in textwrap.wrap(line, inner) or [""]:
            out.append(f"  {piece}")
    out.append("")
    line = ""
    for entry in (f"[{k}] {what}" for k, what in keys):  # the keys wrap between entries, inside one only if too long
        if line and len(line) + 3 + len(entry) > inner:
            out.append(f"  {line}")
            line = ""
        *whole, last = _wrap(f"{line}   {entry}" if line else entry, inner, "    ")
        out += [f"  {piece}" for piece in whole]
        line = last
    out.append(f"  {line}")
    out.append("=" * width)
    return out


def _table(model: m.ConsoleModel) -> list[str]:
    if not model.levels:
        return ["  (no trials scored yet)"]
    rows = [f"  {'policy':<22} {'k':>3} {'n':>4} {'succ':>5} {'rate':>6}  {'95% conf. seq.':<15} verdict"]
    for (policy, k), s in sorted(model.levels.items()):
        low, high = s["ci"]
        mark = " ID" if s["id"] else ""
        if s.get("hidden"):  # a blind campaign: how a policy does stays hidden until the campaign is done
            rows.append(f"  {policy[:22]:<22} {k:>3} {s['n']:>4}  (blind: hidden until the campaign is done){mark}")
            continue
        rows.append(
            f"  {policy[:22]:<22} {k:>3} {s['n']:>4} {s['successes']:>5} {100 * s['rate']:>5.0f}%  "
            f"[{100 * low:3.0f}%, {100 * high:3.0f}%]   {s['verdict']}{mark}"
        )
    return rows


def prompt_box(model: m.ConsoleModel, width: int = WIDTH) -> list[str]:
    state = model.state
    keys = [(k, what) for k, what in m.HELP[state]]
    if state in (m.SETUP, m.LABEL, m.RELABEL, m.PAUSED):
        p = model.open_prompt
    if state == m.SETUP:
        lines = [p.text]
        if p.detail:
            lines.append(f"What changed: {p.detail}")
        if p.reference_image:
            lines.append(f"Reference image: {p.reference_image}")
        return _box(f"BUILD THE SCENE  {p.trial_id} (level {p.level})", lines, keys, width)
    if state == m.LABEL:
        lines = [p.text]
        if p.auto_outcome:
            lines.append(f"The world's own judgement: {p.auto_outcome}")
        lines.append(f"partial score: {model.number or '-'}   note: {model.note or '-'}")
        if model.redo_pending:
            lines.append("REDO? Press r again to run this trial again; any other key cancels.")
        return _box(f"LABEL THE EPISODE  {p.trial_id}", lines, keys, width)
    if state == m.RELABEL:
        return _box(
            f"RELABEL THE PREVIOUS TRIAL  {p.previous_trial_id}",
            [
                f"new label for {p.previous_trial_id}: y, n or i; the old label stays in the history",
                f"partial score: {model.number or '-'}   note: {model.note or '-'}",
            ],
            keys,
            width,
        )
    if state == m.NOTE:
        return _box("NOTE", [f"> {model.note_buffer}_"], keys, width)
    if state == m.PAUSED:
        return _box("PAUSED", [p.text], keys, width)
    if state == m.ESTOP:
        return _box(
            "SOFT E-STOP ENGAGED",
            [
                "The robot holds; the interrupted trial is aborted and runs again after "
                "the release. The hardware e-stop stops a robot that does not hold."
            ],
            keys,
            width,
        )
    if state == m.STOPPED:
        return _box(
            "THE ROBOT STOPPED: ACKNOWLEDGE",
            [
                "Its state is restored and it holds itself; its torque control stays off until you acknowledge. "
                "Check that nobody is touching the arm and nothing is caught, then press a.",
                model.robot_message,
            ],
            keys,
            width,
        )
    if state == m.RUNNING:
        return _box(
            f"EPISODE RUNNING  {model.trial_id}",
            [f"step {model.step}   {model.episode_seconds():5.1f} s   {model.tick_rate:4.1f} Hz"],
            keys,
            width,
        )
    text = model.campaign_message or ("waiting for the campaign" if not model.campaign else "between trials")
    if model.campaign_gone:
        text = f"{text}. The campaign's graph has exited: nothing here is live any more (Ctrl-C leaves)."
        keys = [("Ctrl-C", "leave the console")]
    return _box("WAITING", [text], keys, width)


def render(model: m.ConsoleModel, width: int = WIDTH) -> str:
    policy = (
        "connected"
        if model.policy_connected
        else f"LOST ({model.policy_message})"
        if model.policy_connected is False
        else "unknown" + (f" ({model.policy_message})" if model.policy_message else "")
    )
    robot = model.robot_state or "simulated world"
    if model.robot_message and model.robot_state:
        robot += f" ({model.robot_message})"
    gone = " (its graph has exited)" if model.campaign_gone else ""
    head = [
        f"IndGen console   operator {model.operator or '-'} ({model.role})".ljust(width - 9) + "[?] help",
        f"campaign {model.campaign or '-'}   {model.campaign_state}{gone}   "
        f"trials {model.trials_done}/{model.trials_total}",
        f"policy {model.policy or '-'}   axis {model.axis or '-'}   world {model.world or '-'}",
        f"level k={model.level if model.level is not None else '-'}: {model.parameters or '-'}   trial "
        f"{model.trial_id or '-'}",
        f"policy server: {policy}",
        f"robot: {robot}",
        f"episode {model.episode_seconds():5.1f} s   step {model.step}   {model.tick_rate:4.1f} Hz",
    ]
    lines = [piece for line in head for piece in _wrap(line, width)]
    lines += ["", *_table(model), "", *prompt_box(model, width)]
    if model.show_help:
        lines += ["keys here:", *(f"  {k:<8} {what}" for k, what in m.HELP[model.state])]
    lines += _wrap(f"> {model.message}", width)
    return "\n".join(lines)
