"""Terminal table of ``train-to-quality`` results: time to quality, runs converged, scaling, energy to train.

Reads the ``training`` section of results (``accelbench.training.measure``); the only place its seconds
and joules are formatted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from accelbench.results import Result

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


def training_results(results: Sequence[Result]) -> list[Result]:
    """The results that carry a training section."""
    return [r for r in results if r.training is not None]


def training_table(results: Sequence[Result]) -> Table | None:
    """One row per training result; None when there is none."""
    rows = training_results(results)
    if not rows:
        return None
    table = Table(title="Training to quality (MLPerf run_start to run_stop)", title_justify="left")
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("workload", "stack", "status") else "right")
    for result in sorted(rows, key=lambda r: r.cell.key):
        table.add_row(*_row(result, result.training or {}))
    return table


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
