"""sim_bridge: serves the RunEpisode action for any registered world, in lock-step.

For each goal it resets the world to the task setup, then for every control tick publishes
/clock (simulated time) and the world's observation topics, waits for the one command that
answers that tick, applies it and steps the world; the episode loop and its verdict are the
core's (episode.run_episode), identical to an in-process run. Nothing advances without a
command, so the run is deterministic for a seed and as fast as the policy answers.

The action server runs on its own executor and blocks while an episode runs; the topics of
the episode (commands in, policy status, the progression manager's task setups) are served by
a second node, `<name>_io`, on another executor thread. The same goal sent twice (a resend
after a lost goal response: same trial, same setup stamp) gets the same result again without a
second episode; a new attempt at a trial (a new stamp) runs a new episode.
A lost policy (/indgen/policy_status says disconnected, or the policy node's heartbeat stops
for policy_silence_s), a command that does not come within action_timeout_s, or the
progression manager moving on (a task setup newer than the running episode's: it gave up on
this one, or was restarted) ends the episode as aborted, never as a failure. While an episode
runs, feedback goes out at least every feedback_period_s, even while a tick waits for its
command, so the progression manager can tell a slow world from a dead one. When an episode
ends, before the world judges it, its final state (World.final_state) goes out on
/indgen/sim/final_state with the setup, so that a recorded bag is enough to judge it again.

Parameters and endpoints: indgen_sim/node_interfaces.py (docs/reference/nodes.md)."""

from __future__ import annotations

import collections
import dataclasses
import json
import threading
import time
from typing import Any

import rclpy
from rclpy.node import Node
from rosgraph_msgs.msg import Clock

from indgen_core import paths, registry, topics
from indgen_core.episode import run_episode
from indgen_core.errors import IndGenError, first_line
from indgen_core.nodes import messages
from indgen_core.nodes.world_watch import WorldWatch
from indgen_core.records import Outcome, TrialResult
from indgen_core.ros import convert
from indgen_core.ros.base import (
    LATCHED,
    RELIABLE,
    TICKS,
    read_parameters,
    run_node,
    subscribe,
)
from indgen_core.ros.world_node import WorldNodeContract
from indgen_core.specs import Spec
from indgen_msgs.action import RunEpisode
from indgen_msgs.msg import EpisodeResult, PolicyStatus, TaskSetup, WorldFinalState
from indgen_sim.node_interfaces import SIM_BRIDGE_ENDPOINTS
from indgen_sim.node_interfaces import SimBridgeParameters as Parameters
from indgen_sim.ros.stamped_io import StampedWorldIO

#: world spec -> the module:class that carries its topics
IO_ADAPTERS = {
    "blockenv": "indgen_sim.ros.blockenv_io:BlockEnvIO",
    "droid": "indgen_sim.ros.droid_io:DroidTwinIO",
    "libero": "indgen_sim.ros.libero_io:LiberoIO",
    "robocasa": "indgen_sim.ros.robocasa_io:RobocasaIO",
}


class _PassThrough(Spec):
    """On the bridge the 'policy' is the ROS round trip, which already speaks world actions."""

    name = "passthrough"
    horizon = 1

    def request(self, obs, setup, step):
        return {"obs": obs, "step": step}

    def actions(self, reply):
        return [reply]


