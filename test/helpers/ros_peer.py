"""A second process for the cross-process interface tests.

    python -m helpers.ros_peer publish   publish one fully populated sample of every indgen_msgs message
    python -m helpers.ros_peer serve     serve /itest/operator_ack and the /itest/run_episode action

It runs until its stdin closes, so the test that started it controls its lifetime.
"""

from __future__ import annotations

import sys
import threading
import time

import rclpy
from rclpy.action import ActionServer
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from helpers import msg_samples

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def publish(node) -> None:
    pubs = {name: node.create_publisher(cls, f"/itest/{name}", LATCHED)
            for name, cls in msg_samples.interface_classes().items()}
    for name, cls in msg_samples.interface_classes().items():
        pubs[name].publish(msg_samples.fill(cls()))
    print("published", flush=True)


def serve(node) -> None:
    from indgen_msgs.action import RunEpisode
    from indgen_msgs.msg import EpisodeResult
    from indgen_msgs.srv import OperatorAck

    def ack(request, response):
        response.accepted = request.response == OperatorAck.Request.RESPONSE_DONE
        response.message = f"ack {request.prompt_id} {request.trial_id} {request.note}"
        return response

    def execute(goal_handle):
        setup = goal_handle.request.setup
        for step in range(1, 4):
            feedback = RunEpisode.Feedback(phase="running", step=step, max_steps=setup.max_steps,
                                           partial_score=step / 3)
            goal_handle.publish_feedback(feedback)
            time.sleep(0.05)
        goal_handle.succeed()
        return RunEpisode.Result(result=EpisodeResult(
            campaign_id=setup.campaign_id, trial_id=setup.trial_id, axis=setup.axis, level=setup.level,
            seed=setup.seed, outcome=EpisodeResult.OUTCOME_SUCCESS, reason="echo", steps=3, partial_score=1.0))

    node._srv = node.create_service(OperatorAck, "/itest/operator_ack", ack)
    node._action = ActionServer(node, RunEpisode, "/itest/run_episode", execute)
    print("serving", flush=True)


def main() -> None:
    role = sys.argv[1]
    rclpy.init()
    node = rclpy.create_node(f"itest_peer_{role}")
    {"publish": publish, "serve": serve}[role](node)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    sys.stdin.read()  # until the test closes our stdin
    executor.shutdown()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
