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
