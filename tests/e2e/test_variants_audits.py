"""End to end: a run with seeded variants gives per-stack generalization figures; honest stacks pass
every audit (the planted cheaters are in ``test_planted_cheaters``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from accelbench.audit_section import AuditSection
from accelbench.audits import failed_audits, output
from tests.e2e.cli import accelbench, measured_ok, run_document

HONEST = ("torch-eager", "onnxruntime")


def flagged(result: Any) -> list[str]:
    return failed_audits(AuditSection.from_dict(result["audit"]) if result["audit"] else None)


@pytest.fixture(scope="module")
def variant_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    store = tmp_path_factory.mktemp("variants") / "store"
    args = ["--suite", "tiny", "--workloads", "resnet50", "--stacks", ",".join(HONEST)]
    args += ["--scenarios", "single-stream", "--variants", "2", "--variant-seed", "7", "--no-probe"]
    return store, run_document(store, *args)


@pytest.mark.slow
def test_variant_run_gives_generalization_figures_per_stack(variant_run: tuple[Path, dict[str, Any]]) -> None:
    _, document = variant_run
    results = document["results"]
    assert sorted(r["cell"]["variant"] for r in results) == ["canonical"] * 2 + ["s7-v1"] * 2 + ["s7-v2"] * 2
    for result in results:
        assert measured_ok(result), (result["cell"], result["reason"], result["stderr_tail"])
        info = result["variant_info"]
        if result["cell"]["variant"] == "canonical":
            assert info is None
        else:
            assert info["variant_seed"] == 7 and info["mutations"] and 0.5 <= info["flops_ratio"] <= 2.0
    generalization = document["generalization"]
    assert generalization["variant_seed"] == 7
    # a stack with no verified cell has no row (every cell unstable: a busy machine, not a finding)
    verified = sorted({r["cell"]["stack"] for r in results if r["status"] == "ok"})
    assert sorted(row["stack"] for row in generalization["stacks"]) == verified
    for row in generalization["stacks"]:
        mine = [r for r in results if r["cell"]["stack"] == row["stack"]]
        ok = {r["cell"]["variant"] for r in mine if r["status"] == "ok"}
        if "canonical" not in ok or ok == {"canonical"}:  # an unstable cell (machine drift) is never a speed
            assert row["goodhart_gap"] is None and row["gap_ci"] is None, (row, ok)
            continue
        assert 0.05 < row["goodhart_gap"] < 20 and row["gap_ci"][0] <= row["goodhart_gap"] <= row["gap_ci"][1]
        if len(ok) == 3:
            assert row["spread"] is not None and row["spread"] >= 0
        assert row["success_rate"] == 1.0 and row["variants_total"] == 2
    assert [v["variant"] for v in generalization["variants"]] == ["canonical", "s7-v1", "s7-v2"]
    assert len(generalization["heatmap"]) == 3 * len(verified)  # canonical and two variants per stack


@pytest.mark.slow
def test_honest_stacks_pass_every_audit(variant_run: tuple[Path, dict[str, Any]]) -> None:
    _, document = variant_run
    for result in document["results"]:
        assert flagged(result) == [], (result["cell"], result["audit"])
        audit = result["audit"]
        assert {audit[name]["verdict"] for name in ("output", "repeat", "caching", "precision")} == {"pass"}
        # the feed places at least MIN_CHECKS whatever the machine's speed (30+ on a quiet one)
        checked = audit["output"]["checked"]
        assert audit["alternate_seed"]["samples_checked"] >= 4 and checked >= output.MIN_CHECKS
        assert not [w for w in result["warnings"] if w.startswith("audit")]


@pytest.mark.slow
def test_show_prints_the_generalization_table_with_the_seed(variant_run: tuple[Path, dict[str, Any]]) -> None:
    store, _ = variant_run
    shown = accelbench("show", "--store", str(store))
    assert shown.returncode == 0, shown.stderr
    assert "6 results checked, 0 disqualified, 0 inconclusive" in shown.stdout
    again = json.loads(accelbench("show", "--json", "--store", str(store)).stdout)
    assert again["generalization"]["variant_seed"] == 7
    if again["generalization"]["stacks"]:  # none when every cell was unstable (a busy machine)
        assert "Goodhart gap" in shown.stdout and "variant seed 7" in shown.stdout
