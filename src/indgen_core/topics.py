"""Topic, service and action names of the node graph: one place, used by every node and by
the graph profiles, so that publisher and subscriber can never disagree on a name.

The FR3 names map one-to-one onto the real franka_ros2 stack (see README, "Robot interface").
"""

TASK_SETUP = "/indgen/task_setup"
OPERATOR_PROMPT = "/indgen/operator_prompt"
OPERATOR_ACK = "/indgen/operator_ack"
EPISODE_RESULT = "/indgen/episode_result"
LEVEL_SCORE = "/indgen/level_score"
CAMPAIGN_STATUS = "/indgen/campaign_status"
POLICY_STATUS = "/indgen/policy_status"
RUN_EPISODE = "/indgen/run_episode"
CLOCK = "/clock"

BLOCKENV_OBSERVATION = "/blockenv/observation"
BLOCKENV_ACTION = "/blockenv/action"
