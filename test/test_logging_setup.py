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
