"""The sections of the HTML report, built from stored runs: summary, leaderboard, roofline, failures.

A ``Section`` is a title and a list of parts, each HTML text or a plotly figure; ``accelbench.report.html``
assembles them into the page. Tables reuse the terminal renderers (converted by ``html_tables``), charts
come from ``html_charts``; this module only picks the data and groups it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from accelbench.hardware.chips import Chip, ChipTable, Fact
from accelbench.hardware.detect import machine_from_dict
from accelbench.hardware.match import ChipMatch, match_device
from accelbench.normalize import ranking
from accelbench.normalize.cell_figures import CellFigures, suspect_reasons
from accelbench.normalize.serving import serving_comparisons
from accelbench.probe.best import machine_peak
from accelbench.probe.roofline import MeasuredPeaks
from accelbench.report import html_charts, html_endpoint, html_leaderboard, html_sessions, terminal
from accelbench.report import roofline as roofline_report
from accelbench.report import serving as serving_report
from accelbench.report.columns import leaderboard_tables
from accelbench.report.endpoint_qps import qps_table
from accelbench.report.headline import results_rules_note, sort_key
from accelbench.report.html_tables import markup_html, rows_html, table_html
from accelbench.results import Result
from accelbench.store import RunRecord

_FACTS = (  # Chip attribute, label, scale from SI, display unit
    ("process_node_nm", "process node", 1.0, "nm"),
    ("transistors", "transistors", 1e-9, "B"),
    ("die_area_mm2", "die area", 1.0, "mm²"),
    ("tdp_w", "TDP", 1.0, "W"),
    ("cores", "cores", 1.0, ""),
    ("clock_hz", "clock", 1e-9, "GHz"),
    ("peak_fp32_flop_per_s", "peak fp32", 1e-12, "TFLOP/s"),
    ("peak_fp16_flop_per_s", "peak fp16", 1e-12, "TFLOP/s"),
    ("memory_bw_bytes_per_s", "memory bandwidth", 1e-9, "GB/s"),
    ("price_usd", "price", 1.0, "USD"),
)


@dataclass(frozen=True, slots=True)
class RunData:
    """One stored run as the report reads it: record, results, measured peaks, normalized figures per cell
    key (``normalize.cell_figures``)."""

    run: RunRecord
    results: tuple[Result, ...]
    peaks: MeasuredPeaks | None
    normalized: Mapping[str, CellFigures]


@dataclass(frozen=True, slots=True)
class Section:
    """A titled part of the report: HTML text and plotly figures, in order."""

    key: str
    title: str
    parts: tuple[Any, ...] = field(default_factory=tuple)


def text(message: str) -> str:
    """A paragraph of escaped text (rich markup allowed)."""
    return f"<p>{markup_html(message)}</p>"


def summary_section(runs: Sequence[RunData], chips: ChipTable) -> Section:
    """Machine, chip facts used, measured peaks and settings of every run."""
    parts: list[Any] = []
    for data in runs:
        run = data.run
        parts.append(f"<h3>run {escape(run.run_id)}</h3>")
        parts.append(text(f"started {run.created_at}; status {run.status}; {len(data.results)} results"))
        parts.append(table_html(terminal.machine_table(run.machine), "Detected machine"))
        parts += _chip_parts(data, chips)
        if data.peaks is None:
            parts.append(text("no measured peaks: the run skipped the roofline probes (--no-probe)"))
        else:
            suspects = suspect_reasons(data.normalized)
            parts.append(table_html(roofline_report.peaks_table(data.peaks, suspects)))
        parts.append(table_html(terminal.machine_table(run.config), "Run settings"))
    return Section("summary", "Machine and run settings", tuple(parts))


def _decided(match: ChipMatch, device: str, data: RunData) -> ChipMatch:
    """A CPU's share decided by the run's measured FP32 GEMM peak (``accelbench.hardware.share``), as the
    roofline's "% datasheet" and the per-chip figures count it."""
    from accelbench.hardware.match import narrowed

    if device != "cpu":
        return match
    measured = machine_peak(data.peaks, "gemm", "fp32") if data.peaks is not None else None
    return narrowed(match, measured.value_per_s if measured is not None else None)


def _chip_parts(data: RunData, chips: ChipTable) -> list[str]:
    try:
        machine = machine_from_dict(data.run.machine)
    except (ValueError, TypeError, KeyError) as exc:
        return [text(f"the stored machine cannot be read ({exc}): no chip facts")]
    parts = []
    for device in sorted({r.cell.device for r in data.results}):
        match = _decided(match_device(machine, device, chips), device, data)
        lines = [
            f"{device}: {match.detected} -> {match.chip.key if match.chip else 'no chip'} "
            f"({match.basis}), {match.count_basis or f'{match.count:.4g} chips counted'}",
            *match.notes,
        ]
        parts += [text(line) for line in lines]
        if match.chip is not None:
            parts.append(_chip_table(match.chip))
    return parts


