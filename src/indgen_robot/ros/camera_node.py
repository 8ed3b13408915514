"""camera_node: cameras without a ROS driver, through OpenCV's VideoCapture (a device index,
a video file or a stream URL), published as sensor_msgs/Image where the policy node reads
them (the robot configuration's camera topics, else /cameras/<name>/image_raw).

Parameters and endpoints: indgen_robot/node_interfaces.py (docs/reference/nodes.md).

Each frame is stamped when it was read from the camera, not when it is published, so the
policy node judges its age by what it shows.

A camera that cannot be opened is one sentence and exit status 2; one that stops delivering
is reported (throttled) and retried, and publishes nothing meanwhile, so the policy node's
frame-age check makes the runner hold rather than act on an old frame.

A device (not a file or a stream) is asked for the capture mode the robot configuration
names (`uvc`: a ZED over UVC at HD720, both eyes side by side at 2560 x 720, 15 fps); what the
device really delivers is read back and a mismatch said in one sentence. The image is the left
eye as the sensor gives it, **not rectified**: the ZED wrapper's rgb/color/rect/image is
undistorted and rectified from the camera's factory calibration, which UVC does not apply. A
policy trained on the wrapper's images sees slightly different geometry here (docs/real-robot.md).
"""

from __future__ import annotations

import threading
import time

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image

from indgen_core import topics
from indgen_core.errors import IndGenError, require
from indgen_core.lists import parse_names
from indgen_core.ros import fr3
from indgen_core.ros.base import LOCKSTEP, read_parameters, run_node
from indgen_robot.node_interfaces import CAMERA_NODE_ENDPOINTS
from indgen_robot.node_interfaces import CameraNodeParameters as Parameters
from indgen_robot.ros.policy_io import camera_topics_of, robot_of


def parse_sources(text: str) -> dict[str, str]:
    out = {}
    for item in parse_names(text):
        name, sep, source = item.partition("=")
        if not sep or not name.strip() or not source.strip():
            raise IndGenError(f"camera sources are written name=source, got {item.strip()!r}")
        out[name.strip()] = source.strip()
    if not out:
        raise IndGenError("set 'sources', e.g. exterior_1=0,wrist=/dev/video2")
    return out


STEREO = ("auto", "left", "none")
#: width / height from which a frame is two eyes side by side (one eye is 16:9, about 1.78)
SIDE_BY_SIDE_ASPECT = 3.0


