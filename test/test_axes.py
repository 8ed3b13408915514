"""Axes as data: the paper's axes, their levels, the Definition-4 checks, and malformed files."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from indgen_core.axes import conditions
from indgen_core.axes.progression import AxisLibrary, UnknownAxisError, library
from indgen_core.configfile import ConfigError

PAPER_AXES = {
    "blockenv_depth", "libero_pick_y", "libero_goal_y", "libero_scale", "libero_distractors",
    "libero_pick_y_x_distractors", "robocasa_pick_x", "robocasa_fixture_x", "robocasa_horizon",
    "robocasa_clutter", "stack", "scale",
}


def indgen(*args, **kw):
    return subprocess.run([sys.executable, "-m", "indgen_core.cli", *args], capture_output=True, text=True,
                          timeout=60, **kw)


def test_every_paper_axis_is_shipped_and_listed():
    assert set(library().names()) >= PAPER_AXES
    proc = indgen("axes", "list")
    assert proc.returncode == 0, proc.stderr
    for name in PAPER_AXES:
        assert name in proc.stdout


@pytest.mark.parametrize("name", sorted(PAPER_AXES))
def test_shipped_axes_pass_definition_4(name):
    report = conditions.check_progression(library().get(name))
    assert report.ok, report.violations()
    assert set(report.summary()) == {"single_axis", "atomic_step", "nesting"}


def test_paper_numbers():
    lib = library()
    assert [lv.value("depth") for lv in lib.get("blockenv_depth").levels()] == list(range(11))
    assert lib.get("blockenv_depth").spec.in_distribution == [0, 1, 2]
    assert [lv.value("pick_offset_y") for lv in lib.get("libero_pick_y").levels()] == [-7.5, -5, -2.5, 0, 2.5, 5, 7.5]
    assert lib.get("libero_goal_y").level(3).value("goal_offset_y") == pytest.approx(11.01)
    assert lib.get("libero_scale").level(-3).value("object_scale") == pytest.approx(1 - 3 * 0.0667)
    assert lib.get("robocasa_fixture_x").level(2).value("fixture_offset_x") == 25.0
    assert lib.get("robocasa_horizon").level(1).value("base_offset_y") == 12.5
    assert lib.get("robocasa_pick_x").spec.parameter.step == 0.2
    assert lib.get("robocasa_clutter").level(4).value("cabinet_clutter") == 4
    assert [lv.value("blue_block_raise") for lv in lib.get("stack").levels()] == [0, 0.25, 0.5, 0.75, 1.0]
    assert lib.get("stack").spec.parameter.unit == "in"
    assert lib.get("scale").spec.regime == "black_box"
    assert lib.get("libero_pick_y").spec.regime == "vanilla"


def test_composition_moves_one_step_of_each_component():
    axis = library().get("libero_pick_y_x_distractors")
    assert axis.is_composed
    assert axis.level(-2).as_dict() == {"pick_offset_y": -5.0, "distractor_count": 2.0}
    assert axis.level(3).as_dict() == {"pick_offset_y": 7.5, "distractor_count": 3.0}
    report = conditions.check_progression(axis)
    assert report.ok
    steps = [f for f in report.findings if f.check == "atomic_step"]
    assert len(steps) == 12  # 6 transitions x 2 parameters


def test_show_stack_prints_inches_and_operator_text():
    proc = indgen("axes", "show", "stack")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for k, inches in enumerate(["0 in", "0.25 in", "0.5 in", "0.75 in", "1 in"]):
        assert f"tau_{k}" in out and inches in out
    assert "Raise the blue block by one 0.25 in spacer: total 0.75 in under it." in out
    assert "no spacer" in out
    assert "single axis ok, atomic step ok, nesting ok" in out


def test_unknown_axis_is_one_sentence():
    with pytest.raises(UnknownAxisError, match="unknown axis 'stak'; did you mean 'stack'"):
        library().get("stak")
    proc = indgen("axes", "show", "stak")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "indgen: error: unknown axis 'stak'; did you mean 'stack'?"


GOOD = """
name: {name}
worlds: [droid_twin]
parameter: {{name: bowl_scale, unit: x, base: 1.0, step: 0.15}}
levels: {{min: 0, max: 3}}
in_distribution: [0]
regime: black_box
language_instruction: Pick up the cup and put it in the black bowl.
"""


def write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(textwrap.dedent(body))
    return path


def lib_with(tmp_path: Path, name: str, body: str) -> AxisLibrary:
    lib = AxisLibrary([])
    for ref in ("libero_pick_y", "libero_distractors"):
        lib.add_file(library().get(ref).path)
    lib.add_file(write(tmp_path, name, body))
    return lib


def test_measured_levels_that_break_the_conditions_are_caught(tmp_path):
    # a physical set of bowls: one bowl is not one step larger, and one changes the cup too
    body = GOOD.format(name="bowls") + textwrap.dedent("""
        context: [{name: cup_height, unit: cm, value: 9.0}]
        measured:
          1: {bowl_scale: 1.15}
          2: {bowl_scale: 1.42}
          3: {bowl_scale: 1.45, cup_height: 10.0}
        step_tolerance: 0.05
    """)
    report = conditions.check_progression(lib_with(tmp_path, "bowls", body).get("bowls"))
    assert not report.ok
    atomic = report.violations("atomic_step")
    assert [f.level for f in atomic] == [2, 3]
    assert "expected one step of +0.15" in atomic[0].detail
    single = report.violations("single_axis")
    assert len(single) == 1 and single[0].level == 3 and "cup_height" in single[0].detail
    assert report.passed("nesting")


def test_measured_values_that_turn_back_fail_nesting(tmp_path):
    body = GOOD.format(name="backwards") + "measured: {2: {bowl_scale: 1.1}}\nstep_tolerance: 0.5\n"
    report = conditions.check_progression(lib_with(tmp_path, "backwards", body).get("backwards"))
    assert [f.level for f in report.violations("nesting")] == [2]


def test_skipped_levels_and_id_gaps_fail_nesting(tmp_path):
    axis = library().get("stack")
    report = conditions.check_progression(axis, axis.levels([0, 1, 3]))
    assert any("skip [2]" in f.detail for f in report.violations("nesting"))
    report = conditions.check_progression(axis, axis.levels([2, 3]))
    assert any("no in-distribution level" in f.detail for f in report.violations("nesting"))
    body = GOOD.format(name="gappy").replace("in_distribution: [0]", "in_distribution: [0, 2]")
    report = conditions.check_progression(lib_with(tmp_path, "gappy", body).get("gappy"))
    assert any("have a gap" in f.detail for f in report.violations("nesting"))


def test_check_command_reports_good_and_bad_files(tmp_path):
    good = write(tmp_path, "good_axis", GOOD.format(name="good_axis"))
    bad = write(tmp_path, "bad_axis", GOOD.format(name="bad_axis") + "measured: {1: {bowl_scale: 1.3}}\n")
    proc = indgen("axes", "check", str(good), str(bad))
    assert proc.returncode == 1
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith(f"ok   {good}")
    assert any(line.startswith(f"FAIL {bad}: atomic step") for line in lines)


# (file name, YAML text, the field the message must name, a phrase it must contain)
MALFORMED = [
    ("syntax", "name: [unclosed\nworlds: x\n", None, "is not valid YAML at line"),
    ("empty", "", None, "is empty"),
    ("alist", "- name: x\n", None, "must be a YAML mapping"),
    ("noname", GOOD.format(name="x").replace("name: x\n", "", 1), "name", "is required"),
    ("typo", GOOD.format(name="typo") + "in_distrbution: [0]\n", "in_distrbution",
     "did you mean 'in_distribution'"),
    ("zerostep", GOOD.format(name="zerostep").replace("step: 0.15", "step: 0"), "parameter.step", "non-zero"),
    ("textstep", GOOD.format(name="textstep").replace("step: 0.15", "step: quarter"), "parameter.step",
     "expected a number, got 'quarter'"),
    ("badunit", GOOD.format(name="badunit").replace("unit: x", "unit: furlong"), "parameter.unit",
     "unknown unit 'furlong'"),
    ("minmax", GOOD.format(name="minmax").replace("{min: 0, max: 3}", "{min: 3, max: 0}"), "levels",
     "min (3) is greater than max (0)"),
    ("lopsided", GOOD.format(name="lopsided").replace("{min: 0, max: 3}", "{min: -1, max: 3}"), "levels",
     "one-sided (min 0) or two-sided"),
    ("idout", GOOD.format(name="idout").replace("in_distribution: [0]", "in_distribution: [7]"), "in_distribution",
     "level 7 lies outside levels 0..3"),
    ("regime", GOOD.format(name="regime").replace("black_box", "grey"), "regime", "'vanilla' or 'black_box'"),
    ("both", GOOD.format(name="both") + "compose: [{axis: libero_pick_y}, {axis: libero_distractors}]\n",
     "parameter", "exactly one of 'parameter'"),
    ("neither", "\n".join(line for line in GOOD.format(name="neither").splitlines() if "parameter" not in line),
     "parameter", "exactly one of 'parameter'"),
    ("onecomp", GOOD.format(name="onecomp").replace(
        "parameter: {name: bowl_scale, unit: x, base: 1.0, step: 0.15}", "compose: [{axis: libero_pick_y}]"),
     "compose", "needs at least two axes"),
    ("unknowncomp", GOOD.format(name="unknowncomp").replace(
        "parameter: {name: bowl_scale, unit: x, base: 1.0, step: 0.15}",
        "compose: [{axis: libero_pick_y}, {axis: no_such_axis}]"), "compose[1].axis", "unknown axis 'no_such_axis'"),
    ("placeholder", GOOD.format(name="placeholder") + "operator_instruction: 'Use bowl {size}'\n",
     "operator_instruction", "unknown placeholder {size}"),
    ("braces", GOOD.format(name="braces") + "operator_instruction: 'Use bowl {value'\n", "operator_instruction",
     "is not a valid template"),
    ("badname", GOOD.format(name="Bad-Name"), "name", "lower-case identifier"),
    ("mismatch", GOOD.format(name="other_name"), "name", "must match the file name 'mismatch.yaml'"),
    ("noworlds", GOOD.format(name="noworlds").replace("worlds: [droid_twin]", "worlds: []"), "worlds",
     "at least 1 item"),
    ("measuredout", GOOD.format(name="measuredout") + "measured: {9: {bowl_scale: 2.0}}\n", "measured",
     "level 9 lies outside"),
    ("threshold", GOOD.format(name="threshold") + "break_threshold: 1.5\n", "break_threshold", "less than 1"),
    ("compabs", GOOD.format(name="compabs").replace(
        "parameter: {name: bowl_scale, unit: x, base: 1.0, step: 0.15}",
        "compose: [{axis: libero_pick_y}, {axis: libero_distractors, level: sideways}]"), "compose[1].level",
     "'k' or 'abs'"),
]


@pytest.mark.parametrize(("stem", "text", "field", "phrase"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_axis_gives_one_sentence_naming_file_and_field(tmp_path, stem, text, field, phrase):
    path = write(tmp_path, stem, text)
    with pytest.raises(ConfigError) as info:
        lib_with(tmp_path, stem, text).get(stem) if stem not in ("mismatch",) else AxisLibrary([]).add_file(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path) + ": ")
    if field:
        assert f"field '{field}'" in message, message
    assert phrase in message, message


def test_malformed_axis_through_the_cli_is_one_line(tmp_path):
    path = write(tmp_path, "zerostep", GOOD.format(name="zerostep").replace("step: 0.15", "step: 0"))
    proc = indgen("axes", "check", str(path))
    assert proc.returncode == 1
    assert proc.stdout.strip().count("\n") == 0
    assert proc.stdout.startswith(f"FAIL {path}: field 'parameter.step': ")
    assert "Traceback" not in proc.stderr
