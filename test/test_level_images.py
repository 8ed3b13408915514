"""A level's image in the report rides on whichever attempt of the level's first trial the
progression manager takes: the sim bridge (a real process, the twin world) attaches it to every
attempt until a result carrying it appears on /indgen/episode_result, where the manager hands
the scorer the results it took. CI saw level 1 of a LIBERO campaign left without its image: an
attempt that carried it succeeded after the manager had given up on it (the world silent under
load), and the bridge had counted the image as delivered."""

from __future__ import annotations

import os
import subprocess

import pytest

from helpers import procs, twin_setup
from helpers.procs import LoggedProcess
from helpers.ros_helpers import spinning
from indgen_core import graph, topics
from indgen_core.nodes import messages
from indgen_core.waiting import wait_until

pytestmark = [pytest.mark.ros]
rclpy = pytest.importorskip("rclpy")


def _bridge(tmp_path) -> subprocess.Popen:
    argv = [graph.executable_path("sim_bridge"), "--ros-args", "-p", "world:=droid_twin",
            "-p", 'world_options:="{builtin: true, cameras: false}"', "-p", "level_images:=true",
            "-p", "action_timeout_s:=0.5"]
    env = dict(os.environ, INDGEN_ARTIFACTS=str(tmp_path / "artifacts"))
    env.pop("MENAGERIE_ROOT", None)
    return LoggedProcess(argv, env=env)


class Manager:
    """This test as the progression manager: a task setup, then the RunEpisode goal (no policy
    node runs, so each episode ends aborted right after its reset); a taken result goes out on
    /indgen/episode_result as the manager hands it to the scorer."""

    def __init__(self, node):
        from rclpy.action import ActionClient

        from indgen_core.ros.base import LATCHED, RELIABLE
        from indgen_msgs.action import RunEpisode
        from indgen_msgs.msg import EpisodeResult, TaskSetup

        self.node, self.RunEpisode = node, RunEpisode
        self.setup_pub = node.create_publisher(TaskSetup, topics.TASK_SETUP, LATCHED)
        self.result_pub = node.create_publisher(EpisodeResult, topics.EPISODE_RESULT, RELIABLE)
        self.episodes = ActionClient(node, RunEpisode, topics.RUN_EPISODE)

    def attempt(self, level: int, seed: int):
        """One attempt's result (as the bridge sent it) and its message."""
        from indgen_core.ros import convert
        from indgen_core.ros.waits import wait_result

        setup = twin_setup.setup("stack", level, seed)
        msg = convert.setup_to_msg(setup, self.node.get_clock().now().to_msg())
        self.setup_pub.publish(msg)
        assert wait_until(self.episodes.server_is_ready, 60), "no RunEpisode server from the sim bridge"
        send = self.episodes.send_goal_async(self.RunEpisode.Goal(setup=msg))
        assert wait_until(send.done, 10) and send.result().accepted
        response = wait_result(send.result(), 60)
        assert response is not None, "the episode did not end"
        return messages.result_from_msg(response.result.result), response.result.result

    def take(self, result_msg) -> None:
        assert wait_until(lambda: self.result_pub.get_subscription_count() >= 1, 10)
        self.result_pub.publish(result_msg)


def _images(result) -> list[str]:
    return [a for a in result.artifacts if os.path.basename(a).startswith("level_image")]


def test_a_levels_image_rides_on_each_attempt_until_a_taken_result_carries_it(tmp_path, ros_context):
    bridge = _bridge(tmp_path)
    node = rclpy.create_node("level_images_test", context=ros_context)
    manager = Manager(node)
    try:
        with spinning(node):
            dropped, _ = manager.attempt(level=0, seed=0)  # the manager had given up on it: never taken
            [image] = _images(dropped)
            assert dropped.outcome.name == "ABORTED" and image.endswith("level_image_k0.png")
            again, again_msg = manager.attempt(level=0, seed=0)  # the next attempt at the same trial
            assert _images(again) == [image] and os.path.getsize(image) > 1000
            manager.take(again_msg)
            # the bridge hears the taken result a moment later (another topic than its goals):
            # the level's next trials go without the image from then on
            later = []

            def next_trial_goes_without() -> bool:
                later.append(manager.attempt(level=0, seed=1 + len(later))[0])
                return not _images(later[-1])

            assert wait_until(next_trial_goes_without, 30, poll=0), [_images(r) for r in later]
            [other] = _images(manager.attempt(level=1, seed=0)[0])
            assert other.endswith("level_image_k1.png")
    finally:
        node.destroy_node()
        log = procs.stop(bridge)
    assert log.count("aborted after") == 3 + len(later), log[-3000:]
