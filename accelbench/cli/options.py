"""The options shared by the commands, declared once, and the one place the store folder is chosen."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from accelbench.errors import UserError
from accelbench.store import DEFAULT_STORE_DIR, Store, open_store

STORE_ENV = "ACCELBENCH_STORE"
"""The environment variable that names the results folder when ``--store`` is not given."""

StoreOption = Annotated[
    Path | None,
    typer.Option("--store", help=f"Results folder (env {STORE_ENV}; default ./{DEFAULT_STORE_DIR})"),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
ChipsOption = Annotated[
    Path | None, typer.Option("--chips", help="TOML file adding chips (see docs/adding-a-chip.md).")
]
UnverifiedOption = Annotated[
    bool,
    typer.Option(
        "--include-unverified",
        help="Rank disqualified, unverified, invalid and unstable cells too, marked UNVERIFIED.",
    ),
]

ConfigOption = Annotated[Path | None, typer.Option("--config", help="TOML file with a [run] table.")]
VariantsOption = Annotated[
    int | None, typer.Option(help="Seeded unseen variants per workload (generalization).")
]
VariantSeedOption = Annotated[
    int | None, typer.Option("--variant-seed", help="Seed of the variants (default: fresh, recorded).")
]
InputSeedOption = Annotated[
    int | None,
    typer.Option(
        "--input-seed",
        help="Seed of the run's inputs, to replay a run (default: a secret one, stored when the run ends).",
    ),
]
ForceOption = Annotated[
    bool,
    typer.Option("--force", help="Replace an existing -o file that is not an earlier output."),
]
FleetOption = Annotated[
    str | None, typer.Option(help="Run the cells on a Ray cluster: ray://HOST:PORT, HOST:PORT or auto.")
]


def store_dir(path: Path | None) -> Path:
    """The results folder: ``--store``, else $ACCELBENCH_STORE, else ./accelbench-results."""
    return path or Path(os.environ.get(STORE_ENV) or DEFAULT_STORE_DIR)


def chosen_store(path: Path | None, read_only: bool = False) -> Store:
    """The store in the folder ``store_dir`` chooses, opened (created when new, unless ``read_only``)."""
    return open_store(store_dir(path), read_only=read_only)


def chosen_run(store: Store, run_id: str | None) -> str:
    """``run_id`` when the store has it, else the latest run; UserError for an unknown id or no runs."""
    if run_id:
        store.run(run_id)  # raises UserError for an unknown id
        return run_id
    latest = store.latest_run_id()
    if latest is None:
        raise UserError("the store holds no runs yet; start one with: accelbench run")
    return latest
