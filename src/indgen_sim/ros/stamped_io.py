"""The world side of a stamped lock-step tick, shared by the FR3 twin and LIBERO: each tick
publishes the world's own state topics, the privileged object poses and then
/indgen/control_tick, all with the tick's stamp, and waits for the commands that echo the
tick's sequence number (layout.data_offset). A late, repeated or malformed command is dropped
and never applied. Subclasses add their state publishers and command subscriptions.

Camera images go out in one of two ways (`render`): `on_request` (the default) sends them
only when the policy node asks for this tick's cameras (/indgen/image_request: it makes a
request to the policy on this tick), rendered from this tick's state, the same pixels as
rendering every tick; `every_tick` sends every camera on every tick (a bag whose videos have
a frame per tick, or a subscriber other than the policy node that wants every frame)."""

from __future__ import annotations

import numpy as np
from sensor_msgs.msg import Image
from std_msgs.msg import Float64MultiArray

from indgen_core import topics
from indgen_core.nodes.lockstep import AnswerSlot
from indgen_core.ros import fr3
from indgen_core.ros.base import LOCKSTEP, TICKS, subscribe
from indgen_msgs.msg import ControlTick, ImageRequest, ObjectPoses

RENDER_MODES = ("on_request", "every_tick")
MIN_SIDE, MAX_SIDE = 16, 2048  # pixels a side of an image asked for at another size


class StampedWorldIO:
    #: command parts a tick waits for (one subscription each, see `command`)
    parts: tuple[str, ...] = ("action",)
    frame_id = "world"

    def __init__(self, node, world, render: str = "on_request"):
        if render not in RENDER_MODES:
            from indgen_core.errors import IndGenError

            raise IndGenError(f"render must be one of {', '.join(RENDER_MODES)}, got {render[:40]!r}")
        self.node, self.world = node, world
        self.on_request = render == "on_request"
        self.tick_pub = node.create_publisher(ControlTick, topics.CONTROL_TICK, TICKS)
        self.pose_pub = node.create_publisher(ObjectPoses, topics.OBJECT_POSES, TICKS)
        self.image_pubs = {
            cam: node.create_publisher(Image, topics.camera_topic(cam), LOCKSTEP)
            for cam in getattr(world, "cameras", [])
        }
        self.slot = AnswerSlot(self.parts)
        self.sequence = 0
        self.malformed = 0
        if self.image_pubs:
            subscribe(node, ImageRequest, topics.IMAGE_REQUEST, lambda m: self.slot.ask(m.sequence, m), LOCKSTEP)

    @property
    def stale(self) -> int:
        return self.slot.stale

    def command(self, topic: str, part: str, read) -> None:
        """Subscribe a Float64MultiArray command; `read` validates it (BadCommand: dropped)."""

        def take(msg: Float64MultiArray) -> None:
            try:
                value = read(msg)
            except fr3.BadCommand as exc:
                self.malformed += 1
                self.node.get_logger().error(f"{part} command dropped: {exc}", throttle_duration_sec=2.0)
                return
            self.slot.offer(msg.layout.data_offset, value, part)

        subscribe(self.node, Float64MultiArray, topic, take, LOCKSTEP)

    def publish_state(self, obs, stamp) -> None:
        """The world's own state topics of this tick."""
        raise NotImplementedError

    def exchange(self, setup, step: int, obs, stamp, timeout: float, should_abort) -> dict:
        self.sequence = (self.sequence + 1) % 2**32
        self.slot.expect(self.sequence)
        self.publish_state(obs, stamp)
        images = obs.get("images") or {}
        on_request = self.on_request and bool(images)
        if not on_request:
            self._send_images(images, list(images), stamp)
        if obs.get("objects"):
            self.pose_pub.publish(
                fr3.object_poses(
                    obs["objects"], stamp, self.frame_id, obs.get("pick", ""), obs.get("place", ""), obs.get("grasp")
                )
            )
        tick = ControlTick(trial_id=setup.trial_id, step=step, sequence=self.sequence, images_on_request=on_request)
        tick.header.stamp = stamp
        self.tick_pub.publish(tick)

        def serve(request: ImageRequest) -> None:
            self._send_images(images, list(request.cameras), stamp, (int(request.height), int(request.width)))

        return self.slot.wait(timeout, should_abort, f"step {step}", serve)

    def _send_images(self, images, cameras: list[str], stamp, size: tuple[int, int] = (0, 0)) -> None:
        """This tick's frames of `cameras` (rendered now when the world renders on read); a
        camera or size this world cannot render is one log line, and nothing is sent for it."""
        if all(size) and not all(MIN_SIDE <= side <= MAX_SIDE for side in size):
            self.node.get_logger().error(
                f"image size {size[1]} x {size[0]} asked for is outside {MIN_SIDE}.."
                f"{MAX_SIDE} pixels a side; sending the configured size",
                throttle_duration_sec=5.0,
            )
            size = (0, 0)
        for cam in cameras[:8]:
            if cam not in self.image_pubs or cam not in images:
                self.node.get_logger().error(
                    f"camera {cam[:40]!r} asked for, but this world renders "
                    f"{', '.join(self.image_pubs) or 'no cameras'}",
                    throttle_duration_sec=5.0,
                )
                continue
            try:
                rgb = images[cam]
                render = getattr(self.world, "render", None)
                if all(size) and tuple(np.shape(rgb)[:2]) != size and render is not None:
                    rgb = render(cam, size)  # a size other than the configured one, same state
            except Exception as exc:  # a frame that cannot be made is not sent
                self.node.get_logger().error(
                    f"camera {cam} could not be rendered: {str(exc)[:200]}", throttle_duration_sec=5.0
                )
                continue
            self.image_pubs[cam].publish(fr3.image(rgb, stamp, cam))
