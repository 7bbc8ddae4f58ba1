"""Rich tables and markup as HTML, so the HTML report shows the same text as the terminal.

The terminal renderers (``report.terminal``, ``report.normalized``, ``report.roofline``) already turn SI
values into display text; the report reuses their ``rich.table.Table`` objects and converts them here:
column headers, justification and rich markup (``[green]ok[/]``, ``[yellow]est[/]``) become HTML with CSS
classes; a table's caption (its notes) becomes paragraphs under it. Nothing is formatted twice.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from html import escape

from rich.errors import MarkupError
from rich.style import Style
from rich.table import Table
from rich.text import Text

_COLORS = ("green", "red", "yellow")


def markup_html(value: object) -> str:
    """Rich markup (or a ``Text``) as escaped HTML with ``<span class=...>`` for colour, bold and dim."""
    text = value if isinstance(value, Text) else _parse(str(value))
    edges = sorted({0, len(text.plain), *(e for s in text.spans for e in (s.start, s.end))})
    parts = []
    for start, end in itertools.pairwise(edges):
        chunk = escape(text.plain[start:end])
        classes = _classes(str(s.style) for s in text.spans if s.start <= start and end <= s.end)
        parts.append(f'<span class="{classes}">{chunk}</span>' if classes else chunk)
    return "".join(parts)


def table_html(table: Table, title: str | None = None) -> str:
    """A rich table as an HTML ``<table>``: caption, header row, one row per rich row, justification kept."""
    caption = title if title is not None else (table.title or "")
    head = "".join(f"<th{_align(c.justify)}>{markup_html(c.header)}</th>" for c in table.columns)
    columns = [list(c.cells) for c in table.columns]
    rows = []
    for index in range(table.row_count):
        cells = "".join(
            f"<td{_align(c.justify)}>{markup_html(columns[i][index])}</td>"
            for i, c in enumerate(table.columns)
        )
        rows.append(f"<tr>{cells}</tr>")
    header = f"<thead><tr>{head}</tr></thead>" if table.show_header else ""
    notes = "".join(f'<p class="note">{markup_html(line)}</p>' for line in _caption_lines(table))
    return (
        f'<table class="data"><caption>{markup_html(caption)}</caption>{header}'
        f"<tbody>{''.join(rows)}</tbody></table>{notes}"
    )


def _caption_lines(table: Table) -> list[str]:
    """The lines of the table's caption (its notes: fallback marks, SUSPECT reasons)."""
    caption = table.caption
    if not caption:
        return []
    return str(caption.plain if isinstance(caption, Text) else caption).splitlines()


def rows_html(caption: str, header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A plain table from text cells (escaped; rich markup allowed)."""
    table = Table(title=caption)
    for name in header:
        table.add_column(name)
    for row in rows:
        table.add_row(*row)
    return table_html(table)


def _parse(text: str) -> Text:
    try:
        return Text.from_markup(text)
    except MarkupError:
        return Text(text)


def _classes(styles: Iterable[str]) -> str:
    found: list[str] = []
    for name in styles:
        try:
            style = Style.parse(name)
        except Exception:  # an unknown style is shown plain
            continue
        if style.color is not None and style.color.name in _COLORS:
            found.append(style.color.name)
        found += [flag for flag in ("bold", "dim") if getattr(style, flag)]
    return " ".join(dict.fromkeys(found))


def _align(justify: str | None) -> str:
    return ' class="num"' if justify == "right" else ""
