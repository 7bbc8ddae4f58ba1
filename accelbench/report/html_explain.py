"""The normalization sections of the HTML report: an ``explain`` waterfall and the MLPerf ResNet-50 history.

The pair to explain is the user's (``accelbench report --explain A --explain B``), else the slowest and
the fastest measured stack of the first workload and scenario that has two, else the MLPerf example of
the docs (640 V100 in v0.5 against 3456 TPU v4 in v1.0). Subjects resolve through
``accelbench.normalize.lookup``,
exactly as ``accelbench explain`` resolves them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from accelbench.errors import UserError
from accelbench.hardware.chips import ChipTable
from accelbench.normalize import lookup
from accelbench.normalize.explain import explain
from accelbench.report import html_charts, normalized
from accelbench.report.html_sections import RunData, Section, text
from accelbench.report.html_tables import table_html

MLPERF_PAIR = ("v0.5/nvidia/dgx1_multi_ngc18.11_mxnet", "v1.0/google/tpu-v4-6912-TF")
"""The example pair when the runs hold no two comparable results (docs/normalization.md)."""


def default_pair(runs: Sequence[RunData]) -> tuple[str, str]:
    """Slowest and fastest measured stack on the first (workload, size, variant, scenario) with two."""
    groups: dict[tuple[str, ...], list[tuple[float, str]]] = {}
    for data in runs:
        for result in data.results:
            cell = result.cell
            if result.head.status == "ok" and result.qps and result.head.effective_precision != "none":
                key = (cell.workload, cell.size, cell.variant, cell.scenario)
                groups.setdefault(key, []).append((result.qps, f"local:{data.run.run_id}/{cell.key}"))
    for _, members in sorted(groups.items()):
        if len(members) >= 2:
            ordered = sorted(members)
            return ordered[0][1], ordered[-1][1]
    return MLPERF_PAIR


def explain_section(
    runs: Sequence[RunData], folder: Path, chips: ChipTable, pair: tuple[str, str] | None
) -> Section:
    """The waterfall of the chosen pair and the tables ``accelbench explain`` prints."""
    a, b = pair or default_pair(runs)
    try:
        explanation = explain(lookup.subject(a, folder, chips), lookup.subject(b, folder, chips))
    except UserError as err:
        if pair is not None:
            raise
        return Section("explain", "Explain a ratio", (text(f"no explanation for {a} vs {b}: {err}"),))
    title = f"B / A = {normalized.times(explanation.ratio)} as a product of factors (log scale)"
    parts: list[Any] = [
        text(f"A = {a}; B = {b}. Choose another pair with: accelbench report --explain A --explain B"),
        html_charts.waterfall_figure(title, explanation.ratio, explanation.main),
    ]
    for item in normalized.explanation_renderables(explanation):
        parts.append(table_html(item) if not isinstance(item, str) else text(item))
    return Section("explain", "Explain a ratio", tuple(parts))


def history_section(folder: Path, chips: ChipTable) -> Section:
    """MLPerf Training ResNet-50: raw and normalized per chip / transistor / TDP watt, log scales."""
    rows = lookup.history_rows(folder, chips, "resnet")
    table = normalized.history_table(rows, "chip")
    details = f"<details><summary>the {len(rows)} entries</summary>{table_html(table)}</details>"
    note = text(
        "Each point is one MLPerf entry (bundled, plus any imported into this store); error bars are the "
        "ranges of uncertain chip facts. Rules changed between rounds: see accelbench explain."
    )
    return Section(
        "history", "MLPerf ResNet-50 training history", (html_charts.history_figure(rows), note, details)
    )