def _chip_table(chip: Chip) -> str:
    rows = []
    for attribute, label, scale, unit in _FACTS:
        fact: Fact | None = getattr(chip, attribute)
        if fact is not None:
            rows.append((label, _fact_text(fact, scale, unit), fact.provenance, fact.source))
    return rows_html(f"Chip facts used: {chip.key}", ("fact", "value", "provenance", "source"), rows)


def _fact_text(fact: Fact, scale: float, unit: str) -> str:
    value = fact.value
    text_value = f"{value.central * scale:.4g} {unit}".strip()
    if value.is_point:
        return text_value
    return f"{text_value} ({value.low * scale:.4g}-{value.high * scale:.4g})"


def leaderboard_section(runs: Sequence[RunData], include_unverified: bool = False) -> Section:
    """Per workload and scenario: the switchable chart (and the server QPS curve), then the speed tables
    (the scenario's columns) and checks tables of each run; every title names the rule set.

    Charts and speed tables hold verified cells only (``accelbench.normalize.ranking``);
    ``include_unverified``
    adds the others, labelled UNVERIFIED.
    """
    groups: dict[tuple[str, str, str], list[tuple[RunData, Result]]] = {}
    for data in runs:
        for result in data.results:
            cell = result.cell
            groups.setdefault((cell.workload, cell.size, cell.scenario), []).append((data, result))
    parts: list[Any] = [text(_LEADERBOARD_NOTE)]
    if not groups:
        parts.append(text("the runs hold no results"))
    for (workload, size, scenario), members in sorted(groups.items()):
        parts += _group_parts(f"{workload} ({size}), {scenario}", members, runs, include_unverified)
    return Section("leaderboard", "Leaderboard", tuple(parts))


def _served_chips(members: Sequence[tuple[RunData, Result]]) -> dict[tuple[str, str], ChipMatch]:
    """The chips per (run id, cell key) of the endpoint cells whose chips are known (matched or declared)."""
    from accelbench.report.documents import served_chips

    found = {}
    for data, result in members:
        match = served_chips([result], data.run.machine, data.peaks, config=data.run.config).get(
            result.cell.key
        )
        if match is not None:
            found[(result.run_id, result.cell.key)] = match
    return found


_LEADERBOARD_NOTE = (
    "The first button above each chart is the scenario's MLPerf figure (single-stream p90, multi-stream "
    "p99 per query, server max QPS, offline samples/s); the others switch the normalization. Bars start "
    "at zero; the second row of buttons switches to a log scale. Error bars are 95% intervals across "
    "trials or the ranges of uncertain chip facts. Share of peak divides by the machine's best measured "
    "GEMM (probes and libraries); above 100% is marked SUSPECT. Energy: meas = hardware counter, "
    "poll = sampled power, est = TDP model (see each result's formula). Each normalized bar's hover names "
    "the provenance and source class of its denominator (vendor datasheet, vendor announcement, "
    "independent measurement, review, estimate; measured: this run)."
)


def _group_parts(
    name: str, members: Sequence[tuple[RunData, Result]], runs: Sequence[RunData], include_unverified: bool
) -> list[Any]:
    """The heading, charts and tables of one workload and scenario."""
    parts: list[Any] = [f"<h3>{escape(name)}</h3>"]
    entries = _entries(members, len(runs) > 1, include_unverified)
    note = results_rules_note(e.result for e in entries)
    if entries:
        parts.append(html_leaderboard.leaderboard_figure(f"{name}; {note}", entries))
        server = html_leaderboard.server_search_figure(f"{name}: server QPS search; {note}", entries)
        parts += [server] if server is not None else []
        parts += html_leaderboard.token_search_figures(f"{name}: server QPS search; {note}", entries)
    parts += html_endpoint.curve_figures(name, [r for _, r in members], _served_chips(members))
    parts += html_sessions.session_figures(name, [r for _, r in members])
    for data in runs:
        mine = [r for d, r in members if d is data]
        if mine:
            title = f"Speed (run {data.run.run_id})"
            parts += [table_html(t) for t in leaderboard_tables(mine, title, include_unverified)]
            parts.append(table_html(terminal.checks_table(mine, data.normalized)))
            searches = qps_table(mine)  # served LLMs' max QPS under Poisson arrivals (--arrivals poisson)
            parts += [table_html(searches)] if searches is not None else []
    return parts


