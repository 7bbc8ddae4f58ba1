"""Inputs bounded before they are parsed (``accelbench.inputs``): special files, size, nesting, ranges."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pytest

from accelbench import inputs
from accelbench.config import load_toml, suite, with_overrides
from accelbench.errors import UserError


def test_a_regular_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "a.toml"
    path.write_text("[run]\nseed = 3\n")
    assert inputs.read_input(path, "config") == b"[run]\nseed = 3\n"
    assert load_toml(path) == {"seed": 3}


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom", "/dev/null", "fifo", "folder"])
def test_a_special_file_is_refused_without_blocking(tmp_path: Path, special: str) -> None:
    path = Path(special) if special.startswith("/") else tmp_path / special
    if special == "fifo":
        os.mkfifo(path)
    elif special == "folder":
        path.mkdir()
    with pytest.raises(UserError, match=f"config {path} is not a regular file"):
        inputs.read_input(path, "config")


def test_a_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    path.write_bytes(b"x" * 101)
    with pytest.raises(UserError, match="101 bytes, more than the limit of 100"):
        inputs.read_input(path, "CSV", max_bytes=100)
    assert inputs.read_input(path, "CSV", max_bytes=101) == b"x" * 101


@pytest.mark.parametrize("depth", [65, 5000, 200_000])
def test_deep_nesting_is_one_line(tmp_path: Path, depth: int) -> None:
    with pytest.raises(UserError, match="nests more than 64 levels"):
        inputs.parse_json("[" * depth + "]" * depth, "x.json")
    with pytest.raises(UserError, match="nests more than 64 levels"):
        inputs.parse_toml("a = " + "[" * depth + "]" * depth, "x.toml")
    assert inputs.parse_json("[" * 64 + "]" * 64, "x.json") is not None


def test_bad_text_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "a.toml"
    path.write_bytes(b"\xff\xfe[run]")
    with pytest.raises(UserError, match="not utf-8 text"):
        load_toml(path)
    with pytest.raises(UserError, match=r"x\.json: invalid JSON"):
        inputs.parse_json("{", "x.json")


@pytest.mark.parametrize(
    ("name", "value", "rule"),
    [
        ("seed", -1, "from 0 to 9223372036854775807"),
        ("seed", 2**63, "from 0 to 9223372036854775807"),
        ("variant_seed", 10**400, "from 0 to"),
        ("variants", 10**9, "from 0 to 10000"),
        ("threads", -1, "from 0 to 4096"),
        ("batch", 0, "from 1 to 65536"),
        ("runs", 0, "from 1 to 1000"),
        ("samples", 10**12, "from 1 to 10000000"),
        ("timeout_s", math.nan, "finite"),
        ("timeout_s", math.inf, "finite"),
        ("timeout_s", 5e-324, "from 0.001"),
        ("timeout_s", 1e308, "to 604800"),
        ("seed", True, "must be a number"),
    ],
)
def test_a_setting_out_of_its_range_is_refused(name: str, value: object, rule: str) -> None:
    problem = inputs.range_problem(name, value)
    assert problem is not None and problem.startswith(name) and rule in problem
    with pytest.raises(UserError, match=name):
        with_overrides(suite("tiny"), {name: value})


def test_the_edges_of_each_range_are_accepted() -> None:
    for name, (low, high, _) in inputs.RANGES.items():
        assert inputs.range_problem(name, low) is None and inputs.range_problem(name, high) is None
    assert with_overrides(suite("tiny"), {"seed": 2**63 - 1, "variant_seed": 0}).seed == 2**63 - 1


@pytest.mark.parametrize("value", [math.inf, math.nan, 0.0, -1.0, 1e308])
def test_a_budget_must_be_finite_and_positive(value: float) -> None:
    with pytest.raises(UserError, match="--budget-s must be a finite number above 0"):
        inputs.positive_finite("--budget-s", value, inputs.MAX_PROBE_BUDGET_S)
    inputs.positive_finite("--budget-s", 0.5, inputs.MAX_PROBE_BUDGET_S)


@pytest.mark.parametrize("stamp", ["true", "false", '"1.5"', "null", "[1]"])
def test_an_mlperf_log_time_that_is_not_a_number_is_refused(tmp_path: Path, stamp: str) -> None:
    from accelbench.mlperf.logs import read_run

    path = tmp_path / "result_1.txt"
    start = '{"time_ms": %s, "event_type": "INTERVAL_START", "key": "run_start", "value": null,'
    stop = '{"time_ms": 100000, "event_type": "INTERVAL_END", "key": "run_stop", "value": null,'
    meta = ' "metadata": {"file": "x", "lineno": 1, "status": "success"}}'
    path.write_text(f":::MLLOG {start % stamp}{meta}\n:::MLLOG {stop}{meta}\n")
    with pytest.raises(UserError, match=f"line 1 has a time_ms that is not a number: {re.escape(stamp)}"):
        read_run(path)
    path.write_text(f":::MLLOG {start % '0'}{meta}\n:::MLLOG {stop}{meta}\n")
    assert read_run(path).time_s == pytest.approx(100.0)


def test_a_url_stack_needs_its_server() -> None:
    with pytest.raises(UserError, match="onnxruntime@url sends its requests to --serve-url"):
        with_overrides(suite("tiny"), {"stacks": ["onnxruntime@url"]})
    served = with_overrides(
        suite("tiny"), {"stacks": ["onnxruntime@url"], "serve_url": "http://127.0.0.1:8000"}
    )
    assert served.stacks == ("onnxruntime@url",)
