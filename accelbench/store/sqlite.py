"""The result store: a directory with ``results.sqlite`` (stdlib sqlite3, WAL mode) and ``runs/<run_id>/``.

Each result is one row: indexed columns for querying plus the full JSON document
(``accelbench.stored.to_dict``), which is the source of truth when loading. A run records the machine
fingerprint it started on; results from another machine are refused, as pyperf refuses to merge runs
from different machines, except in a run whose executor spans machines (a Ray fleet): there each result
keeps the fingerprint of the node that measured it.

An existing ``results.sqlite`` is first inspected through a read-only connection
(``accelbench.store.schema``, which also holds the migrations and the schema history); a file that is not
a SQLite database, fails ``PRAGMA quick_check``, holds a foreign schema or a newer store version is
reported as a one-line ``UserError`` and never modified.

Opening is serialised between processes by an exclusive ``flock`` on the store folder itself (no lock
file): the inspection's read-only connection removes the ``-wal``/``-shm`` files it made, and without the
lock it could remove the ones a process creating the store had just made, which then wrote into a deleted
WAL file while the others opened a new one (seen: runs and records lost, "disk I/O error", when four
processes opened one new store at once).

``open_store(path, read_only=True)`` is for the commands that only read (``show``, ``export``, ``report``):
it creates nothing and opens the database through a ``mode=ro`` connection (a missing folder or an empty
``results.sqlite`` reads as an empty store kept in memory; only a store of an older schema, which a
reader cannot query, is migrated first through the read-write path).

A stored run or result that cannot be read (a document that is not JSON text, a field of the wrong type,
a run's ``config_json`` that is not an object) never stops a reader: ``results`` logs one warning line
naming it and skips it, ``run`` reads a malformed configuration or machine as empty (with a warning);
``accelbench store check`` names them and ``--repair`` moves bad results aside.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from accelbench.errors import UserError
from accelbench.files import json_text
from accelbench.inputs import one_line
from accelbench.record_types import check_record
from accelbench.results import SCHEMA_VERSION, Result
from accelbench.store.locking import folder_lock
from accelbench.store.schema import (
    STORE_SCHEMA_VERSION,
    connect,
    doc_sha256,
    empty_in_memory,
    inspect_existing,
    open_read_only,
    stored_version,
    transaction,
)
from accelbench.stored import from_dict, to_dict

log = logging.getLogger(__name__)

DEFAULT_STORE_DIR = Path("accelbench-results")
DB_NAME = "results.sqlite"
_LOADED = "run_id, cell_key, doc_json, doc_sha256"
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run as stored: its configuration, the machine it started on, and its status."""

    run_id: str
    created_at: str
    machine_fingerprint: str
    config: Mapping[str, Any]
    machine: Mapping[str, Any]
    status: str


def open_store(path: Path | str = DEFAULT_STORE_DIR, read_only: bool = False) -> Store:
    """Open (creating if needed) the store directory; UserError when unusable, nothing touched.

    ``read_only``: create nothing and never write (see the module docstring)."""
    folder = Path(path)
    if read_only:
        return _open_read_only(folder)
    _ensure_writable_dir(folder)
    db_path = folder / DB_NAME
    if db_path.exists() and not db_path.is_file():  # a FIFO would block the inspection's read
        raise UserError(f"result store {db_path} is not a regular file")
    with folder_lock(folder):
        if db_path.exists():
            inspect_existing(db_path)
        return Store(folder, connect(db_path))


def _open_read_only(folder: Path) -> Store:
    db_path = folder / DB_NAME
    if folder.exists() and not folder.is_dir():
        raise UserError(f"result store path {folder} exists and is not a directory")
    if not db_path.exists() or (db_path.is_file() and db_path.stat().st_size == 0):
        return Store(folder, empty_in_memory(), read_only=True)
    if not db_path.is_file():
        raise UserError(f"result store {db_path} is not a regular file")
    with folder_lock(folder):
        inspect_existing(db_path)
        if stored_version(db_path) < STORE_SCHEMA_VERSION:
            return Store(folder, connect(db_path))  # an older schema is migrated once, as any open does
        return Store(folder, *open_read_only(db_path), read_only=True)


