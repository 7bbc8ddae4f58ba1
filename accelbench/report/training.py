"""Terminal table of ``train-to-quality`` results: time to quality, runs converged, scaling, energy to train.

Reads the ``training`` section of results (``accelbench.training.measure``); the only place its seconds
and joules are formatted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from accelbench.report.section_table import section_table
from accelbench.results import Result
from accelbench.sections import TrainingFigures

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


def _row(result: Result, training: TrainingFigures) -> list[str]:
    cell = result.cell
    return [
        f"{cell.workload} ({cell.size})",
        cell.stack if cell.device == "cpu" else f"{cell.stack} @ {cell.device}",
        result.head.status,
        _number(training.olympic_mean_s, "{:.3g}"),
        f"{training.runs_converged}/{len(training.runs)}",
        _number(training.target, "{:.3f}"),
        _number(training.quality_reached, "{:.3f}"),
        str(training.nproc),
        _number(training.samples_per_s_per_process, "{:.0f}"),
        _number(training.scaling_efficiency, "{:.0%}"),
        _number(training.energy_j, "{:.3g}"),
    ]


def _number(value: Any, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)
