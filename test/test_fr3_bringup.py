"""The real cell's bring-up, checked statically against constants transcribed from the real
packages' sources (cited at each; no ROS install here: franka_ros2, ros2_control,
ros2_robotiq_gripper and the ZED wrapper are not on PyPI). The facts checked are those
indgen_robot/bringup.py cites: franka.launch.py's arguments, franka run as a restartable process
of its own, franka_msgs' parameter services and their fields, the franka_hardware version that
recovers in place, Jazzy's spawner (the controller's type in its own ros__parameters, no -t),
the Robotiq on its own namespaced controller manager with a forward position controller and not
the controller that claims the same interface, at the driver's rate, the ZED launch's arguments
and its serial numbers; every file named exists, the robot configuration's topics are where
those nodes publish, and the documented commands are the generated ones."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from indgen_core.cell.robot_config import load_robot_config, robot_config_path
from indgen_core.errors import IndGenError
from indgen_core.graph import load_profile
from indgen_robot.bringup import (
    CELL_ARGUMENTS,
    FRANKA_LAUNCH_ARGUMENTS,
    GRIPPER_NAMESPACE,
    SPAWNER_OPTIONS,
    ZED_LAUNCH_ARGUMENTS,
    CallService,
    IncludeLaunch,
    RunNode,
    cell_steps,
    franka_version_problem,
    shell_commands,
)

REPO = Path(__file__).resolve().parents[1]
CONFIG = load_robot_config("fr3_robotiq_zed")
FOLDER = robot_config_path("fr3_robotiq_zed").parent
SERIALS = {"exterior_1_serial": "31", "exterior_2_serial": "32", "wrist_serial": "123"}
STEPS = cell_steps(CONFIG, FOLDER, {"robot_ip": "172.16.0.2", **SERIALS})
#: franka_msgs (franka_ros2 v3.4.0, 29cb85a): srv/SetFullCollisionBehavior.srv lines 1-8 and
#: srv/SetLoad.srv lines 2-6 (request fields, sizes), served by franka_hardware's node
#: service_server (src/franka_param_service_server.cpp lines 74 and 82)
FRANKA_SERVICES = {
    "/service_server/set_full_collision_behavior": {
        **{f"{side}_torque_thresholds_{phase}": 7 for side in ("lower", "upper") for phase in ("acceleration",
                                                                                                "nominal")},
        **{f"{side}_force_thresholds_{phase}": 6 for side in ("lower", "upper") for phase in ("acceleration",
                                                                                               "nominal")},
    },
    "/service_server/set_load": {"mass": 0, "center_of_mass": 3, "load_inertia": 9},
}
#: robotiq_driver hardware_interface.cpp (ros2_robotiq_gripper main, 3b6cf8f) line 51:
#: kGripperCommsLoopPeriod = 10 ms, plus the serial I/O of each exchange
ROBOTIQ_COMMS_PERIOD_S = 0.010


def _params(path: str, name: str) -> dict:
    data = yaml.safe_load(Path(path).read_text())
    for key in (name, f"/{name}", f"/**/{name}"):
        if key in data:
            return data[key]["ros__parameters"]
    raise AssertionError(f"{path} has no section for {name}")


def _spawned(step: RunNode) -> tuple[str, dict[str, str]]:
    controller, *rest = step.arguments
    options = dict(zip(rest[::2], rest[1::2], strict=True))
    return controller, options


def test_franka_is_brought_up_without_a_gripper_and_the_arm_controller_spawned_as_jazzy_reads_it():
    franka = STEPS[0]
    assert isinstance(franka, IncludeLaunch) and (franka.package, franka.file) == ("franka_bringup",
                                                                                   "launch/franka.launch.py")
    assert set(franka.arguments) <= FRANKA_LAUNCH_ARGUMENTS and franka.arguments["load_gripper"] == "false"
    # franka.launch.py (v3.4.0, lines 135-147): its ros2_control_node has on_exit=Shutdown(): run
    # it as a process of its own, restarted, so that its exit does not end IndGen's graph
    assert franka.own_process
    spawners = [s for s in STEPS if isinstance(s, RunNode) and s.executable == "spawner"]
    for step in spawners:
        _, options = _spawned(step)
        assert set(options) <= SPAWNER_OPTIONS and "-t" not in options, step
        assert Path(options["--param-file"]).is_file()
    arm = [s for s in spawners if _spawned(s)[0] == CONFIG.arm.controller]
    assert len(arm) == 1 and _spawned(arm[0])[1]["-c"] == CONFIG.recovery.controller_manager == "/controller_manager"
    assert arm[0].with_driver  # spawned again after every restart of franka's driver
    params = _params(_spawned(arm[0])[1]["--param-file"], CONFIG.arm.controller)
    assert params["type"] == "joint_trajectory_controller/JointTrajectoryController"  # in its own section
    assert params["command_interfaces"] == ["effort"] and params["interpolate_from_desired_state"] is False
    assert CONFIG.arm.trajectory_topic == f"/{CONFIG.arm.controller}/joint_trajectory"
    # franka.launch.py remaps the joint_state_broadcaster to franka/joint_states; its
    # joint_state_publisher publishes the merged /joint_states
    assert CONFIG.arm.state_topic == "/franka/joint_states" and CONFIG.merged_joint_states == "/joint_states"


def test_collision_thresholds_and_load_are_set_through_frankas_services_before_the_arm_controller():
    """franka_hardware's parameter services answer only in idle mode (franka_bringup doc: no
    controller may claim a command interface): both calls come before the arm controller's
    spawner, with the robot configuration's values (DROID's 40 Nm / 40 N) in franka_msgs' fields."""
    calls = [s for s in STEPS if isinstance(s, CallService)]
    assert {c.service for c in calls} == set(FRANKA_SERVICES)
    for call in calls:
        fields = FRANKA_SERVICES[call.service]
        assert set(call.request) == set(fields), call.service
        for name, size in fields.items():
            value = call.request[name]
            assert (len(value) if isinstance(value, list) else 0) == size, (call.service, name)
    collision = next(c for c in calls if c.service.endswith("set_full_collision_behavior")).request
    assert collision["lower_torque_thresholds_nominal"] == CONFIG.franka.collision_torque == [40.0] * 7
    assert collision["upper_force_thresholds_acceleration"] == CONFIG.franka.collision_force == [40.0] * 6
    load = next(c for c in calls if c.service.endswith("set_load")).request
    assert load["mass"] == CONFIG.franka.load_mass > 0.9  # the Robotiq 2F-85 alone is 0.925 kg
    spawner = next(i for i, s in enumerate(STEPS) if isinstance(s, RunNode) and s.arguments[:1] == [
        CONFIG.arm.controller])
    assert all(STEPS.index(c) < spawner for c in calls)
    command = shell_commands(calls)[0]
    assert command.startswith("ros2 service call /service_server/set_full_collision_behavior "
                              "franka_msgs/srv/SetFullCollisionBehavior '{lower_torque_thresholds_acceleration: [40.0")