class Store:
    """A result store; use ``open_store`` to get one, and close it (or use it as a context manager)."""

    def __init__(
        self,
        path: Path,
        connection: sqlite3.Connection,
        cleanup: Callable[[], None] | None = None,
        read_only: bool = False,
    ) -> None:
        self.path = path
        self._db = connection
        self._cleanup = cleanup
        self.read_only = read_only

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the database connection (a read-only one removes the sidecar files it made)."""
        self._db.close()
        if self._cleanup is not None:
            self._cleanup()

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

    def add_result(self, result: Result, any_machine: bool = False) -> None:
        """Store a result atomically; storing the same cell of a run again replaces it.

        Raises UserError for an unknown run and ValueError when the result's machine fingerprint is
        not the run's, unless ``any_machine`` (the run's cells are spread over a fleet's machines).
        """
        with self._transaction() as db:
            fingerprint = self._run_row(result.run_id, db)["machine_fingerprint"]
            if result.machine_fingerprint != fingerprint and not any_machine:
                raise ValueError(
                    f"result of cell {result.cell.key} was measured on machine "
                    f"{result.machine_fingerprint!r}, but run {result.run_id!r} runs on {fingerprint!r}"
                )
            db.execute(
                "INSERT OR REPLACE INTO results (run_id, cell_key, workload, size, variant, stack, device,"
                " scenario, status, p50_s, qps, quality_passed, effective_precision, created_at, doc_json,"
                " doc_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _result_row(result),
            )

    def results(self, run_id: str | None = None) -> list[Result]:
        """The results of one run, or of all runs when ``run_id`` is None, in insertion order; a record
        that cannot be read is skipped with a warning naming it."""
        with self._reading():
            if run_id is None:
                rows = self._db.execute(f"SELECT {_LOADED} FROM results ORDER BY id").fetchall()
            else:
                self._run_row(run_id, self._db)
                query = f"SELECT {_LOADED} FROM results WHERE run_id = ? ORDER BY id"
                rows = self._db.execute(query, (run_id,)).fetchall()
        loaded = (_load_result(self.path / DB_NAME, *row) for row in rows)
        return [result for result in loaded if result is not None]

    def run_ids(self) -> list[str]:
        """All run ids, newest first."""
        with self._reading():
            rows = self._db.execute("SELECT run_id FROM runs ORDER BY created_at DESC, rowid DESC").fetchall()
        return [row[0] for row in rows]

    def latest_run_id(self) -> str | None:
        """The newest run id, or None when the store is empty."""
        ids = self.run_ids()
        return ids[0] if ids else None

    def run(self, run_id: str) -> RunRecord:
        """The stored run; UserError naming the id (and a few known ones) when it is unknown."""
        with self._reading():
            row = self._run_row(run_id, self._db)
            return RunRecord(
                run_id=row["run_id"],
                created_at=row["created_at"],
                machine_fingerprint=row["machine_fingerprint"],
                config=_stored_mapping(row["config_json"], f"run {run_id}: config_json"),
                machine=_stored_mapping(row["machine_json"], f"run {run_id}: machine_json"),
                status=row["status"],
            )

    def finished_cell_keys(self, run_id: str) -> set[str]:
        """Keys of the cells of a run that have a stored result (any status): what a resume skips."""
        with self._reading():
            self._run_row(run_id, self._db)
            rows = self._db.execute("SELECT cell_key FROM results WHERE run_id = ?", (run_id,)).fetchall()
        return {row[0] for row in rows}

    def set_run_status(self, run_id: str, status: str) -> None:
        """Set a run's status (e.g. ``running``, ``finished``, ``interrupted``)."""
        with self._transaction() as db:
            self._run_row(run_id, db)
            db.execute("UPDATE runs SET status = ? WHERE run_id = ?", (status, run_id))

    def set_run_config(self, run_id: str, config: Mapping[str, Any]) -> None:
        """Replace a run's stored configuration (the runner adds the input seed when the run ends)."""
        with self._transaction() as db:
            self._run_row(run_id, db)
            db.execute("UPDATE runs SET config_json = ? WHERE run_id = ?", (_json(config), run_id))

    def run_dir(self, run_id: str) -> Path:
        """The run's folder for raw logs and artifacts, created if missing (not by a read-only store)."""
        _check_run_id(run_id)
        folder = self.path / "runs" / run_id
        if not self.read_only:
            folder.mkdir(parents=True, exist_ok=True)
        return folder

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """A damaged database (or run record) found while reading is a one-line UserError naming the file."""
        try:
            yield
        except (sqlite3.DatabaseError, ValueError) as exc:
            raise UserError(f"result store {self.path / DB_NAME} cannot be read: {exc}") from None

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; a database SQLite finds read-only is a one-line UserError naming it."""
        try:
            with transaction(self._db) as db:
                yield db
        except sqlite3.OperationalError as exc:
            if "readonly" not in str(exc) and "read-only" not in str(exc):
                raise
            raise UserError(f"result store {self.path / DB_NAME} is read-only: {exc}") from None

    def _run_row(self, run_id: str, db: sqlite3.Connection) -> sqlite3.Row:
        row = db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            known = self.run_ids()
            if run_id in known:  # the lookup by key missed a run the table lists: a damaged index
                raise UserError(
                    f"result store {self.path / DB_NAME} cannot be read: run {run_id!r} is listed but its "
                    "lookup finds nothing (a damaged index)"
                )
            raise UserError(_unknown_run_message(run_id, known))
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


def _result_row(result: Result) -> tuple[Any, ...]:
    cell, head = result.cell, result.head
    quality_passed = None if head.quality is None else int(head.quality.passed)
    document = _json(to_dict(result))
    p50_s = result.latency.p50_s if result.latency else None
    return (
        result.run_id,
        cell.key,
        cell.workload,
        cell.size,
        cell.variant,
        cell.stack,
        cell.device,
        cell.scenario,
        head.status,
        p50_s,
        result.qps,
        quality_passed,
        head.effective_precision,
        _now(),
        document,
        doc_sha256(document),
    )


def _load_result(db_file: Path, run_id: Any, cell_key: Any, doc_json: Any, sha256: Any) -> Result | None:
    """The stored result, or None (with a warning naming it) when it cannot be read."""
    where = f"{db_file}: stored result {run_id}/{cell_key}"
    if not isinstance(doc_json, str):
        log.warning("%s skipped: its document is %s, not JSON text", where, type(doc_json).__name__)
        return None
    if sha256 is not None and doc_sha256(doc_json) != sha256:
        log.warning("%s skipped: it fails its checksum (see: accelbench store check --repair)", where)
        return None
    try:
        document = json_text(doc_json, where, finite=False)
        _refuse_newer(document, where)
        result = from_dict(document)
        check_record(result)
        return result
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        log.warning("%s skipped: it cannot be read (%s)", where, _one_line(exc))
        return None


def _refuse_newer(document: Any, where: str) -> None:
    """A result stored by a newer accelbench is not corrupt: UserError (upgrade), never skipped."""
    version = document.get("schema_version") if isinstance(document, dict) else None
    if type(version) is int and version > SCHEMA_VERSION:
        raise UserError(f"{where} has result schema_version {version}, newer than {SCHEMA_VERSION}: upgrade")


def _stored_mapping(text: Any, where: str) -> Mapping[str, Any]:
    """A run's stored JSON object; anything else reads as empty, with a warning."""
    try:
        value = json_text(text, where, finite=False) if isinstance(text, str | bytes) else text
    except (ValueError, RecursionError) as exc:
        value = f"unreadable ({_one_line(exc)})"
    if isinstance(value, dict):
        return value
    log.warning("%s is not a JSON object (%s): read as empty", where, type(value).__name__)
    return {}


def _one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (``inputs.one_line``, 200 characters), or its type if none."""
    return one_line(str(exc), 200) or type(exc).__name__


def _check_run_id(run_id: str) -> None:
    if not _RUN_ID.fullmatch(run_id):
        raise UserError(f"invalid run id {run_id!r}: use letters, digits, '.', '_' or '-' (at most 128)")


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=True)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")
