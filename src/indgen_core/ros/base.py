"""What every IndGen node shares: typed parameters read in one call, QoS profiles,
subscriptions and services that never die of a message, and a main() that shuts down cleanly
on Ctrl-C or SIGTERM (a launcher stops its children that way).

Every subscription and service of every node goes through `subscribe` and `serve`: a message
its callback cannot handle (a wrong size, NaN, an unknown enum value, bad JSON, a forged
field) is dropped with a throttled one-line log, and the node keeps running. One malformed
message on the domain must never take a node, and with it a campaign, down.

Every node spins on a SingleThreadedExecutor. rclpy's MultiThreadedExecutor delivers messages
hundreds of milliseconds late on a small machine (measured here: ping-pong p50 0.66 s, p99
3.5 s, against 0.3 ms / 1.4 ms single-threaded; ros2/rclpy#1223, #1452), which would make a
lock-step simulation crawl. Work that blocks (a campaign, an episode) runs in its own thread,
and a node whose callbacks must run while another of its callbacks blocks (the sim bridge)
puts them on a second node with its own executor thread (`extra_nodes`).
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

import rclpy
from rclpy.exceptions import InvalidHandle
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from indgen_core.errors import IndGenError, first_line
from indgen_core.nodes import declarations as nd

P = TypeVar("P")

#: seconds between a stop signal and a forced exit of a node that did not shut down by then
EXIT_GRACE_S = 10.0

#: the last message stays available to late joiners (task setup, campaign and policy status)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: every message delivered, in order (results must never be dropped)
RELIABLE = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
#: per-level scores: every one delivered, and the last of each level kept for late joiners (a
#: console started in the middle of a campaign sees the whole table)
LEVEL_SCORES = QoSProfile(
    depth=200,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
    history=HistoryPolicy.KEEP_LAST,
)
#: lock-step observations and actions: reliable, small queue
LOCKSTEP = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
#: small per-tick messages (ticks, commands, states, poses): reliable with a deep history. A
#: reliable writer with a short KEEP_LAST history drops what a reader has not yet acknowledged
#: when it laps it: the recorder, starved for half a second on a busy machine, lost a tick's
#: command from the bag that way. 100 messages is over 3 s at a lock-step sim's pace; images
#: keep LOCKSTEP's short queue (a ZED frame is 3.7 MB)
TICKS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)


def read_parameters(node: Node, parameters: type[P]) -> P:
    """Declare the node's parameters (`parameters`: a dataclass of `node_declarations.param`
    fields; their ROS types follow the defaults) and read them once; a value of the wrong type
    (`-p trials:=abc`) is one sentence naming it."""
    from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException

    declared = nd.defaults(parameters)
    for name, value in declared.items():
        if not node.has_parameter(name):
            try:
                node.declare_parameter(name, value)
            except (InvalidParameterTypeException, InvalidParameterValueException):
                given = getattr(node, "_parameter_overrides", {}).get(name)
                raise IndGenError(
                    f"parameter '{name}' of {node.get_name()} must be "
                    f"{_TYPE_WORDS.get(type(value), type(value).__name__)}, got "
                    f"{_shown(given.value if given is not None else '?')}"
                ) from None
    return parameters(**{name: node.get_parameter(name).value for name in declared})


_TYPE_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _shown(value) -> str:
    return repr(str(value)[:80])


class Dropped:
    """Counts what a node dropped, per kind, for tests and diagnostics."""

    def __init__(self):
        self.counts: dict[str, int] = {}

    def add(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1


def _dropped(node: Node) -> Dropped:
    if not hasattr(node, "dropped"):
        node.dropped = Dropped()
    return node.dropped


def guarded(node: Node, callback: Callable, what: str) -> Callable:
    """`callback` that never raises: whatever it cannot handle is dropped and logged in one
    line, at most once per 5 s per kind of message."""
    dropped = _dropped(node)

    def safe(*args):
        try:
            return callback(*args)
        except Exception as exc:
            dropped.add(what)
            node.get_logger().warning(
                f"dropped a {what} it cannot use ({dropped.counts[what]} so far): {first_line(exc)}",
                throttle_duration_sec=5.0,
            )
            return None

    return safe


def subscribe(node: Node, msg_type, topic: str, callback: Callable, qos, with_info: bool = False, **kwargs):
    """node.create_subscription, guarded (see the module docstring). With `with_info` the
    callback also gets rclpy's message info (a dict: source_timestamp, received_timestamp in
    ns, ...)."""
    safe = guarded(node, callback, f"{msg_type.__name__} on {topic}")
    # rclpy passes the message info to a callback that takes two arguments, which `safe(*args)`
    # would appear to: the lambdas give it the arity wanted
    if with_info:
        return node.create_subscription(
            msg_type,
            topic,
            lambda msg, info: safe(msg, info),  # noqa: PLW0108
            qos,
            **kwargs,
        )
    return node.create_subscription(msg_type, topic, lambda msg: safe(msg), qos, **kwargs)  # noqa: PLW0108


#: a subscription every publisher matches: DDS pairs a best-effort, volatile reader with
#: reliable and best-effort, volatile and transient-local writers alike (a reliable or
#: transient-local reader never matches a best-effort or volatile writer; rclpy only logs an
#: incompatible-QoS warning). It gets no history, so `subscribe_any` adds a transient-local
#: reader for the last sample a latching writer kept.
ANY_PUBLISHER = QoSProfile(
    depth=10,
    reliability=ReliabilityPolicy.BEST_EFFORT,
    durability=DurabilityPolicy.VOLATILE,
    history=HistoryPolicy.KEEP_LAST,
)


def subscribe_any(node: Node, msg_type, topic: str, callback: Callable, **kwargs) -> list:
    """Subscribe `topic` so that any publisher's QoS matches (ANY_PUBLISHER, plus LATCHED for
    what a latching publisher kept). A message can arrive on both: `callback(msg, info)` gets
    rclpy's message info to tell repeats and old samples by their source timestamp."""
    return [
        subscribe(node, msg_type, topic, callback, qos, with_info=True, **kwargs) for qos in (ANY_PUBLISHER, LATCHED)
    ]


