"""The action client the campaign thread sends goals with (ros/waits.ActionClient): a goal whose
reply the executor's thread takes before rclpy has filed its future must not raise in the
sender (it stopped a campaign before its first trial: 'list.remove(x): x not in list')."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.ros


def _send_with_an_early_reply(client) -> object:
    """rclpy's send_goal_async (rclpy/action/client.py, Jazzy) after the request went out: it files
    the future as pending, registers the callback that removes it, then adds it to the waitable.
    Here the reply has already completed the future when the callback is registered, as when the
    executor's thread answers between the first two steps."""
    from rclpy.task import Future

    future = Future()
    client._pending_goal_requests[7] = future
    client._goal_sequence_number_to_goal_id[7] = None
    future.set_result("goal handle")  # the executor's thread, with the reply
    future.add_done_callback(client._remove_pending_goal_request)  # runs now, in the sending thread
    client.add_future(future)
    return future


def test_a_goal_answered_before_its_future_is_filed_does_not_stop_the_sender(ros_context):
    import rclpy
    from rclpy.action import ActionClient as RclpyActionClient

    from indgen_core.ros.waits import ActionClient
    from indgen_msgs.action import RunEpisode

    node = rclpy.create_node("action_client_race", context=ros_context)
    try:
        with pytest.raises(ValueError, match="not in list"):  # rclpy's own client, the same order
            _send_with_an_early_reply(RclpyActionClient(node, RunEpisode, "/race/plain"))
        client = ActionClient(node, RunEpisode, "/race/safe")
        future = _send_with_an_early_reply(client)
        assert future.result() == "goal handle"  # the sender gets its goal handle
        assert 7 not in client._pending_goal_requests and future not in client._futures  # nothing left over
        pending = type(future)()
        client.add_future(pending)  # an ordinary request is filed and removed as rclpy does
        assert pending in client._futures
        client.remove_future(pending)
        assert pending not in client._futures
    finally:
        node.destroy_node()


def test_an_episode_result_is_delivered_without_waiting_for_another_event(ros_context):
    """threaded_execute (ros/base.py) wakes its executor once the episode's result is set. The
    episode thread calls goal_handle.succeed() first, which wakes the server's executor while
    the result is not set yet; the executor then waits for its next event with the result
    unsent. Here nothing else happens on the server (spin() with no timeout, no timer): the one
    result request is answered within the episode's own 0.3 s after succeed(), not after an
    unrelated event or the client's re-ask (waits.wait_result re-asks after 2 s)."""
    import threading
    import time

    import rclpy
    from rclpy.action import ActionServer
    from rclpy.executors import SingleThreadedExecutor

    from indgen_core.ros.base import threaded_execute
    from indgen_core.ros.waits import ActionClient
    from indgen_core.waiting import wait_until
    from indgen_msgs.action import RunEpisode

    server = rclpy.create_node("episode_server", context=ros_context)

    def episode(goal_handle):
        goal_handle.succeed()  # as the runner's _execute does, before it returns the result
        time.sleep(0.3)
        return RunEpisode.Result()

    ActionServer(server, RunEpisode, "/wake/run_episode", execute_callback=threaded_execute(server, episode))
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(server)
    threading.Thread(target=executor.spin, daemon=True).start()
    client_node = rclpy.create_node("episode_client", context=ros_context)
    client_executor = SingleThreadedExecutor(context=ros_context)
    client_executor.add_node(client_node)
    stop = threading.Event()
    threading.Thread(target=lambda: [client_executor.spin_once(0.02) for _ in iter(stop.is_set, True)],
                     daemon=True).start()
    try:
        client = ActionClient(client_node, RunEpisode, "/wake/run_episode")
        assert wait_until(client.server_is_ready, 10)
        sent = client.send_goal_async(RunEpisode.Goal())
        assert wait_until(sent.done, 10) and sent.result().accepted
        started = time.monotonic()
        result = sent.result().get_result_async()  # asked once, never again
        delivered = wait_until(result.done, 1.5)
        print(f"result {time.monotonic() - started:.2f} s after the goal was accepted (0.3 s of episode)")
        assert delivered, "the result waited for another event: the executor was not woken"
    finally:
        stop.set()
        executor.shutdown()
        client_executor.shutdown()
        server.destroy_node()
        client_node.destroy_node()
