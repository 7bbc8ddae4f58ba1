"""Terminal rendering with rich: result tables, stack availability, the detected machine.

This is the only place where stored SI values become display units (ms, MiB, GiB).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group
from rich.table import Table

from accelbench.hardware.match import ChipMatch
from accelbench.hardware.share import ShareDecision
from accelbench.normalize import ranking
from accelbench.normalize.cell_figures import CellFigures, Roofline
from accelbench.ranges import Range
from accelbench.report import columns
from accelbench.report.columns import STATUS_STYLE, cell_columns
from accelbench.report.headline import results_rules_note
from accelbench.results import UNVERIFIED_STATUSES, Result


def print_json(document: Any) -> None:
    """Machine-readable output: plain JSON on stdout, no markup, no wrapping."""
    sys.stdout.write(json.dumps(document, indent=1, sort_keys=True, default=str) + "\n")


def results_table(results: Sequence[Result], title: str, include_unverified: bool = False) -> Group:
    """The leaderboards, one table per scenario with that scenario's columns (``report.columns``):
    verified results only (``accelbench.normalize.ranking``), best first per board, the rule set in every
    title.

    With ``include_unverified`` the unverified ones are ranked too, their status marked UNVERIFIED.
    """
    return Group(*columns.leaderboard_tables(results, title, include_unverified))


def server_search_tables(results: Sequence[Result]) -> list[Table]:
    """The probes of every server QPS search: target QPS, completed QPS, p99 against the bound."""
    return columns.server_search_tables(results)


def unverified_table(results: Sequence[Result]) -> Table | None:
    """Measured cells that do not rank, with their headline and the reason (None when there are none)."""
    listed = ranking.unverified(results)
    if not listed:
        return None
    title = f"Unverified cells: measured, not ranked; {results_rules_note(listed)}"
    table = Table(title=title, title_justify="left")
    for column in ("cell", "status", "headline (not ranked)", "reason"):
        table.add_column(column, justify="right" if column.startswith("headline") else "left")
    for result in listed:
        style = STATUS_STYLE.get(result.head.status, "red")
        headline = columns.headline_text(result)
        table.add_row(
            result.cell.key, f"[{style}]{result.head.status}[/]", headline, result.head.reason or "-"
        )
    return table


def checks_table(results: Sequence[Result], normalized: Mapping[str, CellFigures]) -> Table:
    """Trust and cost: quality gate, effective precision, compile time, energy, shares of peak.

    "% of peak" divides by the machine's best measured GEMM (probes and libraries); a share above 100%
    is marked SUSPECT and its reason is the table's caption. "% datasheet" divides by the chip's
    datasheet peak where the chip is known; the caption says how much of the chip was counted, at which
    clock, from which class of source and why (``accelbench.hardware.share``), and why a datasheet share
    no model explains is SUSPECT.
    """
    shown = [r for r in results if r.head.status in ("ok", "quality_failed", *UNVERIFIED_STATUSES)]
    title = f"Quality, precision, compile time, energy, roofline; {results_rules_note(shown)}"
    table = Table(title=title, title_justify="left")
    for column in ("workload", "stack", "scenario", "quality", "precision", "compile s", "J/query"):
        table.add_column(column, justify="right" if column in ("compile s", "J/query") else "left")
    for column in ("GFLOP/s", "% of peak", "% datasheet", "bound"):
        table.add_column(column, justify="right")
    reasons: list[str] = []
    for result in sorted(shown, key=lambda r: r.cell.key):
        cell = normalized.get(result.cell.key)
        roofline = cell.roofline if cell is not None else None
        table.add_row(*cell_columns(result)[:3], *_check_columns(result), *_roofline_columns(roofline))
        if roofline is None:
            continue
        if roofline.suspect:
            reasons.append(f"SUSPECT {result.cell.key}: {roofline.share.reason}")
        if roofline.datasheet_suspect:
            reasons.append(f"SUSPECT % datasheet {result.cell.key}: {roofline.datasheet_suspect_reason}")
        basis = _datasheet_basis(roofline.decision)
        if basis and basis not in reasons:
            reasons.append(basis)
    if reasons:
        table.caption, table.caption_justify = "\n".join(reasons), "left"
    return table


def _datasheet_basis(decision: ShareDecision | None) -> str:
    """The chips behind "% datasheet": model, count, cores, clock and its source class, and the evidence."""
    if decision is None:
        return ""
    top = decision.ceiling
    clock = f"{top.name}{f' {top.clock_hz / 1e9:.2f} GHz' if top.clock_hz else ''}"
    span = ""
    if decision.count_high > decision.count_low:
        span = f" (range {decision.count_low:.4g}-{decision.count_high:.4g})"
    return (
        f"% datasheet: {decision.model}, {decision.count:.4g} chips{span} ({decision.cores:g} "
        f"cores) at {clock} (source class: {top.source_class}); "
        f"{'; '.join(decision.evidence)}"
    )


def _check_columns(result: Result) -> list[str]:
    return [
        _quality(result),
        result.head.effective_precision or "-",
        f"{result.head.compile_s:.1f}" if result.head.compile_s else "-",
        _energy(result),
    ]


def _roofline_columns(roofline: Roofline | None) -> list[str]:
    if roofline is None:
        return ["-", "-", "-", "-"]
    return [
        f"{roofline.position.achieved_flops_per_s / 1e9:.1f}",
        share_text(roofline.position.share_of_peak, roofline.suspect),
        _datasheet_text(roofline.share.share_of_datasheet, roofline.datasheet_suspect),
        roofline.position.bound_kind,
    ]


def share_text(share: float | None, suspect: bool) -> str:
    """A share of the measured peak in percent, marked SUSPECT (bold red) when the figure is suspect."""
    if share is None:
        return "-"
    text = f"{share * 100:.1f}"
    return f"[bold red]{text} SUSPECT[/]" if suspect else text


def _datasheet_text(share: Range | None, suspect: bool = False) -> str:
    """A share of the datasheet peak in percent (its range when uncertain), SUSPECT like the measured one."""
    if share is None:
        return "-"
    text = f"{share.central * 100:.1f}"
    if share.low != share.high:
        text = f"{text} ({share.low * 100:.1f}-{share.high * 100:.1f})"
    return f"[bold red]{text} SUSPECT[/]" if suspect else text


def _energy(result: Result) -> str:
    """Joules per query and where they come from: ``0.123 est`` (estimated), ``meas``, ``poll``."""
    energy = result.head.energy
    if energy is None:
        return "-"
    mark = {"measured": "meas", "polled": "poll", "estimated": "[yellow]est[/]"}[energy.provenance]
    return f"{energy.energy_per_query_j:.3g} {mark}"


def failures_table(results: Sequence[Result]) -> Table | None:
    """Cells that did not produce a usable measurement, with their reason; None when there are none."""
    failed = [r for r in results if r.head.status != "ok" and r.head.status not in UNVERIFIED_STATUSES]
    if not failed:
        return None
    table = Table(title="Cells without a valid measurement", title_justify="left")
    for column in ("cell", "status", "reason"):
        table.add_column(column)
    for result in failed:
        table.add_row(result.cell.key, result.head.status, result.head.reason or "-")
    return table


def status_line(results: Sequence[Result]) -> str:
    """How many cells ended in each status, ``ok`` first, e.g. ``12 cells: 9 ok, 1 oom``."""
    counts: dict[str, int] = {}
    for result in results:
        counts[result.head.status] = counts.get(result.head.status, 0) + 1
    order = sorted(counts, key=lambda status: (status != "ok", status))
    parts = ", ".join(f"{counts[status]} {status}" for status in order)
    return f"{len(results)} cells: {parts}" if parts else "0 cells"


def warnings_lines(results: Sequence[Result]) -> list[str]:
    """One line per distinct warning (numbers aside), with the cells it concerns, most frequent first."""
    groups: dict[str, list[str]] = {}
    for result in results:
        for warning in result.head.warnings:
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
    head = result.head
    quality = head.quality
    if quality is None:
        return "n/a" if head.status == "ok" else "-"
    mark = "pass" if quality.passed else "[red]FAIL[/]"
    text = f"{mark} {quality.metric} {quality.value:.4f}"
    if head.sanity is not None:
        text += " +sanity" if head.sanity.passed else " [red]sanity FAIL[/]"
    return text


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


def machine_table(machine: Mapping[str, Any], chip: ChipMatch | None = None) -> Table:
    """``accelbench hw``: the detected machine (a stored or detected machine record), one fact per row,
    sizes in binary units; then the CPU chip it matched, when given, with the chips counted and the notes
    (computed by ``accelbench.hardware.match``)."""
    table = Table(title="Detected machine", title_justify="left", show_header=False)
    table.add_column("fact")
    table.add_column("value")
    for key, value in machine.items():
        table.add_row(key, _fact(key, value))
    for key, text in _chip_rows(chip) if chip is not None else ():
        table.add_row(key, text)
    return table


def _chip_rows(chip: ChipMatch) -> list[tuple[str, str]]:
    """The matched chip and how it was matched, the chips counted and their arithmetic, the notes."""
    name = chip.chip.key if chip.chip is not None else "no chip (unmatched)"
    return [
        ("chip", f"{name} ({chip.basis})"),
        ("chips counted", chip.count_basis),
        *(("chip note", note) for note in chip.notes),
    ]


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