def threaded_execute(node: Node, work: Callable):
    """An ActionServer execute callback that runs `work(goal_handle)` (which blocks for a whole
    episode) on its own thread and awaits it, so that the node's executor keeps serving the
    goal's cancel request and the node's services meanwhile (a blocking execute callback on a
    SingleThreadedExecutor holds every other callback of the node until it returns).

    The awaiting task runs again only when its executor wakes, and a bare Future wakes nobody
    when it is done; `goal_handle.succeed()` inside `work` wakes the executor before the
    result is set, so without a wake of its own the result would wait for the next unrelated
    event (a client then saw "SUCCEEDED" and no result). Hence the wake after the result."""
    from rclpy.task import Future

    async def execute(goal_handle):
        done = Future()

        def run():
            try:
                done.set_result(work(goal_handle))
            except BaseException as exc:  # handed to the awaiting callback, which re-raises it
                done.set_exception(exc)
            finally:
                executor = node.executor
                if executor is not None:
                    executor.wake()

        threading.Thread(target=run, name="episode", daemon=True).start()
        return await done

    return execute


#: a service's request queue. ROS' default keeps the last 10 requests not yet taken, and
#: rmw_fastrtps honours that: with the server's executor busy for 2 s, 5 of 15 queued requests
#: are dropped without a trace, and none with 100 on both the server and the client
#: (test/test_service_queue.py); an operator's e-stop or "end the episode" must not be lost to
#: a burst of other callers.
REQUESTS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=100,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)


def serve(node: Node, srv_type, name: str, callback: Callable, **kwargs):
    """node.create_service, guarded: a request the callback cannot handle gets a refusal
    (accepted=False, message=the reason) instead of taking the node down."""
    dropped = _dropped(node)
    what = f"{srv_type.__name__} request on {name}"

    def safe(request, response):
        try:
            return callback(request, response)
        except Exception as exc:
            dropped.add(what)
            node.get_logger().warning(f"refused a {what}: {first_line(exc)}", throttle_duration_sec=5.0)
            fresh = srv_type.Response()
            if hasattr(fresh, "accepted"):
                fresh.accepted = False
            if hasattr(fresh, "message"):
                fresh.message = f"refused: {first_line(exc)}"
            return fresh

    kwargs.setdefault("qos_profile", REQUESTS)
    return node.create_service(srv_type, name, safe, **kwargs)


