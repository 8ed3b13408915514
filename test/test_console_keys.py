"""Every key in every state of the operator console: it does what the help says, or it says in
one line that it does nothing here and changes nothing (table-driven, no terminal, no ROS)."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from indgen_core.campaign import operator as op
from indgen_robot.console import model as m
from indgen_robot.console.screen import render

KEYS = ["enter", "space", "escape", "backspace", "?", "s", "q", "x", "y", "n", "i", "t", "r", "u", "p", "e", "a", "z",
        "5", "0", "!", "tab"]


def make(state: str) -> m.ConsoleModel:
    model = m.ConsoleModel(operator="ada", campaign="c1", policy="pi05_droid", axis="stack", world="fr3", level=1,
                           parameters="blue_block_raise=0.25 in", trial_id="t1")
    if state == m.SETUP:
        model.prompt = m.Prompt(op.SETUP, "p1", "t1", 1, "Raise the blue block by one spacer.", "one level further")
    elif state == m.RUNNING:
        model.episode_running = True
    elif state in (m.LABEL, m.RELABEL, m.NOTE):
        model.prompt = m.Prompt(op.LABEL, "p2", "t1", 1, "Label t1", previous_trial_id="t0")
        if state == m.RELABEL:
            model.mode = m.RELABEL
        if state == m.NOTE:
            model.mode, model.note_for = m.NOTE, None
    elif state == m.PAUSED:
        model.prompt = m.Prompt(op.PAUSED, "p3", "t2", 1, "Paused")
    elif state == m.ESTOP:
        model.estop = True
    elif state == m.STOPPED:  # the robot stopped and waits for the acknowledgement
        model.awaiting_acknowledgement = True
    assert model.state == state
    return model


# what each key does where it does something: (requests, the state after)
DOES = {
    (m.WAITING, "p"): ([m.Pause()], m.WAITING),
    (m.SETUP, "enter"): ([m.Answer("p1", op.DONE)], m.SETUP),
    (m.SETUP, "s"): ([m.Answer("p1", op.SKIP)], m.SETUP),
    (m.SETUP, "q"): ([m.Answer("p1", op.ABORT)], m.SETUP),
    (m.SETUP, "p"): ([m.Pause()], m.SETUP),
    (m.RUNNING, "space"): ([m.EndEpisode()], m.RUNNING),
    (m.RUNNING, "x"): ([m.EStop(True)], m.RUNNING),
    (m.RUNNING, "escape"): ([m.EStop(True)], m.RUNNING),
    (m.RUNNING, "p"): ([m.Pause()], m.RUNNING),
    (m.LABEL, "y"): ([m.Answer("p2", op.SUCCESS)], m.LABEL),
    (m.LABEL, "n"): ([m.Answer("p2", op.FAILURE)], m.LABEL),
    (m.LABEL, "i"): ([m.Answer("p2", op.INVALID)], m.LABEL),
    (m.LABEL, "r"): ([], m.LABEL),  # a redo is confirmed: test_a_redo_takes_a_second_r
    (m.LABEL, "u"): ([], m.RELABEL),
    (m.LABEL, "t"): ([], m.NOTE),
    (m.LABEL, "p"): ([m.Pause()], m.LABEL),
    (m.LABEL, "5"): ([], m.LABEL),
    (m.LABEL, "0"): ([], m.LABEL),
    (m.RELABEL, "y"): ([m.Relabel("t0", op.SUCCESS)], m.LABEL),
    (m.RELABEL, "n"): ([m.Relabel("t0", op.FAILURE)], m.LABEL),
    (m.RELABEL, "i"): ([m.Relabel("t0", op.INVALID)], m.LABEL),
    (m.RELABEL, "escape"): ([], m.LABEL),
    (m.RELABEL, "t"): ([], m.NOTE),
    (m.RELABEL, "5"): ([], m.RELABEL),
    (m.RELABEL, "0"): ([], m.RELABEL),
    (m.PAUSED, "enter"): ([m.Answer("p3", op.RESUME)], m.PAUSED),
    (m.PAUSED, "q"): ([m.Answer("p3", op.ABORT)], m.PAUSED),
    (m.ESTOP, "e"): ([m.EStop(False)], m.ESTOP),
    (m.STOPPED, "a"): ([m.AcknowledgeStop()], m.STOPPED),
    (m.STOPPED, "p"): ([m.Pause()], m.STOPPED),
}
# in a note, every printable key is text
for key in KEYS:
    if len(key) == 1 and key != "?":
        DOES[(m.NOTE, key)] = ([], m.NOTE)
DOES[(m.NOTE, "space")] = ([], m.NOTE)
DOES[(m.NOTE, "backspace")] = ([], m.NOTE)
DOES[(m.NOTE, "enter")] = ([], m.LABEL)
DOES[(m.NOTE, "escape")] = ([], m.LABEL)
STATES = [m.WAITING, m.SETUP, m.RUNNING, m.LABEL, m.RELABEL, m.NOTE, m.PAUSED, m.ESTOP, m.STOPPED]


def snapshot(model: m.ConsoleModel) -> dict:
    return {k: copy.deepcopy(v) for k, v in dataclasses.asdict(model).items() if k != "message"}


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("key", KEYS)
def test_every_key_in_every_state(state, key):
    model = make(state)
    before = snapshot(model)
    requests = model.press(key)
    if key == "?":
        assert requests == [] and model.show_help and "keys here:" in render(model)
        return
    expected = DOES.get((state, key))
    if expected is None:
        assert requests == [], (state, key, requests)
        assert model.message and "\n" not in model.message, model.message  # one line saying why
        assert snapshot(model) == before, f"{key!r} in {state} changed the console"
        return
    want, after = expected
    assert requests == want, (state, key, requests)
    assert model.state == after, (state, key, model.state)


def test_a_partial_score_travels_with_the_label_and_a_note_too():
    model = make(m.LABEL)
    for key in ("4", "0"):
        assert model.press(key) == []
    model.press("t")
    for ch in "slipped":
        model.press(ch)
    model.press("enter")
    assert model.press("n") == [m.Answer("p2", op.FAILURE, 40.0, "slipped")]
    model = make(m.LABEL)
    for key in ("1", "0", "0"):
        model.press(key)
    assert model.press("enter") == [m.Answer("p2", op.SUCCESS, 100.0)]  # 100 + Enter: success
    model = make(m.LABEL)
    assert model.press("enter") == [] and "partial score typed first" in model.message
    model.press("9")
    model.press("9")
    assert model.press("9") == [] and "0-100" in model.message and model.number == "99"
    assert model.press("i") == [] and model.number == "99"  # invalid takes no score
    model.press("backspace")
    model.press("backspace")
    assert model.press("i") == [m.Answer("p2", op.INVALID)]


def test_a_watching_console_refuses_every_key_but_help():
    model = make(m.SETUP)
    model.role = "watch"
    assert model.press("enter") == [] and "only watches" in model.message
    assert model.press("?") == []


def test_no_previous_trial_no_relabel_and_the_screen_shows_the_prompt():
    model = make(m.LABEL)
    model.prompt.previous_trial_id = ""
    assert model.press("u") == [] and "no previous labelled trial" in model.message
    model = make(m.SETUP)
    model.prompt.reference_image = "/data/level_image_k1.png"
    text = render(model)
    for part in ("BUILD THE SCENE", "Raise the blue block by one spacer.", "What changed: one level further",
                 "/data/level_image_k1.png", "[Enter] scene ready", "[s] skip this trial", "blue_block_raise=0.25 in"):
        assert part in text, part


def test_the_terminal_keys_reach_the_model_by_the_names_it_knows():
    """prompt_toolkit reports space as " " and Enter as c-m: the model hears "space" and
    "enter" (space used to reach it as " ", which ended no episode)."""
    from prompt_toolkit.keys import Keys

    from indgen_robot.console.app import key_name

    assert [key_name(k) for k in (" ", Keys.ControlM, Keys.ControlJ, Keys.Escape, Keys.ControlH, "y", "4", "?")] == [
        "space", "enter", "enter", "escape", "backspace", "y", "4", "?"]
    running = make(m.RUNNING)
    assert running.press(key_name(" ")) == [m.EndEpisode()]


def test_a_redo_takes_a_second_r_and_any_other_key_cancels_it():
    """A redo throws the episode's attempt away: the first r asks, the second sends it; any other
    key in between cancels and sends nothing (a 'y' meant as a label is not taken either)."""
    model = make(m.LABEL)
    assert model.press("r") == [] and "press r again" in model.message and "t1" in model.message
    assert model.press("r") == [m.Answer("p2", op.REDO)]
    model = make(m.LABEL)
    model.press("r")
    assert model.press("y") == [] and model.message == "redo cancelled; nothing sent"
    assert model.press("y") == [m.Answer("p2", op.SUCCESS)]  # the console is as it was
    model = make(m.LABEL)
    model.press("r")
    model.prompt = m.Prompt(op.LABEL, "p9", "t2", 1, "Label t2")  # the prompt changed meanwhile
    assert model.press("r") == [] and model.message == "redo cancelled; nothing sent"


@pytest.mark.parametrize("columns", [40, 96, 200, 400])
def test_every_line_fits_the_terminal_and_nothing_is_cut(columns):
    """Found by hand: lines were cut at 96 columns in a 200-column terminal, an abort reason
    mid-sentence. Every line wraps to the terminal's width (60 to 160 columns) and every word
    of a long reason is on the screen."""
    from indgen_robot.console.screen import fit

    reason = ("episode aborted: the arm state is 0.41 s old (the broadcaster's stamps stopped while its topic "
              "kept arriving); the trial is not scored and runs again once the state is fresh")
    model = make(m.LABEL)
    model.robot_state, model.robot_message = "holding", reason
    model.policy_connected, model.policy_message = False, "policy B's server closed the connection (code 1011)"
    model.message = "press r again to redo t1 (this episode is not scored); any other key cancels"
    width = fit(columns)
    text = render(model, width)
    assert max(len(line) for line in text.splitlines()) <= width
    flat = " ".join(text.split())
    assert " ".join(reason.split()) in flat and "(code 1011)" in flat and "any other key cancels" in flat


@pytest.mark.parametrize("state", ["done", "stopped", "failed"])
def test_a_campaign_that_is_over_has_nothing_to_pause(state):
    model = make(m.WAITING)
    model.campaign_state = state
    assert model.press("p") == [] and model.message == f"the campaign is {state}: nothing to pause"
