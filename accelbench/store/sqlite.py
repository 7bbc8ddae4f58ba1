"""The result store: a directory with ``results.sqlite`` (stdlib sqlite3, WAL mode) and ``runs/<run_id>/``.

Each result is one row: indexed columns for querying plus the full JSON document
(``accelbench.results.to_dict``), which is the source of truth when loading. A run records the machine
fingerprint it started on; results from another machine are refused, as pyperf refuses to merge runs
from different machines.

An existing ``results.sqlite`` is first inspected through a read-only connection; a file that is not a
SQLite database, fails ``PRAGMA quick_check``, holds a foreign schema or a newer store version is
reported as a one-line ``UserError`` and never modified.

Store schema history (``meta.schema_version``; ``MIGRATIONS[i]`` upgrades version i to i + 1 inside one
transaction; append a step, never edit a released one):
    1  tables ``meta``, ``runs``, ``results`` and the indexes on results (run_id),
       (workload, stack, scenario) and (status).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

from accelbench.errors import UserError
from accelbench.results import Result, from_dict, to_dict

logger = logging.getLogger(__name__)

DEFAULT_STORE_DIR = Path("accelbench-results")
DB_NAME = "results.sqlite"

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, machine_fingerprint TEXT NOT NULL,
            config_json TEXT NOT NULL, machine_json TEXT NOT NULL, status TEXT NOT NULL)""",
        """CREATE TABLE results (
            id INTEGER PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(run_id), cell_key TEXT NOT NULL,
            workload TEXT NOT NULL, size TEXT NOT NULL, variant TEXT NOT NULL, stack TEXT NOT NULL,
            device TEXT NOT NULL, scenario TEXT NOT NULL, status TEXT NOT NULL, p50_s REAL, qps REAL,
            quality_passed INTEGER, effective_precision TEXT NOT NULL, created_at TEXT NOT NULL,
            doc_json TEXT NOT NULL, UNIQUE(run_id, cell_key))""",
        "CREATE INDEX results_run ON results(run_id)",
        "CREATE INDEX results_workload_stack_scenario ON results(workload, stack, scenario)",
        "CREATE INDEX results_status ON results(status)",
    ),
)
STORE_SCHEMA_VERSION = len(MIGRATIONS)

