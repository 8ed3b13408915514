"""Bringing a faulted robot back: franka_hardware's documented procedure (franka_ros2 `jazzy`,
franka_hardware/doc/index.rst, "Error Recovery"), in two stages, three ways.

`restore_state()`, which moves nothing:
1. error recovery: the `/action_server/error_recovery` action (franka_msgs/action/ErrorRecovery,
   an empty goal; franka_action_server.cpp runs libfranka's automaticErrorRecovery()); before
   it, whether the robot was in a fault at all (controller_manager's list_hardware_components:
   a hardware component still active had no reflex);
2. the hardware component active again: controller_manager's
   `set_hardware_component_state` (controller_manager_msgs/srv/SetHardwareComponentState);
3. the broadcasters the fault deactivated, activated again: `switch_controller`
   (controller_manager_msgs/srv/SwitchController). No controller claims a command interface,
   so the robot stays in franka's idle mode, holding itself; the arm's state comes back, and
   with it franka's report of what stopped it.
`enable_torque()`: the arm controller activated (it claims the effort interface and starts by
holding the measured position). The runner calls it only once the operator has acknowledged
the stop in the console: a person may be at the arm.

- `franka`: those interfaces, where franka_msgs and controller_manager_msgs can be imported
  (a ROS 2 install; neither is on PyPI). Unverified: nothing here has met a real robot.
- `stand_in`: the hardware stand-in's std_srvs/Trigger services, one per step, in place of
  the three above (their message packages are not on PyPI).
- `manual`: the runner says what to run and waits for the arm's state to come back.
"""

from __future__ import annotations

from std_srvs.srv import Trigger

from indgen_core import topics
from indgen_core.cell.robot_config import RobotConfig
from indgen_core.errors import IndGenError
from indgen_core.ros.waits import ActionClient, wait_future, wait_result, wait_server
from indgen_robot.safety import Recovery

#: how long a recovery step waits for its server to be there: a driver that is up answers at once
SERVER_WAIT_S = 3.0


def broadcasters(config: RobotConfig) -> list[str]:
    """The controllers a fault deactivated that read only (the arm controller aside)."""
    return [c for c in config.recovery.controllers if c != config.arm.controller]


def manual_steps(config: RobotConfig) -> str:
    r = config.recovery
    return (
        f"ros2 action send_goal {r.error_recovery_action} franka_msgs/action/ErrorRecovery {{}}; "
        f"ros2 control set_hardware_component_state -c {r.controller_manager} {r.hardware_component} active; "
        f"ros2 control switch_controllers -c {r.controller_manager} --activate {' '.join(r.controllers)}"
    )


class StandInRecovery:
    def __init__(self, node, config: RobotConfig):
        self.config = config
        self.clients = {
            step: node.create_client(Trigger, f"{topics.STAND_IN}/{step}")
            for step in (*topics.STAND_IN_STATE_STEPS, topics.STAND_IN_TORQUE_STEP)
        }

    def describe(self) -> str:
        return (
            "the stand-in's error_recovery, activate_hardware and activate_broadcasters services, then "
            "activate_arm_controller once the operator acknowledges"
        )

    def _call(self, step: str, first: bool) -> tuple[Recovery | None, str]:
        timeout, client = self.config.recovery.timeout_s, self.clients[step]
        if not wait_server(client, SERVER_WAIT_S):
            return Recovery(False, f"no {client.srv_name} service", reachable=not first), ""
        future = client.call_async(Trigger.Request())
        if not wait_future(future, timeout):
            return Recovery(False, f"{step}: no answer within {timeout:g} s", reachable=not first), ""
        if not future.result().success:
            return Recovery(False, f"{step}: {future.result().message}"), ""
        return None, future.result().message

    def restore_state(self) -> Recovery:
        found_fault = None
        for i, step in enumerate(topics.STAND_IN_STATE_STEPS):
            failed, message = self._call(step, first=i == 0)
            if failed is not None:
                return failed
            if step == "error_recovery":
                found_fault = message != topics.STAND_IN_NO_FAULT
        return Recovery(True, "the robot's state restored (stand-in); torque control off", found_fault=found_fault)

    def enable_torque(self) -> Recovery:
        failed, _ = self._call(topics.STAND_IN_TORQUE_STEP, first=True)
        return failed or Recovery(True, "torque control re-enabled (stand-in)")


