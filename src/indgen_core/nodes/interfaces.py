"""The parameters and endpoints of the core's nodes (progression_manager, scorer, recorder), declared once.

Plain code on purpose: the nodes (under ros/) read their parameters from these dataclasses and
hold what they create to these endpoints (indgen_core.ros.base), and the reference page
(docs/reference/nodes.md) is generated from the same declarations without importing ROS.
"""

from __future__ import annotations

from dataclasses import dataclass

from indgen_core import topics
from indgen_core.nodes.declarations import calls, calls_action, param, publishes, serves, serves_action, subscribes

# -- progression_manager -----------------------------------------------------------------------


@dataclass(frozen=True)
class ProgressionManagerParameters:
    campaign: str = param("", "campaign YAML; may be empty when campaign_id already exists (resume)")
    campaign_id: str = param("", "id to create, or to resume when it is in the store")
    db: str = param("", "results store (empty: $INDGEN_DB or the default location)")
    allow_uncertified: bool = param(
        False, "score levels without a feasibility certificate (see `indgen campaign run --help`)"
    )
    override_reason: str = param("", "why scoring uncertified levels is acceptable (recorded with the results)")
    episode_timeout_s: float = param(600.0, "wall-clock limit of one episode before it is cancelled and aborted")
    server_wait_s: float = param(10.0, "how long to wait for the world's RunEpisode server per attempt")
    commit_timeout_s: float = param(30.0, "how long the scorer may take to answer a result")
    abort_backoff_s: float = param(1.0, "first wait after an aborted trial (doubles, at most 30x)")
    world_silence_s: float = param(5.0, "a running episode with no feedback for this long is aborted")
    reset_silence_s: float = param(
        20.0,
        "the same while the world's latest feedback says it is resetting: a simulator building its scene holds "
        "Python's interpreter for seconds at a time (LIBERO: 1.3-1.6 s on an idle machine, "
        "bench/reset_quiet_bench.py), longer under load",
    )
    wait_for_operator: bool = param(
        False,
        "the person is in the loop (real robot): before each trial the world is prepared (/indgen/prepare_trial: "
        "the reset) and the setup prompt waits for an answer on /indgen/operator_ack",
    )
    operator_labels: bool = param(
        False,
        "ask the person to label every episode (rehearsal in sim); episodes the world does not judge (the real "
        "robot) are always labelled",
    )
    prepare_timeout_s: float = param(60.0, "how long the world's prepare (reset) may take")
    prepare_retry_s: float = param(
        5.0,
        "ask again when no answer came this long (a request or reply lost to DDS discovery; the world answers a "
        "repeat for a trial it has prepared at once, without moving)",
    )
    recorder: bool = param(
        False,
        "the graph records a bag: before each trial wait for the recorder to report itself steady "
        "(/indgen/recorder/status), so that the bag holds the trial from its first tick",
    )
    recorder_wait_s: float = param(
        30.0,
        "how long to wait for a steady recorder before the first trial (2 s before later ones); the campaign then "
        "goes on, and says that the bag may miss the start",
    )
    exit_when_done: bool = param(True, "exit (status 0) when the campaign is done")
    report_wait_s: float = param(
        120.0, "how long a done campaign waits for the scorer's word that its report is written before exiting"
    )
    axis: str = param("", "override the campaign file's axis (one campaign file serves every axis of a world)")
    levels: str = param("", 'override the campaign file\'s levels, e.g. "-1,0,1"')
    trials: int = param(0, "override the campaign file's trials per level (0: the file's)")
    world_options: str = param("", "world options merged over the campaign file's (a YAML mapping)")
    max_aborts_per_trial: int = param(
        0,
        "a trial aborted this many times stops the campaign with its reason (0: retry for ever, the world or the "
        "policy server will come back)",
    )


PROGRESSION_MANAGER_ENDPOINTS = (
    publishes(
        topics.TASK_SETUP, "indgen_msgs/msg/TaskSetup", "the trial about to run (latched): tau_k, seed, instruction"
    ),
    publishes(
        topics.OPERATOR_PROMPT, "indgen_msgs/msg/OperatorPrompt", "what the person at the cell is asked now (latched)"
    ),
    publishes(
        topics.OPERATOR_ANSWER,
        "indgen_msgs/msg/OperatorAnswer",
        "every answer to a prompt, accepted or refused (for the bag)",
    ),
    publishes(
        topics.EPISODE_RESULT,
        "indgen_msgs/msg/EpisodeResult",
        "each trial's signed result, for the scorer (reliable, deep)",
    ),
    publishes(
        topics.CAMPAIGN_STATUS, "indgen_msgs/msg/CampaignStatus", "the campaign's signed state and progress (latched)"
    ),
    publishes(
        topics.POLICY_ROUTES,
        "std_msgs/msg/String",
        "JSON: routes to fetch (a serial) and whether the campaign is blind; no address (latched)",
    ),
    subscribes(
        topics.RESULT_COMMITTED,
        "std_msgs/msg/String",
        "the scorer's answer to each result and relabel: the next trial starts once it is committed",
    ),
    subscribes(
        topics.REPORT_WRITTEN,
        "std_msgs/msg/String",
        "the scorer's word that a done campaign's report is written: the node exits after it",
    ),
    serves(
        topics.GET_POLICY_ROUTES,
        "std_srvs/srv/Trigger",
        "JSON in the message: the policy server of each policy the campaign routes elsewhere",
    ),
    subscribes(
        topics.RECORDER_STATUS, "std_msgs/msg/String", "the recorder's status: a trial starts once it is steady"
    ),
    serves(topics.OPERATOR_ACK, "indgen_msgs/srv/OperatorAck", "a console's answer to the open prompt"),
    serves(
        topics.OPERATOR_REGISTER, "indgen_msgs/srv/OperatorRegister", "a console registers before its answers count"
    ),
    calls(topics.PREPARE_TRIAL, "indgen_msgs/srv/PrepareTrial", "the world's reset before the person builds the scene"),
    calls_action(topics.RUN_EPISODE, "indgen_msgs/action/RunEpisode", "the world runs one episode of the trial"),
)


