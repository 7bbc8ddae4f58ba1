"""Terminal rendering with rich: result tables, stack availability, the detected machine.

This is the only place where stored SI values become display units (ms, MiB, GiB).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from accelbench import ranking
from accelbench.results import UNVERIFIED_STATUSES, Result

_STATUS_STYLE = {
    "ok": "green",
    "quality_failed": "bold red",
    "disqualified": "bold red",
    "unverified": "yellow",
    "invalid": "yellow",
    "unstable": "yellow",
    "unavailable": "dim",
    "unsupported": "yellow",
}


def print_json(document: Any) -> None:
    """Machine-readable output: plain JSON on stdout, no markup, no wrapping."""
    sys.stdout.write(json.dumps(document, indent=1, sort_keys=True, default=str) + "\n")


def results_table(results: Sequence[Result], title: str, include_unverified: bool = False) -> Table:
    """The leaderboard: verified results only (``accelbench.ranking``), best throughput first per board.

    With ``include_unverified`` the unverified ones are ranked too, their status marked UNVERIFIED.
    """
    table = Table(title=f"{title}: leaderboard (verified cells only)", title_justify="left")
    if include_unverified:
        table.title = f"{title}: leaderboard, unverified cells included and marked"
    for column in (
        "#",
        "workload",
        "stack",
        "scenario",
        "status",
        "p50 ms",
        "95% CI ms",
        "p99 ms",
        "QPS",
        "LoadGen",
    ):
        table.add_column(column, justify="right" if column[0] in "#p9Q" else "left")
    for board in ranking.leaderboards(results, include_unverified):
        for entry in board.entries:
            columns = _cell_columns(entry.result)
            if not entry.verified:
                columns[3] = f"[bold yellow]UNVERIFIED {entry.result.status}[/]"
            table.add_row(str(entry.rank), *columns, *_speed_columns(entry.result))
    return table


def unverified_table(results: Sequence[Result]) -> Table | None:
    """Measured cells that do not rank, with the reason (None when there are none)."""
    listed = ranking.unverified(results)
    if not listed:
        return None
    table = Table(title="Unverified cells: measured, not ranked", title_justify="left")
    for column in ("cell", "status", "QPS (not ranked)", "reason"):
        table.add_column(column, justify="right" if column.startswith("QPS") else "left")
    for result in listed:
        style = _STATUS_STYLE.get(result.status, "red")
        qps = f"{result.qps:.1f}" if result.qps else "-"
        table.add_row(result.cell.key, f"[{style}]{result.status}[/]", qps, result.reason or "-")
    return table


def checks_table(results: Sequence[Result], normalized: Mapping[str, Mapping[str, Any]]) -> Table:
    """Trust and cost: quality gate, effective precision, compile time, energy, share of measured peak."""
    table = Table(title="Quality, precision, compile time, energy, roofline", title_justify="left")
    for column in ("workload", "stack", "scenario", "quality", "precision", "compile s", "J/query"):
        table.add_column(column, justify="right" if column in ("compile s", "J/query") else "left")
    for column in ("GFLOP/s", "% of peak", "bound"):
        table.add_column(column, justify="right")
    for result in sorted(results, key=lambda r: r.cell.key):
        if result.status in ("ok", "quality_failed", *UNVERIFIED_STATUSES):
            roofline = normalized.get(result.cell.key, {}).get("roofline")
            table.add_row(*_cell_columns(result)[:3], *_check_columns(result), *_roofline_columns(roofline))
    return table


def _cell_columns(result: Result) -> list[str]:
    cell = result.cell
    return [
        f"{cell.workload} ({cell.size})"
        if cell.variant == "canonical"
        else f"{cell.workload} {cell.variant}",
        cell.stack if cell.device == "cpu" else f"{cell.stack} @ {cell.device}",
        cell.scenario,
        f"[{_STATUS_STYLE.get(result.status, 'red')}]{result.status}[/]",
    ]


def _speed_columns(result: Result) -> list[str]:
    lat, lg = result.latency, result.loadgen
    return [
        _ms(lat.p50_s) if lat else "-",
        f"{_ms(lat.median_ci_s[0])}-{_ms(lat.median_ci_s[1])}" if lat else "-",
        _ms(lat.p99_s) if lat else "-",
        f"{lg.qps:.1f}" if lg else "-",
        ("VALID" if lg.valid else "[yellow]INVALID[/]") if lg else "-",
    ]


def _check_columns(result: Result) -> list[str]:
    return [
        _quality(result),
        result.effective_precision or "-",
        f"{result.compile_s:.1f}" if result.compile_s else "-",
        _energy(result),
    ]


def _roofline_columns(roofline: Mapping[str, Any] | None) -> list[str]:
    if not roofline:
        return ["-", "-", "-"]
    share = roofline.get("share_of_peak")
    return [
        f"{roofline['achieved_flops_per_s'] / 1e9:.1f}",
        f"{share * 100:.1f}" if share is not None else "-",
        str(roofline.get("bound_kind", "-")),
    ]


def _energy(result: Result) -> str:
    """Joules per query and where they come from: ``0.123 est`` (estimated), ``meas``, ``poll``."""
    energy = result.energy
    if energy is None:
        return "-"
    mark = {"measured": "meas", "polled": "poll", "estimated": "[yellow]est[/]"}[energy.provenance]
    return f"{energy.energy_per_query_j:.3g} {mark}"


def failures_table(results: Sequence[Result]) -> Table | None:
    """Cells that did not produce a usable measurement, with their reason; None when there are none."""
    failed = [r for r in results if r.status != "ok" and r.status not in UNVERIFIED_STATUSES]
    if not failed:
        return None
    table = Table(title="Cells without a valid measurement", title_justify="left")
    for column in ("cell", "status", "reason"):
        table.add_column(column)
    for result in failed:
        table.add_row(result.cell.key, result.status, result.reason or "-")
    return table


def warnings_lines(results: Sequence[Result]) -> list[str]:
    """One line per distinct warning (numbers aside), with the cells it concerns, most frequent first."""
    groups: dict[str, list[str]] = {}
    for result in results:
        for warning in result.warnings:
            groups.setdefault(_warning_kind(warning), []).append(f"{result.cell.key}: {warning}")
    lines = []
    for members in sorted(groups.values(), key=len, reverse=True):
        more = f" (and {len(members) - 1} more cells)" if len(members) > 1 else ""
        lines.append(members[0] + more)
    return lines


def _warning_kind(warning: str) -> str:
    """The warning with its numbers removed, so similar warnings group together."""
    return " ".join("#" if any(ch.isdigit() for ch in word) else word for word in warning.split())


def _quality(result: Result) -> str:
    quality = result.quality
    if quality is None:
        return "n/a" if result.status == "ok" else "-"
    mark = "pass" if quality.passed else "[red]FAIL[/]"
    text = f"{mark} {quality.metric} {quality.value:.4f}"
    if result.sanity is not None:
        text += " +sanity" if result.sanity.passed else " [red]sanity FAIL[/]"
    return text


def _ms(seconds: float) -> str:
    value = seconds * 1e3
    return f"{value:.3f}" if value < 1 else f"{value:.2f}"


def availability_table(kind: str, rows: Sequence[Mapping[str, Any]]) -> Table:
    """``accelbench list``: one row per entry with availability and the reason when unavailable."""
    table = Table(title=f"{kind}", title_justify="left")
    columns = list(rows[0]) if rows else ["name"]
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(_cell_text(row[c]) for c in columns))
    return table


def _cell_text(value: Any) -> str:
    if isinstance(value, bool):
        return "[green]yes[/]" if value else "[red]no[/]"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return "-" if value in (None, "") else str(value)


def machine_table(machine: Mapping[str, Any]) -> Table:
    """``accelbench hw``: the detected machine, one fact per row, sizes in binary units."""
    table = Table(title="Detected machine", title_justify="left", show_header=False)
    table.add_column("fact")
    table.add_column("value")
    for key, value in machine.items():
        table.add_row(key, _fact(key, value))
    return table


def _fact(key: str, value: Any) -> str:
    if key.endswith("_bytes") and isinstance(value, int):
        return f"{value / 2**30:.1f} GiB"
    if key == "caches" and isinstance(value, (list, tuple)):
        return ", ".join(_cache(c) for c in value)
    if isinstance(value, list) and value and isinstance(value[0], Mapping):
        return "; ".join(_cell_text(v) for v in value)
    return _cell_text(value)


def _cache(cache: Mapping[str, Any]) -> str:
    size = cache.get("size_bytes", 0)
    text = f"{size // 2**20} MiB" if size >= 2**20 else f"{size // 2**10} KiB"
    return f"L{cache.get('level')}{cache.get('kind', '')[:1].lower()} {text}"