def test_a_multi_camera_rig_without_every_serial_number_is_refused():
    """zed_camera.launch.py (v5.4.0, lines 531-542): the serial number or camera id "is mandatory
    ... in multi-camera rigs"; without it every wrapper opens the first camera it finds."""
    with pytest.raises(IndGenError, match=r"a rig of 3 ZED cameras needs each one's serial number.*"
                                          r"set exterior_1_serial:=<sn>, exterior_2_serial:=<sn>"):
        cell_steps(CONFIG, FOLDER, {"robot_ip": "172.16.0.2", "wrist_serial": "123"})
    single = CONFIG.model_copy(update={"cameras": {"wrist": CONFIG.cameras["wrist"]}})
    assert cell_steps(single, FOLDER, {"robot_ip": "172.16.0.2"})  # one camera: the first found is it
    out = subprocess.run([sys.executable, "-m", "indgen_core.cli", "bringup", "--robot-ip", "1.2.3.4"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "serial number" in out.stderr and "Traceback" not in out.stderr


def test_a_franka_ros2_that_cannot_recover_in_place_is_refused(tmp_path):
    """franka_hardware recovers in place after a reflex from v3.3.0 (franka_ros2 CHANGELOG.rst:
    3.3.0 "make FrankaHardwareInterface error recoverable"; franka_hardware/doc/index.rst
    "v2.4.0+ and v3.3.0+"); the version shows only in its package.xml."""
    def prefix(version: str) -> str:
        folder = tmp_path / version / "share" / "franka_hardware"
        folder.mkdir(parents=True)
        (folder / "package.xml").write_text(f"<package format='3'><name>franka_hardware</name>"
                                            f"<version>{version}</version></package>")
        return str(tmp_path / version)

    problem = franka_version_problem(CONFIG.franka.min_version, [prefix("3.2.2")])
    assert problem and problem.startswith("franka_ros2's franka_hardware 3.2.2 is older than 3.3.0"), problem
    assert franka_version_problem("3.3.0", [prefix("3.4.0")]) is None
    assert franka_version_problem("3.3.0", [str(tmp_path / "nothing")]) is None  # not here: another computer's


def test_the_robotiq_runs_on_its_own_namespaced_controller_manager_with_a_position_controller():
    gripper = [s for s in STEPS if isinstance(s, RunNode) and s.namespace == GRIPPER_NAMESPACE]
    assert [s.executable for s in gripper] == ["robot_state_publisher", "ros2_control_node"]
    spawned = [_spawned(s) for s in STEPS if isinstance(s, RunNode) and s.executable == "spawner"
               and _spawned(s)[1]["-c"] == f"/{GRIPPER_NAMESPACE}/controller_manager"]
    names = [c for c, _ in spawned]
    assert names == ["joint_state_broadcaster", "robotiq_activation_controller", "robotiq_position_controller"]
    assert "robotiq_gripper_controller" not in names  # it would claim the knuckle's position interface
    manager = _params(gripper[1].parameter_files[0], "controller_manager")
    assert 1.0 / manager["update_rate"] >= ROBOTIQ_COMMS_PERIOD_S  # no faster than the driver reads the gripper
    for name in names:
        assert "type" in manager[name], name
    assert manager["robotiq_position_controller"]["type"] == "position_controllers/JointGroupPositionController"
    position = _params(gripper[1].parameter_files[0], "robotiq_position_controller")
    assert position["joints"] == [CONFIG.gripper.joint]
    # a forward command controller subscribes <name>/commands; the broadcaster publishes joint_states,
    # both in the namespace
    assert CONFIG.gripper.command_topic == f"/{GRIPPER_NAMESPACE}/robotiq_position_controller/commands"
    assert CONFIG.gripper.state_topic == f"/{GRIPPER_NAMESPACE}/joint_states"
    package, file, xacro_args = gripper[0].xacro_parameters["robot_description"]
    assert (package, file) == ("robotiq_description", "urdf/robotiq_2f_85_gripper.urdf.xacro")
    assert set(xacro_args) == {"use_fake_hardware", "com_port"}


def test_one_zed_wrapper_per_camera_on_the_topics_the_policy_node_reads():
    zeds = [s for s in STEPS if isinstance(s, IncludeLaunch) and s.package == "zed_wrapper"]
    assert len(zeds) == len(CONFIG.cameras)
    for step, topic in zip(zeds, CONFIG.cameras.values(), strict=True):
        assert set(step.arguments) <= ZED_LAUNCH_ARGUMENTS
        assert topic == f"/{step.arguments['camera_name']}/zed_node/rgb/color/rect/image"  # v5.1+ names
        overrides = yaml.safe_load(Path(step.arguments["ros_params_override_path"]).read_text())
        assert overrides["/**"]["ros__parameters"]["depth"]["depth_mode"] == "NONE"
    assert [z.arguments["serial_number"] for z in zeds] == ["31", "32", "123"]


def test_the_cell_launch_file_takes_indgens_arguments_and_starts_the_real_graph():
    spec = importlib.util.spec_from_file_location("fr3_cell_launch", REPO / "launch" / "fr3_cell.launch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # no `launch` package needed until generate_launch_description()
    profile = load_profile(module.PROFILE)
    assert not set(CELL_ARGUMENTS) & set(profile.spec.arguments)  # no argument means two things
    assert set(module.DEFAULTS) <= set(profile.spec.arguments)
    steps, nodes = module.describe(robot_ip="172.16.0.2", **SERIALS)
    names = [n.name for n in nodes]
    assert "fr3_runner" in names and "fr3_stand_in" not in names and "sim_bridge" not in names
    runner = next(n for n in nodes if n.name == "fr3_runner")
    assert runner.parameters["recovery"] == "franka"
    assert [type(s) for s in steps] == [type(s) for s in STEPS]


def test_indgen_bringup_prints_the_plan_and_the_documentation_shows_it():
    serials = [f"--{k.replace('_', '-')}={v}" for k, v in {k: f"<{k.split('_serial')[0]}-sn>"
                                                           for k in SERIALS}.items()]
    out = subprocess.run([sys.executable, "-m", "indgen_core.cli", "bringup", "--robot-ip", "<robot-ip>",
                          "--installed", *serials], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    commands = [line for line in out.stdout.splitlines() if line.startswith("ros2 ")]
    steps = cell_steps(CONFIG, Path("$(ros2 pkg prefix indgen)/share/indgen/config/robots"),
                       {"robot_ip": "<robot-ip>", **{k: f"<{k.split('_serial')[0]}-sn>" for k in SERIALS}})
    assert commands == shell_commands(steps)
    doc = (REPO / "docs" / "real-robot.md").read_text()
    for command in commands:
        assert command in doc, f"docs/real-robot.md does not show: {command}"
    refused = subprocess.run([sys.executable, "-m", "indgen_core.cli", "bringup"], capture_output=True, text=True,
                             timeout=60)
    assert refused.returncode != 0 and "set robot_ip" in refused.stderr and "Traceback" not in refused.stderr


def test_every_robot_configuration_file_named_exists():
    for name in ("arm_controllers", "gripper_controllers", "camera_overrides"):
        assert (FOLDER / getattr(CONFIG.bringup, name)).is_file(), name
