"""``accelbench store check``: verify every stored record, and move bad ones aside with ``repair``.

What is checked (each finding is one ``Problem``):
    schema      the document does not load (``accelbench.stored.from_dict``: bad JSON, unknown or newer
                ``schema_version``, missing fields)
    checksum    ``doc_sha256`` does not match the document's text, or is missing
    mismatch    the document's run id, cell key or status differ from the row's indexed columns
    orphan      a record whose run does not exist; a run folder without a run; a cell folder without a
                record (a cell in progress, or one a killed run left behind)
    duplicate   two records of one cell of one run (the newest is kept)

A file that is not a usable store (missing, not SQLite, failing ``PRAGMA quick_check``, a foreign or
newer schema) is a ``UserError``, as for every command. Checking only reads (through a read-only
connection). ``repair`` moves bad records into the ``quarantine`` table and orphan folders under
``<store>/quarantine/``, adds missing checksums, and deletes nothing: a record leaves ``results`` only
in the transaction that copies it to ``quarantine``. A run that lost a record is marked ``interrupted``,
so ``accelbench run --resume RUN_ID`` measures that cell again.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from accelbench.errors import UserError
from accelbench.files import json_text, read_json
from accelbench.inputs import one_line
from accelbench.record_types import check_record
from accelbench.results import Cell
from accelbench.store import schema as store_schema
from accelbench.store import sqlite as store_db
from accelbench.stored import from_dict

logger = logging.getLogger(__name__)

QUARANTINE_DIR = "quarantine"
_ROWS = "id, run_id, cell_key, status, doc_json"
UNFINISHED = ("running", "interrupted")
"""Run statuses whose cells may lack records (``accelbench run --resume`` measures them)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding: its kind, where (``run/cell_key`` or a folder) and what is wrong."""

    kind: str
    where: str
    detail: str
    row_id: int | None = None
    """The ``results.id`` that repair moves to quarantine (None: nothing to move, or a folder)."""
    folder: Path | None = None
    """An orphan folder that repair moves under ``<store>/quarantine/``."""

    def line(self) -> str:
        """The one-line form printed by the CLI."""
        return f"{self.kind} {self.where}: {self.detail}"


@dataclass(frozen=True, slots=True)
class CheckReport:
    """What ``check_store`` found (and, with ``repair``, what it did)."""

    store: Path
    runs: int
    records: int
    problems: tuple[Problem, ...]
    repaired: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        """True when nothing is wrong."""
        return not self.problems


@dataclass(frozen=True, slots=True)
class _Row:
    row_id: int
    run_id: str
    cell_key: str
    status: str
    doc_json: str
    sha256: str | None


def check_store(path: Path | str, repair: bool = False) -> CheckReport:
    """Check the store at ``path``; with ``repair`` move bad records and folders aside afterwards."""
    folder = Path(path)
    db_path = folder / store_db.DB_NAME
    if not folder.is_dir() or not db_path.is_file():
        raise UserError(f"no result store at {folder} (no {store_db.DB_NAME})")
    with store_db.folder_lock(folder):  # no other process opens the store while its sidecars are judged
        store_schema.inspect_existing(db_path)  # UserError for a file that is not a usable store
        with store_schema.read_only(db_path) as db:
            try:
                report = _check(folder, db)
            except (sqlite3.Error, ValueError) as exc:  # ValueError: stored text that is not UTF-8
                raise UserError(f"cannot read result store {db_path}: {exc}") from None
    if not repair:
        return report
    with store_db.open_store(folder) as store:  # migrates an old store first (adds the checksums)
        done = _repair(folder, store._db, report.problems)
    migrated = ("store migrated: checksums added",) if report.notes else ()
    return CheckReport(report.store, report.runs, report.records, report.problems, (*migrated, *done))


def _check(folder: Path, db: sqlite3.Connection) -> CheckReport:
    has_checksums = _has_column(db, "results", "doc_sha256")
    rows = _rows(db, has_checksums)
    runs = dict(db.execute("SELECT run_id, status FROM runs").fetchall())
    problems = [p for row in rows for p in _record_problems(row, runs, has_checksums)]
    problems += _run_problems(db)
    bad_ids = {p.row_id for p in problems}
    problems += _duplicates([row for row in rows if row.row_id not in bad_ids])
    problems += _orphan_folders(folder, runs, {(row.run_id, row.cell_key) for row in rows})
    notes = () if has_checksums else ("store schema 1 has no checksums; --repair (or any run) adds them",)
    return CheckReport(folder, len(runs), len(rows), tuple(problems), notes=notes)


def _run_problems(db: sqlite3.Connection) -> list[Problem]:
    """Runs whose configuration or machine is not a JSON object (readers take them as empty)."""
    problems = []
    for run_id, config, machine in db.execute("SELECT run_id, config_json, machine_json FROM runs"):
        for name, text in (("config_json", config), ("machine_json", machine)):
            try:
                value = (
                    json_text(text, f"run {run_id} {name}", finite=False) if isinstance(text, str) else text
                )
            except (ValueError, RecursionError):
                value = None
            if not isinstance(value, dict):
                problems.append(Problem("schema", f"run {run_id}", f"{name} is not a JSON object"))
    return problems


def _has_column(db: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in db.execute(f"PRAGMA table_info({table})"))


def _rows(db: sqlite3.Connection, has_checksums: bool) -> list[_Row]:
    sha = "doc_sha256" if has_checksums else "NULL"
    cursor = db.execute(f"SELECT {_ROWS}, {sha} FROM results ORDER BY id")
    return [_Row(*row) for row in cursor.fetchall()]


def _record_problems(row: _Row, runs: dict[str, str], has_checksums: bool) -> list[Problem]:
    """At most one problem that moves the record, plus a missing checksum when it is otherwise fine."""
    where = f"{row.run_id}/{row.cell_key}"
    if row.run_id not in runs:
        return [Problem("orphan", where, "record of a run that is not in the store", row.row_id)]
    if not isinstance(row.doc_json, str):
        detail = f"result document is {type(row.doc_json).__name__}, not JSON text"
        return [Problem("schema", where, detail, row.row_id)]
    if row.sha256 is not None and store_schema.doc_sha256(row.doc_json) != row.sha256:
        return [Problem("checksum", where, "stored checksum does not match the document", row.row_id)]
    found = _document_problem(row)
    if found is not None:
        return [Problem(found[0], where, found[1], row.row_id)]
    if has_checksums and row.sha256 is None:
        return [Problem("checksum", where, "no checksum stored (repair adds it)")]
    return []


def _document_problem(row: _Row) -> tuple[str, str] | None:
    """``(kind, detail)`` when the document does not load or disagrees with its row."""
    try:
        result = from_dict(json_text(row.doc_json, "stored result", finite=False))
        check_record(result)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        return "schema", f"result document does not load ({type(exc).__name__}: {one_line(str(exc), 200)})"
    stored = "/".join(map(str, (result.run_id, result.cell.key, result.head.status)))
    columns = "/".join(map(str, (row.run_id, row.cell_key, row.status)))
    if stored != columns:
        return "mismatch", f"document says {stored}, the row's columns say {columns}"
    return None


def _duplicates(rows: Iterable[_Row]) -> list[Problem]:
    """Every record but the newest of a (run, cell) that has several."""
    by_cell: dict[tuple[str, str], list[_Row]] = defaultdict(list)
    for row in rows:
        by_cell[(row.run_id, row.cell_key)].append(row)
    return [
        Problem("duplicate", f"{run_id}/{key}", f"{len(group)} records of one cell; newest kept", r.row_id)
        for (run_id, key), group in by_cell.items()
        if len(group) > 1
        for r in group[:-1]
    ]


def _orphan_folders(folder: Path, runs: dict[str, str], recorded: set[tuple[str, str]]) -> list[Problem]:
    runs_dir = folder / "runs"
    if not runs_dir.is_dir():
        return []
    problems = []
    for run_dir in sorted(p for p in runs_dir.iterdir() if p.is_dir()):
        if run_dir.name not in runs:
            problems.append(
                Problem(
                    "orphan", str(run_dir), "run folder of a run that is not in the store", folder=run_dir
                )
            )
            continue
        problems += _orphan_cells(run_dir, runs[run_dir.name], recorded)
    return problems


def _orphan_cells(run_dir: Path, run_status: str, recorded: set[tuple[str, str]]) -> list[Problem]:
    """Cell folders (named in their ``spec.json``) that a finished run has no record of.

    A running or interrupted run has such a folder for the cell it was measuring; its resume fills it.
    """
    cells_dir = run_dir / "cells"
    if run_status in UNFINISHED or not cells_dir.is_dir():
        return []
    return [
        Problem("orphan", str(cell), f"cell folder without a record (run {run_status})", folder=cell)
        for cell in sorted(p for p in cells_dir.iterdir() if p.is_dir())
        if (run_dir.name, _spec_cell_key(cell)) not in recorded
    ]


def _spec_cell_key(cell_dir: Path) -> str | None:
    """The key of the cell a cell folder's ``spec.json`` names; None when it has no readable spec."""
    try:
        return Cell(**read_json(cell_dir / "spec.json", "cell spec")["cell"]).key
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _repair(folder: Path, db: sqlite3.Connection, problems: tuple[Problem, ...]) -> tuple[str, ...]:
    moved = [p for p in problems if p.row_id is not None]
    done = []
    with store_schema.transaction(db):
        for problem in moved:
            db.execute(
                "INSERT INTO quarantine (moved_at, problem, source_id, run_id, cell_key, doc_json,"
                " doc_sha256) SELECT ?, ?, id, run_id, cell_key, doc_json, doc_sha256 FROM results"
                " WHERE id = ?",
                (_now(), problem.line(), problem.row_id),
            )
            db.execute("DELETE FROM results WHERE id = ?", (problem.row_id,))
            done.append(f"moved record {problem.where} to table quarantine ({problem.kind})")
        filled = db.execute(
            f"UPDATE results SET doc_sha256 = {store_schema.SHA256_SQL}(doc_json) WHERE doc_sha256 IS NULL"
        ).rowcount
        reopened = sorted({p.where.split("/", 1)[0] for p in moved if p.kind != "orphan"})
        for run_id in reopened:
            db.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = ?", (run_id,))
            done.append(f"run {run_id} marked interrupted: accelbench run --resume {run_id} re-measures")
    if filled:
        done.append(f"added {filled} missing checksum(s)")
    for problem in problems:
        if problem.folder is not None:
            done.append(_move_folder(folder, problem.folder))
    return tuple(done)


def _move_folder(store: Path, source: Path) -> str:
    target = store / QUARANTINE_DIR / source.relative_to(store)
    target.parent.mkdir(parents=True, exist_ok=True)
    suffix = 0
    while target.exists():
        suffix += 1
        target = target.with_name(f"{source.name}.{suffix}")
    source.rename(target)
    return f"moved folder {source} to {target}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")
