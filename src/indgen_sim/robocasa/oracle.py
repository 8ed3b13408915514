"""RoboCasa's scripted oracle for the pick-and-place tasks: through RoboCasa's own PandaOmron
controllers (OSC_POSE deltas in the base's frame, the mobile base's velocity, the torso), on
privileged state (the object, where it goes, its grasp).

A state machine of waypoints fixed in the world when each phase starts (1.0 = 5 cm per step,
the controller's output_max): raise the torso to take an object out of the wall cabinet; stand
the base STAND_BACK behind what is in the cabinet; drive along the counter when the object is
out of reach; above the object, turn the fingers across its short side, down, close (and try
again if it did not come up); out in front of the cabinet, along it low (under its open doors),
up to the target's height, in, down, open; back out, then the base backs away (or, on the
counter, the hand rises) beyond RoboCasa's 0.25 m. A
waypoint it cannot reach is given up when the hand stops moving. Its successes at each level
are the feasibility certificates of the black-box axes (Appendix B: monotonicity is then
checked after the fact). Written for, and measured on, the reduced kitchen (worker/kitchen.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from indgen_core.policy import Policy

POS_SCALE, ROT_SCALE = 0.05, 0.5  # OSC_POSE output_max (m, rad per step) for an input of 1.0
BASE_GAIN = 4.0  # base velocity input per metre of error along its x
MIN_SPEED = 0.7  # the smallest base velocity input sent (below about 0.5 the base barely moves)
CARRY_SPEED = 0.55  # the base's velocity input while the hand holds the object
REACH_X = 0.10  # drive the base when the object is further than this from the base's x
CLEAR = 0.15  # how far in front of the cabinet the hand goes before it moves up or down
STAND_BACK = 0.59  # the base stands at least this far (y) behind what is in the cabinet
LIFT_OVER = 0.02  # m the object is carried above where it goes
TORSO_STEPS = 25  # steps of the torso's full input: it rises 34 cm in about 20
CLOSE_STEPS, OPEN_STEPS, BRAKE_STEPS = 15, 10, 20
RAMP = 0.02  # the base's speed input may grow by this per step
STALL_STEPS = 12  # a waypoint is given up after this many steps without progress
ARRIVED = 0.012  # m: a waypoint is reached
AWAY_BACK = 0.30  # m the base backs away after placing into the cabinet


def _matrix(quat_xyzw) -> np.ndarray:
    x, y, z, w = (float(v) for v in quat_xyzw)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def _wrap_half_turn(a: float) -> float:
    """An angle difference modulo pi (a parallel gripper is symmetric under a half turn)."""
    return (a + np.pi / 2) % np.pi - np.pi / 2


class RobocasaOracle(Policy):
    metadata: Mapping[str, Any] = {"policy": "robocasa_oracle", "spec": "robocasa", "privileged": True}

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.phase, self.count = "start", 0
        self.goal: np.ndarray | None = None
        self.grasp_offset = np.zeros(3)
        self.front_y = 0.0
        self.after_brake = ""
        self.yaw_error = 0.0
        self.speed = 0.0
        self.direction = np.zeros(3)
        self.trail: list[np.ndarray] = []
        self.into_cabinet = True
        self.object_z, self.tries = 0.0, 0
        self.away_y: float | None = None
        self.last_base: np.ndarray | None = None
        self.base_velocity = np.zeros(3)  # m per step, from the last two observations

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        try:
            state = np.asarray(obs["observation/state"], dtype=float).reshape(16)
            pick, place = str(obs["privileged/pick"]), str(obs["privileged/place"])
            obj = np.asarray(obs[f"privileged/objects/{pick}"], dtype=float)[:3]
            target = np.asarray(obs[f"privileged/objects/{place}"], dtype=float)[:3]
            grasp = np.asarray(obs["privileged/grasp"], dtype=float)
        except (KeyError, ValueError) as exc:
            raise ValueError(f"the RoboCasa oracle needs privileged state (simulation only): {exc}") from None
        if int(obs.get("episode/step", 1)) == 0:
            self.reset()
        base_pos, rot = state[7:10], _matrix(state[10:14])
        self.base_velocity = base_pos - self.last_base if self.last_base is not None else np.zeros(3)
        self.last_base = base_pos.copy()
        eef = base_pos + rot @ state[0:3]  # the end effector in the world
        hand = rot @ _matrix(state[3:7])  # the hand's axes in the world; the fingers close along its y
        self.yaw_error = _wrap_half_turn(grasp[3] - float(np.arctan2(hand[1, 1], hand[0, 1])))
        return {"actions": self._step(eef, base_pos, rot, obj, target, grasp)[None, :]}

    # -- one step ------------------------------------------------------------------------------
    def _action(self, rot, eef, goal, grip: float, turn: bool = False) -> np.ndarray:
        a = np.zeros(12)
        a[0:3] = np.clip(rot.T @ (goal - eef) / POS_SCALE, -1, 1)
        if turn:  # about the vertical: the world's z is the base's z (the base stands upright)
            a[5] = np.clip(self.yaw_error / ROT_SCALE, -1, 1)
        a[6] = grip
        return a

    def _base(self, rot, grip: float, velocity_world: np.ndarray) -> np.ndarray:
        """Drive the base (its own frame's velocity input), hold the arm."""
        a = np.zeros(12)
        a[6] = grip
        a[7:9] = (rot.T @ velocity_world)[:2]
        a[11] = 1.0
        return a

    def _drive(self, rot, eef, base, goal: float, grip: float, next_phase: str, axis: int = 0) -> np.ndarray:
        """Drive the base along the world's x (axis 0) or y (1) until it stands within
        REACH_X / 2 of `goal` there. The speed ramps up and, in `_brake`, down: a hard stop
        shakes a held object out of the fingers. Below an input of about 0.5 the base hardly
        moves, so it never commands less than MIN_SPEED."""
        error = goal - base[axis]
        floor, top = (MIN_SPEED, 1.0) if grip < 0.5 else (CARRY_SPEED, CARRY_SPEED + 0.15)
        # the brake's linear ramp covers about half its steps at the present speed: start it
        # that far out, or a long drive ends past its goal
        stopping = abs(self.base_velocity[axis]) * BRAKE_STEPS / 2
        if abs(error) < max(REACH_X / 2, stopping) or self.count > 400:
            self.phase, self.count, self.after_brake = "brake", 0, next_phase
            return self._brake(rot, eef, grip)
        self.count += 1
        wanted = min(top, max(BASE_GAIN * abs(error), floor))
        self.speed = min(wanted, self.speed + RAMP) if self.speed >= floor else floor
        self.direction = np.eye(3)[axis] * np.sign(error)
        return self._base(rot, grip, self.direction * self.speed)

    def _brake(self, rot, eef, grip: float) -> np.ndarray:
        """The base's speed down to zero over BRAKE_STEPS, then the next phase."""
        self.count += 1
        if self.count >= BRAKE_STEPS:
            self.phase, self.count, self.speed = self.after_brake, 0, 0.0
        left = max(0.0, 1.0 - self.count / BRAKE_STEPS)
        return self._base(rot, grip, self.direction * self.speed * left)

    def _go(
        self, rot, eef, goal_of, grip: float, next_phase: str, tolerance: float = ARRIVED, turn: bool = False
    ) -> np.ndarray:
        """Move to a waypoint fixed when the phase starts (`goal_of()` then), not one that moves
        with the object the hand carries."""
        if self.goal is None:
            self.goal = np.asarray(goal_of(), dtype=float)
        goal = self.goal
        self.count += 1
        aligned = not turn or abs(self.yaw_error) < 0.05
        self.trail.append(eef.copy())
        # stalled: the hand moved less than 2 mm in the last STALL_STEPS (it rests on what it
        # pushes against, or the controller's steady-state error keeps it short of the goal)
        stalled = len(self.trail) > STALL_STEPS and np.linalg.norm(self.trail[-1] - self.trail[-STALL_STEPS]) < 0.002
        if (np.linalg.norm(goal - eef) < tolerance and aligned) or (stalled and aligned) or self.count > 150:
            self.phase, self.count, self.goal = next_phase, 0, None
            self.trail.clear()
        return self._action(rot, eef, goal, grip, turn=turn)

    def _step(self, eef, base_pos, rot, obj, target, grasp) -> np.ndarray:
        p = self.phase
        open_, closed = 0.0, 1.0
        if p == "start":
            self.into_cabinet = bool(target[2] > obj[2] + 0.2)
            self.phase = "back_off" if self.into_cabinet else "torso"
            return self._action(rot, eef, eef, open_)
        if p == "brake":
            return self._brake(rot, eef, closed if self.after_brake == "across" else open_)
        top = grasp[2]
        if p == "torso":
            # to take an object out of the wall cabinet the arm comes from the torso raised
            # (34 cm): from below, the forearm meets the cabinet's lower edge before the hand
            # is in; the torso's input moves it (+1 up, 0 holds)
            self.count += 1
            if self.count >= TORSO_STEPS:
                self.phase, self.count = "back_off", 0
            a = self._action(rot, eef, eef, open_)
            a[0:3], a[10] = 0.0, 1.0
            return a
        if p == "back_off":
            # stand STAND_BACK behind what is in the cabinet: the forearm rises to the hand
            # from below, and stood closer it meets the cabinet's lower edge before the hand is in
            self.front_y = min(obj[1], target[1]) - CLEAR
            in_cabinet = target if self.into_cabinet else obj
            stand = in_cabinet[1] - STAND_BACK
            # and not much further: low on the counter the arm reaches less far
            if self.count == 0 and abs(base_pos[1] - stand) <= REACH_X / 2:
                self.phase = "drive_to_object"
                return self._action(rot, eef, eef, open_)
            return self._drive(rot, eef, base_pos, stand, open_, "drive_to_object", axis=1)
        if p == "drive_to_object":
            if self.count == 0 and abs(obj[0] - base_pos[0]) <= REACH_X:  # within reach: no drive
                self.phase = "above"
                return self._action(rot, eef, eef, open_)
            return self._drive(rot, eef, base_pos, obj[0], open_, "above")
        if p == "above":
            height = top + 0.10 if self.into_cabinet else top + 0.03
            return self._go(rot, eef, lambda: [obj[0], self.front_y, height], open_, "over")
        if p == "over":  # just above the object: under a shelf there is no room for more
            above = 0.08 if self.into_cabinet else 0.03
            return self._go(
                rot, eef, lambda: [grasp[0], grasp[1], top + above], open_, "down", tolerance=0.004, turn=True
            )
        if p == "down":
            # at the object's middle (a round object slips from a grasp near its top), the
            # fingertips clear of the counter
            bottom = 2 * obj[2] - top
            grasp_z = max(obj[2], top - 0.05, bottom + 0.025)
            return self._go(rot, eef, lambda: [grasp[0], grasp[1], grasp_z], open_, "close", tolerance=0.006, turn=True)
        if p == "close":
            self.count += 1
            if self.count >= CLOSE_STEPS:
                self.phase, self.count = "lift", 0
                self.grasp_offset, self.object_z = eef - obj, float(obj[2])
            return self._action(rot, eef, eef, closed)
        if p == "lift":
            return self._go(rot, eef, lambda: eef + [0.0, 0.0, 0.04], closed, "check")
        if p == "check":  # the object came up with the hand, or the grasp missed: open and try again
            if obj[2] < self.object_z + 0.01 and self.tries < 3:
                self.tries += 1
                self.phase, self.count = "release_miss", 0
            else:
                self.phase, self.count = "out_front", 0
            return self._action(rot, eef, eef, closed)
        if p == "release_miss":
            return self._go(rot, eef, lambda: eef + [0.0, 0.0, 0.03], open_, "above")
        if p == "out_front":
            return self._go(rot, eef, lambda: [eef[0], self.front_y, eef[2]], closed, "drive_to_target")
        if p == "drive_to_target":  # low, under the cabinet's open doors, which swing out at its ends
            if self.count == 0 and abs(target[0] - base_pos[0]) <= REACH_X:
                self.phase = "across"
                return self._action(rot, eef, eef, closed)
            return self._drive(rot, eef, base_pos, target[0], closed, "across")
        if p == "across":
            return self._go(
                rot, eef, lambda: [target[0] + self.grasp_offset[0], self.front_y, eef[2]], closed, "to_height"
            )
        if p == "to_height":
            return self._go(
                rot, eef, lambda: [eef[0], self.front_y, target[2] + self.grasp_offset[2] + LIFT_OVER], closed, "in"
            )
        if p == "in":
            return self._go(rot, eef, lambda: target + self.grasp_offset + [0.0, 0.0, LIFT_OVER], closed, "place")
        if p == "place":
            return self._go(rot, eef, lambda: target + self.grasp_offset, closed, "open", tolerance=0.008)
        if p == "open":
            self.count += 1
            if self.count >= OPEN_STEPS:
                self.phase, self.count = "retreat", 0
            return self._action(rot, eef, eef, open_)
        if p == "retreat":  # straight back, out of the cabinet
            return self._go(
                rot, eef, lambda: eef + [0.0, -0.20, 0.0], open_, "back_away" if self.into_cabinet else "away"
            )
        if p == "back_away":
            # the base backs away, the arm held: beyond RoboCasa's 0.25 m without moving the arm
            # under the cabinet, where a stretched arm's elbow meets its lower edge when the
            # base stands further back (the horizon axis)
            if self.away_y is None:
                self.away_y = float(base_pos[1]) - AWAY_BACK
            return self._drive(rot, eef, base_pos, self.away_y, open_, "hold", axis=1)
        if p == "hold":
            return self._action(rot, eef, eef, open_)
        # up, away from the counter: beyond RoboCasa's 0.25 m
        return self._go(rot, eef, lambda: eef + [0.0, 0.0, 0.20], open_, "away")
