"""One parser for every list written as text (CLI options, node parameters)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from indgen_core.lists import parse_int_list, parse_names


@pytest.mark.parametrize(("text", "expected"), [
    ("0,2", [0, 2]), ("0-3", [0, 1, 2, 3]), ("-3-1", [-3, -2, -1, 0, 1]), ("-3--2,5", [-3, -2, 5]),
    ("[-1, 0, 1]", [-1, 0, 1]), (" 4 ", [4]),
])
def test_integer_lists_and_ranges(text, expected):
    assert parse_int_list(text) == expected


@pytest.mark.parametrize(("text", "says"), [
    ("a", "'a' is not an integer"), ("1-x", "'1-x' is not an integer"), ("3-1", "runs backwards"),
    ("", "empty"), (",", "empty"),
])
def test_a_bad_integer_list_is_one_sentence(text, says):
    with pytest.raises(ValueError, match=says):
        parse_int_list(text)


def test_names_drop_empty_items():
    assert parse_names(" a, b,,c ") == ["a", "b", "c"]
    assert parse_names("") == []


@pytest.mark.parametrize("argv", [
    ["libero", "certify", "--tasks", "1-x"],
    ["libero", "certify", "--levels", "0,two"],
    ["twin", "views", "--levels", "3-1"],
])
def test_the_cli_refuses_a_bad_list_in_one_sentence_with_exit_2(argv):
    out = subprocess.run([sys.executable, "-m", "indgen_core.cli", *argv], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith(f"indgen {argv[0]} {argv[1]}: error: argument --")
