"""Tests of the generalization figures on hand-built results: FLOP-normalised gap, spread, success rate."""

from __future__ import annotations

import dataclasses
import json

import pytest

from accelbench.cell.loadgen_body import LoadgenBody
from accelbench.head import Head
from accelbench.loadgen_figures import LoadgenVerdict
from accelbench.normalize.generalization import generalization_figures, has_variants
from accelbench.results import Cell, Result
from accelbench.sections import VariantInfo

CANONICAL_FLOPS = 1_000_000


def result(
    variant: str,
    qps: float | None,
    flops: int = CANONICAL_FLOPS,
    status: str = "ok",
    compile_s: float = 2.0,
    stack: str = "torch-inductor",
) -> Result:
    loadgen = None
    if qps is not None:
        loadgen = LoadgenVerdict("single-stream", True, (), qps, 100, "quick", False, "logs")
    info = None
    if variant != "canonical":
        mutations = [{"kind": "width", "detail": f"{variant} widths"}]
        info = {
            "variant_seed": 7,
            "index": int(variant.rsplit("v", 1)[1]),
            "mutations": mutations,
            "flops": flops,
            "canonical_flops": CANONICAL_FLOPS,
            "flops_ratio": flops / CANONICAL_FLOPS,
        }
    cell = Cell("resnet50", stack, "single-stream", "cpu", "tiny", variant)
    variant_info = VariantInfo.from_dict(info) if info else None
    return Result(
        "run",
        cell,
        Head(status, compile_s=compile_s),
        LoadgenBody(loadgen=loadgen, variant_info=variant_info),
        driver="loadgen",
    )


def document_of(results: list[Result]) -> dict:
    """The generalization document of ``results``, as ``show --json`` prints it."""
    return generalization_figures(results).to_dict()


def group(document: dict, stack: str = "torch-inductor") -> dict:
    return next(row for row in document["stacks"] if row["stack"] == stack)


def test_goodhart_gap_is_canonical_over_median_variant_flop_rate() -> None:
    results = [
        result("canonical", 100.0),
        result("s7-v1", 100.0, flops=500_000, compile_s=4.0),  # half the FLOPs at the same QPS: 2x slower
        result("s7-v2", 40.0, flops=2_000_000, compile_s=6.0),  # 80% of the canonical FLOP rate
        result("s7-v3", 50.0, flops=1_000_000, compile_s=8.0),
    ]
    row = group(document_of(results))
    assert row["goodhart_gap"] == pytest.approx(1e8 / 5e7)  # rates 5e7, 8e7, 5e7: median 5e7
    assert row["gap_ci"][0] <= row["goodhart_gap"] <= row["gap_ci"][1]
    assert row["spread"] == pytest.approx((6.5e7 - 5e7) / 5e7)
    assert row["success_rate"] == 1.0 and (row["variants_ok"], row["variants_total"]) == (3, 3)
    assert row["compile_growth"] == pytest.approx(6.0 / 2.0)


def test_spread_is_the_relative_interquartile_range_of_variant_rates() -> None:
    rates = [4.0, 5.0, 6.0, 7.0]  # FLOP rates in units of 1e6 * qps
    results = [result("canonical", 5.0)] + [result(f"s7-v{i + 1}", q) for i, q in enumerate(rates)]
    row = group(document_of(results))
    assert row["spread"] == pytest.approx((6.25 - 4.75) / 5.5)
    assert row["spread_ci"][0] <= row["spread"] <= row["spread_ci"][1]
    assert row["goodhart_gap"] == pytest.approx(5.0 / 5.5)


def test_failed_variants_lower_the_success_rate_and_never_count_as_speed() -> None:
    results = [
        result("canonical", 10.0),
        result("s7-v1", 10.0),
        result("s7-v2", 1000.0, status="quality_failed"),
        result("s7-v3", None, status="crashed"),
    ]
    document = document_of(results)
    row = group(document)
    assert row["success_rate"] == pytest.approx(1 / 3)
    assert row["goodhart_gap"] == pytest.approx(1.0) and row["spread"] is None and row["spread_ci"] is None
    heat = {r["variant"]: r for r in document["heatmap"]}
    assert heat["canonical"]["relative"] == 1.0
    assert heat["s7-v1"]["relative"] == pytest.approx(1.0)
    assert heat["s7-v2"] == {**heat["s7-v2"], "relative": None, "status": "quality_failed"}


