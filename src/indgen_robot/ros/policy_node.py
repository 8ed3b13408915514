"""policy_node: one node for every policy. It turns the world's topics into openpi requests
through an observation/action spec, asks the policy server over openpi's websocket protocol,
executes each action chunk open-loop for `action_horizon` ticks, and publishes the commands.

The server may be a real pi0.5 on a GPU host or `indgen serve-policy` on this machine. When
the connection is lost the node stops commanding at once (nothing is sent from a missing or
garbled reply), reports it on /indgen/policy_status, and reconnects in the background with
exponential backoff.

Every status names the trial whose task setup the node took last, and says connected only
when the node is connected to that trial's server: the progression manager routes policies to
servers (/indgen/policy_routes), so before the routes are heard no trial is served (a world
starts a trial's episode on that status: world_watch.py).

Parameters and endpoints: indgen_robot/node_interfaces.py (docs/reference/nodes.md)."""

from __future__ import annotations

import array
import json
import queue
import threading
import time

from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
from std_srvs.srv import Trigger

from indgen_core import records, registry, topics
from indgen_core.campaign import routes
from indgen_core.episode import PolicyUnavailable
from indgen_core.errors import IndGenError, first_line
from indgen_core.nodes import messages
from indgen_core.ros.base import LATCHED, read_parameters, run_node, subscribe
from indgen_core.specs import WARMUP_KEY, BadAction
from indgen_core.waiting import wait_until
from indgen_core.wire.client import RemotePolicy, read_api_key
from indgen_msgs.msg import PolicyExchange, PolicyStatus, TaskSetup
from indgen_robot.node_interfaces import POLICY_NODE_ENDPOINTS
from indgen_robot.node_interfaces import PolicyNodeParameters as Parameters
from indgen_robot.ros.policy_io import POLICY_IO, Tick

#: how often the node looks whether the server's connection is still open (between requests)
CONNECTION_POLL_S = 0.05
#: how often the node asks again for routes it was told of and has not got
ROUTES_RETRY_S = 0.5
ROUTES_ANSWER_S = 5.0
#: the server metadata a blind campaign's status keeps: what the world's safety checks read
#: (policy.robot_mismatch); everything else a server says of itself may name it
BLIND_METADATA = ("robot_model",)
#: the task a warm-up request names (never a trial)
WARMUP_SETUP = records.TaskSetup.blank(trial_id="warm-up", in_distribution=True, language_instruction="warm up")
#: requests carry the images: a short queue, so a slow recorder cannot pile them up here
EXCHANGES = QoSProfile(depth=20, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)


