"""A node that exits on purpose exits without a traceback. rclpy's Executor.shutdown() destroys
its guard condition and sets it to None while spin() on another thread may be putting it into a
wait set (ros2/rclpy#968, open): spin() then raises AttributeError on 'handle'. Seen under load
at the end of a graph's campaign (the recorder, after it had closed its bag). run_node's spin
thread takes that race as the end it is; while the node runs, the same error is raised."""

from __future__ import annotations

import threading

import pytest

pytestmark = pytest.mark.ros


def _executor_mid_shutdown(ros_context, name: str):
    """A real executor with a node, in the state Executor.shutdown() leaves it in between
    destroying its guard condition and telling spin() to stop (rclpy/executors.py, Jazzy)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    node = rclpy.create_node(name, context=ros_context)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor._guard.destroy()
    executor._guard = None
    return executor, node


def test_the_shutdown_race_of_rclpy_ends_a_spin_thread_quietly_only_when_the_node_is_exiting(ros_context):
    from indgen_core.ros.base import _spin

    executor, node = _executor_mid_shutdown(ros_context, "spin_race_running")
    try:
        with pytest.raises(AttributeError, match="handle"):  # rclpy's own spin, as in the report
            executor.spin_once(timeout_sec=0.1)
        running = threading.Event()
        with pytest.raises(AttributeError):  # not exiting: a real error, raised
            _spin(executor, running)
        assert running.is_set()  # the node's main loop is told its spin thread ended
    finally:
        node.destroy_node()

    executor, node = _executor_mid_shutdown(ros_context, "spin_race_exiting")
    try:
        exiting = threading.Event()
        exiting.set()
        _spin(executor, exiting)  # returns: the node is on its way out
        assert exiting.is_set()
    finally:
        node.destroy_node()
