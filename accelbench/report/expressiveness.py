"""The expressiveness matrix in the terminal: workloads as rows, stacks as columns.

Each cell shows the verdict of ``accelbench.normalize.expressiveness.expressiveness_matrix`` and, when
the stack runs the workload correctly, its speed relative to torch eager (``1.80x``; yellow when below 1).
Reasons for the cells that do not run are listed below the matrix, one line each.
"""

from __future__ import annotations

from rich.table import Table

from accelbench.normalize.expressiveness import Expressiveness, ExpressivenessCell

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


def matrix_table(matrix: Expressiveness) -> Table:
    """The workload x stack table of an expressiveness matrix (several scenarios/devices: one line each)."""
    table = Table(
        title="Expressiveness: non-matmul work per stack (speed vs torch eager)", title_justify="left"
    )
    table.add_column("workload")
    for stack in matrix.stacks:
        table.add_column(stack, justify="center")
    for workload in matrix.workloads:
        row = [_cell_text(cells) for cells in _cells_by_stack(matrix, workload)]
        table.add_row(workload, *row)
    return table


def reason_lines(matrix: Expressiveness) -> list[str]:
    """``workload / stack: verdict: reason`` for every cell that is not verified to run."""
    return [
        f"{c.workload} / {c.stack}: {c.verdict}: {_short(c.reason)}"
        for c in matrix.cells
        if c.verdict not in ("runs", "slower-than-eager", "unavailable")
    ]


def _cells_by_stack(matrix: Expressiveness, workload: str) -> list[list[ExpressivenessCell]]:
    """For each stack of the matrix, the cells of ``workload`` on it."""
    cells = [c for c in matrix.cells if c.workload == workload]
    return [[c for c in cells if c.stack == stack] for stack in matrix.stacks]


def _cell_text(cells: list[ExpressivenessCell]) -> str:
    """The styled verdicts of one matrix position (one per scenario/device), '-' when none."""
    if not cells:
        return "-"
    return "\n".join(_verdict_text(cell) for cell in cells)


def _verdict_text(cell: ExpressivenessCell) -> str:
    label = f"{cell.speed_vs_eager:.2f}x" if cell.speed_vs_eager is not None else cell.verdict
    return f"[{_VERDICT_STYLE.get(cell.verdict, '')}]{label}[/]"


def _short(reason: str) -> str:
    line = " ".join(reason.split())
    return line if len(line) <= _REASON_CHARS else line[: _REASON_CHARS - 3] + "..."