class SimBridge(WorldNodeContract, Node):
    ENDPOINTS = SIM_BRIDGE_ENDPOINTS  # held to what it creates: ros.base.check_endpoints

    def __init__(self) -> None:
        super().__init__("sim_bridge")
        self.p = read_parameters(self, Parameters)
        options = _options(self.p.world_options)
        try:
            self.world = registry.make(registry.WORLDS, self.p.world, **options)
        except TypeError as exc:
            raise IndGenError(f"world '{self.p.world}' does not take the options {sorted(options)}: {exc}") from None
        # a level's image is made at each attempt until a result carrying it reaches the store
        self.imaged: set[tuple[str, int]] = set()  # (campaign, level) whose image was taken
        self.image_of: dict[str, tuple[str, int]] = {}  # an image's path: its (campaign, level)
        adapter = IO_ADAPTERS.get(self.world.spec)
        if adapter is None:
            raise registry.UnknownName(f"world '{self.p.world}' has no ROS topic adapter (spec '{self.world.spec}')")
        # its own name: the command line's __node remap must not rename it to the bridge's
        self.io_node = rclpy.create_node(f"{self.get_name()}_io", context=self.context, use_global_arguments=False)
        io_cls = registry.import_target(adapter, "topic adapter")
        self.io = io_cls(
            self.io_node, self.world, **({"render": self.p.render} if issubclass(io_cls, StampedWorldIO) else {})
        )
        self.clock_pub = self.io_node.create_publisher(Clock, topics.CLOCK, TICKS)
        self.final_pub = self.io_node.create_publisher(WorldFinalState, topics.FINAL_STATE, RELIABLE)
        self.world_options = json.dumps(options, sort_keys=True)
        self.watch = WorldWatch(self.p.policy_silence_s, self.world.robot_model)
        subscribe(self.io_node, PolicyStatus, topics.POLICY_STATUS, self.watch.on_policy_status, LATCHED)
        subscribe(self.io_node, TaskSetup, topics.TASK_SETUP, self.watch.on_setup, LATCHED)
        subscribe(self.io_node, EpisodeResult, topics.EPISODE_RESULT, self._on_result_taken, RELIABLE)
        self.sim_ticks = 0  # control ticks since the bridge started: simulated time, exact (sim_stamp)
        self.finished: collections.OrderedDict[tuple[str, int], RunEpisode.Result] = collections.OrderedDict()
        # the world-node contract (indgen_core/ros/world_node.py): the console's e-stop and "end
        # the episode now" work in sim too, so that an operator can rehearse
        self.serve_world_contract(self.io_node, self.io_node, self._execute)
        self.get_logger().info(f"serving {topics.RUN_EPISODE} for world '{self.p.world}'")

    def extra_nodes(self):
        return [self.io_node]

    def _prepare(self, request, response):
        if self.estop:
            response.ready, response.message = False, "the soft e-stop is engaged; release it first"
            response.estop_engaged = True
        else:
            response.ready, response.message = True, "a simulated world resets itself when the episode starts"
        return response

    def _set_estop(self, engaged: bool, source: str) -> None:
        if engaged != self.estop:
            self.get_logger().warning(
                f"soft e-stop engaged ({source}): the episode stops" if engaged else f"soft e-stop released ({source})"
            )
        self.estop = engaged

    def _execute(self, goal_handle):
        try:
            return self._execute_goal(goal_handle)
        except Exception as exc:  # a goal the bridge cannot run: refuse it, keep serving
            self.get_logger().error(f"episode goal refused: {first_line(exc)}")
            trial = goal_handle.request.setup
            setup = dataclasses.replace(
                _EMPTY_SETUP, campaign_id=trial.campaign_id[:128], trial_id=trial.trial_id[:128]
            )
            result = TrialResult(
                setup.trial_id, Outcome.ABORTED, f"the world could not run this goal: {first_line(exc)}"
            )
            goal_handle.abort()
            return RunEpisode.Result(result=convert.result_to_msg(result, setup))

    def _execute_goal(self, goal_handle):
        setup = messages.setup_from_msg(goal_handle.request.setup)
        stamp = goal_handle.request.setup.header.stamp
        key = (setup.trial_id, stamp.sec * 10**9 + stamp.nanosec)
        if key in self.finished:  # the same goal again (its response was lost): the same result
            goal_handle.succeed()
            return self.finished[key]
        self.watch.begin(setup.trial_id, stamp)
        try:
            result = self._episode(goal_handle, setup)
        finally:
            self.watch.end()
        self.finished[key] = result
        while len(self.finished) > 8:
            self.finished.popitem(last=False)
        return result

    def _episode(self, goal_handle, setup):
        last_feedback: list[Any] = [0.0, 0, "resetting"]  # when, step, phase
        max_steps = self.world.max_steps(setup)
        started = time.monotonic()
        lock = threading.Lock()

        def send(step: int, total: int, phase: str) -> None:
            with lock:
                last_feedback[:] = [time.monotonic(), step, phase]
                goal_handle.publish_feedback(
                    RunEpisode.Feedback(
                        phase=phase, step=step, max_steps=total, elapsed=convert.duration(step * self.world.control_dt)
                    )
                )

        def feedback(step: int, total: int, phase: str = "running") -> None:
            # a new phase goes out at once: an episode shorter than one feedback period (BlockEnv)
            # would otherwise leave the manager at "resetting", and a world killed then would be
            # waited on for reset_silence_s instead of world_silence_s
            changed = phase != last_feedback[2]
            if changed or time.monotonic() - last_feedback[0] >= self.p.feedback_period_s or step in (0, total):
                send(step, total, phase)

        done = threading.Event()

        def heartbeat() -> None:  # feedback while a tick waits for its command, or a reset takes long
            period = max(self.p.feedback_period_s, 0.05)
            while not done.wait(period):
                if time.monotonic() - last_feedback[0] >= period:
                    send(
                        last_feedback[1],
                        max_steps,
                        last_feedback[2] if last_feedback[2] == "resetting" else "waiting_for_policy",
                    )

        beat = threading.Thread(target=heartbeat, name="feedback", daemon=True)

        def should_abort() -> str | None:
            if goal_handle.is_cancel_requested:
                return "cancelled by the progression manager"
            if self.estop:
                return "operator e-stop"
            return self.watch.reason(started, self.p.action_timeout_s)

        def infer(request):
            step = request["step"]
            self.sim_ticks += 1  # a reset takes its tick too: no two requests share a stamp
            stamp = self._now()
            self.clock_pub.publish(Clock(clock=stamp))
            return self.io.exchange(setup, step, request["obs"], stamp, self.p.action_timeout_s, should_abort)

        images: list[str] = []

        def on_reset(_obs) -> None:
            key = (setup.campaign_id, setup.level)
            if self.p.level_images and key not in self.imaged:
                path = self._save_level_image(setup)
                if path:
                    self.image_of[path] = key
                    images.append(path)

        def on_final(state: dict, ending: str, steps: int) -> None:  # before the world judges it
            msg = WorldFinalState(
                campaign_id=setup.campaign_id,
                trial_id=setup.trial_id,
                setup_stamp=stamp,
                world=self.p.world,
                world_options_json=self.world_options,
                setup_json=setup.to_json(),
                ending=ending,
                steps=steps,
                state_json=json.dumps(state),
            )
            msg.header.stamp = self._now()
            self.final_pub.publish(msg)

        stamp = goal_handle.request.setup.header.stamp
        feedback(0, max_steps, "resetting")
        beat.start()
        try:
            self.end_requested = ""
            result = run_episode(
                self.world,
                infer,
                _PassThrough(),
                setup,
                on_step=feedback,
                on_reset=on_reset,
                should_end=lambda: bool(self.end_requested),
                on_final=on_final,
            )
        finally:
            done.set()
            beat.join(timeout=2.0)
        if images:
            result = dataclasses.replace(result, artifacts=(*result.artifacts, *images))
        self.get_logger().info(f"{setup.trial_id}: {result.outcome.word} after {result.steps} steps ({result.reason})")
        msg = convert.result_to_msg(result, setup, self._now())
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.succeed()
        return RunEpisode.Result(result=msg)

    def _on_result_taken(self, msg) -> None:
        """The progression manager hands the scorer only a result it took, and the store keeps
        every taken attempt's files: a level's image is delivered once it rides on one. Whether
        our own reply was taken cannot be told from here: the manager may have given up on the
        attempt already (the world silent for world_silence_s under load) and committed an aborted
        result of its own, without the image; CI saw a level left without its image so."""
        for path in list(msg.artifacts)[:64]:  # any node may publish here: read it as hostile
            key = self.image_of.get(path)
            if key is not None:
                self.imaged.add(key)

    def _now(self):
        return sim_stamp(self.sim_ticks, self.world.control_dt)

    def _save_level_image(self, setup) -> str | None:
        """The scene at the start of the level's first trial, for the report (never fatal)."""
        try:
            rgb = self.world.preview()
            if rgb is None:
                return None
            from PIL import Image

            out = paths.artifacts_dir() / "level_images" / setup.campaign_id / f"level_image_k{setup.level}.png"
            out.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(rgb).save(out)
            return str(out)
        except Exception as exc:
            self.get_logger().warning(f"no level image for k={setup.level}: {exc}")
            return None

    def close(self) -> None:
        self.world.close()


_EMPTY_SETUP = convert.records.TaskSetup.blank()


def _options(text: str) -> dict:
    if not text.strip():
        return {}
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        value = None
    if not isinstance(value, dict):
        raise IndGenError(f"world_options must be a YAML mapping such as '{{cameras: [exterior_1]}}', got {text!r}")
    return value


def sim_stamp(ticks: int, control_dt: float):
    """The stamp of simulated time after `ticks` control ticks, from integer nanoseconds: a sum
    of float seconds reaches 0.9999999999999999 s where it means 1 s, and int() of that is sec
    0 (a whole second early, in bags and in the lock-step tick assembly)."""
    from builtin_interfaces.msg import Time

    ns = round(ticks * control_dt * 1e9)
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def main() -> int:
    return run_node(SimBridge)


if __name__ == "__main__":
    raise SystemExit(main())
