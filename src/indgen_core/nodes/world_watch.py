"""What every world node (the sim bridge, the FR3 runner) watches while an episode runs, so
that both stop an episode for the same reasons: the policy is lost (its node says so, or its
heartbeat stops), or the progression manager moved on (a task setup newer than the running
episode's: it gave up on this episode, or it was restarted and runs the trial anew), or the
policy announces a robot model other than the world's (a camera policy trained on the other
FR3 model's images: every episode is aborted with that sentence until it is fixed).

The policy node's status names the trial whose setup it took last (a campaign may route each
policy to its own server, and the node switches when a setup names another policy). Only a
status for the running trial says the policy is up for this episode: "connected" from the
previous trial's server, seen before the node took this trial's setup, is not, and the
"switching" that follows it is not a loss but the policy coming up (a starved policy node took
a trial's setup after its episode had started, and the episode was aborted as "policy lost")."""

from __future__ import annotations

import json
import time

from indgen_core.nodes import messages
from indgen_core.policy import robot_mismatch


class WorldWatch:
    def __init__(self, policy_silence_s: float = 5.0, world_robot: str | None = None):
        self.policy_silence_s = policy_silence_s
        self.world_robot = world_robot
        self.mismatch: str | None = None
        self.policy_lost: str | None = None
        self.status_at = 0.0
        self.status_trial = ""  # the trial the policy node's latest status is about
        self.served = False  # the policy was up for the running trial (a loss now stops it at once)
        self.current: tuple[str, int] = ("", 0)  # trial id and setup stamp (ns) of the running episode
        self.moved_on = ""

    def on_policy_status(self, msg) -> None:
        self.status_at = time.monotonic()
        self.status_trial = msg.trial_id
        lost = None if msg.connected else (msg.message[:200] or "policy disconnected")
        if msg.connected:
            try:
                metadata = json.loads(msg.metadata_json[:65536] or "{}")
            except ValueError:
                metadata = {}
            self.mismatch = robot_mismatch(metadata, self.world_robot)
            if self.current[0] and msg.trial_id == self.current[0]:
                self.served = True
        self.policy_lost = lost

    def on_setup(self, msg) -> None:
        if self.current[0] and messages.nanoseconds(msg.header.stamp) > self.current[1]:
            self.moved_on = msg.trial_id[:128] or "another trial"

    def begin(self, trial_id: str, stamp) -> None:
        self.current, self.moved_on = (trial_id, messages.nanoseconds(stamp)), ""
        self.served = self.waiting() is None

    def end(self) -> None:
        self.current = ("", 0)
        self.served = False

    def waiting(self) -> str | None:
        """What the running trial's policy is still waiting for (None: the policy node reports
        itself connected to this trial's server)."""
        if not self.status_at:
            return "no status from the policy node yet"
        if self.policy_lost:
            return f"the policy node reports: {self.policy_lost}"
        if self.status_trial != self.current[0]:
            return f"the policy node has not taken the task setup of {self.current[0]} yet"
        return None

    def reason(self, started: float, grace_s: float) -> str | None:
        """Why the episode that started at `started` must stop now (None: it may go on). A
        policy that was up for this trial and is lost stops it at once; one that is not up for
        it yet (connecting, switching servers, warming up) gets `grace_s` to come up."""
        if self.moved_on:
            return f"the progression manager moved on to {self.moved_on}"
        if self.mismatch:
            return self.mismatch
        if self.policy_lost and (self.served or time.monotonic() - started > grace_s):
            return f"policy lost: {self.policy_lost}"
        silence = time.monotonic() - self.status_at
        if self.status_at and silence > self.policy_silence_s:
            return f"policy lost: no status from the policy node for {silence:.1f} s"
        return None
