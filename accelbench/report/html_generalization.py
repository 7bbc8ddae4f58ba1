"""Generalization, expressiveness and training sections of the HTML report.

The records come from ``accelbench.normalize.generalization.generalization_figures`` and
``accelbench.normalize.expressiveness.expressiveness_matrix`` (imported openly: ``normalize`` is a
layer below ``report``); when the runs hold no such results, the section says so in one line. Training
results (the optional ``training`` section of a result) become a small table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from accelbench.normalize.expressiveness import ExpressivenessCell, expressiveness_matrix
from accelbench.normalize.generalization import (
    Group,
    HeatmapCell,
    StackGeneralization,
    generalization_figures,
)
from accelbench.report import html_charts
from accelbench.report.html_sections import RunData, Section, text
from accelbench.report.html_tables import rows_html
from accelbench.sections import TrainingFigures


def generalization_section(runs: Sequence[RunData]) -> Section:
    """The Goodhart gap per stack and the stack x variant heatmap, relative to the canonical model."""
    title = "Generalization to unseen variants"
    figures = generalization_figures([r for d in runs for r in d.results])
    if not figures.heatmap:
        return Section("generalization", title, (text("no variant results in these runs"),))
    parts: list[Any] = [text(f"variant seed {figures.variant_seed}"), _stacks_table(figures.stacks)]
    for workload in sorted({c.group.workload for c in figures.heatmap}):
        cells = [c for c in figures.heatmap if c.group.workload == workload]
        rows = sorted({_group_row(c.group) for c in cells})
        columns = sorted({c.variant for c in cells}, key=lambda v: (v != "canonical", v))
        values = {(_group_row(c.group), c.variant): _relative(c) for c in cells}
        parts.append(
            html_charts.heatmap_figure(f"{workload}: speed relative to canonical", rows, columns, values)
        )
    return Section("generalization", title, tuple(parts))


def _row(stack: str, device: str, scenario: str) -> str:
    """A heatmap row's name: ``stack[@device] scenario``."""
    shown = "" if device == "cpu" else f"@{device}"
    return f"{stack}{shown} {scenario}".strip()


def _group_row(group: Group) -> str:
    return _row(group.stack, group.device, group.scenario)


def _relative(cell: HeatmapCell) -> tuple[float | None, str]:
    if cell.status != "ok" or cell.relative is None:
        return None, cell.status or "-"
    return float(cell.relative), f"{cell.relative:.2f}x"


def _stacks_table(stacks: Sequence[StackGeneralization]) -> str:
    header = (
        "workload",
        "stack",
        "scenario",
        "Goodhart gap (CI)",
        "spread (CI)",
        "variants ok",
        "compile growth",
    )
    rows = [
        (
            s.group.workload,
            _group_row(s.group),
            s.group.scenario,
            _with_ci(s.goodhart_gap, s.gap_ci),
            _with_ci(s.spread, s.spread_ci),
            f"{s.variants_ok}/{s.variants_total}",
            _number(s.compile_growth),
        )
        for s in stacks
    ]
    return rows_html("Per stack: canonical / median over variants (1 = no gap)", header, rows)


def expressiveness_section(runs: Sequence[RunData]) -> Section:
    """Which stacks run the non-matmul workloads, and how fast relative to eager."""
    title = "Expressiveness"
    matrix = expressiveness_matrix([r for d in runs for r in d.results])
    if not matrix.cells:
        return Section("expressiveness", title, (text("no expressiveness results in these runs"),))
    cells = matrix.cells
    rows = sorted({_cell_row(c) for c in cells})
    columns = list(dict.fromkeys(c.workload for c in cells))
    values = {(_cell_row(c), c.workload): _verdict(c) for c in cells}
    figure = html_charts.heatmap_figure("verdict and speed relative to eager", rows, columns, values)
    reasons = [(c.workload, _cell_row(c), c.verdict, c.reason) for c in cells if c.reason]
    parts: list[Any] = [figure]
    if reasons:
        parts.append(rows_html("Reasons", ("workload", "stack", "verdict", "reason"), reasons))
    return Section("expressiveness", title, tuple(parts))


def _cell_row(cell: ExpressivenessCell) -> str:
    return _row(cell.stack, cell.device, cell.scenario)


def _verdict(cell: ExpressivenessCell) -> tuple[float | None, str]:
    speed = cell.speed_vs_eager
    if speed is None:
        return None, cell.verdict
    return float(speed), f"{cell.verdict} {speed:.2f}x".strip()


def training_section(runs: Sequence[RunData]) -> Section | None:
    """Time-to-quality results as a table; None when no result carries a ``training`` section."""
    found = [(d.run.run_id, r, r.training) for d in runs for r in d.results if r.training is not None]
    if not found:
        return None
    keys = sorted(  # by name, as the stored documents' keys
        f.name
        for f in dataclasses.fields(TrainingFigures)
        if any(_scalar(getattr(t, f.name)) and getattr(t, f.name) != "" for _, _, t in found)
    )
    rows = [
        (f"{run_id}/{r.cell.key}", r.head.status, *(_number(getattr(t, k)) for k in keys))
        for run_id, r, t in found
    ]
    table = rows_html("Training to quality", ("cell", "status", *keys), rows)
    return Section("training", "Training to quality", (table,))


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None


def _with_ci(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "-"
    if ci is not None:
        return f"{_number(value)} ({_number(ci[0])}-{_number(ci[1])})"
    return _number(value)


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-" if value is None else str(value)
    return f"{value:.4g}"
