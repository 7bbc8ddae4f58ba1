"""The ``store`` commands of the CLI: ``accelbench store check [--store DIR] [--repair]``.

``register(app)`` adds the ``store`` group to the typer app of ``accelbench.cli``. Exit codes: 0 when
the store is clean, 1 when problems were found (one line each, on stdout; with ``--repair`` they were
moved aside), 2 on bad input (no store there, not a usable store file), as ``UserError`` everywhere.
"""

from __future__ import annotations

from typing import Annotated

import typer

from accelbench.cli.options import StoreOption, store_dir
from accelbench.store.check import check_store

store_app = typer.Typer(no_args_is_help=True, help="Check the result store (and repair it).")


@store_app.command("check")
def check(
    store_path: StoreOption = None,
    repair: Annotated[
        bool, typer.Option("--repair", help="Move bad records and orphan folders aside (never deletes).")
    ] = False,
) -> None:
    """Check every record: schema, checksum, orphans, duplicates; exit 1 when a problem is found."""
    report = check_store(store_dir(store_path), repair=repair)
    for problem in report.problems:
        typer.echo(problem.line())
    for line in (*report.repaired, *report.notes):
        typer.echo(line)
    verdict = "clean" if report.clean else f"{len(report.problems)} problem(s)"
    typer.echo(f"store {report.store}: {report.runs} runs, {report.records} records, {verdict}")
    if not report.clean:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``store`` command group to the CLI app."""
    app.add_typer(store_app, name="store")
