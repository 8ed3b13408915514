"""The world-node contract, written once for the sim bridge and the FR3 runner: what the
progression manager, the console and an e-stop pedal expect of whichever node runs episodes.

- `/indgen/run_episode` (RunEpisode): one episode per goal, cancel accepted;
- `/indgen/prepare_trial` (PrepareTrial): ready for the next trial, or why not;
- the soft e-stop, as a service (SetBool) and as a topic (Bool) from any publisher's QoS (a
  pedal, a script or a button node may publish volatile or best effort: indgen_core/nodes/estop.py);
- `/indgen/end_episode` (Trigger): the person ends the running episode now.

Their declarations are `node_interfaces.world_node_endpoints`. A world node mixes this class
into its rclpy Node and supplies what differs: what an engaged e-stop does (`_set_estop`),
what preparing a trial means (`_prepare`) and the episode itself (`_execute`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.node import Node
from std_msgs.msg import Bool
from std_srvs.srv import SetBool, Trigger

from indgen_core import topics
from indgen_core.nodes.estop import EstopTopic
from indgen_core.nodes.world_watch import WorldWatch
from indgen_core.ros.base import serve, subscribe_any
from indgen_msgs.action import RunEpisode
from indgen_msgs.srv import PrepareTrial


class WorldNodeContract:
    #: what an engaged e-stop does to the episode, as the service's answer says it
    ESTOP_EFFECT = "the episode stops"
    #: why the person ended the running episode ("" while they have not); the episode clears it
    end_requested = ""
    estop = False
    watch: WorldWatch
    server: ActionServer

    def serve_world_contract(
        self, io_node: Node, prepare_node: Node, execute: Callable[[Any], Any], **action_options
    ) -> None:
        """Create the contract's endpoints: the e-stop and the end of an episode on `io_node`,
        PrepareTrial on `prepare_node`, the RunEpisode server on this node, running `execute`."""
        assert isinstance(self, Node), "a world node is an rclpy Node"
        self._estop_topic = EstopTopic()
        subscribe_any(io_node, Bool, topics.ESTOP, self._on_estop_msg)
        serve(io_node, SetBool, topics.ESTOP, self._estop_service)
        serve(io_node, Trigger, topics.END_EPISODE, self._end_service)
        serve(prepare_node, PrepareTrial, topics.PREPARE_TRIAL, self._prepare)
        self.server = ActionServer(
            self,
            RunEpisode,
            topics.RUN_EPISODE,
            execute_callback=execute,
            goal_callback=lambda goal: GoalResponse.ACCEPT,
            cancel_callback=lambda _: CancelResponse.ACCEPT,
            **action_options,
        )

    # -- what each world node supplies ---------------------------------------------------------
    def _set_estop(self, engaged: bool, source: str) -> None:
        raise NotImplementedError

    def _prepare(self, request, response):
        raise NotImplementedError

    # -- written once --------------------------------------------------------------------------
    def _on_estop_msg(self, msg: Bool, info) -> None:
        engaged = self._estop_topic.accept(bool(msg.data), info)  # indgen_core/nodes/estop.py: the rule
        if engaged is not None:
            self._set_estop(engaged, "the e-stop topic")

    def _estop_service(self, request, response):
        self._set_estop(bool(request.data), "the e-stop service")
        response.success = True
        response.message = f"e-stop engaged: {self.ESTOP_EFFECT}" if request.data else "e-stop released"
        return response

    def _end_service(self, request, response):
        if not self.watch.current[0]:
            response.success, response.message = False, "no episode is running"
        else:
            self.end_requested = "the operator ended the episode"
            response.success, response.message = True, f"ending {self.watch.current[0]}"
        return response
