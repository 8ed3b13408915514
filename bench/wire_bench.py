"""The policy wire's cost and its memory bound under attack, in one run.

    .venv/bin/python bench/wire_bench.py [--requests 500]

1. Decode of a pi0.5-DROID request (two 224 x 224 images, joints, prompt): IndGen's codec
   (dtype allow-list, shape check, owned copy) against openpi-client's msgpack_numpy (the
   baseline, which trusts the peer).
2. Round trip against `indgen serve-policy blockenv_oracle` with IndGen's client and with
   openpi-client's (p50 / p99).
3. The server's memory (VmRSS now, VmHWM = peak): after normal traffic; then while 8 clients
   (the default --max-connections) each send a 63 MiB frame at once (the largest a default
   server accepts); then after the hostile frames (object dtype, a shape past its buffer,
   19 MiB of empty maps, 100,000 nested maps, a 2 GiB declared frame). The documented bound
   is what this prints for the 8 x 63 MiB case.
Runs on loopback only.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request

import msgpack
import numpy as np

MiB = 1024 * 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def memory_mb(pid: int) -> tuple[float, float]:
    out = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out["VmRSS"], out["VmHWM"]


def droid_request() -> dict:
    rng = np.random.default_rng(0)
    return {"observation/exterior_image_1_left": rng.integers(0, 255, (224, 224, 3), dtype=np.uint8),
            "observation/wrist_image_left": rng.integers(0, 255, (224, 224, 3), dtype=np.uint8),
            "observation/joint_position": rng.normal(size=7), "observation/gripper_position": np.zeros(1),
            "prompt": "Place the orange block on the blue block."}


def blockenv_request() -> dict:
    grid = np.zeros((16, 16), dtype=np.uint8)
    grid[8, 8] = 2
    return {"observation/grid": grid, "observation/level": np.int64(0), "episode/seed": np.uint64(1),
            "episode/step": np.int64(0), "episode/id": "bench", "prompt": ""}


def decode_rate(fn, frame: bytes, n: int = 2000) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn(frame)
    return n / (time.perf_counter() - t0)


def round_trips(infer, n: int) -> np.ndarray:
    req = blockenv_request()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        infer(req)
        out.append(time.perf_counter() - t0)
    return np.array(out) * 1000


def huge_header(port: int) -> None:
    import base64
    import os

    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    time.sleep(0.2)
    sock.sendall(b"\x82\xff" + struct.pack(">Q", 2 * 1024**3) + b"\0\0\0\0" + b"x" * 64)
    time.sleep(0.5)
    sock.close()


def send_frame(port: int, data: bytes) -> None:
    """One frame on a fresh connection, then whatever the server answers (or its close)."""
    from websockets.sync.client import connect

    with connect(f"ws://127.0.0.1:{port}", compression=None, max_size=None, open_timeout=30) as ws:
        ws.recv(timeout=30)  # metadata
        ws.send(data)
        with contextlib.suppress(Exception):
            ws.recv(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args()
    from openpi_client import msgpack_numpy
    from openpi_client.websocket_client_policy import WebsocketClientPolicy

    from indgen_core.wire import codec
    from indgen_core.wire.client import RemotePolicy

    frame = msgpack_numpy.packb(droid_request())
    ours, theirs = decode_rate(codec.decode, frame), decode_rate(msgpack_numpy.unpackb, frame)
    print(f"decode of a pi0.5-DROID request ({len(frame) / 1024:.0f} KiB): IndGen {ours:,.0f}/s, openpi-client "
          f"{theirs:,.0f}/s (baseline); ratio {ours / theirs:.2f}")

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "indgen_core.cli", "serve-policy", "blockenv_oracle", "--port",
                               str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        remote = RemotePolicy(f"ws://127.0.0.1:{port}")
        openpi = WebsocketClientPolicy("127.0.0.1", port)
        ours, theirs = round_trips(remote.infer, args.requests), round_trips(openpi.infer, args.requests)
        print(f"round trip, {args.requests} BlockEnv requests (ms): IndGen client p50 {np.median(ours):.2f} p99 "
              f"{np.percentile(ours, 99):.2f}; openpi client (baseline) p50 {np.median(theirs):.2f} p99 "
              f"{np.percentile(theirs, 99):.2f}")
        rss, peak = memory_mb(server.pid)
        print(f"server memory after normal traffic: {rss:.0f} MB (peak {peak:.0f} MB)")

        big = msgpack_numpy.packb({"observation/grid": np.zeros(63 * MiB, dtype=np.uint8)})
        remote.close()
        openpi._ws.close()  # all 8 connection slots for the test below

        threads = [threading.Thread(target=send_frame, args=(port, big)) for _ in range(8)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        rss, peak8 = memory_mb(server.pid)
        print(f"8 clients x 63 MiB frames at once ({time.perf_counter() - t0:.1f} s): peak {peak8:.0f} MB, "
              f"now {rss:.0f} MB; peak over the normal-traffic peak: x{peak8 / peak:.1f}")

        hostile = [msgpack.packb({"x": {b"__ndarray__": True, b"data": b"A" * 48, b"dtype": "|O", b"shape": [6]}}),
                   msgpack.packb({"x": {b"__ndarray__": True, b"data": b"A" * 8, b"dtype": "<f8",
                                        b"shape": [10**6]}}),
                   b"\xdd" + struct.pack(">I", 19 * MiB) + b"\x80" * (19 * MiB),
                   b"\x81\xa1a" * 100_000 + b"\xc0"]
        for data in hostile:
            send_frame(port, data)
        huge_header(port)
        alive = server.poll() is None
        answer = RemotePolicy(f"ws://127.0.0.1:{port}").infer(blockenv_request())["actions"].shape
        rss, peak_after = memory_mb(server.pid)
        print(f"after the hostile frames: alive {alive}, still answering {answer}; peak {peak_after:.0f} MB, "
              f"now {rss:.0f} MB (the crafted frames add {max(peak_after - peak8, 0):.0f} MB to the peak)")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
