"""Topic, service and action names of the node graph: one place, used by every node and by
the graph profiles, so that publisher and subscriber can never disagree on a name.

The FR3 names map one-to-one onto the real franka_ros2 stack (see docs/guides/twin.md).
"""

TASK_SETUP = "/indgen/task_setup"
OPERATOR_PROMPT = "/indgen/operator_prompt"
OPERATOR_ACK = "/indgen/operator_ack"
OPERATOR_REGISTER = "/indgen/operator_register"
EPISODE_RESULT = "/indgen/episode_result"
LEVEL_SCORE = "/indgen/level_score"
CAMPAIGN_STATUS = "/indgen/campaign_status"
POLICY_STATUS = "/indgen/policy_status"
POLICY_ROUTES = "/indgen/policy_routes"  # latched JSON notice: routes to fetch (serial), blind or not
GET_POLICY_ROUTES = "/indgen/get_policy_routes"  # Trigger: the policy server of each policy (routes.py)
RUN_EPISODE = "/indgen/run_episode"
RESULT_COMMITTED = "/indgen/result_committed"  # JSON: the scorer's answer to each result (committed or refused)
REPORT_WRITTEN = "/indgen/report_written"  # latched JSON: the scorer wrote a done campaign's report (or why not)
CLOCK = "/clock"
# What a bag needs to judge, time and replay a campaign again (indgen bag)
FINAL_STATE = "/indgen/sim/final_state"  # simulation only: the world's state when an episode ends
POLICY_EXCHANGE = "/indgen/policy/exchange"  # each request and reply as it crossed the wire
RECORDER_STATUS = "/indgen/recorder/status"  # latched JSON: the bag, the topics recorded, steady or not
OPERATOR_ANSWER = "/indgen/operator_answer"  # every answer to a prompt, accepted or refused

BLOCKENV_OBSERVATION = "/blockenv/observation"
BLOCKENV_ACTION = "/blockenv/action"

# The FR3's interface to the policy node, the same for the MuJoCo twin and the real robot
# (docs/guides/twin.md): franka_ros2's /joint_states, DROID-style camera topics, and the
# policy's DROID commands on IndGen's own topics, which only the world reads (the twin, or the
# FR3 runner, which alone writes the robot's controllers).
JOINT_STATES = "/joint_states"
ARM_VELOCITY_COMMAND = "/indgen/fr3/joint_velocity_command"
GRIPPER_COMMAND = "/indgen/fr3/gripper_command"
CONTROL_TICK = "/indgen/control_tick"
IMAGE_REQUEST = "/indgen/image_request"  # lock-step sim: the cameras of one tick, rendered on request
OBJECT_POSES = "/indgen/sim/object_poses"  # simulation only: privileged state

# The real robot's episode runner
PREPARE_TRIAL = "/indgen/prepare_trial"
ROBOT_STATUS = "/indgen/robot_status"
ESTOP = "/indgen/estop"  # std_msgs/Bool topic and std_srvs/SetBool service
END_EPISODE = "/indgen/end_episode"  # std_srvs/Trigger
ACKNOWLEDGE_STOP = "/indgen/acknowledge_stop"  # std_srvs/Trigger: the operator says the arm is clear after a stop


def camera_topic(camera: str) -> str:
    return f"/cameras/{camera}/image_raw"


# LIBERO (simulation only): the end-effector pose the OSC controller acts on, its command
LIBERO_EEF_POSE = "/libero/eef_pose"
LIBERO_OSC_COMMAND = "/libero/osc_command"

# RoboCasa (simulation only): the PandaOmron's end effector in its base's frame, the base in the
# world, and the 12-value command (arm delta, gripper, base, torso, mode)
ROBOCASA_EEF_POSE = "/robocasa/eef_pose"
ROBOCASA_BASE_POSE = "/robocasa/base_pose"
ROBOCASA_COMMAND = "/robocasa/command"

# The FR3 hardware stand-in's services in place of franka's recovery interfaces (whose message
# packages are not on PyPI): std_srvs/Trigger, one per step, in franka_hardware's order. The
# first three restore the robot's state (nothing moves: no controller claims a command
# interface); the last re-enables torque control (the runner asks the operator first).
STAND_IN = "/indgen/sim/stand_in"
STAND_IN_STATE_STEPS = ("error_recovery", "activate_hardware", "activate_broadcasters")
STAND_IN_TORQUE_STEP = "activate_arm_controller"
#: the stand-in's error_recovery answer when the robot was in no fault (franka's action succeeds
#: then too; the real runner asks controller_manager for the hardware component's state)
STAND_IN_NO_FAULT = "no error to recover from"