_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_OWN_TABLES = {"meta", "runs", "results"}


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run as stored: its configuration, the machine it started on, and its status."""

    run_id: str
    created_at: str
    machine_fingerprint: str
    config: Mapping[str, Any]
    machine: Mapping[str, Any]
    status: str


def open_store(path: Path | str = DEFAULT_STORE_DIR) -> Store:
    """Open (creating if needed) the store directory; UserError when unusable, nothing touched."""
    folder = Path(path)
    _ensure_writable_dir(folder)
    db_path = folder / DB_NAME
    if db_path.exists():
        _inspect_existing(db_path)
    return Store(folder, _connect(db_path))


class Store:
    """A result store; use ``open_store`` to get one, and close it (or use it as a context manager)."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def create_run(
        self, run_id: str, config: Mapping[str, Any], machine: Mapping[str, Any], fingerprint: str
    ) -> RunRecord:
        """Record a new run (status ``running``) and create its folder; UserError if the id exists."""
        _check_run_id(run_id)
        row = (run_id, _now(), fingerprint, _json(config), _json(machine), "running")
        try:
            with self._transaction() as db:
                db.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?)", row)
        except sqlite3.IntegrityError:
            raise UserError(f"run {run_id!r} already exists in the store {self.path}") from None
        self.run_dir(run_id)
        return self.run(run_id)

    def add_result(self, result: Result) -> None:
        """Store a result atomically; storing the same cell of a run again replaces it.

        Raises UserError for an unknown run and ValueError when the result's machine fingerprint is
        not the run's.
        """
        with self._transaction() as db:
            fingerprint = self._run_row(result.run_id, db)["machine_fingerprint"]
            if result.machine_fingerprint != fingerprint:
                raise ValueError(
                    f"result of cell {result.cell.key} was measured on machine "
                    f"{result.machine_fingerprint!r}, but run {result.run_id!r} runs on {fingerprint!r}"
                )
            db.execute(
                "INSERT OR REPLACE INTO results (run_id, cell_key, workload, size, variant, stack, device,"
                " scenario, status, p50_s, qps, quality_passed, effective_precision, created_at, doc_json)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _result_row(result),
            )

    def results(self, run_id: str | None = None) -> list[Result]:
        """The results of one run, or of all runs when ``run_id`` is None, in insertion order."""
        if run_id is None:
            rows = self._db.execute("SELECT run_id, cell_key, doc_json FROM results ORDER BY id")
        else:
            self._run_row(run_id, self._db)
            rows = self._db.execute(
                "SELECT run_id, cell_key, doc_json FROM results WHERE run_id = ? ORDER BY id", (run_id,)
            )
        return [_load_result(*row) for row in rows.fetchall()]

    def run_ids(self) -> list[str]:
        """All run ids, newest first."""
        rows = self._db.execute("SELECT run_id FROM runs ORDER BY created_at DESC, rowid DESC")
        return [row[0] for row in rows.fetchall()]

    def latest_run_id(self) -> str | None:
        """The newest run id, or None when the store is empty."""
        ids = self.run_ids()
        return ids[0] if ids else None

    def run(self, run_id: str) -> RunRecord:
        """The stored run; UserError naming the id (and a few known ones) when it is unknown."""
        row = self._run_row(run_id, self._db)
        return RunRecord(
            run_id=row["run_id"],
            created_at=row["created_at"],
            machine_fingerprint=row["machine_fingerprint"],
            config=json.loads(row["config_json"]),
            machine=json.loads(row["machine_json"]),
            status=row["status"],
        )

    def finished_cell_keys(self, run_id: str) -> set[str]:
        """Keys of the cells of a run that have a stored result (any status): what a resume skips."""
        self._run_row(run_id, self._db)
        rows = self._db.execute("SELECT cell_key FROM results WHERE run_id = ?", (run_id,))
        return {row[0] for row in rows.fetchall()}

    def set_run_status(self, run_id: str, status: str) -> None:
        """Set a run's status (e.g. ``running``, ``finished``, ``interrupted``)."""
        with self._transaction() as db:
            self._run_row(run_id, db)
            db.execute("UPDATE runs SET status = ? WHERE run_id = ?", (status, run_id))

    def run_dir(self, run_id: str) -> Path:
        """The run's folder for raw logs and artifacts, created if missing."""
        _check_run_id(run_id)
        folder = self.path / "runs" / run_id
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with _transaction(self._db) as db:
            yield db

    def _run_row(self, run_id: str, db: sqlite3.Connection) -> sqlite3.Row:
        row = db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise UserError(_unknown_run_message(run_id, self.run_ids()))
        return row


def _unknown_run_message(run_id: str, known: list[str]) -> str:
    if not known:
        return f"unknown run id {run_id!r}: the store has no runs"
    newest = ", ".join(known[:3]) + (", ..." if len(known) > 3 else "")
    return f"unknown run id {run_id!r} ({len(known)} runs in the store, newest: {newest})"


