"""Start and stop `indgen serve-policy` for tests, on a free loopback port."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.request

from helpers.procs import LoggedProcess
from indgen_core.waiting import wait_until


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port: int, timeout: float = 60.0, proc: LoggedProcess | None = None) -> None:
    def healthy() -> bool:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"policy server exited: {proc.output()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    if not wait_until(healthy, timeout, poll=0.1):
        raise TimeoutError(f"no policy server on port {port}")


def start_server(policy: str, port: int, *extra: str, env=None) -> LoggedProcess:
    proc = LoggedProcess([sys.executable, "-m", "indgen_core.cli", "serve-policy", policy, "--port", str(port),
                          *extra], env=env)
    wait_healthy(port, proc=proc)
    return proc


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
