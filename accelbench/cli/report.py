"""The commands of the CLI that write a file from stored runs: ``report`` (one self-contained HTML file)
and ``export`` (CSV or JSON; ``--format requests``: the endpoint cells' per-request records).

``register(app)`` adds them to the typer app of ``accelbench.cli``; bad input (an unknown run id, an
empty store, an unknown subject for ``--explain``, an ``-o`` inside the store or over a file that is not
an earlier output: ``accelbench.outputs``) raises ``UserError``: one line on stderr and exit code 2. Both
open the store read-only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from accelbench.cli.options import (
    ChipsOption,
    ForceOption,
    StoreOption,
    chosen_run,
    chosen_store,
    store_dir,
)
from accelbench.errors import UserError
from accelbench.hardware.chips import load_chips
from accelbench.outputs import checked_output

err_console = Console(stderr=True)


def report(
    run_ids: Annotated[
        list[str] | None, typer.Argument(help="Run ids to combine (default: the latest run).")
    ] = None,
    output: Annotated[Path, typer.Option("-o", "--output", help="HTML file to write.")] = Path("report.html"),
    explain_ids: Annotated[
        list[str] | None,
        typer.Option("--explain", help="Twice: the pair A, B of the explain waterfall (subject ids)."),
    ] = None,
    chips_file: ChipsOption = None,
    store_path: StoreOption = None,
    include_unverified: Annotated[
        bool,
        typer.Option("--include-unverified", help="Chart unverified cells too, labelled UNVERIFIED."),
    ] = False,
    force: ForceOption = False,
) -> None:
    """Write one self-contained HTML report (opens offline) of one or more stored runs."""
    from accelbench.report.html import REPORT_KIND, write_report

    checked_output(output, store_dir(store_path), REPORT_KIND, force)
    if explain_ids is not None and len(explain_ids) not in (0, 2):
        raise UserError("--explain takes exactly two subjects: --explain A --explain B")
    pair = (explain_ids[0], explain_ids[1]) if explain_ids else None
    chips = load_chips(chips_file)
    with chosen_store(store_path, read_only=True) as store:
        written = write_report(store, run_ids or [], output, chips, pair, include_unverified)
    err_console.print(
        f"{written.charts} charts, {written.size_bytes / 2**20:.1f} MiB, rendered in {written.render_s:.1f} s"
    )
    print(written.path)


def export(
    run_id: Annotated[str | None, typer.Argument(help="Run id (default: the latest run).")] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format", help="csv | json | requests (endpoint cells' per-request records, JSON lines)"
        ),
    ] = "csv",
    output: Annotated[Path, typer.Option("-o", "--output", help="File to write.")] = Path("results.csv"),
    store_path: StoreOption = None,
    force: ForceOption = False,
) -> None:
    """Export the results of a run to CSV or JSON, or its endpoint cells' per-request records."""
    from accelbench.report.export import REQUESTS, export_kind, export_results
    from accelbench.report.requests import export_requests

    checked_output(output, store_dir(store_path), export_kind(fmt), force)
    with chosen_store(store_path, read_only=True) as store:
        run = chosen_run(store, run_id)
        if fmt == REQUESTS:
            count = export_requests(store.results(run), store.run_dir(run), output)
            err_console.print(f"wrote {count} request records to {output}")
            return
        export_results(store.results(run), fmt, output)
    err_console.print(f"wrote {output}")


def register(app: typer.Typer) -> None:
    """Add the report and export commands to the CLI app."""
    app.command()(report)
    app.command()(export)
