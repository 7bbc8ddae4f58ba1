"""The serving overhead figure: served vs in process and batching on vs off, verified sides only."""

from __future__ import annotations

import dataclasses

import pytest
from rich.console import Console

from accelbench.normalize.serving import serving_comparisons
from accelbench.report.html_sections import RunData, serving_section
from accelbench.report.serving import serving_table
from accelbench.report.show_json import serving_document
from accelbench.results import Result
from accelbench.store import RunRecord
from tests.unit.report_cases import result


def _run(*results: Result) -> RunData:
    record = RunRecord("r1", "2026-12-02T00:00:00", "fp", {}, {}, "done")
    return RunData(record, tuple(results), None, {})


def test_overhead_is_the_served_cost_over_in_process_in_both_directions() -> None:
    # single-stream: p90 20 ms in process, 64 ms served -> 3.2x; server: 400 vs 50 max QPS -> 8x
    results = [
        result("onnxruntime", value=0.020),
        result("onnxruntime@ray-serve", value=0.064),
        result("onnxruntime", "server", value=400.0),
        result("onnxruntime@ray-serve", "server", value=50.0),
    ]
    found = {(c.cell.rsplit("/", 1)[-1], c.kind): c for c in serving_comparisons(results)}
    assert set(found) == {("single-stream", "overhead"), ("server", "overhead")}
    assert found["single-stream", "overhead"].ratio == pytest.approx(3.2)
    assert found["server", "overhead"].ratio == pytest.approx(8.0)
    assert found["server", "overhead"].reference == "onnxruntime"


def test_batching_compares_on_with_off_below_one_when_it_helps() -> None:
    results = [
        result("onnxruntime@triton", "server", value=300.0),
        result("onnxruntime@triton-nobatch", "server", value=100.0),
    ]
    (batching,) = serving_comparisons(results)
    assert batching.kind == "batching"
    assert (batching.reference, batching.served) == ("onnxruntime@triton-nobatch", "onnxruntime@triton")
    assert batching.ratio == pytest.approx(1 / 3)


def test_an_unverified_side_gives_its_reason_and_no_ratio() -> None:
    results = [
        result("onnxruntime", value=0.02),
        result("onnxruntime@ray-serve", value=0.01, status="disqualified"),
    ]
    (overhead,) = serving_comparisons(results)
    assert overhead.ratio is None and overhead.served_value is None
    assert overhead.reason == "onnxruntime@ray-serve not verified (disqualified)"


def test_pairs_stay_within_one_run_and_one_cell() -> None:
    other_run = dataclasses.replace(result("onnxruntime", value=0.02), run_id="r2")
    other_size = result("onnxruntime@ray-serve", value=0.05)
    other_size = dataclasses.replace(other_size, cell=dataclasses.replace(other_size.cell, size="standard"))
    assert serving_comparisons([other_run, result("onnxruntime@ray-serve", value=0.05)]) == ()
    assert serving_comparisons([result("onnxruntime", value=0.02), other_size]) == ()
    assert serving_document([result("onnxruntime", value=0.02)]) == {}


def test_show_and_the_report_render_the_rows() -> None:
    results = [result("onnxruntime", value=0.020), result("onnxruntime@ray-serve", value=0.064)]
    table = serving_table(serving_comparisons(results))
    assert table is not None
    console = Console(width=250, record=True)
    console.print(table)
    text = console.export_text()
    assert "20.00 ms" in text and "64.00 ms" in text and "3.20x" in text
    section = serving_section([_run(*results)])
    assert section is not None and "3.20x" in "".join(str(p) for p in section.parts)
    assert serving_section([_run(result("onnxruntime"))]) is None
    assert serving_document(results)["serving"][0]["ratio"] == pytest.approx(3.2)
