"""The result store: a directory with ``results.sqlite`` (stdlib sqlite3, WAL mode) and ``runs/<run_id>/``.

Each result is one row: indexed columns for querying plus the full JSON document
(``accelbench.results.to_dict``), which is the source of truth when loading. A run records the machine
fingerprint it started on; results from another machine are refused, as pyperf refuses to merge runs
from different machines, except in a run whose executor spans machines (a Ray fleet): there each result
keeps the fingerprint of the node that measured it.

An existing ``results.sqlite`` is first inspected through a read-only connection; a file that is not a
SQLite database, fails ``PRAGMA quick_check``, holds a foreign schema or a newer store version is
reported as a one-line ``UserError`` and never modified.

Opening is serialised between processes by an exclusive ``flock`` on the store folder itself (no lock
file): the inspection's read-only connection removes the ``-wal``/``-shm`` files it made, and without the
lock it could remove the ones a process creating the store had just made, which then wrote into a deleted
WAL file while the others opened a new one (seen: runs and records lost, "disk I/O error", when four
processes opened one new store at once).

Store schema history (``meta.schema_version``; ``MIGRATIONS[i]`` upgrades version i to i + 1 inside one
transaction; append a step, never edit a released one):
    1  tables ``meta``, ``runs``, ``results`` and the indexes on results (run_id),
       (workload, stack, scenario) and (status).
    2  ``results.doc_sha256`` (SHA-256 of ``doc_json``, filled for existing rows) and the table
       ``quarantine``, where ``accelbench store check --repair`` moves bad records (never deletes).
"""

from __future__ import annotations

import fcntl
import hashlib
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
SHA256_SQL = "accelbench_sha256"
"""The SQL function (registered on every connection) that gives the hex SHA-256 of a text."""

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
    (
        "ALTER TABLE results ADD COLUMN doc_sha256 TEXT",
        f"UPDATE results SET doc_sha256 = {SHA256_SQL}(doc_json)",
        """CREATE TABLE quarantine (
            id INTEGER PRIMARY KEY, moved_at TEXT NOT NULL, problem TEXT NOT NULL, source_id INTEGER,
            run_id TEXT, cell_key TEXT, doc_json TEXT, doc_sha256 TEXT)""",
    ),
)
STORE_SCHEMA_VERSION = len(MIGRATIONS)
BUSY_TIMEOUT_S = 30.0
"""How long a connection waits for another process's write lock before giving up."""

