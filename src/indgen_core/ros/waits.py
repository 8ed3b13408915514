"""Waiting for what a node's executor completes, from another thread: a future, an action's
result, a server, a service's reply, each with a deadline.

A node's executor spins on its own thread (`base.run_node`), and blocking work (a campaign, an
episode, a console's request) runs on another: that thread waits by polling what the executor
thread completes (`indgen_core.waiting.wait_until`), never by spinning the node itself
(rclpy.spin_until_future_complete would take the node from its executor).
"""

from __future__ import annotations

import time

from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient as RclpyActionClient

from indgen_core.waiting import wait_until


class ActionClient(RclpyActionClient):
    """rclpy's action client, safe to send goals from a thread other than the executor's (the
    progression manager's campaign thread, the FR3 runner's recovery).

    rclpy's send_goal_async (get_result_async and the cancel request alike) files the request's
    future as pending, then registers the done callback that removes it, then adds it to the
    waitable (add_future). A reply that the executor's thread takes in between (seen on a loaded
    machine) completes the future first: the callback then runs at once in the sending thread and
    removes a future add_future has not added, ValueError 'list.remove(x): x not in list', which
    stopped a campaign before its first trial. Here a future that is already done is not added,
    and removing one that is not there is a no-op; the goal, its handle and its result are
    untouched."""

    def add_future(self, future) -> None:
        if not future.done():
            super().add_future(future)

    def remove_future(self, future) -> None:
        if future in self._futures:
            super().remove_future(future)


def wait_future(future, timeout: float, *, stop=None, poll: float = 0.005) -> bool:
    """True once `future` (an rclpy Future: a service call, a goal, its result) is done;
    False when `timeout` seconds pass or `stop` (an Event or a callable) says stop first."""
    return wait_until(future.done, timeout, poll=poll, stop=stop)


#: the goal ended: the server has its result
_FINISHED = (GoalStatus.STATUS_SUCCEEDED, GoalStatus.STATUS_CANCELED, GoalStatus.STATUS_ABORTED)


def wait_result(handle, timeout: float, *, stop=None, ask_again_s: float = 2.0):
    """The result response of an accepted goal (rclpy's ClientGoalHandle), or None when none
    came within `timeout` seconds or `stop` said stop first.

    rclpy asks for a result once. Its request or the response can be lost (seen on a loaded
    machine: the goal's status said SUCCEEDED and no result came in 10 s, or ever), and the
    caller would then wait out its whole timeout and take a finished trial for a lost one. Once
    the status topic says the goal finished and no result has come for `ask_again_s`, the
    result is asked for again: the server answers a request for a finished goal at once from
    the result it keeps (rclpy's ActionServer, result_timeout)."""
    futures = [handle.get_result_async()]
    asked_at: float | None = None  # when the latest request went out after the goal finished

    def answered() -> bool:
        nonlocal asked_at
        if any(f.done() for f in futures):
            return True
        if handle.status in _FINISHED:
            now = time.monotonic()
            if asked_at is None:
                asked_at = now
            elif now - asked_at >= ask_again_s:
                futures.append(handle.get_result_async())
                asked_at = now
        return False

    if not wait_until(answered, timeout, poll=0.005, stop=stop):
        return None
    return next(f.result() for f in futures if f.done())


def wait_server(client, timeout: float, *, stop=None, poll: float = 0.05) -> bool:
    """True once the server of `client` (a service client or an action client) is there;
    False when `timeout` seconds pass or `stop` says stop first."""
    ready = client.server_is_ready if hasattr(client, "server_is_ready") else client.service_is_ready
    return wait_until(ready, timeout, poll=poll, stop=stop)


def call(client, request, timeout: float, *, stop=None, attempt_s: float = 2.0):
    """The response of a service call, or None when none came within `timeout` seconds (or
    `stop` said stop between attempts). It waits for the server, and asks again when an answer
    does not come within `attempt_s`: right after discovery DDS can lose a request or its
    reply even though the client sees the server as ready."""
    deadline = time.monotonic() + timeout
    replies = []

    def answered() -> bool:
        if client.service_is_ready():
            future = client.call_async(request)
            if wait_future(future, min(attempt_s, max(deadline - time.monotonic(), 0.1))):
                replies.append(future.result())
        return bool(replies)

    wait_until(answered, timeout, poll=0.05, stop=stop)
    return replies[0] if replies else None
