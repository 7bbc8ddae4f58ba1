"""The serving overhead table: each served deployment beside the same stack in process, and batching on
beside off (figures from ``accelbench.normalize.serving``; formatted only here).

A row names the cell, the reference and the served stack, the scenario's MLPerf figure of each (ms for
latencies, per second for throughputs) and the cost ratio: the served cost over the reference's, so
``3.20x`` means the server made the figure 3.2 times worse and ``0.50x`` that batching halved it. A row
whose either side did not pass every audit shows its reason instead of a ratio.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from accelbench.normalize.serving import Comparison
from accelbench.report.columns import ms_text, rate_text

TITLE = "Serving overhead (served / in process) and dynamic batching (on / off); above 1x = costlier"
COLUMNS = ("cell", "compared", "reference", "served", "figure", "ref value", "served value", "cost ratio")
_KINDS = {"overhead": "server vs in process", "batching": "batching on vs off"}


def serving_table(comparisons: Sequence[Comparison]) -> Table | None:
    """One row per comparison; None when there is none."""
    if not comparisons:
        return None
    table = Table(title=TITLE, title_justify="left")
    for column in COLUMNS:
        table.add_column(column, justify="right" if "value" in column or "ratio" in column else "left")
    for comparison in comparisons:
        table.add_row(*_row(comparison))
    return table


def _row(comparison: Comparison) -> list[str]:
    place = comparison.cell.rsplit("/", 3)[0]
    scenario = comparison.cell.rsplit("/", 1)[-1]
    latency = comparison.metric.startswith("latency_")
    shown = ms_text if latency else rate_text
    unit = " ms" if latency else " /s"
    ratio = f"{comparison.ratio:.2f}x" if comparison.ratio is not None else comparison.reason
    return [
        f"{place} {scenario}",
        _KINDS.get(comparison.kind, comparison.kind),
        comparison.reference,
        comparison.served,
        comparison.metric,
        shown(comparison.reference_value) + unit,
        shown(comparison.served_value) + unit,
        ratio,
    ]
