"""Waiting for something with a deadline, written once.

Many places wait for something another thread or process makes true: a result committed to
the store, children gone after a signal, a reply on the wire, a future an executor completes.
Copies of a `deadline = time.monotonic() + timeout` loop differ where it matters (a wall
clock instead of a monotonic one, a sleep that overshoots the deadline, a stop request seen
only after the next sleep, a final check forgotten).
`wait_until` is the one deadline loop for the whole project: the ROS layer's waits for
futures and servers (`indgen_core.ros.waits`) and the tests' waits are built on it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar, runtime_checkable

T = TypeVar("T")


@runtime_checkable
class _Flag(Protocol):
    """A threading.Event, or anything else that says is_set() and can be waited on."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


def wait_until(
    condition: Callable[[], object],
    timeout: float,
    *,
    poll: float = 0.02,
    stop: Callable[[], object] | _Flag | None = None,
) -> bool:
    """True as soon as `condition()` is truthy; False once `timeout` seconds have passed
    (monotonic clock) or `stop` says stop, whichever comes first.

    `condition` is asked at once, then every `poll` seconds, and a last time at the deadline
    (a sleep never overshoots it); a satisfied condition wins over a stop. `stop` is a callable
    (stop when it returns something truthy) or a threading.Event: an event is also what the
    wait sleeps on, so setting it ends the wait at once rather than after the next poll. A
    condition may do work each round (publish again, send a request and wait for its reply):
    the loop only paces and ends it."""
    deadline = time.monotonic() + timeout
    if stop is None:
        stopped: Callable[[], object] = _never
        sleep: Callable[[float], object] = time.sleep
    elif isinstance(stop, _Flag):
        stopped, sleep = stop.is_set, stop.wait
    else:
        stopped, sleep = stop, time.sleep
    while True:
        if condition():
            return True
        if stopped():
            return False
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        sleep(min(poll, left))


def _never() -> bool:
    return False


@contextlib.contextmanager
def heartbeat(beat, period: float):
    """`beat()` every `period` seconds on a thread of its own while the block runs."""
    done = threading.Event()

    def run() -> None:
        while not done.wait(period):
            beat()

    thread = threading.Thread(target=run, name="heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=2 * period)


class Acknowledgements(Generic[T]):
    """Answers that arrive by key from another thread (a subscriber's callback), and the waits
    for them: the progression manager waits for the scorer's word that a result is committed
    (no look at the store). Bounded: a key nobody waits for is forgotten after `keep` others."""

    def __init__(self, keep: int = 256) -> None:
        self._answers: dict[str, T] = {}
        self._arrived = threading.Condition()
        self._keep = keep

    def put(self, key: str, answer: T) -> None:
        with self._arrived:
            self._answers[key] = answer
            while len(self._answers) > self._keep:
                self._answers.pop(next(iter(self._answers)))
            self._arrived.notify_all()

    def wait(self, key: str, timeout: float) -> T | None:
        """The answer for `key` (taken), or None after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while key not in self._answers:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._arrived.wait(left)
            return self._answers.pop(key)