class PolicyNode(Node):
    ENDPOINTS = POLICY_NODE_ENDPOINTS  # held to what it creates: ros.base.check_endpoints

    def __init__(self) -> None:
        super().__init__("policy_node")
        self.p = read_parameters(self, Parameters)
        if self.p.max_image_age_s < 0 or self.p.max_state_age_s < 0:
            raise IndGenError("max_image_age_s and max_state_age_s must be positive (0: the robot configuration's)")
        self.spec = registry.make(registry.SPECS, self.p.spec)
        if self.p.action_horizon > 0:
            self.spec.horizon = int(self.p.action_horizon)
        io_cls = POLICY_IO.get(self.spec.name)
        if io_cls is None:
            raise registry.UnknownName(f"spec '{self.p.spec}' has no policy-side topic adapter")
        self._api_key = read_api_key(self.p.api_key_file or None)
        self.client = self._client_for(self.p.server_uri)
        # which server serves which policy, from the progression manager (None: not heard yet,
        # and no trial is served before: its policy may be routed elsewhere)
        self.routes: dict[str, str] | None = None
        # a blind campaign's servers stay unnamed on every topic and log line; until the routes
        # say whether the campaign is blind, the node assumes it is
        self._blind = True
        self._policy = ""  # the policy of the latest setup, as the setups name it
        self._trial = ""  # the trial of the latest setup: every status names it (world_watch.py)
        # one lock over which server is wanted, whether it is connected and what the status says,
        # so that the connect thread, the inference thread and the executor (setups, heartbeat)
        # never publish a status that an older one overtakes
        self._state = threading.RLock()
        self.status_pub = self.create_publisher(PolicyStatus, topics.POLICY_STATUS, LATCHED)
        self.exchange_pub = (
            self.create_publisher(PolicyExchange, topics.POLICY_EXCHANGE, EXCHANGES)
            if self.p.publish_exchanges
            else None
        )
        subscribe(self, TaskSetup, topics.TASK_SETUP, self._on_setup, LATCHED)
        subscribe(self, String, topics.POLICY_ROUTES, self._on_notice, LATCHED)
        self._routes_client = self.create_client(Trigger, topics.GET_POLICY_ROUTES)
        self._routes_wanted: int | None = None  # the serial of the routes to fetch (None: have them)
        self._routes_serial: int | None = None
        self._routes_pending = False
        self._routes_asked_at = 0.0
        self.create_timer(ROUTES_RETRY_S, self._fetch_routes)
        self.setups: dict[str, object] = {}
        self._attempts: dict[str, tuple[int, int]] = {}  # trial -> its current setup's stamp
        self._chunk: tuple[str, int, list] | None = None
        self.io = io_cls(self, self._on_tick)
        self._ticks: queue.Queue[Tick] = queue.Queue()
        self._stop = threading.Event()
        self._connected = threading.Event()
        self.requests = 0
        self._status(False, "connecting")
        # the status is repeated every second, so a subscriber that saw a stale sample (or a
        # policy node that died) is noticed within a second
        self.create_timer(1.0, self._heartbeat)
        # a server that dies between two requests (mid-chunk) is noticed within
        # CONNECTION_POLL_S, so the world holds at once instead of running out the chunk
        self.create_timer(CONNECTION_POLL_S, self._watch_connection)
        self._last_status = (False, "connecting", None)
        self._skip_warmup = False
        threading.Thread(target=self._connect_loop, name="connect", daemon=True).start()
        threading.Thread(target=self._work, name="infer", daemon=True).start()

    # -- connection -------------------------------------------------------------------------------
    def _client_for(self, uri: str) -> RemotePolicy:
        return RemotePolicy(
            uri,
            api_key=self._api_key,
            connect_timeout=self.p.connect_timeout_s,
            request_timeout=self.p.request_timeout_s,
        )

    def _on_notice(self, msg: String) -> None:
        """The progression manager has routes for this campaign (a new serial: a new manager):
        fetch them. Until they come, no trial is served (its policy may be routed elsewhere)."""
        try:
            notice = routes.parse_notice(msg.data)
        except ValueError as exc:
            self.get_logger().error(f"{exc}; keeping the routes I had")
            return
        with self._state:
            self._blind = notice.blind
            if notice.serial != self._routes_serial:
                self._routes_wanted = notice.serial
        self._fetch_routes()

    def _fetch_routes(self) -> None:
        with self._state:
            if self._routes_pending and time.monotonic() - self._routes_asked_at > ROUTES_ANSWER_S:
                self._routes_pending = False  # an answer that never came (its manager went away): ask again
            if self._routes_wanted is None or self._routes_pending or not self._routes_client.service_is_ready():
                return
            self._routes_pending, self._routes_asked_at = True, time.monotonic()
            serial = self._routes_wanted
        future = self._routes_client.call_async(Trigger.Request())
        future.add_done_callback(lambda f: self._on_routes(f, serial))

    def _on_routes(self, future, serial: int) -> None:
        with self._state:
            self._routes_pending = False
        try:
            reply = future.result()
            parsed = routes.parse_routes(reply.message if reply is not None and reply.success else "")
        except Exception as exc:  # a refused or garbled answer: ask again on the next retry
            self.get_logger().error(f"{first_line(exc)}; asking for the policy routes again", throttle_duration_sec=5.0)
            return
        with self._state:
            if self._routes_wanted != serial:  # a newer notice came meanwhile: its fetch is due
                return
            self.routes, self._blind = parsed.routes, parsed.blind
            self._routes_serial, self._routes_wanted = serial, None
            self._follow(self._policy)

    def _follow(self, policy: str) -> None:
        """Talk to the server of `policy`: a switch drops the connection (nothing is commanded
        until the new server is connected and warmed up) and the connect loop takes the new one.
        Without a switch the status is said again, now naming the latest trial."""
        with self._state:
            self._policy = policy
            if self.routes is None:  # the routes and a setup can come together (one discovery): wait
                self._status(*self._last_status)
                return
            wanted = self._client_for(self.routes.get(policy, self.p.server_uri))
            if wanted.uri == self.client.uri:
                self._status(*self._last_status)
                return
            old, self.client = self.client, wanted
            self._connected.clear()
            self._chunk = None
            self._status(False, "switching policy server for the next trial")
        old.close()

    def _connect_loop(self) -> None:
        delay = 0.2
        while not self._stop.is_set():
            if self._connected.is_set():
                self._stop.wait(0.2)
                continue
            client = self.client
            try:
                metadata = client.connect(timeout=self.p.connect_timeout_s)
            except PolicyUnavailable as exc:
                self._stop.wait(delay)
                delay = min(delay * 2, self.p.reconnect_max_s)
                if client is self.client:
                    self.get_logger().warning(self._hide(f"{exc}; retrying"), throttle_duration_sec=10.0)
                continue
            delay = 0.2
            try:
                warmed = self._warm_up(client)
            except PolicyUnavailable as exc:
                if client is not self.client:  # switched during the warm-up: it closed that client
                    continue
                self._skip_warmup = True  # a server that refuses a warm-up gets none after a reconnect
                self.get_logger().warning(
                    self._hide(
                        f"the warm-up request failed ({exc}); reconnecting without one: the first "
                        "trial's first request may take long"
                    )
                )
                continue
            with self._state:
                if client is not self.client:  # switched while connecting: that server is not wanted now
                    client.close()
                    continue
                self._connected.set()
                self._status(True, "connected", metadata)
            self.get_logger().info(f"connected to {self._server_name()}{warmed}")

    def _warm_up(self, client: RemotePolicy) -> str:
        """One request of the right shapes before the first real one: openpi's server compiles
        its model on its first request (scripts/serve_policy.py has no warm-up of its own), which
        takes seconds, longer than a tick may wait. The node reports itself connected only after
        it; the runner waits for that before an episode's first tick."""
        obs = None if self._skip_warmup else self.spec.warmup_observation(getattr(self.io, "cameras", []))
        if obs is None:
            return ""
        with self._state:
            if client is self.client:
                self._status(False, "warming up the policy server (its first request compiles)")
        request = self.spec.request(obs, WARMUP_SETUP, 0)
        request[WARMUP_KEY] = True
        started = time.monotonic()
        client.infer(request, timeout=self.p.warmup_timeout_s)
        return f"; warm-up answered in {time.monotonic() - started:.1f} s"

    def _lost(self, client: RemotePolicy, reason: str) -> None:
        with self._state:
            if client is not self.client:  # a server left behind by a switch: not this trial's loss
                return
            self._connected.clear()
            self._chunk = None
            self._status(False, reason)
        self.get_logger().error(self._hide(f"{reason}; commanding stopped, reconnecting"))

    def _watch_connection(self) -> None:
        client = self.client
        if self._connected.is_set() and not client.alive():
            self._lost(client, f"{self._server_name()} closed the connection")

    def _heartbeat(self) -> None:
        with self._state:
            self._status(*self._last_status)

    def _hiding(self) -> bool:
        """Names stay hidden in a blind campaign, and while routes announced are not yet fetched
        (they may be a blind campaign's: on doubt, hidden). Called with `_state` held."""
        return self._blind or self._routes_wanted is not None

    def _server_name(self) -> str:
        """The server as a person may see it: its address, or in a blind campaign the letter's."""
        with self._state:
            if not self._hiding():
                return f"the policy server at {self.client.uri}"
            return f"policy {self._policy}'s server" if self._policy else "the policy server"

    def _hide(self, text: str) -> str:
        """`text` with every server address this node knows replaced by what a person may see
        (a blind campaign's server address names the policy on a real cell)."""
        with self._state:
            if not self._hiding():
                return text
            known = {self.client.uri, self.p.server_uri, *(self.routes or {}).values()}
            name = self._server_name()
        for uri in sorted(known, key=len, reverse=True):
            text = text.replace(f"the policy server at {uri}", name).replace(uri, name)
            host = uri.split("://", 1)[-1]
            text = text.replace(host, name)
        return text

    def _status(self, connected: bool, message: str, metadata=None) -> None:
        with self._state:
            self._last_status = (connected, message, metadata)
            if connected and self.routes is None:
                connected, message = False, f"{message}; waiting for the policy routes ({topics.GET_POLICY_ROUTES})"
            if self._hiding():  # only what the safety checks read: the server's own words name it
                metadata = {k: v for k, v in (metadata or {}).items() if k in BLIND_METADATA}
            self.status_pub.publish(
                PolicyStatus(
                    connected=connected,
                    server_uri=self._server_name() if self._hiding() else self.client.uri,
                    trial_id=self._trial,
                    message=self._hide(message),
                    metadata_json=json.dumps(metadata or {}, default=str),
                )
            )

    # -- observations in, commands out ------------------------------------------------------------
    def _on_setup(self, msg: TaskSetup) -> None:
        setup = messages.setup_from_msg(msg)
        with self._state:
            self._trial = msg.trial_id
            self._follow(msg.policy)
        # stored after the switch: a tick of this trial that waits for its setup finds the
        # connection already dropped when the setup names another server
        self.setups[msg.trial_id] = setup
        if len(self.setups) > 64:
            self.setups.pop(next(iter(self.setups)))
        stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        if self._attempts.get(msg.trial_id) != stamp:
            # a new attempt starts clean: no chunk of an earlier attempt, no observation parts a
            # world that died (or gave up) left half sent, whose stamps a restarted world reuses
            self._attempts[msg.trial_id] = stamp
            if self._chunk and self._chunk[0] == msg.trial_id:
                self._chunk = None
            forget = getattr(self.io, "forget", None)
            if forget is not None:
                forget()
            while len(self._attempts) > 64:
                self._attempts.pop(next(iter(self._attempts)))

    def _on_tick(self, tick: Tick) -> None:
        self._ticks.put(tick)

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                tick = self._ticks.get(timeout=0.1)
            except queue.Empty:
                continue
            setup = self._setup_of(tick.trial_id)
            if setup is None:
                continue
            client = self._serving_client()
            if client is None:
                continue  # no policy, no command: the world's watchdog / the bridge handles it
            try:
                action = self._action_for(client, tick, setup)
            except PolicyUnavailable as exc:
                self._lost(client, str(exc))
                continue
            except BadAction as exc:
                self.get_logger().error(f"{tick.trial_id} step {tick.step}: {exc}; no command sent")
                continue
            except Exception as exc:  # an observation no request can be built from: nothing is sent
                self.get_logger().error(
                    f"{tick.trial_id[:80]} step {tick.step}: {first_line(exc)}; no command sent",
                    throttle_duration_sec=5.0,
                )
                continue
            self.io.send(tick, action)

    def _serving_client(self) -> RemotePolicy | None:
        """The client of the latest trial's server, once the routes are known and it is
        connected (None after connect_timeout_s)."""
        ready: list[RemotePolicy] = []

        def serving() -> bool:
            with self._state:
                if self.routes is not None and self._connected.is_set():
                    ready.append(self.client)
            return bool(ready)

        wait_until(serving, self.p.connect_timeout_s, poll=0.01, stop=self._stop)
        return ready[0] if ready else None

    def _setup_of(self, trial_id: str):
        """The task setup of `trial_id`; a tick that came before it waits for it up to 2 s."""
        setup = self.setups.get(trial_id)
        if setup is None:
            self.get_logger().warning(f"no task setup for {trial_id} yet; waiting", throttle_duration_sec=5)
            wait_until(lambda: self.setups.get(trial_id) is not None, 2.0, poll=0.01, stop=self._stop)
            setup = self.setups.get(trial_id)
        return setup

    def _action_for(self, client: RemotePolicy, tick: Tick, setup) -> dict:
        chunk = self._chunk
        if chunk and chunk[0] == tick.trial_id and tick.step and 0 <= tick.step - chunk[1] < len(chunk[2]):
            return chunk[2][tick.step - chunk[1]]
        if tick.step == 0:
            client.reset()
        actions = self.spec.actions(client.infer(self.spec.request(tick.obs, setup, tick.step)))
        self.requests += 1
        self._chunk = (tick.trial_id, tick.step, actions[: self.spec.horizon])
        self._publish_exchange(client, tick)
        return actions[0]

    def _publish_exchange(self, client: RemotePolicy, tick: Tick) -> None:
        exchange = client.last_exchange
        if self.exchange_pub is None or exchange is None:
            return
        msg = PolicyExchange(
            trial_id=tick.trial_id,
            step=tick.step,
            sequence=tick.sequence,
            spec=self.spec.name,
            round_trip_ms=exchange.round_trip_ms,
            server_infer_ms=exchange.server_infer_ms,
        )
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.request, msg.reply = array.array("B", exchange.request), array.array("B", exchange.reply)
        self.exchange_pub.publish(msg)

    def close(self) -> None:
        self._stop.set()
        self.client.close()


def main() -> int:
    return run_node(PolicyNode)


if __name__ == "__main__":
    raise SystemExit(main())