def test_an_unstable_variant_answered_right_but_gives_no_speed() -> None:
    results = [result("canonical", 10.0), result("s7-v1", 10.0), result("s7-v2", 1000.0, status="unstable")]
    row = group(document_of(results))
    assert row["success_rate"] == 1.0 and row["variants_ok"] == 2
    assert row["goodhart_gap"] == pytest.approx(1.0) and row["spread"] is None


def test_an_unstable_canonical_gives_no_gap() -> None:
    results = [result("canonical", 10.0, status="unstable"), result("s7-v1", 10.0), result("s7-v2", 10.0)]
    row = group(document_of(results))
    assert row["goodhart_gap"] is None and row["gap_ci"] is None and row["spread"] == pytest.approx(0.0)


def test_document_shape_variants_rows_and_json() -> None:
    results = [
        result("canonical", 10.0, compile_s=0.0, stack="torch-eager"),
        result("s7-v1", 8.0, stack="torch-eager"),
        result("canonical", 10.0, stack="null"),  # no variants: no generalization row
    ]
    document = json.loads(json.dumps(document_of(results)))
    assert set(document) == {"variant_seed", "stacks", "variants", "heatmap", "excluded"}
    assert document["variant_seed"] == 7
    assert [row["stack"] for row in document["stacks"]] == ["torch-eager"]
    row = document["stacks"][0]
    assert set(row) == {
        "workload",
        "stack",
        "device",
        "scenario",
        "goodhart_gap",
        "gap_ci",
        "spread",
        "spread_ci",
        "success_rate",
        "variants_ok",
        "variants_total",
        "compile_growth",
    }
    assert row["compile_growth"] is None  # eager does not compile
    assert document["variants"] == [
        {
            "workload": "resnet50",
            "variant": "canonical",
            "mutations": [],
            "flops": CANONICAL_FLOPS,
            "flops_ratio": 1.0,
        },
        {
            "workload": "resnet50",
            "variant": "s7-v1",
            "mutations": [{"kind": "width", "detail": "s7-v1 widths"}],
            "flops": CANONICAL_FLOPS,
            "flops_ratio": 1.0,
        },
    ]
    assert {(r["stack"], r["variant"]) for r in document["heatmap"]} == {
        ("torch-eager", "canonical"),
        ("torch-eager", "s7-v1"),
    }
    assert has_variants(results) and not has_variants(results[:1])


def test_a_run_without_variants_gives_empty_figures() -> None:
    document = document_of([result("canonical", 10.0)])
    assert document == {"variant_seed": None, "stacks": [], "variants": [], "heatmap": [], "excluded": []}


def test_a_stack_with_a_disqualified_cell_has_no_generalization_row() -> None:
    results = [
        result("canonical", 1000.0, stack="cheater"),
        result("s7-v1", 900.0, stack="cheater", status="disqualified"),
        result("canonical", 100.0),
        result("s7-v1", 90.0),
    ]
    document = document_of(results)
    assert {row["stack"] for row in document["stacks"]} == {"torch-inductor"}
    assert {row["stack"] for row in document["heatmap"]} == {"torch-inductor"}
    (excluded,) = document["excluded"]
    assert excluded["stack"] == "cheater" and excluded["reason"].startswith("s7-v1 disqualified")


def test_a_variant_stored_without_flops_gives_a_row_with_none_and_a_table_with_dashes() -> None:
    """An older document's variant without its FLOPs (the v8 golden's ``canonical_flops`` is null) is
    listed, not a crash of ``show``."""
    from accelbench.report.generalization import variants_table

    bare = result("s7-v1", 50.0)
    assert bare.variant_info is not None
    info = VariantInfo(bare.variant_info.mutations, None, None, variant_seed=7, index=1)
    figures = generalization_figures(
        [
            result("canonical", 100.0),
            dataclasses.replace(bare, body=LoadgenBody(loadgen=bare.loadgen, variant_info=info)),
        ]
    )
    document = figures.to_dict()
    rows = {row["variant"]: row for row in document["variants"]}
    assert rows["canonical"]["flops"] is None and rows["s7-v1"]["flops_ratio"] is None
    table = variants_table(figures)
    assert list(table.columns[2].cells) == ["-", "-"] and list(table.columns[3].cells) == ["1.00", "-"]
