"""The cell template started while the run is planned (``runner.start_cells``): it is handed the run's
workloads, stacks and every driver by their registry references, and imports accelbench's own modules
only (a plugin's import-time code never runs in the process every cell is forked from)."""

from __future__ import annotations

import pytest

from accelbench import registry, runner
from accelbench.cell import isolation
from accelbench.config import RunConfig


def test_start_cells_names_the_runs_modules_and_every_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    handed: list[str] = []
    monkeypatch.setattr(isolation, "start_template", lambda refs: handed.extend(refs))
    config = RunConfig(
        suite="t",
        workloads=("resnet50", "smollm2-135m"),
        stacks=("null", "torch-eager"),
        scenarios=("single-stream",),
        size="tiny",
        rules="quick",
    )
    runner.start_cells(config)
    named = [registry.table("workload")[n] for n in ("resnet50", "smollm2-135m")]
    named += [registry.table("stack")[n] for n in ("null", "torch-eager")]
    named += [registry.table("generating stack")["torch-eager"]]  # one name, two tables: both modules
    assert set(named) <= set(handed)
    assert set(registry.DRIVERS.values()) <= set(handed)


def test_the_template_preloads_accelbench_modules_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolation, "_extra", ())
    isolation.preload(["vendor_stack.fast:Stack", "accelbench.workloads.resnet50:ResNet50", "torch:x"])
    assert isolation._extra == ("accelbench.workloads.resnet50",)
