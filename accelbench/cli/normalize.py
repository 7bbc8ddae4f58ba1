"""The normalization commands of the CLI: ``explain``, ``history`` and ``import-mlperf``.

``register(app)`` adds them to the typer app of ``accelbench.cli``; bad input raises ``UserError``, which
``accelbench.cli.main`` turns into one line on stderr and exit code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from accelbench.cli.options import ChipsOption, JsonOption, StoreOption, store_dir
from accelbench.errors import UserError
from accelbench.hardware.chips import load_chips
from accelbench.mlperf.importer import LogImport, import_csv, import_logs
from accelbench.normalize import lookup
from accelbench.normalize.explain import explain as explain_ratio
from accelbench.report import normalized, terminal

console = Console()
err_console = Console(stderr=True)

SubjectArgument = Annotated[
    str, typer.Argument(help="MLPerf history id (v0.5/nvidia/dgx1_multi_ngc18.11_mxnet) or RUN_ID/CELL_KEY.")
]


def explain(
    a: SubjectArgument,
    b: SubjectArgument,
    chips_file: ChipsOption = None,
    store_path: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Explain how many times faster B is than A: chips x transistors x node x architecture + software."""
    chips = load_chips(chips_file)
    folder = store_dir(store_path)
    explanation = explain_ratio(lookup.subject(a, folder, chips), lookup.subject(b, folder, chips))
    if as_json:
        terminal.print_json(normalized.explanation_document(explanation))
        return
    for item in normalized.explanation_renderables(explanation):
        console.print(item)


def history(
    benchmark: Annotated[str, typer.Option(help="Benchmark of the series.")] = "resnet",
    per: Annotated[str, typer.Option(help="chip | transistor | mm2 | watt | dollar")] = "chip",
    chips_file: ChipsOption = None,
    store_path: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the MLPerf Training history (bundled + imported) with normalized columns."""
    if per not in normalized.HISTORY_PER:
        raise UserError(f"unknown --per {per!r}; use one of: {', '.join(normalized.HISTORY_PER)}")
    rows = lookup.history_rows(store_dir(store_path), load_chips(chips_file), benchmark)
    if as_json:
        terminal.print_json(normalized.history_document(rows))
    else:
        console.print(normalized.history_table(rows, per))


def import_mlperf(
    path: Annotated[
        Path, typer.Argument(help="A CSV in the history's columns, or a folder of result_*.txt.")
    ],
    chip: Annotated[str | None, typer.Option(help="Logs only: chip key, e.g. 'NVIDIA V100'.")] = None,
    accelerators: Annotated[int | None, typer.Option(help="Logs only: number of accelerators.")] = None,
    round_name: Annotated[str | None, typer.Option("--round", help="Logs only: round, e.g. v1.0.")] = None,
    submitter: Annotated[
        str | None, typer.Option(help="Logs only: submitter (default: from the logs).")
    ] = None,
    system: Annotated[
        str | None, typer.Option(help="Logs only: system name (default: from the logs).")
    ] = None,
    source: Annotated[str | None, typer.Option(help="Logs only: where the logs come from.")] = None,
    chips_file: ChipsOption = None,
    store_path: StoreOption = None,
) -> None:
    """Add MLPerf Training results to the store's history: CSV rows, or a folder of result logs."""
    chips = load_chips(chips_file)
    folder = store_dir(store_path)
    if path.is_dir():
        if chip is None or accelerators is None or accelerators < 1:
            raise UserError("importing result logs needs --chip KEY and --accelerators N (N >= 1)")
        given = LogImport(
            chip, accelerators, round_name or "", submitter or "", system or "", source=source or ""
        )
        entries = import_logs(path, folder, given)
    else:
        entries = import_csv(path, folder)
    for entry in entries:
        if chips.get(entry.chip_key) is None:
            err_console.print(
                f"[yellow]warning[/] {entry.id}: chip {entry.chip_key!r} is not in the chips table"
            )
    console.print(f"imported {len(entries)} entries into {folder}: {', '.join(e.id for e in entries)}")


def register(app: typer.Typer) -> None:
    """Add the normalization commands to the CLI app."""
    app.command()(explain)
    app.command()(history)
    app.command("import-mlperf")(import_mlperf)
