"""The ``tune`` command of the CLI: bring your own model (ONNX file or ``module:function``).

``register(app)`` adds it to the typer app of ``accelbench.cli``; a malformed file or a bad function
raises ``UserError`` before anything is stored, which the CLI turns into one line and exit code 2. When
no stack produced a verified result the command exits 1 with one line saying why, stack by stack.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console

from accelbench import registry, tune
from accelbench.cli.options import JsonOption, StoreOption, store_dir
from accelbench.errors import UserError
from accelbench.hardware.detect import detect_machine
from accelbench.inputs import check_names, one_line
from accelbench.report import terminal
from accelbench.report import tune as tune_report
from accelbench.results import Result
from accelbench.store import open_store
from accelbench.workloads.user_check import check_in_child
from accelbench.workloads.user_model import parse_model

console = Console(width=None if sys.stdout.isatty() else 180)  # pipes get full tables
err_console = Console(stderr=True)


def tune_command(
    model: Annotated[
        str, typer.Argument(help="An ONNX file, or module:function returning (module, inputs).")
    ],
    stacks: Annotated[
        str | None, typer.Option(help="Comma-separated stacks (default: all but null).")
    ] = None,
    scenario: Annotated[str, typer.Option(help="single-stream | offline | multi-stream | server")] = (
        "single-stream"
    ),
    rules: Annotated[str, typer.Option(help="quick | standard | official")] = "quick",
    timeout_s: Annotated[float, typer.Option("--timeout-s", help="Wall-clock limit per stack.")] = 600.0,
    store_path: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run your model through every available stack with the quality gate; rank the verified ones."""
    source = parse_model(model)
    chosen = _stack_names(stacks) if stacks else tune.default_stacks()
    config = tune.tune_config(source, chosen, scenario, rules, timeout_s)
    registry.resolve("stack", config.stacks)  # unknown names fail before any user code runs
    failure = None
    if source.kind == "torch":  # user code: called in a child, whose crash or hang is the cells' status
        failure = check_in_child(source.location, source.import_root, config.timeout_s)
    machine = detect_machine()

    def progress(result: Result) -> None:
        if not as_json:
            err_console.print(f"{result.cell.stack}: {result.head.status} {result.head.reason}"[:200])

    with open_store(store_dir(store_path)) as store:
        ranking = tune.tune(store, source, config, machine, on_result=progress, failure=failure)
    if as_json:
        terminal.print_json(tune.ranking_document(ranking))
    else:
        console.print(tune_report.ranking_table(ranking))
        console.print(tune_report.verdict_line(ranking))
    if ranking.best is None:  # nothing verified: a failed measurement, whatever the table shows
        sys.stderr.write(f"accelbench: error: {one_line(tune_report.no_result_line(ranking))}\n")
        raise typer.Exit(1)


def _stack_names(text: str) -> tuple[str, ...]:
    names = check_names(tuple(name.strip() for name in text.split(",") if name.strip()))
    if not names:
        raise UserError("--stacks was given an empty list")
    return tune.default_stacks() if names == ("all",) else names


def register(app: typer.Typer) -> None:
    """Add the ``tune`` command to the CLI app."""
    app.command("tune")(tune_command)
