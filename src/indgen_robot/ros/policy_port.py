"""The runner's side of the policy node, over ROS: each control tick goes out as a ControlTick
with a new sequence number, and the policy node's arm and gripper commands, which echo that
sequence, are taken into one answer slot, so that a late command for an earlier tick is never
executed as this tick's (the episode loop waits on the slot)."""

from __future__ import annotations

from collections.abc import Callable

from builtin_interfaces.msg import Time

from indgen_core.nodes.lockstep import AnswerSlot
from indgen_msgs.msg import ControlTick


class RosPolicyPort:
    """ControlTick out, the policy node's commands (which echo the tick's sequence) in. It is
    handed what it uses, not the runner: why the policy is not ready (`waiting`, the runner's
    WorldWatch), where ticks go (`publish`) and the node's clock (`now`)."""

    def __init__(
        self,
        waiting: Callable[[], str | None],
        publish: Callable[[ControlTick], None],
        now: Callable[[], Time],
    ):
        self._waiting, self._publish, self._now = waiting, publish, now
        self.slot = AnswerSlot(("arm", "gripper"))
        self.sequence = 0
        self.trial_id = ""

    def ready(self) -> str | None:
        return self._waiting()

    def publish_tick(self, step: int) -> None:
        self.sequence = (self.sequence + 1) % 2**32
        self.slot.expect(self.sequence)
        tick = ControlTick(trial_id=self.trial_id, step=step, sequence=self.sequence, wall_clock=True)
        tick.header.stamp = self._now()
        self._publish(tick)

    def wait(self, timeout, abort, what):
        return self.slot.wait(timeout, abort, what)
