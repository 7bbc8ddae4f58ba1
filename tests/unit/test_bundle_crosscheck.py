"""A trial's LoadGen summary against its detail log (``bundle.crosscheck``), on the golden logs of every
scenario, and tampered: each edit of one file alone, the other left as LoadGen wrote it, is named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from accelbench.bundle.crosscheck import disagreements
from accelbench.bundle.rederive import derived
from accelbench.scenarios.loadgen_log import parse_detail_values, parse_summary

GOLDEN = Path(__file__).parents[1] / "golden" / "loadgen"
PAIRS = sorted(p.name.removesuffix("_summary.txt") for p in GOLDEN.glob("*_summary.txt"))


def _pair(name: str) -> tuple[str, str]:
    summary = (GOLDEN / f"{name}_summary.txt").read_text()
    return summary, (GOLDEN / f"{name}_detail.txt").read_text()


def _doubled_summary(text: str) -> str:
    """Every number after a ``:`` on a latency or rate line, doubled (what a plugin would want to claim)."""

    def double(match: re.Match[str]) -> str:
        number = float(match[2])
        shown = f"{2 * number:.3f}" if "." in match[2] else str(int(2 * number))
        return match[1] + shown

    pattern = re.compile(r"^((?:.*latency \(ns\)|.*per second)\s*: )([0-9.]+)$", re.M)
    return pattern.sub(double, text)


@pytest.mark.parametrize("name", PAIRS)
def test_the_golden_logs_of_every_scenario_agree(name: str) -> None:
    summary, detail = _pair(name)
    assert disagreements(parse_summary(summary), parse_detail_values(detail)) == []


@pytest.mark.parametrize("name", PAIRS)
def test_a_doubled_summary_is_named_figure_by_figure(name: str) -> None:
    summary, detail = _pair(name)
    found = disagreements(parse_summary(_doubled_summary(summary)), parse_detail_values(detail))
    assert any(line.startswith("p50 latency summary ") for line in found), found
    assert len(found) >= 9  # min, max, mean and six percentiles


def test_an_edited_detail_log_is_named_with_both_figures() -> None:
    summary, detail = _pair("offline")
    edited = detail.replace(
        '"result_samples_per_second", "value": 905.564', '"result_samples_per_second", "value": 1811.128'
    )
    assert edited != detail
    found = disagreements(parse_summary(summary), parse_detail_values(edited))
    assert found == ["samples/s summary 905.564, detail 1811.13"]


def test_a_rate_rounded_by_the_summary_still_agrees() -> None:
    summary, detail = _pair("server")  # the summary prints 457.90, the detail 457.903
    assert "457.90\n" in summary and "457.903" in detail
    assert disagreements(parse_summary(summary), parse_detail_values(detail)) == []


def test_a_flipped_validity_word_is_named() -> None:
    summary, detail = _pair("single_stream")
    found = disagreements(
        parse_summary(summary.replace("Result is : VALID", "Result is : INVALID")),
        parse_detail_values(detail),
    )
    assert found == ["validity summary INVALID, detail VALID"]


def test_rederive_carries_each_trials_disagreements_by_trial_name() -> None:
    summary, detail = _pair("single_stream")
    files = {
        "cells/c/loadgen/a0-t0/mlperf_log_summary.txt": summary.encode(),
        "cells/c/loadgen/a0-t0/mlperf_log_detail.txt": detail.encode(),
        "cells/c/loadgen/a0-t1/mlperf_log_summary.txt": _doubled_summary(summary).encode(),
        "cells/c/loadgen/a0-t1/mlperf_log_detail.txt": detail.encode(),
    }
    found = derived(files, "c", 1, True)
    assert found is not None and found.disagreements
    assert all(line.startswith("a0-t1 ") for line in found.disagreements)
    assert "a0-t1 p90 latency summary 0.002254264 s, detail 0.001127132 s" in found.disagreements
