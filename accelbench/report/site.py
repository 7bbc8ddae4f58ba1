"""The static results site of ``accelbench publish``: one offline ``index.html`` beside the bundles.

A leaderboard per workload and scenario lists the ranked entries only (an ``ok`` cell of a bundle that
verified), best first, with LoadGen's headline and its interval, work per second per chip and per dollar,
the machine, the verify verdict and a link to the bundle; then every bundle with its verdict and every
cell with its status. Two filters (rule set, precision class) hide the rows that do not match, in every
table, with a few lines of inline script; the page fetches nothing.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from itertools import groupby

from accelbench.bundle.publish import Entry, Listed
from accelbench.loadgen_figures import HEADLINES

LOWER_IS_BETTER = ("latency_p90_s", "latency_p99_per_query_s")
_SCRIPT = """
function applyFilters() {
  const rules = document.getElementById('filter-rules').value;
  const precision = document.getElementById('filter-precision').value;
  document.querySelectorAll('tr[data-rules]').forEach(function (row) {
    const shown = (rules === 'all' || row.dataset.rules === rules) &&
                  (precision === 'all' || row.dataset.precision === precision);
    row.hidden = !shown;
  });
}
document.getElementById('filter-rules').addEventListener('change', applyFilters);
document.getElementById('filter-precision').addEventListener('change', applyFilters);
"""
_STYLE = "body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;border-bottom:1px solid #ddd}"


def site_html(entries: Sequence[Entry], listed: Sequence[Listed]) -> str:
    """The whole ``index.html``."""
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>accelbench results</title>",
        f"<style>{_STYLE}</style></head><body><h1>accelbench results</h1>",
        _filters(entries),
        "<h2>Leaderboards (verified cells only)</h2>",
        *_leaderboards([e for e in entries if e.ranked]),
        "<h2>Bundles</h2>",
        _bundles(listed),
        "<h2>Every cell</h2>",
        _cells(entries),
        f"<script>{_SCRIPT}</script></body></html>",
    ]
    return "\n".join(parts)


def _filters(entries: Sequence[Entry]) -> str:
    def select(name: str, values: set[str]) -> str:
        options = "".join(f"<option>{html.escape(v)}</option>" for v in sorted(values))
        return f"<label>{name} <select id='filter-{name}'><option>all</option>{options}</select></label> "

    return (
        "<p>"
        + select("rules", {e.rules for e in entries})
        + select("precision", {e.precision for e in entries})
        + "</p>"
    )


def _leaderboards(ranked: Sequence[Entry]) -> list[str]:
    if not ranked:
        return ["<p>No verified cell yet.</p>"]
    tables = []
    ordered = sorted(ranked, key=lambda e: (e.workload, e.scenario))
    for (workload, scenario), group in groupby(ordered, key=lambda e: (e.workload, e.scenario)):
        rows = sorted(group, key=_rank_key)
        header = _header(
            "#", "stack", "machine", "headline", "per chip", "per $", "rules", "precision", "verify", "bundle"
        )
        body = "".join(_leader_row(n, e) for n, e in enumerate(rows, 1))
        title = f"{workload} / {scenario}: {HEADLINES.get(scenario, '')}"
        tables.append(f"<h3>{html.escape(title)}</h3><table class='leaderboard'>{header}{body}</table>")
    return tables


def _rank_key(entry: Entry) -> float:
    value = entry.value or 0.0
    return value if entry.metric in LOWER_IS_BETTER else -value


def _leader_row(number: int, e: Entry) -> str:
    cells = [
        str(number),
        e.stack,
        e.machine,
        _headline(e),
        _rate(e.per_work.get("chip"), "/s per chip"),
        _rate(e.per_work.get("usd"), "/s per $"),
        e.rules,
        e.precision,
        "verified",
    ]
    tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells)
    link = f"<td><a href='bundles/{html.escape(e.bundle)}'>{html.escape(e.bundle)}</a></td>"
    return f"<tr {_data(e)}>{tds}{link}</tr>"


def _bundles(listed: Sequence[Listed]) -> str:
    rows = "".join(
        f"<tr><td><a href='bundles/{html.escape(b.name)}'>{html.escape(b.name)}</a></td>"
        f"<td>{'VERIFIED' if b.verified else 'NOT VERIFIED'}</td><td>{html.escape(b.note)}</td></tr>"
        for b in listed
    )
    return f"<table id='bundles'><tr><th>bundle</th><th>verify</th><th>note</th></tr>{rows}</table>"


def _cells(entries: Sequence[Entry]) -> str:
    rows = []
    for e in entries:
        cells = [
            e.key,
            e.status,
            "verified" if e.verified else "NOT VERIFIED",
            _headline(e),
            e.rules,
            e.precision,
            e.machine,
        ]
        tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells)
        rows.append(f"<tr {_data(e)}>{tds}<td><a href='bundles/{html.escape(e.bundle)}'>bundle</a></td></tr>")
    header = _header("cell", "status", "verify", "headline", "rules", "precision", "machine", "")
    return f"<table id='cells'>{header}{''.join(rows)}</table>"


def _header(*names: str) -> str:
    return "<tr>" + "".join(f"<th>{html.escape(n)}</th>" for n in names) + "</tr>"


def _data(e: Entry) -> str:
    return f"data-rules='{html.escape(e.rules)}' data-precision='{html.escape(e.precision)}'"


def _headline(e: Entry) -> str:
    if e.value is None:
        return "-"
    scale, unit = (1e3, " ms") if e.metric in LOWER_IS_BETTER else (1.0, "/s")
    interval = f" (95% {e.ci[0] * scale:.4g}-{e.ci[1] * scale:.4g})" if e.ci else ""
    return f"{e.value * scale:.4g}{unit}{interval}"


def _rate(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:.4g}{unit}"
