"""What ``run`` and ``show`` print for a run's results: the tables of every section, or one JSON document.

The tables and documents are built in ``accelbench.report`` and ``accelbench.normalize``; this module
only picks the sections a run has and prints them in order.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Console

from accelbench.meters.cost import HourlyRate
from accelbench.normalize.expressiveness import expressiveness_matrix
from accelbench.normalize.serving import serving_comparisons
from accelbench.report import endpoint as endpoint_report
from accelbench.report import generation as generation_report
from accelbench.report import serving as serving_report
from accelbench.report import sessions as sessions_report
from accelbench.report import terminal
from accelbench.report import training as training_report
from accelbench.report.show_json import leaderboard_document, serving_document
from accelbench.results import Result
from accelbench.store import Store
from accelbench.stored import to_dict

if TYPE_CHECKING:
    from accelbench.normalize.cell_figures import CellFigures

console = Console(width=None if sys.stdout.isatty() else 180)  # pipes get full tables


def print_results(
    store: Store, run_id: str, as_json: bool, include_unverified: bool = False, rate: HourlyRate | None = None
) -> None:
    """The results of ``run_id`` (verified ones ranked; ``rate``: the cost per token of served cells)."""
    from accelbench.normalize.cell_figures import cell_figures
    from accelbench.probe.peaks_file import load_peaks
    from accelbench.report.documents import served_chips

    results, run_dir = store.results(run_id), store.run_dir(run_id)
    peaks = load_peaks(run_dir)
    machine, config = store.run(run_id).machine, store.run(run_id).config
    normalized = cell_figures(results, machine, peaks, store.path / "cache")
    chips = served_chips(results, machine, peaks, config=config)
    if as_json:
        documents = [{**to_dict(r), "normalized": _normalized_document(normalized, r)} for r in results]
        peaks_doc = peaks.to_dict() if peaks else None
        expressive = _expressiveness_section(results)
        document = {"run_id": run_id, "peaks": peaks_doc, "results": documents, **expressive}
        document.update(leaderboard_document(results, include_unverified))
        document.update(_generalization_section(results))
        document.update(serving_document(results))
        document.update(endpoint_report.cost_document(results, rate) if rate is not None else {})
        document.update(endpoint_report.per_chip_document(results, chips))
        terminal.print_json(document)
        return
    console.print(terminal.results_table(results, f"accelbench run {run_id}", include_unverified))
    for probes in terminal.server_search_tables(results):
        console.print(probes)
    unverified = terminal.unverified_table(results)
    if unverified is not None:
        console.print(unverified)
    console.print(terminal.checks_table(results, normalized))
    failures = terminal.failures_table(results)
    if failures is not None:
        console.print(failures)
    for line in terminal.warnings_lines(results):
        console.print(f"[yellow]warning[/] {line}")
    _print_expressiveness(results)
    _print_generalization(results)
    for table in (
        training_report.training_table(results),
        generation_report.generation_table(results),
        *endpoint_report.curve_tables(results, rate, chips),
        *sessions_report.session_tables(results, rate, chips),
        serving_report.serving_table(serving_comparisons(results)),
    ):
        if table is not None:
            console.print(table)
    console.print(terminal.status_line(results))
    console.print(f"run folder (LoadGen logs, caches): {run_dir}")


def _normalized_document(normalized: Mapping[str, CellFigures], result: Result) -> dict[str, Any] | None:
    """The ``normalized`` document of a result in ``show --json``; None for a cell without figures."""
    found = normalized.get(result.cell.key)
    return found.to_dict() if found is not None else None


def _generalization_section(results: list[Result]) -> dict[str, Any]:
    """``{"generalization": ...}`` when the run has variants, else empty."""
    from accelbench.normalize.generalization import generalization_figures, has_variants

    return {"generalization": generalization_figures(results).to_dict()} if has_variants(results) else {}


def _expressiveness_section(results: list[Result]) -> dict[str, Any]:
    """``{"expressiveness": ...}`` when the run has expressiveness workloads, else empty."""
    matrix = expressiveness_matrix(results)
    return {"expressiveness": matrix.to_dict()} if matrix.cells else {}


def _print_generalization(results: list[Result]) -> None:
    """Generalization figures when the run has variants; flagged audits and the audit summary."""
    from accelbench.normalize.generalization import generalization_figures, has_variants
    from accelbench.report import generalization as report

    if has_variants(results):
        figures = generalization_figures(results)
        console.print(report.stacks_table(figures))
        console.print(report.variants_table(figures))
    flagged = report.audits_table(results)
    if flagged is not None:
        console.print(flagged)
    summary = report.audits_line(results)
    if summary:
        console.print(summary)


def _print_expressiveness(results: list[Result]) -> None:
    """The workload x stack matrix when the run has expressiveness workloads."""
    from accelbench.report import expressiveness as report

    matrix = expressiveness_matrix(results)
    if matrix.cells:
        console.print(report.matrix_table(matrix))
        for line in report.reason_lines(matrix):
            console.print(f"  {line}")
