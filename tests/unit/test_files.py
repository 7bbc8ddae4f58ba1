"""The guarded reader (``accelbench.files``): what it refuses, with the file and field named."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from accelbench.errors import UserError
from accelbench.files import MAX_NESTING, UnreadableFile, json_text, number_problem, read_bytes, read_json


def test_special_files_are_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "folder").mkdir()
    for name in ("fifo", "zero", "folder"):
        started = time.monotonic()
        with pytest.raises(UnreadableFile, match=f"peaks file {tmp_path / name} is not a regular file"):
            read_json(tmp_path / name, "peaks file")
        assert time.monotonic() - started < 1.0  # a FIFO without a writer never blocks the read


def test_size_and_depth_caps(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 101)
    with pytest.raises(UserError, match="101 bytes, more than the limit of 100"):
        read_bytes(big, "log", max_bytes=100)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 3000 + "]" * 3000)
    with pytest.raises(UnreadableFile, match=f"nests more than {MAX_NESTING} levels"):
        read_json(deep, "cell spec")
    deep.write_text("[" * MAX_NESTING + "]" * MAX_NESTING)
    assert read_json(deep, "cell spec") == read_json(deep, "cell spec")  # at the limit: read


def test_non_finite_numbers_are_refused_with_the_field_named() -> None:
    with pytest.raises(UnreadableFile, match=r"peaks: field gemm\.flops\.1 is not a finite number"):
        json_text('{"gemm": {"flops": [1.0, NaN]}}', "peaks")
    with pytest.raises(UnreadableFile, match="field x is not a finite number"):
        json_text('{"x": 1e400}', "peaks")  # parsed as inf
    assert json_text('{"q": NaN}', "stored result", finite=False)["q"] != 0  # a result keeps its NaN


def test_unreadable_files_are_both_user_errors_and_value_errors() -> None:
    """Callers that skip an unreadable file with a warning catch ValueError; the CLI's one line is
    a UserError: the same exception serves both."""
    with pytest.raises(ValueError):
        json_text("not json", "spec")
    with pytest.raises(UserError):
        json_text("not json", "spec")


@pytest.mark.parametrize("value", [1e308, -1e308, 5e-324, 1e31, 1e-31, float("inf"), float("nan"), True, "4"])
def test_extreme_magnitudes_are_refused(value: object) -> None:
    problem = number_problem(value, "transistors_billion")
    assert problem is not None and problem.startswith("transistors_billion ")


@pytest.mark.parametrize("value", [0, 0.0, 1e30, 1e-30, 40, 2.5e-9, -3.0])
def test_datasheet_magnitudes_are_accepted(value: float) -> None:
    assert number_problem(value, "tdp_w") is None
