"""`indgen launch`: bring a graph profile up as separate processes, without ros2 launch.

Every process's output is prefixed with its name. Ctrl-C or SIGTERM stops them all: SIGINT
first (nodes shut down cleanly), SIGTERM after a grace period, SIGKILL last. When a node
marked `required` exits, the launch ends with its exit status; a node marked `respawn` that
dies is started again after RESPAWN_DELAY_S (as ros2 launch's respawn=True does); when any
other process dies unexpectedly, the whole graph is stopped and the launch fails (a half
graph is never left running).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from indgen_core.graph import NodeSpec, executable_path
from indgen_core.waiting import wait_until

COLORS = ["36", "33", "35", "32", "34", "31", "96", "93"]
RESPAWN_DELAY_S = 1.0
#: a node that dies this soon after starting, this many times in a row, is not started again:
#: it cannot start (a crash at start-up), and respawning it forever would hide that
CRASH_LOOP_S, CRASH_LOOP_COUNT = 10.0, 3
#: the exit status of a node refusing its configuration (IndGenError): never respawned
CONFIG_ERROR = 2


@dataclass
class Child:
    spec: NodeSpec
    proc: subprocess.Popen
    reader: threading.Thread
    index: int = 0
    respawns: int = 0
    started: float = 0.0
    quick_deaths: int = 0


def _prctl():
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except OSError:  # not Linux / no glibc: the launcher's own shutdown still applies
        return None


_PRCTL = _prctl()  # looked up here, so the forked child only makes one call


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to send SIGTERM when the launcher dies, so that a
    launcher killed with SIGKILL never leaves a half graph running (prctl PR_SET_PDEATHSIG)."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def _niceness() -> int:
    """How far this process yields the CPU: its nice value, or its autogroup's where that is
    higher (a process in its own session is scheduled as a group, and the group's value counts)."""
    niceness = os.nice(0)
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/self/autogroup") as fh:
        niceness = max(niceness, int(fh.read().split()[-1]))  # "/autogroup-123 nice 19"
    return niceness


def _pass_on_niceness(pid: int, niceness: int) -> None:
    """Every node runs in its own session: a terminal's Ctrl-C reaches the launcher alone, which
    stops the graph in order, and a signal to a node reaches its own child processes too. With
    Linux's autogroup scheduling (on by default) a new session is also a new scheduling group,
    and the CPU is shared between groups before any nice value applies, so `nice indgen launch`
    would leave its nodes at full priority beside everything else: give each node's group the
    launcher's niceness (any process may lower the priority of a group of its own user)."""
    if niceness <= 0:
        return
    # no autogroup scheduling here, or the node gone already: nothing to pass on
    with contextlib.suppress(OSError), open(f"/proc/{pid}/autogroup", "w") as fh:
        fh.write(str(niceness))


def command(node: NodeSpec) -> list[str]:
    return [executable_path(node.executable), *node.argv()]


class Launcher:
    def __init__(self, nodes: list[NodeSpec], out=None, grace_s: float = 8.0, env: dict | None = None):
        self.nodes = nodes
        self.out = out or sys.stdout
        self.grace_s = grace_s
        self.env = dict(os.environ if env is None else env, PYTHONUNBUFFERED="1", RCUTILS_COLORIZED_OUTPUT="0")
        self.children: list[Child] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.color = getattr(self.out, "isatty", lambda: False)()
        self.niceness = _niceness()

    def _print(self, name: str, index: int, line: str) -> None:
        prefix = f"[{name}]"
        if self.color:
            prefix = f"\033[{COLORS[index % len(COLORS)]}m{prefix}\033[0m"
        with self._lock:
            self.out.write(f"{prefix} {line}")
            if not line.endswith("\n"):
                self.out.write("\n")
            self.out.flush()

    def _spawn(self, node: NodeSpec, cmd: list[str]) -> subprocess.Popen:
        # preexec_fn runs one prctl call between fork and exec (see _die_with_parent)
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            env=self.env,
            start_new_session=True,
            preexec_fn=_die_with_parent,  # noqa: PLW1509
        )
        _pass_on_niceness(proc.pid, self.niceness)
        return proc

    def start(self) -> None:
        # every child is forked before any reader thread exists
        commands = [(node, command(node)) for node in self.nodes]
        started = [(node, cmd, self._spawn(node, cmd)) for node, cmd in commands]
        for i, (node, cmd, proc) in enumerate(started):
            reader = threading.Thread(target=self._pump, args=(node.name, i, proc), daemon=True)
            reader.start()
            self.children.append(Child(node, proc, reader, index=i, started=time.monotonic()))
            self._print("launch", 7, f"started {node.name} (pid {proc.pid}): {' '.join(cmd)}")

    def _respawn(self, child: Child, code: int) -> None:
        child.reader.join(timeout=1.0)
        child.respawns += 1
        self._print(
            "launch",
            7,
            f"{child.spec.name} died with status {code}; restarting it in {RESPAWN_DELAY_S:g} s "
            f"(respawn {child.respawns})",
        )
        if self._stopping.wait(RESPAWN_DELAY_S):
            return
        cmd = command(child.spec)
        child.proc = self._spawn(child.spec, cmd)
        child.started = time.monotonic()
        child.reader = threading.Thread(target=self._pump, args=(child.spec.name, child.index, child.proc), daemon=True)
        child.reader.start()
        self._print("launch", 7, f"restarted {child.spec.name} (pid {child.proc.pid})")

    def _pump(self, name: str, index: int, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None, "children are spawned with stdout=PIPE"
        for line in proc.stdout:
            self._print(name, index, line)

    def wait(self) -> int:
        """Until a required node exits (its status), a process dies (1), or stop() (130)."""
        while not self._stopping.is_set():
            for child in self.children:
                code = child.proc.poll()
                if code is None:
                    continue
                if child.spec.required:
                    self._print("launch", 7, f"{child.spec.name} exited with status {code}; stopping the graph")
                    self.shutdown()
                    return code
                if child.spec.respawn and code != CONFIG_ERROR:
                    quick = time.monotonic() - child.started < CRASH_LOOP_S
                    child.quick_deaths = child.quick_deaths + 1 if quick else 0
                    if child.quick_deaths < CRASH_LOOP_COUNT:
                        self._respawn(child, code)
                        continue
                    self._print(
                        "launch",
                        7,
                        f"{child.spec.name} died {CRASH_LOOP_COUNT} times within "
                        f"{CRASH_LOOP_S:g} s of starting; not restarting it",
                    )
                self._print("launch", 7, f"{child.spec.name} died with status {code}; stopping the graph")
                self.shutdown()
                return 1
            time.sleep(0.1)
        self.shutdown()
        return 130

    def wait_started(self) -> int:
        """start() then wait()."""
        self.start()
        return self.wait()

    def stop(self, *_args) -> None:
        self._stopping.set()

    def shutdown(self) -> None:
        alive = [c for c in self.children if c.proc.poll() is None]
        for sig, wait in ((signal.SIGINT, self.grace_s), (signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
            for child in alive:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.proc.pid, sig)
            wait_until(lambda: all(c.proc.poll() is not None for c in alive), wait, poll=0.05)  # noqa: B023 (waited for here)
            alive = [c for c in alive if c.proc.poll() is None]
            if not alive:
                break
        for child in self.children:
            child.reader.join(timeout=1.0)


def run(nodes: list[NodeSpec], out=None) -> int:
    launcher = Launcher(nodes, out)
    previous = {sig: signal.signal(sig, launcher.stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        launcher.start()
        return launcher.wait()
    finally:
        launcher.shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
