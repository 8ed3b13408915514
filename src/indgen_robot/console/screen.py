"""The console's screen as text, drawn from a ConsoleModel: the campaign, the level with its
parameter values, the trial, the live per-level table, the policy and robot state, the
episode's timer and tick rate, and one large prompt with the keys it takes. Plain text, so the
terminal program only paints it and a test can read it."""

from __future__ import annotations

import textwrap

from indgen_robot.console import model as m

WIDTH = 96


def _box(title: str, lines: list[str], keys: list[tuple[str, str]]) -> list[str]:
    inner = WIDTH - 4
    out = ["=" * 3 + f" {title} " + "=" * max(WIDTH - len(title) - 5, 0)]
    for line in lines:
        for piece in textwrap.wrap(line, inner) or [""]:
            out.append(f"  {piece}")
    out.append("")
    line = ""
    for entry in (f"[{k}] {what}" for k, what in keys):  # the keys wrap between entries, never inside one
        if line and len(line) + 3 + len(entry) > inner:
            out.append(f"  {line}")
            line = ""
        line = f"{line}   {entry}" if line else entry
    out.append(f"  {line}")
    out.append("=" * WIDTH)
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


def prompt_box(model: m.ConsoleModel) -> list[str]:
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
        return _box(f"BUILD THE SCENE  {p.trial_id} (level {p.level})", lines, keys)
    if state == m.LABEL:
        lines = [p.text]
        if p.auto_outcome:
            lines.append(f"The world's own judgement: {p.auto_outcome}")
        lines.append(f"partial score: {model.number or '-'}   note: {model.note or '-'}")
        return _box(f"LABEL THE EPISODE  {p.trial_id}", lines, keys)
    if state == m.RELABEL:
        return _box(
            f"RELABEL THE PREVIOUS TRIAL  {p.previous_trial_id}",
            [
                f"new label for {p.previous_trial_id}: y, n or i; the old label stays in the history",
                f"partial score: {model.number or '-'}   note: {model.note or '-'}",
            ],
            keys,
        )
    if state == m.NOTE:
        return _box("NOTE", [f"> {model.note_buffer}_"], keys)
    if state == m.PAUSED:
        return _box("PAUSED", [p.text], keys)
    if state == m.ESTOP:
        return _box(
            "SOFT E-STOP ENGAGED",
            [
                "The robot holds; the interrupted trial is aborted and runs again after "
                "the release. The hardware e-stop stops a robot that does not hold."
            ],
            keys,
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
        )
    if state == m.RUNNING:
        return _box(
            f"EPISODE RUNNING  {model.trial_id}",
            [f"step {model.step}   {model.episode_seconds():5.1f} s   {model.tick_rate:4.1f} Hz"],
            keys,
        )
    text = model.campaign_message or ("waiting for the campaign" if not model.campaign else "between trials")
    return _box("WAITING", [text], keys)


def render(model: m.ConsoleModel) -> str:
    policy = (
        "connected"
        if model.policy_connected
        else f"LOST ({model.policy_message})"
        if model.policy_connected is False
        else "unknown"
    )
    robot = model.robot_state or "simulated world"
    if model.robot_message and model.robot_state:
        robot += f" ({model.robot_message[:60]})"
    head = [
        f"IndGen console   operator {model.operator or '-'} ({model.role})".ljust(WIDTH - 9) + "[?] help",
        f"campaign {model.campaign or '-'}   {model.campaign_state}   trials {model.trials_done}/{model.trials_total}",
        f"policy {model.policy or '-'}   axis {model.axis or '-'}   world {model.world or '-'}",
        f"level k={model.level if model.level is not None else '-'}: {model.parameters or '-'}   trial "
        f"{model.trial_id or '-'}",
        f"policy server: {policy}   robot: {robot}"[:WIDTH],
        f"episode {model.episode_seconds():5.1f} s   step {model.step}   {model.tick_rate:4.1f} Hz",
        "",
    ]
    body = _table(model)
    lines = [*head, *body, "", *prompt_box(model)]
    if model.show_help:
        lines += ["keys here:", *(f"  {k:<8} {what}" for k, what in m.HELP[model.state])]
    lines.append(f"> {model.message}")
    return "\n".join(lines)
