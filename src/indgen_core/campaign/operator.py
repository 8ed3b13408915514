"""The person at the robot, from the campaign's side: which consoles may answer, the one
prompt open at a time, and which answers it accepts.

The progression manager keeps one OperatorDesk. A console registers (operate or watch) and
gets a session; a prompt is opened; the first acceptable answer from an operating console
with its session closes it, and every other answer (a stale prompt id, a watching console, an
unregistered node, a response the prompt does not take) is refused in one sentence and
changes nothing. ROS-free: the node maps the messages onto it, and tests drive it directly.
"""

from __future__ import annotations

import hmac
import math
import secrets
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

# the numbers of indgen_msgs/OperatorPrompt.KIND_* and OperatorAck.Request.RESPONSE_*
SETUP, LABEL, INFO, PAUSED = 0, 1, 2, 3
DONE, SUCCESS, FAILURE, INVALID, SKIP, ABORT, REDO, PAUSE, RESUME, RELABEL = range(10)
OPERATE, WATCH = 0, 1
RESPONSE_NAMES = {
    DONE: "done",
    SUCCESS: "success",
    FAILURE: "failure",
    INVALID: "invalid",
    SKIP: "skip",
    ABORT: "abort",
    REDO: "redo",
    PAUSE: "pause",
    RESUME: "resume",
    RELABEL: "relabel",
}
#: what the person is told once an answer is taken, in the words of the console's keys
TAKEN = {
    DONE: "scene ready: the trial starts",
    SUCCESS: "labelled a success",
    FAILURE: "labelled a failure",
    INVALID: "labelled an invalid setup (not scored; never a policy failure)",
    SKIP: "skipped (recorded, not scored)",
    ABORT: "the campaign stops safely (resume it later with its campaign id)",
    REDO: "runs again (this attempt is kept as superseded)",
    RESUME: "the campaign resumes",
}
ACCEPTS = {
    SETUP: (DONE, SKIP, ABORT),
    LABEL: (SUCCESS, FAILURE, INVALID, REDO, ABORT),
    INFO: (),
    PAUSED: (RESUME, ABORT),
}
#: requests that need no open prompt, only a registered operating console
CONTROLS = (PAUSE, RELABEL)
LABELS = (SUCCESS, FAILURE, INVALID)
MAX_CONSOLES = 16


@dataclass(frozen=True)
class Prompt:
    kind: int
    trial_id: str
    level: int
    text: str
    campaign_id: str = ""
    prompt_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    opened_at: float = field(default_factory=time.time)

    @property
    def choices(self) -> list[str]:
        return [RESPONSE_NAMES[r] for r in ACCEPTS[self.kind]]


@dataclass(frozen=True)
class Answer:
    response: int
    note: str = ""
    partial_score: float = -1.0
    operator: str = ""
    console_id: str = ""
    at: float = field(default_factory=time.time)

    @property
    def name(self) -> str:
        return RESPONSE_NAMES.get(self.response, str(self.response))


@dataclass
class Console:
    session: str
    operator: str
    role: int


class OperatorDesk:
    def __init__(self):
        self._lock = threading.Lock()
        self._answered = threading.Condition(self._lock)
        self.consoles: dict[str, Console] = {}
        self.prompt: Prompt | None = None
        self._answer: Answer | None = None

    def register(self, console_id: str, operator: str, role: int) -> tuple[bool, str, str]:
        """(accepted, one sentence, session)."""
        console_id = str(console_id)
        if not console_id or len(console_id) > 128:
            return False, "a console registers with a console_id of 1-128 characters", ""
        if role not in (OPERATE, WATCH):
            return False, f"unknown role {role}", ""
        with self._lock:
            if console_id not in self.consoles and len(self.consoles) >= MAX_CONSOLES:
                return False, f"already {MAX_CONSOLES} consoles registered", ""
            session = secrets.token_hex(16)
            self.consoles[console_id] = Console(session, str(operator)[:128], role)
        return True, "registered", session

    def open(self, prompt: Prompt) -> Prompt:
        with self._lock:
            self.prompt, self._answer = prompt, None
        return prompt

    def close(self) -> None:
        with self._lock:
            self.prompt = None
            self._answered.notify_all()

    def _refusal(self, console_id: str, session: str) -> str | None:
        console = self.consoles.get(str(console_id))
        if console is None or not hmac.compare_digest(console.session.encode(), str(session).encode()):
            return "answers are accepted only from a console registered on /indgen/operator_register; nothing changed"
        if console.role != OPERATE:
            return "this console only watches; nothing changed"
        return None

    def control(self, response: int, console_id: str, session: str) -> tuple[bool, str, str]:
        """A request that needs no open prompt (pause, relabel): (allowed, refusal, operator)."""
        with self._lock:
            refusal = self._refusal(console_id, session)
            if refusal:
                return False, refusal, ""
            if response not in CONTROLS:
                return False, f"response {response} needs an open prompt; nothing changed", ""
            return True, "", self.consoles[str(console_id)].operator

    def answer(
        self, prompt_id: str, response: int, console_id: str, session: str, note: str = "", partial_score: float = -1.0
    ) -> tuple[bool, str, Answer | None]:
        """(accepted, one sentence, the answer when accepted)."""
        with self._lock:
            refusal = self._refusal(console_id, session)
            if refusal:
                return False, refusal, None
            console = self.consoles[str(console_id)]
            prompt = self.prompt
            if prompt is None or prompt_id != prompt.prompt_id:
                return (
                    False,
                    (f"no open prompt '{str(prompt_id)[:40]}' (answered already, or stale); nothing changed"),
                    None,
                )
            if response not in ACCEPTS[prompt.kind]:
                return False, f"this prompt takes {', '.join(prompt.choices)}; nothing changed", None
            score = float(partial_score) if math.isfinite(partial_score) else -1.0
            if score >= 0 and not (response in (SUCCESS, FAILURE) and score <= 100):
                return False, "a partial score is 0-100, given with a success or failure label; nothing changed", None
            answer = Answer(response, str(note)[:2000], score, console.operator, str(console_id))
            self._answer, self.prompt = answer, None
            self._answered.notify_all()
        said = TAKEN.get(response, answer.name)
        if score >= 0:
            said += f" (partial score {score:g})"
        return True, f"{prompt.trial_id}: {said}" if prompt.trial_id else said, answer

    def wait(self, should_stop: Callable[[], bool], poll_s: float = 0.1) -> Answer | None:
        """The answer to the open prompt; None when should_stop() says to give up first."""
        with self._lock:
            while self._answer is None:
                if should_stop() or self.prompt is None:
                    return None
                self._answered.wait(poll_s)
            return self._answer
