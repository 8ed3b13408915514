"""fr3_cameras: the cell's ZED cameras for the hardware stand-in, in their own process, as the
ZED wrapper runs one process per camera on the real cell. It renders the stand-in's scene from
the state the stand-in publishes (sim only, /indgen/sim/stand_in/scene_state: the model's
layout and its qpos, stamped) in its own copy of the twin's model, so that rendering and
building ZED-sized frames never hold the stand-in's hardware thread (one Python process
doing both starved franka's 100 Hz broadcaster by up to 180 ms on two cores).

As the ZED wrapper does (zed-ros2-wrapper v5, zed_camera_component_video_depth.cpp):
- per camera, rgb/color/rect/image (bgra8, VOLATILE reliable) and depth/depth_registered
  (32FC1), each rendered and published only while something subscribes
  (areVideoDepthSubscribed and the subscriber counts);
- each frame stamped with its capture time (slTime2Ros(grab timestamp)): here the stamp of
  the state it shows.
A camera can be frozen through /indgen/sim/stand_in/inject ({"camera": NAME, "freeze":
"stop" | "repeat" | "off"}): "stop" publishes nothing (the wrapper skips frames it did not
grab); "repeat" re-sends the last frame with its old stamp (a driver that re-sends).

Parameters and endpoints: indgen_sim/node_interfaces.py (docs/reference/nodes.md)."""

from __future__ import annotations

import json
import threading
import time

import mujoco
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String

from indgen_core.cell.robot_config import load_robot_config
from indgen_core.errors import IndGenError, first_line
from indgen_core.ros import fr3
from indgen_core.ros.base import LATCHED, LOCKSTEP, read_parameters, run_node, subscribe
from indgen_sim.node_interfaces import FR3_CAMERAS_ENDPOINTS, INJECT, SCENE_STATE, STATUS
from indgen_sim.node_interfaces import Fr3CamerasParameters as Parameters
from indgen_sim.twin import scene
from indgen_sim.twin.world import DroidTwinWorld

ENCODINGS = ("bgra8", "bgr8", "rgb8")