def _entries(
    members: Sequence[tuple[RunData, Result]], several_runs: bool, include_unverified: bool = False
) -> list[html_leaderboard.Entry]:
    """Chart entries: verified results (and, when asked, unverified ones marked), best headline first."""
    entries = []
    for data, result in sorted(members, key=lambda m: sort_key(m[1])):
        if not ranking.is_rankable(result, include_unverified):
            continue  # listed under "unverified" or failures; the null stack measures the harness only
        name = label(result, data.run.run_id if several_runs else "")
        if not ranking.is_verified(result):
            name += f" (UNVERIFIED: {result.head.status})"
        entries.append(html_leaderboard.Entry(name, result, data.normalized.get(result.cell.key)))
    return entries


def unverified_section(runs: Sequence[RunData]) -> Section:
    """Measured cells that do not rank (disqualified, unverified, invalid, unstable), with the reason."""
    parts: list[Any] = [
        text(
            "A figure ranks only when the run that produced it passed every audit; these cells were "
            "measured but are left out of every chart and leaderboard above."
        )
    ]
    for data in runs:
        table = terminal.unverified_table(list(data.results))
        prefix = f"run {data.run.run_id}: "
        parts.append(table_html(table, prefix + "unverified cells") if table else text(prefix + "none"))
    return Section("unverified", "Unverified cells", tuple(parts))


def label(result: Result, run_id: str = "") -> str:
    """A result's short name on charts: stack, device when not the CPU, variant, run when several."""
    cell = result.cell
    text_label = cell.stack if cell.device == "cpu" else f"{cell.stack}@{cell.device}"
    if cell.variant != "canonical":
        text_label += f" {cell.variant}"
    return f"{text_label} [{run_id}]" if run_id else text_label


def roofline_section(runs: Sequence[RunData]) -> Section:
    """The measured ceilings of each run and every measured result as a point."""
    ceilings = [_ceiling(d.run.run_id, d.peaks) for d in runs if d.peaks is not None]
    valid = [c for c in ceilings if c is not None]
    entries = [e for d in runs for e in _entries([(d, r) for r in d.results], len(runs) > 1)]
    located = [e for e in entries if e.roofline is not None]
    if not valid:
        return Section("roofline", "Roofline", (text("no measured peaks in these runs (--no-probe)"),))
    note = text(
        f"{len(located)} of {len(entries)} measured results placed (FLOPs counted by torch's "
        "FlopCounterMode; bytes: parameters and activations read once)"
    )
    rules = results_rules_note(e.result for e in located)
    return Section("roofline", "Roofline", (html_charts.roofline_figure(valid, located, rules), note))


def _ceiling(run_id: str, peaks: MeasuredPeaks | None) -> html_charts.Ceiling | None:
    """The run's roofs: the machine's best measured GEMM per dtype and memory bandwidth."""
    bandwidth = machine_peak(peaks, "bandwidth") if peaks is not None else None
    if peaks is None or bandwidth is None:
        return None
    found = {d: machine_peak(peaks, "gemm", d) for d in ("fp32", "bf16")}
    flops = {d: peak.value_per_s for d, peak in found.items() if peak is not None}
    return html_charts.Ceiling(run_id, flops, bandwidth.value_per_s) if flops else None


def failures_section(runs: Sequence[RunData]) -> Section:
    """Cells without a valid measurement, with status and reason, and the grouped warnings."""
    parts: list[Any] = []
    for data in runs:
        table = terminal.failures_table(list(data.results))
        prefix = f"run {data.run.run_id}: "
        parts.append(
            table_html(table, prefix + "cells without a valid measurement")
            if table
            else text(prefix + "every cell produced a valid measurement")
        )
        warnings = terminal.warnings_lines(list(data.results))
        if warnings:
            items = "".join(f"<li>{markup_html(line)}</li>" for line in warnings)
            parts.append(
                f"<details><summary>{len(warnings)} kinds of warnings</summary><ul>{items}</ul></details>"
            )
    return Section("failures", "Failures and warnings", tuple(parts))


def serving_section(runs: Sequence[RunData]) -> Section | None:
    """Served deployments beside the same stack in process, and batching on beside off; None when the runs
    hold no served stack with something to compare it with."""
    comparisons = [c for run in runs for c in serving_comparisons(run.results)]
    table = serving_report.serving_table(comparisons)
    if table is None:
        return None
    note = text("Ratios within one run only; a side that did not pass every audit gives its reason instead.")
    return Section("serving", "Serving overhead", (note, table_html(table)))
