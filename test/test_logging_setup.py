"""Progress goes through per-module loggers; only the `indgen` command routes them to the
terminal (plain lines on stdout, as print wrote them), and importing a library module
configures nothing."""

from __future__ import annotations

import logging
import subprocess
import sys
import time

import pytest

from indgen_core.cli import logs


@pytest.fixture
def restore_package_loggers():
    saved = {name: (logging.getLogger(name).level, list(logging.getLogger(name).handlers)) for name in logs.PACKAGES}
    yield
    for name, (level, handlers) in saved.items():
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.handlers[:] = handlers


def test_configure_logging_prints_the_message_alone_on_stdout_once(capsys, restore_package_loggers):
    logs.configure_logging()
    logs.configure_logging()  # main() may run more than once in a process: still one line per message
    logging.getLogger("indgen_sim.twin.bc").info("  demonstrations: 10/40 episodes (3 s)")
    logging.getLogger("indgen_sim.twin.vision.features").warning("a warning, plainly")
    logging.getLogger("indgen_sim.twin.bc").debug("not shown at INFO")
    out, err = capsys.readouterr()
    assert out == "  demonstrations: 10/40 episodes (3 s)\na warning, plainly\n"
    assert "not shown" not in out + err


def test_progress_is_logged_by_the_module_logger(caplog):
    from indgen_sim.twin import bc

    with caplog.at_level(logging.INFO, logger="indgen_sim.twin.bc"):
        bc.progress(8, 40, True, time.monotonic())  # every tenth episode only
        bc.progress(9, 40, False, time.monotonic(), ", 7 frames rendered")
    assert [r.name for r in caplog.records] == ["indgen_sim.twin.bc"]
    assert caplog.messages == ["  DAgger: 10/40 episodes (0 s, 7 frames rendered)"]


def test_importing_the_library_configures_no_logging():
    code = (
        "import logging\n"
        "import indgen_sim.blockenv.table1, indgen_sim.twin.bc, indgen_sim.twin.vision.training\n"
        "import indgen_sim.libero.certify\n"
        "assert not logging.root.handlers and not logging.getLogger('indgen_sim').handlers\n"
        "assert logging.getLogger('indgen_sim').level == logging.NOTSET\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_repeated_warning_is_said_once_then_counted():
    """The stand-in's "fell behind" warning was 97 of 181 lines of a launch terminal under a
    one-second throttle: now the first is whole and the rest a count every 30 s."""
    from indgen_core.nodes.repeated import RepeatedWarning

    lines, now = [], [0.0]
    warning = RepeatedWarning(lines.append, every_s=30.0, clock=lambda: now[0])
    for i in range(200):  # a stall every 0.5 s for 100 s, the worst 230 ms
        now[0] = 0.5 * i
        warning.warn("the hardware thread fell behind", 230.0 if i == 77 else 20.0, "ms")
    assert lines[0] == "the hardware thread fell behind (20 ms); repeats are counted, one line per 30 s"
    assert lines[1] == "60 more times in the last 30 s (worst 20 ms): the hardware thread fell behind"
    assert lines[2] == "60 more times in the last 30 s (worst 230 ms): the hardware thread fell behind"
    assert len(lines) == 4 and lines[3].startswith("60 more times in the last 30 s (worst 20 ms)")
