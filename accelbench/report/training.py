"""Terminal table of ``train-to-quality`` results: time to quality, runs converged, scaling, energy to train.

Reads the ``training`` section of results (``accelbench.training.measure``); the only place its seconds
and joules are formatted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from accelbench.report.section_table import section_table
from accelbench.results import Result

TITLE = "Training to quality (MLPerf run_start to run_stop)"
COLUMNS = (
    "workload",
    "stack",
    "status",
    "olympic mean s",
    "converged",
    "target",
    "reached",
    "nproc",
    "samples/s/proc",
    "scaling eff.",
    "J to train",
)
_LEFT = ("workload", "stack", "status")


def training_table(results: Sequence[Result]) -> Table | None:
    """One row per training result; None when there is none."""
    return section_table(results, lambda r: r.training, TITLE, COLUMNS, _LEFT, _row)


def _row(result: Result, training: Mapping[str, Any]) -> list[str]:
    cell = result.cell
    runs = training.get("runs", [])
    return [
        f"{cell.workload} ({cell.size})",
        cell.stack if cell.device == "cpu" else f"{cell.stack} @ {cell.device}",
        result.status,
        _number(training.get("olympic_mean_s"), "{:.3g}"),
        f"{training.get('runs_converged', 0)}/{len(runs)}",
        _number(training.get("target"), "{:.3f}"),
        _number(training.get("quality_reached"), "{:.3f}"),
        str(training.get("nproc", 1)),
        _number(training.get("samples_per_s_per_process"), "{:.0f}"),
        _number(training.get("scaling_efficiency"), "{:.0%}"),
        _number(training.get("energy_j"), "{:.3g}"),
    ]


def _number(value: Any, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)
