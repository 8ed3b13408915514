"""wait_until, the project's one deadline loop (indgen_core/waiting.py), with real threads."""

from __future__ import annotations

import threading
import time

import pytest

from indgen_core.waiting import wait_until

# bound to the wall clock (how soon a wait returns): with the realtime cases, at full priority,
# since the parallel group runs at the lowest and a starved thread wakes seconds late there
pytestmark = pytest.mark.realtime


def test_true_as_soon_as_another_thread_makes_the_condition_true():
    flag = threading.Event()
    threading.Timer(0.2, flag.set).start()
    started = time.monotonic()
    assert wait_until(flag.is_set, 10.0, poll=0.01)
    took = time.monotonic() - started
    assert 0.15 < took < 5.0


def test_a_condition_already_true_returns_at_once_without_sleeping():
    calls = []
    started = time.monotonic()
    assert wait_until(lambda: calls.append(1) or True, 10.0, poll=5.0)
    assert calls == [1] and time.monotonic() - started < 0.5


def test_false_at_the_deadline_and_not_much_later():
    calls = []
    started = time.monotonic()
    assert not wait_until(lambda: calls.append(1), 0.3, poll=0.05)
    took = time.monotonic() - started
    assert 0.3 <= took < 2.0
    assert len(calls) >= 3  # asked at once, every poll, and a last time at the deadline


def test_a_sleep_never_overshoots_the_deadline():
    started = time.monotonic()
    assert not wait_until(lambda: False, 0.2, poll=30.0)
    assert time.monotonic() - started < 2.0


def test_a_zero_timeout_asks_once():
    calls = []
    assert not wait_until(lambda: calls.append(1), 0.0)
    assert calls == [1]
    assert wait_until(lambda: True, 0.0)


def test_a_stop_event_ends_the_wait_at_once_even_with_a_long_poll():
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    assert not wait_until(lambda: False, 30.0, poll=20.0, stop=stop)
    took = time.monotonic() - started
    assert 0.15 < took < 5.0


def test_a_stop_callable_is_asked_every_round():
    rounds = []

    def stop() -> bool:
        rounds.append(1)
        return len(rounds) >= 3

    started = time.monotonic()
    assert not wait_until(lambda: False, 30.0, poll=0.01, stop=stop)
    assert len(rounds) == 3 and time.monotonic() - started < 5.0


def test_a_satisfied_condition_wins_over_a_stop():
    stop = threading.Event()
    stop.set()
    assert wait_until(lambda: True, 1.0, stop=stop)
    assert not wait_until(lambda: False, 1.0, stop=stop)


def test_a_condition_that_does_work_each_round():
    """The shape the ROS layer uses: publish again, send a request and wait for the reply."""
    sent = []
    answered = threading.Event()

    def attempt() -> bool:
        sent.append(time.monotonic())
        if len(sent) == 3:
            threading.Timer(0.05, answered.set).start()
        return answered.wait(0.1)

    assert wait_until(attempt, 10.0, poll=0)
    assert 3 <= len(sent) <= 5


def test_acknowledgements_wake_a_waiter_with_its_own_answer_only():
    from indgen_core.waiting import Acknowledgements

    answers = Acknowledgements(keep=3)
    got = []
    waiter = threading.Thread(target=lambda: got.append(answers.wait("mine", 5.0)))
    waiter.start()
    answers.put("another", "theirs")  # someone else's answer does not end the wait
    time.sleep(0.05)
    assert waiter.is_alive()
    answers.put("mine", "committed")
    waiter.join(5)
    assert got == ["committed"]
    assert answers.wait("mine", 0.0) is None  # taken
    for k in range(5):  # bounded: the oldest unclaimed answers are forgotten
        answers.put(f"k{k}", k)
    assert answers.wait("another", 0.0) is None and answers.wait("k4", 0.0) == 4
    t0 = time.monotonic()
    assert answers.wait("never", 0.2) is None and 0.2 <= time.monotonic() - t0 < 1.0
