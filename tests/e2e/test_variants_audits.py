"""End to end: a run with seeded variants gives per-stack generalization figures; the audits flag the
planted cheating stacks (output cache, skipped repeats, silent bf16) and not the honest ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from accelbench import registry, runner
from accelbench.config import RunConfig
from accelbench.hardware.detect import detect_machine
from accelbench.store import open_store
from tests.e2e.test_cli import accelbench

CHEATS = {
    "planted-cache": "tests.e2e.planted:CachingStack",
    "planted-skip-repeat": "tests.e2e.planted:SkipRepeatStack",
    "planted-bf16": "tests.e2e.planted:SilentBf16Stack",
}
HONEST = ("torch-eager", "onnxruntime")


def flagged(result: Any) -> list[str]:
    audit = result["audit"] if isinstance(result, dict) else result.audit
    return [name for name in ("caching", "alternate_seed", "precision") if audit[name]["flagged"]]


@pytest.fixture(scope="module")
def variant_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    store = tmp_path_factory.mktemp("variants") / "store"
    args = ["run", "--suite", "tiny", "--workloads", "resnet50", "--stacks", ",".join(HONEST)]
    args += ["--scenarios", "single-stream", "--variants", "2", "--variant-seed", "7", "--no-probe"]
    done = accelbench(*args, "--json", "--store", str(store))
    assert done.returncode == 0, done.stderr[-3000:]
    return store, json.loads(done.stdout)


@pytest.mark.slow
def test_variant_run_gives_generalization_figures_per_stack(variant_run: tuple[Path, dict[str, Any]]) -> None:
    _, document = variant_run
    results = document["results"]
    assert sorted(r["cell"]["variant"] for r in results) == ["canonical"] * 2 + ["s7-v1"] * 2 + ["s7-v2"] * 2
    for result in results:
        assert result["status"] == "ok", (result["cell"], result["reason"], result["stderr_tail"])
        info = result["variant_info"]
        if result["cell"]["variant"] == "canonical":
            assert info is None
        else:
            assert info["variant_seed"] == 7 and info["mutations"] and 0.5 <= info["flops_ratio"] <= 2.0
    generalization = document["generalization"]
    assert generalization["variant_seed"] == 7
    assert sorted(row["stack"] for row in generalization["stacks"]) == sorted(HONEST)
    for row in generalization["stacks"]:
        assert 0.05 < row["goodhart_gap"] < 20 and row["gap_ci"][0] <= row["goodhart_gap"] <= row["gap_ci"][1]
        assert row["spread"] is not None and row["spread"] >= 0
        assert row["success_rate"] == 1.0 and row["variants_total"] == 2
    assert [v["variant"] for v in generalization["variants"]] == ["canonical", "s7-v1", "s7-v2"]
    assert len(generalization["heatmap"]) == 6


@pytest.mark.slow
def test_honest_stacks_pass_every_audit(variant_run: tuple[Path, dict[str, Any]]) -> None:
    _, document = variant_run
    for result in document["results"]:
        assert flagged(result) == [], (result["cell"], result["audit"])
        assert (
            result["audit"]["precision"]["checked"]
            and result["audit"]["alternate_seed"]["samples_checked"] >= 4
        )
        assert not [w for w in result["warnings"] if w.startswith("audit")]


@pytest.mark.slow
def test_show_prints_the_generalization_table_with_the_seed(variant_run: tuple[Path, dict[str, Any]]) -> None:
    store, _ = variant_run
    shown = accelbench("show", "--store", str(store))
    assert shown.returncode == 0, shown.stderr
    assert "Goodhart gap" in shown.stdout and "variant seed 7" in shown.stdout
    assert "6 results checked, 0 flagged" in shown.stdout
    again = json.loads(accelbench("show", "--json", "--store", str(store)).stdout)
    assert again["generalization"]["stacks"] and again["generalization"]["variant_seed"] == 7


@pytest.fixture
def cheating_stacks(monkeypatch: pytest.MonkeyPatch) -> None:
    table = {**registry.STACKS, **CHEATS}
    monkeypatch.setattr(registry, "STACKS", table)
    monkeypatch.setitem(registry._BUILTIN, "stack", table)


@pytest.mark.slow
@pytest.mark.usefixtures("cheating_stacks")
def test_the_audits_flag_each_cheating_stack(tmp_path: Path) -> None:
    config = RunConfig(
        suite="test",
        workloads=("resnet50",),
        stacks=(*CHEATS, "torch-eager"),
        scenarios=("single-stream",),
        size="tiny",
        rules="quick",
        samples=8,
        timeout_s=120.0,
    )
    machine = detect_machine()
    with open_store(tmp_path / "store") as store:
        run_id = runner.start_run(store, config, machine)
        runner.execute(store, run_id, config, machine)
        by_stack = {r.cell.stack: r for r in store.results(run_id)}
    for stack, result in by_stack.items():
        assert result.status == "ok", (stack, result.reason, result.stderr_tail)
    assert flagged(by_stack["planted-cache"]) == ["caching"]
    assert flagged(by_stack["planted-skip-repeat"]) == ["caching"]
    assert flagged(by_stack["planted-bf16"]) == ["precision"]
    assert flagged(by_stack["torch-eager"]) == []
    assert any(w.startswith("audit precision") for w in by_stack["planted-bf16"].warnings)
    assert any(w.startswith("audit caching") for w in by_stack["planted-cache"].warnings)
