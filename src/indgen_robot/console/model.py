"""What the operator console shows and what every key does, without a terminal and without
ROS: the console's screen is drawn from a ConsoleModel, and every key goes through
`ConsoleModel.press`, which returns the requests to send (answers to the open prompt, the
e-stop, ending the episode, a relabel, a pause) or a one-line refusal that changes nothing.
A table-driven test presses every key in every state.

States, from what the campaign publishes (the open prompt, the robot's and campaign's status):
  WAITING  no prompt, no episode: the campaign is between trials, retrying, or done
  SETUP    the person builds the scene:  Enter ready, s skip, q stop the campaign
  RUNNING  an episode runs:              space end it now, x or Esc soft e-stop
  LABEL    the episode ended:            y success, n failure, i invalid, 0-100 then y/n/Enter
                                         partial score, t note, r r redo (confirmed), u relabel the previous
                                         trial, p pause after this trial
  RELABEL  after u:                      y / n / i (a score and a note as above), Esc cancel
  NOTE     after t:                      type, Enter keeps the note, Esc drops it
  PAUSED   the campaign waits:           Enter resume, q stop
  ESTOP    the soft e-stop is engaged:   e release it
  STOPPED  the robot stopped and waits:  a acknowledge (the arm is clear: re-enable torque control)
`?` shows the keys in every state; `p` also works in SETUP and RUNNING.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

from indgen_core.campaign import operator as op


class ConsoleState(str, enum.Enum):
    """What the console is doing, which decides what each key does (HELP)."""

    WAITING = "waiting"  # no prompt: a trial runs without the person, or none is due
    SETUP = "setup"  # the person builds the scene, then starts the trial
    RUNNING = "running"  # an episode runs; the person may end it or e-stop
    LABEL = "label"  # the person judges the episode just run
    RELABEL = "relabel"  # the person corrects an earlier label
    NOTE = "note"  # the person types a note for the trial
    PAUSED = "paused"  # the campaign waits after the current trial
    ESTOP = "estop"  # the soft e-stop is engaged
    STOPPED = "stopped"  # the campaign was stopped from here

    def __str__(self) -> str:  # its word, in text and in handler names (`_label`)
        return self.value


WAITING, SETUP, RUNNING, LABEL, RELABEL, NOTE, PAUSED, ESTOP, STOPPED = tuple(ConsoleState)


HELP = {
    WAITING: [("p", "pause after the current trial"), ("?", "help")],
    SETUP: [
        ("Enter", "scene ready: start the trial"),
        ("s", "skip this trial (recorded, not scored)"),
        ("q", "stop the campaign safely (resumable)"),
        ("p", "pause after this trial"),
        ("?", "help"),
    ],
    RUNNING: [
        ("space", "end the episode now (then label it)"),
        ("x / Esc", "soft e-stop: the robot holds, the trial is aborted and run again"),
        ("p", "pause after this trial"),
        ("?", "help"),
    ],
    LABEL: [
        ("y", "success"),
        ("n", "failure"),
        ("i", "invalid setup (never a policy failure)"),
        ("0-100", "then y, n or Enter: partial score"),
        ("t", "type a note for this label"),
        ("r r", "redo the trial (this attempt kept as superseded; r twice)"),
        ("u", "relabel the previous trial"),
        ("p", "pause after this trial"),
        ("?", "help"),
    ],
    RELABEL: [
        ("y / n / i", "the previous trial's new label"),
        ("0-100", "partial score"),
        ("t", "note"),
        ("Esc", "cancel"),
    ],
    NOTE: [("text", "the note"), ("Enter", "keep it"), ("Esc", "drop it")],
    PAUSED: [("Enter", "resume the campaign"), ("q", "stop the campaign safely (resumable)"), ("?", "help")],
    ESTOP: [("e", "release the soft e-stop (the trial runs again)"), ("?", "help")],
    STOPPED: [
        ("a", "acknowledge: nobody touches the arm, nothing is caught; the robot re-enables torque control"),
        ("p", "pause after the current trial"),
        ("?", "help"),
    ],
}


@dataclass(frozen=True)
class Answer:
    """An answer to the open prompt."""

    prompt_id: str
    response: int
    partial_score: float = -1.0
    note: str = ""


@dataclass(frozen=True)
class Relabel:
    trial_id: str
    label: int
    partial_score: float = -1.0
    note: str = ""


@dataclass(frozen=True)
class EStop:
    engaged: bool


@dataclass(frozen=True)
class EndEpisode:
    pass


@dataclass(frozen=True)
class AcknowledgeStop:
    """The person checked the arm after a stop: the robot may re-enable torque control."""


@dataclass(frozen=True)
class Pause:
    pass


@dataclass
class Prompt:
    kind: int
    prompt_id: str
    trial_id: str = ""
    level: int = 0
    text: str = ""
    detail: str = ""
    reference_image: str = ""
    previous_trial_id: str = ""
    auto_outcome: str = ""


@dataclass
class ConsoleModel:
    operator: str = ""
    role: str = "operate"
    campaign: str = ""
    policy: str = ""
    axis: str = ""
    world: str = ""
    level: int | None = None
    parameters: str = ""
    trial_id: str = ""
    trials_done: int = 0
    trials_total: int = 0
    campaign_state: str = ""
    campaign_message: str = ""
    #: the campaign's progression manager has left the graph (the launch ended or it crashed)
    campaign_gone: bool = False
    policy_connected: bool | None = None
    policy_message: str = ""
    robot_state: str = ""
    robot_message: str = ""
    estop: bool = False
    #: the robot stopped and waits for the person before it re-enables torque control
    awaiting_acknowledgement: bool = False
    tick_rate: float = 0.0
    step: int = 0
    episode_started: float | None = None
    episode_last_tick: float | None = None  # the timer stops here when the episode is over
    levels: dict[tuple[str, int], dict] = field(default_factory=dict)
    prompt: Prompt | None = None
    episode_running: bool = False
    # the person's typing
    number: str = ""
    note: str = ""
    note_buffer: str = ""
    mode: ConsoleState | None = None  # RELABEL or NOTE while the person types one
    note_for: ConsoleState | None = None  # the mode a note returns to
    message: str = ""
    show_help: bool = False
    #: the prompt whose redo waits for a second r (a redo throws the attempt away: confirmed)
    redo_pending: str = ""

    # -- state ---------------------------------------------------------------------------------------
    @property
    def state(self) -> ConsoleState:
        if self.mode is NOTE:
            return NOTE
        if self.mode is RELABEL:
            return RELABEL
        if self.estop:
            return ESTOP
        if self.prompt is not None and self.prompt.prompt_id:
            return {op.SETUP: SETUP, op.LABEL: LABEL, op.PAUSED: PAUSED}.get(self.prompt.kind, WAITING)
        if self.episode_running:
            return RUNNING
        if self.awaiting_acknowledgement:
            return STOPPED
        return WAITING

    @property
    def open_prompt(self) -> Prompt:
        """The prompt the keys of this state answer (setup, label, relabel and paused have one)."""
        if self.prompt is None:
            raise RuntimeError(f"no open prompt while {_doing(self.state)}")
        return self.prompt

    def episode_seconds(self) -> float:
        if not self.episode_started:
            return 0.0
        end = time.monotonic() if self.episode_running or not self.episode_last_tick else self.episode_last_tick
        return max(end - self.episode_started, 0.0)

    # -- keys ----------------------------------------------------------------------------------------
    def press(self, key: str) -> list:
        """The requests `key` makes in the current state; [] with `message` set to a one-line
        refusal when it does nothing here (and then nothing changed)."""
        state = self.state
        if key == "?":
            self.show_help = not self.show_help
            self.message = ""
            return []
        if self.role != "operate" and key not in ("?",):
            return self._refuse(key, "this console only watches (started with --watch)")
        handler = getattr(self, f"_{state}", None)
        requests = handler(key) if handler else None
        if requests is None:
            keys = ", ".join(k for k, _ in HELP[state] if k != "?")
            return self._refuse(key, f"{_shown(key)} does nothing while {_doing(state)}; here: {keys}")
        return requests

    def _refuse(self, key: str, why: str) -> list:
        self.message = why
        return []

    def _score(self) -> float:
        return float(self.number) if self.number else -1.0

    def _digit(self, key: str) -> list | None:
        candidate = self.number + key
        if int(candidate) > 100:
            self.message = f"a partial score is 0-100; {candidate} is not (Backspace to correct)"
            return []
        self.number, self.message = candidate, f"partial score {candidate}: y success, n failure, Enter keeps it"
        return []

    def _edit_number(self, key: str) -> list | None:
        if key.isdigit() and len(key) == 1:
            return self._digit(key)
        if key == "backspace" and self.number:
            self.number = self.number[:-1]
            self.message = f"partial score {self.number or '(none)'}"
            return []
        return None

    def _waiting(self, key: str) -> list | None:
        if key == "p":
            if self.campaign_gone:
                return self._refuse(key, "the campaign's progression manager has left the graph: nothing to pause")
            if self.campaign_state in ("done", "stopped", "failed"):
                return self._refuse(key, f"the campaign is {self.campaign_state}: nothing to pause")
            self.message = "asking the campaign to pause after the current trial"
            return [Pause()]
        return None

    def _setup(self, key: str) -> list | None:
        prompt = self.open_prompt
        if key == "enter":
            self.message = "scene ready"
            return [Answer(prompt.prompt_id, op.DONE)]
        if key == "s":
            self.message = f"skipping {prompt.trial_id}"
            return [Answer(prompt.prompt_id, op.SKIP)]
        if key == "q":
            self.message = "stopping the campaign (resume it later with its campaign id)"
            return [Answer(prompt.prompt_id, op.ABORT)]
        return self._waiting(key)

    def _running(self, key: str) -> list | None:
        if key == "space":
            self.message = "ending the episode"
            return [EndEpisode()]
        if key in ("x", "escape"):
            self.message = "SOFT E-STOP: the robot holds; e releases it"
            return [EStop(True)]
        return self._waiting(key)

    def _label_answer(self, response: int) -> list:
        prompt, score, note = self.open_prompt, self._score(), self.note
        if score >= 0 and response == op.INVALID:
            return self._refuse("i", "an invalid setup takes no partial score (Backspace the number first)")
        self.number, self.note = "", ""
        self.message = f"{op.RESPONSE_NAMES[response]}" + (f" ({score:g})" if score >= 0 else "")
        return [Answer(prompt.prompt_id, response, score, note)]

    def _label(self, key: str) -> list | None:
        if self.redo_pending:
            pending, self.redo_pending = self.redo_pending, ""
            if key != "r" or pending != self.open_prompt.prompt_id:
                self.message = "redo cancelled; nothing sent"
                return []
            self.message = f"redo: {self.open_prompt.trial_id} runs again (this attempt is kept as superseded)"
            return [Answer(self.open_prompt.prompt_id, op.REDO, -1.0, self.note)]
        typed = self._edit_number(key)
        if typed is not None:
            return typed
        if key in ("y", "n", "i"):
            return self._label_answer({"y": op.SUCCESS, "n": op.FAILURE, "i": op.INVALID}[key])
        if key == "enter":
            if not self.number:
                return self._refuse(key, "Enter takes a partial score typed first (0-100); or y, n, i")
            return self._label_answer(op.SUCCESS if self.number == "100" else op.FAILURE)
        if key == "t":
            self.mode, self.note_for, self.note_buffer = NOTE, None, self.note
            self.message = "type the note; Enter keeps it, Esc drops it"
            return []
        if key == "r":
            self.redo_pending = self.open_prompt.prompt_id
            trial = self.open_prompt.trial_id
            self.message = f"press r again to redo {trial} (this episode is not scored); any other key cancels"
            return []
        if key == "u":
            if not self.open_prompt.previous_trial_id:
                return self._refuse(key, "there is no previous labelled trial to relabel")
            self.mode, self.number, self.message = (
                RELABEL,
                "",
                (f"relabel {self.open_prompt.previous_trial_id}: y, n or i (Esc cancels)"),
            )
            return []
        return self._waiting(key)

    def _relabel(self, key: str) -> list | None:
        typed = self._edit_number(key)
        if typed is not None:
            return typed
        if key == "escape":
            self.mode, self.number, self.message = None, "", "relabel cancelled"
            return []
        if key == "t":
            self.mode, self.note_for, self.note_buffer = NOTE, RELABEL, self.note
            return []
        if key in ("y", "n", "i"):
            label = {"y": op.SUCCESS, "n": op.FAILURE, "i": op.INVALID}[key]
            if self._score() >= 0 and label == op.INVALID:
                return self._refuse(key, "an invalid setup takes no partial score")
            request = Relabel(self.open_prompt.previous_trial_id, label, self._score(), self.note)
            self.mode, self.number, self.note = None, "", ""
            self.message = f"relabelled {request.trial_id} as {op.RESPONSE_NAMES[label]}"
            return [request]
        return None

    def _note(self, key: str) -> list | None:
        if key == "enter":
            self.note, self.mode = self.note_buffer.strip()[:500], self.note_for
            self.message = f"note kept: {self.note}" if self.note else "no note"
            return []
        if key == "escape":
            self.mode, self.message = self.note_for, "note dropped"
            return []
        if key == "backspace":
            self.note_buffer = self.note_buffer[:-1]
            return []
        if key == "space":
            self.note_buffer += " "
            return []
        if len(key) == 1 and key.isprintable():
            self.note_buffer += key
            return []
        return None

    def _paused(self, key: str) -> list | None:
        if key == "enter":
            self.message = "resuming"
            return [Answer(self.open_prompt.prompt_id, op.RESUME)]
        if key == "q":
            self.message = "stopping the campaign (resume it later with its campaign id)"
            return [Answer(self.open_prompt.prompt_id, op.ABORT)]
        return None

    def _stopped(self, key: str) -> list | None:
        if key == "a":
            self.message = "acknowledged: the robot re-enables torque control before the next reset"
            return [AcknowledgeStop()]
        return self._waiting(key)

    def _estop(self, key: str) -> list | None:
        if key == "e":
            self.message = "e-stop released; the aborted trial runs again"
            return [EStop(False)]
        return None


def _shown(key: str) -> str:
    return {"enter": "Enter", "space": "space", "escape": "Esc", "backspace": "Backspace"}.get(key, f"'{key}'")


def _doing(state: ConsoleState) -> str:
    return {
        WAITING: "the campaign is between trials",
        SETUP: "the scene is being built",
        RUNNING: "an episode runs",
        LABEL: "the episode waits for its label",
        RELABEL: "relabelling",
        NOTE: "typing a note",
        PAUSED: "the campaign is paused",
        ESTOP: "the e-stop is engaged",
        STOPPED: "the robot waits for you to acknowledge its stop",
    }[state]
