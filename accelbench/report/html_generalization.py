"""Generalization, expressiveness and training sections of the HTML report.

The documents come from ``accelbench.normalize.generalization.generalization_document`` and
``accelbench.normalize.expressiveness.expressiveness_document`` (imported openly: ``normalize`` is a
layer below ``report``); when the runs hold no such results, the section says so in one line. Training
results (the optional ``training`` section of a result) become a small table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from accelbench.normalize.expressiveness import expressiveness_document
from accelbench.normalize.generalization import generalization_document
from accelbench.report import html_charts
from accelbench.report.html_sections import RunData, Section, text
from accelbench.report.html_tables import rows_html
from accelbench.sections import TrainingFigures


def generalization_section(runs: Sequence[RunData]) -> Section:
    """The Goodhart gap per stack and the stack x variant heatmap, relative to the canonical model."""
    title = "Generalization to unseen variants"
    document = generalization_document([r for d in runs for r in d.results])
    if not document.get("heatmap"):
        return Section("generalization", title, (text("no variant results in these runs"),))
    parts: list[Any] = [
        text(f"variant seed {document.get('variant_seed')}"),
        _stacks_table(document["stacks"]),
    ]
    for workload in sorted({c["workload"] for c in document["heatmap"]}):
        cells = [c for c in document["heatmap"] if c["workload"] == workload]
        rows = sorted({_row(c) for c in cells})
        columns = sorted({c["variant"] for c in cells}, key=lambda v: (v != "canonical", v))
        values = {(_row(c), c["variant"]): _relative(c) for c in cells}
        parts.append(
            html_charts.heatmap_figure(f"{workload}: speed relative to canonical", rows, columns, values)
        )
    return Section("generalization", title, tuple(parts))


def _row(cell: Mapping[str, Any]) -> str:
    device = "" if cell.get("device", "cpu") == "cpu" else f"@{cell['device']}"
    return f"{cell['stack']}{device} {cell.get('scenario', '')}".strip()


def _relative(cell: Mapping[str, Any]) -> tuple[float | None, str]:
    value = cell.get("relative")
    if cell.get("status") != "ok" or value is None:
        return None, str(cell.get("status") or "-")
    return float(value), f"{value:.2f}x"


def _stacks_table(stacks: Sequence[Mapping[str, Any]]) -> str:
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
            s["workload"],
            _row(s),
            s.get("scenario", ""),
            _with_ci(s.get("goodhart_gap"), s.get("gap_ci")),
            _with_ci(s.get("spread"), s.get("spread_ci")),
            f"{s.get('variants_ok')}/{s.get('variants_total')}",
            _number(s.get("compile_growth")),
        )
        for s in stacks
    ]
    return rows_html("Per stack: canonical / median over variants (1 = no gap)", header, rows)


def expressiveness_section(runs: Sequence[RunData]) -> Section:
    """Which stacks run the non-matmul workloads, and how fast relative to eager."""
    title = "Expressiveness"
    document = expressiveness_document([r for d in runs for r in d.results])
    if not document.get("cells"):
        return Section("expressiveness", title, (text("no expressiveness results in these runs"),))
    cells = document["cells"]
    rows = sorted({_row(c) for c in cells})
    columns = list(dict.fromkeys(c["workload"] for c in cells))
    values = {(_row(c), c["workload"]): _verdict(c) for c in cells}
    figure = html_charts.heatmap_figure("verdict and speed relative to eager", rows, columns, values)
    reasons = [
        (c["workload"], _row(c), c["verdict"], c.get("reason") or "-") for c in cells if c.get("reason")
    ]
    parts: list[Any] = [figure]
    if reasons:
        parts.append(rows_html("Reasons", ("workload", "stack", "verdict", "reason"), reasons))
    return Section("expressiveness", title, tuple(parts))


def _verdict(cell: Mapping[str, Any]) -> tuple[float | None, str]:
    speed = cell.get("speed_vs_eager")
    if speed is None:
        return None, str(cell.get("verdict", "-"))
    return float(speed), f"{cell.get('verdict', '')} {speed:.2f}x".strip()


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


def _with_ci(value: Any, ci: Any) -> str:
    if value is None:
        return "-"
    if isinstance(ci, Sequence) and len(ci) == 2 and all(isinstance(v, int | float) for v in ci):
        return f"{_number(value)} ({_number(ci[0])}-{_number(ci[1])})"
    return _number(value)


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-" if value is None else str(value)
    return f"{value:.4g}"