def _ensure_writable_dir(folder: Path) -> None:
    """Create the store directory; UserError (one line) when that fails or it is not writable."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create result store directory {folder}: {exc.strerror or exc}") from None
    if not folder.is_dir():
        raise UserError(f"result store path {folder} exists and is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"result store directory {folder} is not writable")
    try:
        handle, probe = tempfile.mkstemp(prefix=".write-probe-", dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        raise UserError(f"result store directory {folder} is not writable: {exc.strerror or exc}") from None


def _inspect_existing(db_path: Path) -> None:
    """Check an existing database through a read-only connection; UserError if it is not ours."""
    uri = f"file:{quote(str(db_path.resolve()))}?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise UserError(f"cannot open result store {db_path}: {exc}") from None
    try:
        problem = _schema_problem(db)
    except sqlite3.DatabaseError as exc:
        problem = f"not a valid SQLite database ({exc})"
    finally:
        db.close()
    if problem:
        raise UserError(f"{db_path} is not a usable accelbench result store: {problem}; left untouched")


def _schema_problem(db: sqlite3.Connection) -> str | None:
    check = db.execute("PRAGMA quick_check").fetchone()
    if check is None or check[0] != "ok":
        return f"integrity check failed ({check[0] if check else 'no answer'})"
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return None  # an empty database (e.g. a zero-byte file): initialised like a new one
    if not _OWN_TABLES.issubset(tables):
        return f"foreign schema (tables: {', '.join(sorted(tables)[:5])})"
    version = _stored_version(db)
    if version is None:
        return "foreign schema (no schema_version in table meta)"
    if version > STORE_SCHEMA_VERSION:
        return f"store schema_version {version} is newer than this accelbench's {STORE_SCHEMA_VERSION}"
    return None


def _stored_version(db: sqlite3.Connection) -> int | None:
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.OperationalError:
        return None
    if row is None or not str(row[0]).isdigit():
        return None
    return int(row[0])


def _connect(db_path: Path) -> sqlite3.Connection:
    """Open read-write in WAL mode and apply pending migrations."""
    try:
        db = sqlite3.connect(db_path, timeout=30.0, isolation_level=None)
        db.row_factory = sqlite3.Row
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            logger.warning("result store %s: WAL mode unavailable, journal mode is %s", db_path, mode)
        db.execute("PRAGMA foreign_keys = ON")
        migrate(db)
    except sqlite3.Error as exc:
        raise UserError(f"cannot open result store {db_path}: {exc}") from None
    return db


def migrate(db: sqlite3.Connection) -> int:
    """Apply the pending ``MIGRATIONS`` steps in one transaction; returns the resulting version.

    An up-to-date store is only read, so opening it never waits for another process's writes.
    """
    if _current_version(db) >= STORE_SCHEMA_VERSION:
        return _current_version(db)
    with _transaction(db):
        current = _current_version(db)  # again under the write lock: another process may have migrated
        for version in range(current, STORE_SCHEMA_VERSION):
            logger.info("migrating result store schema %d -> %d", version, version + 1)
            for statement in MIGRATIONS[version]:
                db.execute(statement)
        db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
            (str(max(current, STORE_SCHEMA_VERSION)),),
        )
    return max(current, STORE_SCHEMA_VERSION)


def _current_version(db: sqlite3.Connection) -> int:
    has_meta = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    return (_stored_version(db) or 0) if has_meta else 0


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on any exception) on an autocommit connection."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _result_row(result: Result) -> tuple[Any, ...]:
    cell = result.cell
    quality_passed = None if result.quality is None else int(result.quality.passed)
    p50_s = result.latency.p50_s if result.latency else None
    return (
        result.run_id, cell.key, cell.workload, cell.size, cell.variant, cell.stack, cell.device,
        cell.scenario, result.status, p50_s, result.qps, quality_passed, result.effective_precision,
        _now(), _json(to_dict(result)),
    )  # fmt: skip


def _load_result(run_id: str, cell_key: str, doc_json: str) -> Result:
    try:
        return from_dict(json.loads(doc_json))
    except (ValueError, TypeError, KeyError) as exc:
        raise UserError(f"stored result {run_id}/{cell_key} cannot be read: {exc}") from None


def _check_run_id(run_id: str) -> None:
    if not _RUN_ID.fullmatch(run_id):
        raise UserError(f"invalid run id {run_id!r}: use letters, digits, '.', '_' or '-' (at most 128)")


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=True)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")