# -- scorer ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScorerParameters:
    db: str = param("", "results store (empty: $INDGEN_DB or the default location)")
    report_dir: str = param("", "where reports go (empty: <artifacts>/reports); one folder per campaign")
    write_report: bool = param(True, "write the campaign's HTML report when it is done")


SCORER_ENDPOINTS = (
    subscribes(
        topics.EPISODE_RESULT,
        "indgen_msgs/msg/EpisodeResult",
        "results to commit (only those signed with the campaign's key)",
    ),
    subscribes(topics.CAMPAIGN_STATUS, "indgen_msgs/msg/CampaignStatus", "a signed DONE: write the campaign's report"),
    subscribes(
        topics.POLICY_STATUS,
        "indgen_msgs/msg/PolicyStatus",
        "what each trial's policy said of itself: kept once per campaign and policy (the report's provenance)",
    ),
    publishes(
        topics.LEVEL_SCORE,
        "indgen_msgs/msg/LevelScore",
        "per policy and level after each commit: rate, interval, verdict",
    ),
    publishes(
        topics.RESULT_COMMITTED,
        "std_msgs/msg/String",
        'JSON {"campaign_id", "trial_id", "key", "status", "reason"} for each result or relabel: '
        "committed, repeated (already in the store) or refused (why)",
    ),
    publishes(
        topics.REPORT_WRITTEN,
        "std_msgs/msg/String",
        'JSON {"campaign_id", "report", "error"} once a done campaign\'s report is written (latched)',
    ),
)


# -- recorder ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecorderParameters:
    db: str = param("", "results store for the trials' bag artifacts (empty: the default)")
    bag_dir: str = param("", "where bags go (empty: <artifacts>/bags)")
    split_mb: float = param(1024.0, "start a new bag when one reaches this size (MiB)")
    flush_s: float = param(2.0, "a chunk reaches the disk at least this often (seconds)")
    exclude: str = param("", "comma-separated topic prefixes not to record (e.g. /cameras/ for a lean bag)")
    steady_s: float = param(1.0, "no new topic this long after the last subscription: the recorder is steady")
    robot: str = param(
        "",
        "a robot configuration whose recorder.exclude prefixes are added (the real cell's high-rate and raw "
        "streams: recording subscribes, and a ZED wrapper computes a stream only while someone does); its "
        "camera topics and merged joint states are recorded even under an excluded prefix",
    )
    cameras: str = param(
        "",
        "with a robot configuration: the cameras the policy reads (exterior_1,wrist); the others are not recorded "
        "(empty: all of the configuration's)",
    )


RECORDER_ENDPOINTS = (
    subscribes("<every topic>", "*", "every topic on the domain but ROS' own and actions' internals, as raw bytes"),
    publishes(
        topics.RECORDER_STATUS, "std_msgs/msg/String", "JSON (latched): the bag, the topics recorded, steady or not"
    ),
)


# -- the world-node contract (the sim bridge and the FR3 runner: indgen_core/ros/world_node.py) ----
def world_node_endpoints(run_episode: str, prepare: str, estop_effect: str) -> tuple:
    """What every world node serves and hears, declared once; each says what its episode,
    its preparation and its e-stop do."""
    return (
        serves_action(topics.RUN_EPISODE, "indgen_msgs/action/RunEpisode", run_episode),
        serves(topics.PREPARE_TRIAL, "indgen_msgs/srv/PrepareTrial", prepare),
        serves(topics.ESTOP, "std_srvs/srv/SetBool", f"the soft e-stop: {estop_effect}"),
        serves(topics.END_EPISODE, "std_srvs/srv/Trigger", "the person ends the running episode now"),
        subscribes(
            topics.ESTOP,
            "std_msgs/msg/Bool",
            "the soft e-stop from any publisher (reliable or best effort, volatile or latched)",
        ),
    )