_LOADED = "run_id, cell_key, doc_json, doc_sha256"
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
    with folder_lock(folder):
        if db_path.exists():
            _inspect_existing(db_path)
        return Store(folder, _connect(db_path))


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the store folder while a database connection is opened or
    inspected (released when the folder's descriptor is closed, also by a killed process)."""
    try:
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise UserError(f"cannot open result store directory {folder}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
    except OSError as exc:
        os.close(handle)
        raise UserError(f"cannot lock result store directory {folder}: {exc.strerror or exc}") from None
    try:
        yield
    finally:
        os.close(handle)


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
        """The results of one run, or of all runs when ``run_id`` is None, in insertion order."""
        with self._reading():
            if run_id is None:
                rows = self._db.execute(f"SELECT {_LOADED} FROM results ORDER BY id").fetchall()
            else:
                self._run_row(run_id, self._db)
                query = f"SELECT {_LOADED} FROM results WHERE run_id = ? ORDER BY id"
                rows = self._db.execute(query, (run_id,)).fetchall()
        return [_load_result(self.path / DB_NAME, *row) for row in rows]

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
                config=json.loads(row["config_json"]),
                machine=json.loads(row["machine_json"]),
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

    def run_dir(self, run_id: str) -> Path:
        """The run's folder for raw logs and artifacts, created if missing."""
        _check_run_id(run_id)
        folder = self.path / "runs" / run_id
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
    truncated = _truncation(db_path)
    if truncated:
        raise UserError(f"{db_path} is not a usable accelbench result store: {truncated}; left untouched")
    with read_only(db_path) as db:
        try:
            problem = _schema_problem(db)
        except (sqlite3.DatabaseError, ValueError) as exc:  # ValueError: text that is not UTF-8
            problem = f"not a valid SQLite database ({exc})"
    if problem:
        raise UserError(f"{db_path} is not a usable accelbench result store: {problem}; left untouched")


@contextmanager
def read_only(db_path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection that leaves the folder as it found it: the ``-wal``/``-shm`` files SQLite
    creates beside a WAL database for a reader are removed again when they did not exist and hold no
    data. Hold ``folder_lock`` around it, so that no other process opens the store meanwhile."""
    sidecars = [db_path.with_name(db_path.name + suffix) for suffix in ("-wal", "-shm")]
    existed = [path.exists() for path in sidecars]
    try:
        uri = f"file:{quote(str(db_path.resolve()))}?mode=ro"
        db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as exc:
        raise UserError(f"cannot open result store {db_path}: {exc}") from None
    try:
        yield db
    finally:
        db.close()
        wal, shm = sidecars
        if not any(existed) and (not wal.exists() or wal.stat().st_size == 0):
            wal.unlink(missing_ok=True)
            shm.unlink(missing_ok=True)


def _truncation(db_path: Path) -> str | None:
    """Why a non-empty file is not a whole SQLite database: no header, or shorter than its header says
    (SQLite itself reads such a file as an emptier database, which would then be initialised)."""
    size = db_path.stat().st_size
    with db_path.open("rb") as stream:
        header = stream.read(100)
    if size == 0:
        return None  # a new store
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        return f"not a SQLite database ({size} bytes, no SQLite header)"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    header_valid = header[24:28] == header[92:96]  # the page count is kept by writers that update both
    if db_path.with_name(db_path.name + "-wal").exists():
        return None  # a writer may be checkpointing (the header is written before the pages after it)
    if page_size >= 512 and (size % page_size or (header_valid and size < pages * page_size)):
        return f"truncated ({size} bytes; its header says {pages} pages of {page_size} bytes)"
    return None


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
        db = sqlite3.connect(db_path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        db.row_factory = sqlite3.Row
        register_functions(db)
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            logger.warning("result store %s: WAL mode unavailable, journal mode is %s", db_path, mode)
        db.execute("PRAGMA foreign_keys = ON")
        migrate(db)
    except sqlite3.Error as exc:
        raise UserError(f"cannot open result store {db_path}: {exc}") from None
    return db


def register_functions(db: sqlite3.Connection) -> None:
    """Register the SQL functions the migrations use (``accelbench_sha256``)."""
    db.create_function(SHA256_SQL, 1, doc_sha256, deterministic=True)


def doc_sha256(doc_json: str) -> str:
    """The hex SHA-256 of a stored document's text (UTF-8), as kept in ``results.doc_sha256``."""
    return hashlib.sha256(doc_json.encode("utf-8", "surrogatepass")).hexdigest()


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
    document = _json(to_dict(result))
    p50_s = result.latency.p50_s if result.latency else None
    return (
        result.run_id, cell.key, cell.workload, cell.size, cell.variant, cell.stack, cell.device,
        cell.scenario, result.status, p50_s, result.qps, quality_passed, result.effective_precision,
        _now(), document, doc_sha256(document),
    )  # fmt: skip


def _load_result(db_file: Path, run_id: str, cell_key: str, doc_json: str, sha256: str | None) -> Result:
    where = f"{db_file}: stored result {run_id}/{cell_key}"
    if sha256 is not None and doc_sha256(doc_json) != sha256:
        raise UserError(f"{where} fails its checksum; see: accelbench store check --repair")
    try:
        return from_dict(json.loads(doc_json))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise UserError(f"{where} cannot be read: {exc}") from None


def _check_run_id(run_id: str) -> None:
    if not _RUN_ID.fullmatch(run_id):
        raise UserError(f"invalid run id {run_id!r}: use letters, digits, '.', '_' or '-' (at most 128)")


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=True)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")
