"""The expressiveness matrix in the terminal: workloads as rows, stacks as columns.

Each cell shows the verdict of ``accelbench.normalize.expressiveness.expressiveness_document`` and, when
the stack
runs the workload correctly, its speed relative to torch eager (``1.80x``; yellow when below 1).
Reasons for the cells that do not run are listed below the matrix, one line each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table

_VERDICT_STYLE = {
    "runs": "green",
    "slower-than-eager": "yellow",
    "wrong": "bold red",
    "unsupported": "magenta",
    "crashed": "red",
    "timeout": "red",
    "oom": "red",
    "unavailable": "dim",
}
_REASON_CHARS = 160


def matrix_table(document: Mapping[str, Any]) -> Table:
    """The workload x stack table of an expressiveness document (several scenarios/devices: one line each)."""
    table = Table(
        title="Expressiveness: non-matmul work per stack (speed vs torch eager)", title_justify="left"
    )
    table.add_column("workload")
    for stack in document["stacks"]:
        table.add_column(stack, justify="center")
    for workload in document["workloads"]:
        row = [_cell_text(cells) for cells in _cells_by_stack(document, workload)]
        table.add_row(workload, *row)
    return table


def reason_lines(document: Mapping[str, Any]) -> list[str]:
    """``workload / stack: verdict: reason`` for every cell that is not verified to run."""
    return [
        f"{c['workload']} / {c['stack']}: {c['verdict']}: {_short(c['reason'])}"
        for c in document["cells"]
        if c["verdict"] not in ("runs", "slower-than-eager", "unavailable")
    ]


def _cells_by_stack(document: Mapping[str, Any], workload: str) -> list[list[Mapping[str, Any]]]:
    """For each stack of the document, the cells of ``workload`` on it."""
    cells = [c for c in document["cells"] if c["workload"] == workload]
    return [[c for c in cells if c["stack"] == stack] for stack in document["stacks"]]


def _cell_text(cells: list[Mapping[str, Any]]) -> str:
    """The styled verdicts of one matrix position (one per scenario/device), '-' when none."""
    if not cells:
        return "-"
    return "\n".join(_verdict_text(cell) for cell in cells)


def _verdict_text(cell: Mapping[str, Any]) -> str:
    verdict, speed = cell["verdict"], cell["speed_vs_eager"]
    label = f"{speed:.2f}x" if speed is not None else verdict
    return f"[{_VERDICT_STYLE.get(verdict, '')}]{label}[/]"


def _short(reason: str) -> str:
    line = " ".join(reason.split())
    return line if len(line) <= _REASON_CHARS else line[: _REASON_CHARS - 3] + "..."
