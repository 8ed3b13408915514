"""The `indgen` command itself: version, help everywhere, and the doctor report."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

INDGEN = [sys.executable, "-m", "indgen_core.cli"]


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*INDGEN, *args], capture_output=True, text=True, timeout=timeout)


def test_version_matches_package_xml(repo):
    expected = re.search(r"<version>([^<]+)</version>", (repo / "package.xml").read_text()).group(1)
    proc = run("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"indgen {expected}"


def test_help_lists_commands_and_every_command_has_help():
    from indgen_core.cli import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    assert "doctor" in commands
    for name in commands:
        proc = run(name, "--help")
        assert proc.returncode == 0, (name, proc.stderr)
        assert "usage: indgen " + name in proc.stdout


def test_no_help_text_prints_a_doubled_percent_sign():
    """argparse %-formats an option's help but not a description: `compare --help` printed a
    literal "95%%". Every command and sub-command's help, read in-process."""
    import argparse

    from indgen_core.cli import build_parser

    def walk(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from walk(sub)

    doubled = [p.prog for p in walk(build_parser()) if "%%" in p.format_help()]
    assert doubled == [], doubled


def test_no_command_prints_help_and_fails():
    proc = run()
    assert proc.returncode == 2
    assert "commands" in proc.stdout


def test_unknown_command_is_one_clear_error():
    proc = run("frobnicate")
    assert proc.returncode == 2
    assert "invalid choice: 'frobnicate'" in proc.stderr


def test_doctor_json_reports_every_item():
    proc = run("doctor", "--json")
    assert proc.returncode == 0, proc.stderr
    checks = {c["item"]: c for c in json.loads(proc.stdout)}
    assert set(checks) == {"Python", "rclpy / RMW", "indgen_msgs", "MuJoCo / GL", "torch", "LIBERO",
                           "FR3 model", "openpi-client", "RoboCasa"}
    for item in ("Python", "rclpy / RMW", "indgen_msgs"):
        assert checks[item]["status"] == "ok" and checks[item]["required"]
    assert "rmw_" in checks["rclpy / RMW"]["detail"]
    for c in checks.values():
        assert c["status"] in ("ok", "missing", "warn")
        assert c["status"] == "ok" or c["fix"], f"{c['item']} is not ok but names no fix"
    # this project's set-up installs MuJoCo, torch and openpi-client, and EGL or OSMesa renders
    for item in ("MuJoCo / GL", "torch", "openpi-client"):
        assert checks[item]["status"] == "ok", checks[item]


def test_doctor_table_names_the_fix_for_a_missing_fr3_model(monkeypatch, tmp_path):
    monkeypatch.setenv("MENAGERIE_ROOT", str(tmp_path))  # a folder without franka_fr3/
    proc = run("doctor", "--no-render")
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if "FR3 model" in line)
    assert "warn" in row
    assert "built-in FR3" in proc.stdout and "MENAGERIE_ROOT" in proc.stdout


def test_doctor_fails_when_a_required_item_is_missing(monkeypatch):
    from indgen_core import doctor

    monkeypatch.setattr(doctor, "check_msgs", lambda: doctor.Check("indgen_msgs", doctor.MISSING, "gone",
                                                                   "make setup", required=True))
    results = doctor.run_checks(render_probe=False)
    assert doctor.exit_status(results) == 1


@pytest.mark.parametrize("module", ["indgen_core", "indgen_core.doctor", "indgen_core.cli", "indgen_core.bags.rescore",
                                    "indgen_core.bags.replay", "indgen_core.bags.video", "indgen_core.bags.repair"])
def test_core_imports_without_ros(module):
    """The core stays ROS-free (ARCHITECTURE.md): importing it never loads rclpy."""
    code = f"import sys, {module}; assert 'rclpy' not in sys.modules, sorted(m for m in sys.modules if 'rcl' in m)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_every_command_has_an_example_that_the_parser_takes():
    """Each command's `--help` ends with an example (cli/examples.py), also in the CLI reference;
    each one parses with the real parser, so an option renamed breaks this test, not a reader."""
    import argparse
    import shlex

    from indgen_core.cli import build_parser
    from indgen_core.cli.examples import EXAMPLES

    parser = build_parser()

    def leaves(p, words=()):
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield " ".join(words)
        for action in subs:
            for name, sub in action.choices.items():
                yield from leaves(sub, (*words, name))

    commands = set(leaves(parser))
    assert commands == set(EXAMPLES), (commands ^ set(EXAMPLES))
    for words, example in EXAMPLES.items():
        argv = shlex.split(example)
        assert argv[0] == "indgen" and " ".join(argv[1:]).startswith(words), example
        args, extra = parser.parse_known_args(argv[1:])
        assert extra == [] or all(":=" in e for e in extra), (example, extra)
        assert getattr(args, "func", None) is not None, example