def image_message(rgb: np.ndarray, size: tuple[int, int], encoding: str, stamp, frame_id: str) -> Image:
    """An upscaled frame in a camera driver's encoding (bgra8 like the ZED wrapper). The
    channels are arranged at the rendered size and only then repeated up (fewer bytes to move)."""
    height, width = size
    fy, fx = max(height // rgb.shape[0], 1), max(width // rgb.shape[1], 1)
    if encoding == "bgra8":
        small = np.concatenate([rgb[..., ::-1], np.full((*rgb.shape[:2], 1), 255, np.uint8)], axis=2)
    elif encoding == "bgr8":
        small = rgb[..., ::-1]
    else:
        small = rgb
    data = np.repeat(np.repeat(small, fy, axis=0), fx, axis=1)[:height, :width]
    return fr3.image_msg(data, encoding, stamp, frame_id)


def depth_topic(image_topic: str) -> str:
    """The wrapper's depth_registered beside a camera's rgb/color/rect/image."""
    root = image_topic.split("/rgb/", maxsplit=1)[0] if "/rgb/" in image_topic else image_topic.rsplit("/", 1)[0]
    return f"{root}/depth/depth_registered"


def scene_state(world, stamp) -> String:
    """The stand-in's scene as the cameras need it: the model's layout and its qpos."""
    return String(
        data=json.dumps(
            {
                "stamp": [stamp.sec, stamp.nanosec],
                "blue_raise": world.layout.blue_raise,
                "bowl_scale": world.layout.bowl_scale,
                "qpos": world.d.qpos.tolist(),
            }
        )
    )


class Fr3Cameras(Node):
    ENDPOINTS = FR3_CAMERAS_ENDPOINTS  # held to what it creates: ros.base.check_endpoints

    def __init__(self) -> None:
        super().__init__("fr3_cameras")
        self.p = read_parameters(self, Parameters)
        if self.p.encoding not in ENCODINGS:
            raise IndGenError(f"encoding must be one of {', '.join(ENCODINGS)}, got {self.p.encoding!r}")
        if not self.p.camera_hz > 0:
            raise IndGenError(f"camera_hz must be positive, got {self.p.camera_hz}")
        self.config = load_robot_config(self.p.robot)
        self.world = DroidTwinWorld(cameras=[], builtin=self.p.builtin)
        self.image_pubs = {
            cam: self.create_publisher(Image, topic, LOCKSTEP) for cam, topic in self.config.cameras.items()
        }
        self.depth_pubs = {
            cam: self.create_publisher(Image, depth_topic(topic), LOCKSTEP)
            for cam, topic in self.config.cameras.items()
        }
        self.status_pub = self.create_publisher(String, STATUS, LATCHED)
        subscribe(self, String, SCENE_STATE, self._on_state, LOCKSTEP)
        subscribe(self, String, INJECT, self._on_inject, LOCKSTEP)
        self.frozen: dict[str, str] = {}
        self.last_frames: dict[str, Image] = {}
        self.streams_on: set[str] = set()
        self.frames = 0
        self._latest: dict | None = None
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="render", daemon=True)
        self._thread.start()
        self.create_timer(0.5, self._publish_status)

    def _on_state(self, msg: String) -> None:
        state = json.loads(msg.data)
        with self._cond:
            self._latest = state
            self._cond.notify()

    def _on_inject(self, msg: String) -> None:
        order = json.loads(msg.data)
        if "camera" in order:
            if order.get("freeze") == "off":
                self.frozen.pop(order["camera"], None)
            else:
                self.frozen[order["camera"]] = order.get("freeze", "stop")
            self._publish_status()

    def _run(self) -> None:
        period = 1.0 / self.p.camera_hz
        while not self._stop.is_set():
            with self._cond:
                self._cond.wait_for(lambda: self._latest is not None or self._stop.is_set(), timeout=0.5)
                state, self._latest = self._latest, None
            if state is None:
                continue
            started = time.monotonic()
            try:
                self._frames(state)
            except Exception as exc:  # one bad state must not end the cameras
                self.get_logger().error(f"camera frame failed: {first_line(exc)}", throttle_duration_sec=5.0)
            self._stop.wait(max(period - (time.monotonic() - started), 0.0))

    def _scene(self, state: dict) -> None:
        w = self.world
        layout = scene.Layout(blue_raise=float(state["blue_raise"]), bowl_scale=float(state["bowl_scale"]))
        m = w.model(layout)
        if m is not w.m:
            w.m = m
            w._bind(m)
            w._close_renderer()
            w.d = mujoco.MjData(m)
        qpos = np.asarray(state["qpos"], float)
        if qpos.shape != (m.nq,):
            raise ValueError(f"scene state has {qpos.size} positions, the model {m.nq}")
        data = w.d
        assert data is not None, "the world's data exists once its model is bound"
        data.qpos[:] = qpos
        mujoco.mj_forward(m, data)

    def _frames(self, state: dict) -> None:
        from builtin_interfaces.msg import Time

        stamp = Time(sec=int(state["stamp"][0]), nanosec=int(state["stamp"][1]))
        size = (self.p.image_height, self.p.image_width)
        render = (self.p.render_height, self.p.render_width)
        wanted = [
            cam
            for cam, pub in self.image_pubs.items()
            if pub.get_subscription_count() > 0 or self.depth_pubs[cam].get_subscription_count() > 0
        ]
        if wanted:
            self._scene(state)
        for cam in self.image_pubs:
            frozen = self.frozen.get(cam)
            if frozen == "repeat" and cam in self.last_frames:  # a driver re-sending its last frame
                self.image_pubs[cam].publish(self.last_frames[cam])
                continue
            if frozen == "stop" or cam not in wanted:
                continue
            if self.image_pubs[cam].get_subscription_count() > 0:  # the wrapper grabs only what someone reads
                self.streams_on.add(self.config.cameras[cam])
                msg = image_message(self.world.render(cam, render), size, self.p.encoding, stamp, cam)
                self.last_frames[cam] = msg
                self.image_pubs[cam].publish(msg)
                self.frames += 1
            depth_pub = self.depth_pubs[cam]
            if depth_pub.get_subscription_count() > 0:
                self.streams_on.add(depth_pub.topic_name)
                depth = np.asarray(self._depth(cam, render), dtype=np.float32)
                depth_pub.publish(fr3.image_msg(depth, "32FC1", stamp, cam))

    def _depth(self, camera: str, size: tuple[int, int]) -> np.ndarray:
        """Metres along the camera's axis (the ZED wrapper's depth_registered, 32FC1)."""
        w = self.world
        renderer = mujoco.Renderer(w.m, *size)
        try:
            renderer.enable_depth_rendering()
            renderer.update_scene(w.d, camera=camera)
            return renderer.render().astype(np.float32)
        finally:
            renderer.close()

    def _publish_status(self) -> None:
        self.status_pub.publish(
            String(
                data=json.dumps({"streams_on": sorted(self.streams_on), "frozen": self.frozen, "frames": self.frames})
            )
        )

    def close(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify()
        self._thread.join(timeout=2.0)
        self.world.close()


def main() -> int:
    return run_node(Fr3Cameras)


if __name__ == "__main__":
    raise SystemExit(main())
