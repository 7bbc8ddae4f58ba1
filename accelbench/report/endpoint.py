"""Terminal table of the served-LLM curves (``accelbench.endpoint``): a row per point of each curve.

Reads the ``generation`` section's ``curve`` of the endpoint cells; the only place its seconds and
rates are formatted. The curve is a step function: each row is one measured concurrency, nothing is
implied between two rows. A cell that did not pass every audit says so in its status column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from accelbench.results import Result

TITLE = "Served LLM curves (fixed concurrency; client-side token counts)"
COLUMNS = (
    "workload",
    "stack",
    "status",
    "concurrency",
    "requests",
    "output tok/s",
    "tok/s per user",
    "TTFT p50/p90 ms",
    "TPOT p50/p90 ms",
    "ITL p50 ms",
    "e2e p90 s",
    "req/s",
    "goodput req/s",
    "errors",
)
_LEFT = ("workload", "stack", "status")


def is_curve(result: Result) -> bool:
    """Whether ``result`` is an endpoint cell's (its ``generation`` section holds a ``curve``)."""
    return bool(result.generation) and "curve" in (result.generation or {})


def curve_table(results: Sequence[Result]) -> Table | None:
    """One row per point of every endpoint result; None when there is none."""
    curves = sorted((r for r in results if is_curve(r)), key=lambda r: r.cell.key)
    if not curves:
        return None
    table = Table(title=TITLE, title_justify="left")
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in _LEFT else "right")
    for result in curves:
        for point in (result.generation or {}).get("curve", []):
            table.add_row(*_row(result, point))
    return table


def _row(result: Result, point: Mapping[str, Any]) -> list[str]:
    return [
        result.cell.workload,
        result.cell.stack,
        result.status,
        str(point.get("concurrency", "?")),
        str(point.get("requests", "?")),
        _fmt(point.get("output_tokens_per_s"), "{:.1f}"),
        _fmt(point.get("tokens_per_s_per_user"), "{:.2f}"),
        f"{_ms(point.get('ttft_p50_s'))} / {_ms(point.get('ttft_p90_s'))}",
        f"{_ms(point.get('tpot_p50_s'))} / {_ms(point.get('tpot_p90_s'))}",
        _ms(point.get("itl_p50_s")),
        _fmt(point.get("e2e_p90_s"), "{:.2f}"),
        _fmt(point.get("requests_per_s"), "{:.2f}"),
        _fmt(point.get("goodput_requests_per_s"), "{:.2f}"),
        _fmt(point.get("error_rate"), "{:.0%}"),
    ]


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value * 1e3:.0f}"


def _fmt(value: Any, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)
