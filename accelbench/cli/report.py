"""The ``report`` command of the CLI: one self-contained HTML file of stored runs.

``register(app)`` adds it to the typer app of ``accelbench.cli``; bad input (an unknown run id, an empty
store, an unknown subject for ``--explain``) raises ``UserError``: one line on stderr and exit code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from accelbench.cli.options import ChipsOption, StoreOption, store_dir
from accelbench.errors import UserError
from accelbench.hardware.chips import load_chips
from accelbench.store import open_store

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
) -> None:
    """Write one self-contained HTML report (opens offline) of one or more stored runs."""
    from accelbench.report.html import write_report

    if explain_ids is not None and len(explain_ids) not in (0, 2):
        raise UserError("--explain takes exactly two subjects: --explain A --explain B")
    pair = (explain_ids[0], explain_ids[1]) if explain_ids else None
    chips = load_chips(chips_file)
    with open_store(store_dir(store_path)) as store:
        written = write_report(store, run_ids or [], output, chips, pair, include_unverified)
    err_console.print(
        f"{written.charts} charts, {written.size_bytes / 2**20:.1f} MiB, rendered in {written.render_s:.1f} s"
    )
    print(written.path)


def register(app: typer.Typer) -> None:
    """Add the report command to the CLI app."""
    app.command()(report)