class FrankaRecovery:
    def __init__(self, node, config: RobotConfig):
        try:
            from controller_manager_msgs.srv import ListHardwareComponents, SetHardwareComponentState, SwitchController
            from franka_msgs.action import ErrorRecovery
        except ImportError:
            raise IndGenError(
                "recovery.method 'franka' needs franka_msgs and controller_manager_msgs (a ROS 2 Jazzy "
                "install with franka_ros2 sourced; neither is on PyPI): source it, or set "
                "recovery:=manual and recover the robot by hand when asked"
            ) from None
        from indgen_robot.bringup import franka_version_problem

        problem = franka_version_problem(config.franka.min_version)
        if problem:
            raise IndGenError(problem)
        r = config.recovery
        self.config = config
        self.types = (ErrorRecovery, SetHardwareComponentState, SwitchController, ListHardwareComponents)
        self.components = node.create_client(ListHardwareComponents, f"{r.controller_manager}/list_hardware_components")
        self.action = ActionClient(node, ErrorRecovery, r.error_recovery_action)
        self.hardware = node.create_client(
            SetHardwareComponentState, f"{r.controller_manager}/set_hardware_component_state"
        )
        self.switch = node.create_client(SwitchController, f"{r.controller_manager}/switch_controller")

    def describe(self) -> str:
        r = self.config.recovery
        return (
            f"{r.error_recovery_action}, then {r.controller_manager}'s set_hardware_component_state and "
            "switch_controller; the arm controller once the operator acknowledges (unverified on hardware)"
        )

    def _switch(self, controllers: list[str]) -> Recovery | None:
        switch, r = self.types[2], self.config.recovery
        request = switch.Request(activate_controllers=controllers, strictness=switch.Request.STRICT, activate_asap=True)
        if not wait_server(self.switch, SERVER_WAIT_S):
            return Recovery(False, f"no {self.switch.srv_name} service", reachable=False)
        answer = self.switch.call_async(request)
        if not wait_future(answer, r.timeout_s) or not answer.result().ok:
            return Recovery(False, f"the controllers {', '.join(controllers)} could not be activated")
        return None

    def _in_fault(self) -> bool | None:
        """Whether franka's hardware component is out of its active state (a reflex or fault
        makes controller_manager read() take it down), by list_hardware_components; None when
        that cannot be asked."""
        from lifecycle_msgs.msg import State

        r = self.config.recovery
        if self.components is None or not wait_server(self.components, SERVER_WAIT_S):
            return None
        answer = self.components.call_async(self.types[3].Request())
        if not wait_future(answer, r.timeout_s):
            return None
        for component in answer.result().component:
            if component.name == r.hardware_component:
                return component.state.id != State.PRIMARY_STATE_ACTIVE
        return None

    def restore_state(self) -> Recovery:
        from lifecycle_msgs.msg import State

        error_recovery, set_state = self.types[0], self.types[1]
        r = self.config.recovery
        if not wait_server(self.action, SERVER_WAIT_S):
            return Recovery(False, f"no {r.error_recovery_action} action server", reachable=False)
        found_fault = self._in_fault()
        sent = self.action.send_goal_async(error_recovery.Goal())
        if not wait_future(sent, r.timeout_s) or not sent.result().accepted:
            return Recovery(False, "the error recovery goal was not accepted")
        result = wait_result(sent.result(), r.timeout_s)
        if result is None or result.status != 4:  # GoalStatus.STATUS_SUCCEEDED
            return Recovery(
                False, "error recovery did not succeed (is the arm still in contact, or the user stop pressed?)"
            )
        request = set_state.Request(
            name=r.hardware_component, target_state=State(id=State.PRIMARY_STATE_ACTIVE, label="active")
        )
        if not wait_server(self.hardware, SERVER_WAIT_S):
            return Recovery(False, f"no {self.hardware.srv_name} service", reachable=False)
        answer = self.hardware.call_async(request)
        if not wait_future(answer, r.timeout_s) or not answer.result().ok:
            return Recovery(False, f"{r.hardware_component} could not be set active")
        failed = self._switch(broadcasters(self.config))
        return failed or Recovery(True, "the robot's state restored; torque control off", found_fault=found_fault)

    def enable_torque(self) -> Recovery:
        failed = self._switch([self.config.arm.controller])
        return failed or Recovery(True, "torque control re-enabled")


class ManualRecovery:
    def __init__(self, node, config: RobotConfig):
        self.config = config

    def describe(self) -> str:
        return "by hand (recovery.method manual)"

    def restore_state(self) -> Recovery:
        return Recovery(True, f"waiting for a person to recover the robot: {manual_steps(self.config)}")

    def enable_torque(self) -> Recovery:
        return Recovery(True, "the person who recovered the robot activated its controllers")


RECOVERY = {"franka": FrankaRecovery, "stand_in": StandInRecovery, "manual": ManualRecovery}


def make_recovery(node, config: RobotConfig, method: str):
    if method not in RECOVERY:
        raise IndGenError(f"recovery must be one of {', '.join(RECOVERY)}, got {method!r}")
    return RECOVERY[method](node, config)