def run_node(factory: Callable[[], Node], on_ready: Callable[[Node], None] | None = None) -> int:
    """Spin a node until Ctrl-C, SIGTERM or node.request_exit(code). Configuration errors end
    as one line and exit status 2."""
    rclpy.init(args=sys.argv)
    stop = threading.Event()
    exit_code = {"code": 0}

    def on_signal(signum, _frame):
        if not stop.is_set():
            # a node that cannot shut down cleanly (a callback stuck in rcl, a thread that
            # never returns) still goes: nothing may outlive its launcher. A daemon thread: a
            # node that did shut down cleanly exits at once instead of waiting out the grace
            # (a non-daemon Timer held every clean exit for EXIT_GRACE_S, then exited 130)
            deadline = threading.Timer(EXIT_GRACE_S, os._exit, (128 + signum,))
            deadline.daemon = True
            deadline.start()
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    node = None
    try:
        node = factory()
    except IndGenError as exc:
        print(f"{sys.argv[0].rsplit('/', 1)[-1]}: error: {exc}", file=sys.stderr)
        rclpy.try_shutdown()
        return exc.exit_code

    def request_exit(code: int = 0) -> None:
        exit_code["code"] = code
        stop.set()

    node.request_exit = request_exit
    nodes = (node, *getattr(node, "extra_nodes", list)())
    try:
        check_endpoints(node, nodes)
    except IndGenError as exc:
        print(f"{sys.argv[0].rsplit('/', 1)[-1]}: error: {exc}", file=sys.stderr)
        rclpy.try_shutdown()
        return exc.exit_code
    executors = []
    for n in nodes:
        executor = SingleThreadedExecutor()
        executor.add_node(n)
        thread = threading.Thread(target=_spin, args=(executor, stop), daemon=True, name=f"spin-{n.get_name()}")
        thread.start()
        executors.append((executor, n, thread))
    if on_ready:
        on_ready(node)
    try:
        while not stop.wait(0.1):
            pass
    finally:
        try:  # the endpoints made while it ran (per trial, per robot) count as well
            check_endpoints(node, nodes)
        except IndGenError as exc:
            print(f"{sys.argv[0].rsplit('/', 1)[-1]}: error: {exc}", file=sys.stderr)
            exit_code["code"] = exc.exit_code
        close = getattr(node, "close", None)
        if close:
            close()
        # stop the spinning threads before anything is destroyed: a thread still inside rcl
        # when the interpreter exits aborts the process ("terminate called ...")
        for executor, _, thread in executors:
            executor.shutdown(timeout_sec=2.0)
            thread.join(timeout=5.0)
        for _, n, _ in executors:
            n.destroy_node()
        rclpy.try_shutdown()
    return exit_code["code"]


#: services every rclpy node has (its parameters, its type descriptions): never declared
_OWN_SERVICES = re.compile(
    r".*/(describe_parameters|get_parameters|get_parameter_types|list_parameters|set_parameters"
    r"|set_parameters_atomically|get_type_description)$"
)


def _type_name(cls) -> str:
    package, kind = cls.__module__.split(".")[:2]
    return f"{package}/{kind}/{cls.__name__}"


def created_endpoints(nodes) -> set[tuple[str, str, str]]:
    """(kind, name, type) of every topic, service and action the nodes created, ROS' own left
    out (/rosout, /parameter_events, the parameter services)."""
    from rclpy.action.graph import get_action_client_names_and_types_by_node as action_clients
    from rclpy.action.graph import get_action_server_names_and_types_by_node as action_servers

    found: set[tuple[str, str, str]] = set()
    for n in nodes:
        found |= {(nd.PUBLISHER, p.topic_name, _type_name(p.msg_type)) for p in n.publishers}
        found |= {(nd.SUBSCRIPTION, s.topic_name, _type_name(s.msg_type)) for s in n.subscriptions}
        found |= {(nd.SERVICE, s.srv_name, _type_name(s.srv_type)) for s in n.services}
        found |= {(nd.CLIENT, c.srv_name, _type_name(c.srv_type)) for c in n.clients}
        me = (n.get_name(), n.get_namespace())
        found |= {(nd.ACTION_SERVER, name, t[0]) for name, t in action_servers(n, *me)}
        found |= {(nd.ACTION_CLIENT, name, t[0]) for name, t in action_clients(n, *me)}
    return {
        e
        for e in found
        if e[1] not in ("/rosout", "/parameter_events") and not (e[0] == nd.SERVICE and _OWN_SERVICES.match(e[1]))
    }


def check_endpoints(node: Node, nodes) -> None:
    """With INDGEN_CHECK_ENDPOINTS=1 (the tests set it), an endpoint the node class does not
    declare in ENDPOINTS (from its package's node_interfaces.py) is an error: the reference page
    is generated from the declarations."""
    if os.environ.get("INDGEN_CHECK_ENDPOINTS") != "1":
        return
    declared = getattr(node, "ENDPOINTS", ())
    missing = nd.undeclared(declared, created_endpoints(nodes))
    if missing:
        listed = "; ".join(f"{kind} {name} ({type_name})" for kind, name, type_name in missing)
        raise IndGenError(f"{node.get_name()} created endpoints its class does not declare in ENDPOINTS: {listed}")


def _spin(executor, stop: threading.Event) -> None:
    try:
        executor.spin()
    except (ExternalShutdownException, KeyboardInterrupt):
        pass
    except (AttributeError, InvalidHandle):
        # rclpy's Executor.shutdown() destroys its guard condition (and sets it to None) while
        # spin() on this thread may be putting it into a wait set (ros2/rclpy#968, open): an
        # AttributeError on 'handle' as the node exits on purpose (seen under load: a traceback
        # after the recorder had closed its bag). Anything else, or this while running, is real.
        if not stop.is_set():
            raise
    finally:
        stop.set()
