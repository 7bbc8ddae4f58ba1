"""The terminal tables' frame (``titled_table``: a title and columns, some left-aligned) and the table of the
results that carry one section (``training``, ``generation``): a row each."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

from rich.table import Table

from accelbench.results import Result

Section = TypeVar("Section")


def titled_table(title: str, columns: Sequence[str], left: Collection[str]) -> Table:
    """An empty table titled ``title`` (left-justified) with ``columns``: those in ``left`` left-aligned,
    the others (figures) right-aligned."""
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, justify="left" if column in left else "right")
    return table


def section_table(
    results: Sequence[Result],
    section: Callable[[Result], Section | None],
    title: str,
    columns: Sequence[str],
    left: Collection[str],
    row: Callable[[Result, Section], list[str]],
) -> Table | None:
    """``columns`` (those in ``left`` left-aligned, the others right) and ``row(result, section)`` for each
    result whose ``section`` is set, in cell-key order; None when there is none."""
    rows = [r for r in results if section(r) is not None]
    if not rows:
        return None
    table = titled_table(title, columns, left)
    for result in sorted(rows, key=lambda r: r.cell.key):
        found = section(result)
        if found is not None:
            table.add_row(*row(result, found))
    return table
