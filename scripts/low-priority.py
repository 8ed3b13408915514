"""Run a command at the lowest priority, in a session of its own, as an interruptible process.

    python scripts/low-priority.py COMMAND [ARGS...]

scripts/run-tests.sh starts the parallel group of the suite through this, beside the
wall-clock-bound cases, which get the machine whenever they want it:
- a session of its own, whose scheduling group is niced to 19: with Linux's autogroup
  scheduling (on by default) the CPU is shared between sessions first, and a nice value counts
  only within one, so a plain `nice` would not hold the group back; the graphs its tests
  launch pass the niceness on to their nodes' sessions (indgen_core/nodes/launcher.py);
- every process niced to 19 too (where autogroups are off, or within the group);
- SIGINT and SIGQUIT back to their defaults: bash starts a background command (`&`) with both
  ignored, and an ignored signal stays ignored across exec, so Python would never raise
  KeyboardInterrupt and a test that interrupts a command (Ctrl-C on an export) would see it
  carry on.
"""

import contextlib
import os
import signal
import sys

if len(sys.argv) < 2:
    sys.exit("usage: low-priority.py COMMAND [ARGS...]")
with contextlib.suppress(PermissionError):  # already a process group leader: a session of its own is not needed
    os.setsid()
with contextlib.suppress(OSError), open("/proc/self/autogroup", "w") as group:  # no autogroups here
    group.write("19")
os.nice(19)
for sig in (signal.SIGINT, signal.SIGQUIT):
    signal.signal(sig, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])