def left_eye(frame: np.ndarray, stereo: str) -> np.ndarray:
    """The left half of a side-by-side stereo frame (stereo `left`, or `auto` on a frame that
    is at least three times as wide as high); the frame itself otherwise."""
    height, width = frame.shape[:2]
    if stereo == "left" or (stereo == "auto" and width >= SIDE_BY_SIDE_ASPECT * height):
        return frame[:, : width // 2]
    return frame


def is_device(source: str) -> bool:
    """A camera device (an index or /dev/video*), not a file or a stream."""
    return source.isdigit() or source.startswith("/dev/video")


def set_capture_mode(capture, cv2, name: str, mode) -> str | None:
    """Ask a device for `mode` (width, height, fps) and read back what it took; one sentence
    when it differs (a UVC device offers fixed modes: the nearest one wins), else None."""
    wanted = {cv2.CAP_PROP_FRAME_WIDTH: mode.width, cv2.CAP_PROP_FRAME_HEIGHT: mode.height, cv2.CAP_PROP_FPS: mode.fps}
    for prop, value in wanted.items():
        capture.set(prop, float(value))
    got = [capture.get(prop) for prop in wanted]
    if [round(g) for g in got] != [round(float(v)) for v in wanted.values()]:
        return (
            f"camera '{name}' delivers {got[0]:.0f} x {got[1]:.0f} at {got[2]:g} fps, not the robot configuration's "
            f"{mode.width} x {mode.height} at {mode.fps:g} fps (uvc): the device has no such mode"
        )
    return None


class Camera:
    def __init__(
        self,
        name: str,
        source: str,
        size: tuple[int, int],
        loop: bool,
        log,
        stereo: str = "auto",
        clock=None,
        mode=None,
    ):
        cv2 = require("cv2", "all", "camera_node")
        self.cv2, self.name, self.source, self.size, self.loop, self.log = cv2, name, source, size, loop, log
        self.capture = cv2.VideoCapture(int(source) if source.isdigit() else source)
        if not self.capture.isOpened():
            raise IndGenError(f"camera '{name}': cannot open {source!r} (no such device, file or stream)")
        if mode is not None and is_device(source):
            problem = set_capture_mode(self.capture, cv2, name, mode)
            if problem:
                log.warning(problem)
        self.frame: np.ndarray | None = None
        self.stamp = None
        self.frames = 0
        self.stereo = stereo
        self.clock = clock
        self.lock = threading.Lock()

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            ok, frame = self.capture.read()
            if not ok and self.loop:
                self.capture.set(self.cv2.CAP_PROP_POS_FRAMES, 0)
                ok, frame = self.capture.read()
            if not ok or frame is None:
                with self.lock:
                    self.frame = None
                self.log.warning(
                    f"camera '{self.name}' ({self.source}) delivers no frames; retrying", throttle_duration_sec=5.0
                )
                stop.wait(0.5)
                continue
            stamp = self.clock.now().to_msg() if self.clock is not None else None
            frame = left_eye(frame, self.stereo)
            if self.size[0] and self.size[1]:
                frame = self.cv2.resize(frame, (self.size[1], self.size[0]), interpolation=self.cv2.INTER_AREA)
            with self.lock:
                self.frame, self.stamp, self.frames = frame, stamp, self.frames + 1
            if self.loop:  # a file plays at its own speed, not as fast as it decodes
                stop.wait(1.0 / 30)

    def latest(self):
        """(frame, stamp when it was read), or (None, None) when no new frame came."""
        with self.lock:
            frame, stamp, self.frame = self.frame, self.stamp, None
        return frame, stamp


class CameraNode(Node):
    ENDPOINTS = CAMERA_NODE_ENDPOINTS  # held to what it creates: ros.base.check_endpoints

    def __init__(self) -> None:
        super().__init__("camera_node")
        self.p = read_parameters(self, Parameters)
        if self.p.rate_hz <= 0:
            raise IndGenError(f"rate_hz must be positive, got {self.p.rate_hz}")
        if self.p.stereo not in STEREO:
            raise IndGenError(f"stereo must be one of {', '.join(STEREO)}, got {self.p.stereo!r}")
        named = camera_topics_of(self.p.robot)
        mode = robot_of(self.p.robot).uvc if self.p.robot else None
        self.stop = threading.Event()
        self.cameras = {}
        for name, source in parse_sources(self.p.sources).items():
            camera = Camera(
                name,
                source,
                (self.p.height, self.p.width),
                self.p.loop,
                self.get_logger(),
                self.p.stereo,
                self.get_clock(),
                mode,
            )
            topic = named.get(name, topics.camera_topic(name))
            self.cameras[name] = (camera, self.create_publisher(Image, topic, LOCKSTEP))
            threading.Thread(target=camera.run, args=(self.stop,), daemon=True, name=f"camera-{name}").start()
            self.get_logger().info(f"camera '{name}' from {source} on {topic}")
        self.create_timer(1.0 / self.p.rate_hz, self._publish)

    def _publish(self) -> None:
        for name, (camera, pub) in self.cameras.items():
            frame, stamp = camera.latest()
            if frame is not None:
                pub.publish(fr3.image_msg(np.asarray(frame, dtype=np.uint8), "bgr8", stamp, name))

    def close(self) -> None:
        self.stop.set()
        time.sleep(0.05)
        for camera, _ in self.cameras.values():
            camera.capture.release()


def main() -> int:
    return run_node(CameraNode)


if __name__ == "__main__":
    raise SystemExit(main())
