"""The result store's database file: its schema, migrations, checksums and connections.

``connect`` opens ``results.sqlite`` read-write in WAL mode, registers the SQL functions and applies the
pending ``MIGRATIONS``. ``inspect_existing`` checks an existing file first, through a read-only
connection (``read_only``) that leaves the folder as it found it: a file that is not a SQLite database
(or is truncated), fails ``PRAGMA quick_check``, holds a foreign schema or a newer store version is a
one-line ``UserError`` and is never modified. ``transaction`` is ``BEGIN IMMEDIATE`` ... ``COMMIT`` on the
autocommit connections used here. ``accelbench.store.sqlite`` (the ``Store``) and
``accelbench.store.check`` build on these.

Store schema history (``meta.schema_version``; ``MIGRATIONS[i]`` upgrades version i to i + 1 inside one
transaction; append a step, never edit a released one):
    1  tables ``meta``, ``runs``, ``results`` and the indexes on results (run_id),
       (workload, stack, scenario) and (status).
    2  ``results.doc_sha256`` (SHA-256 of ``doc_json``, filled for existing rows) and the table
       ``quarantine``, where ``accelbench store check --repair`` moves bad records (never deletes).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from accelbench.errors import UserError
from accelbench.store.locking import begin_immediate

logger = logging.getLogger(__name__)

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

_OWN_TABLES = {"meta", "runs", "results"}


def inspect_existing(db_path: Path) -> None:
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
    """A read-only connection that leaves the folder as it found it (see ``open_read_only``). Hold
    ``folder_lock`` around it, so that no other process opens the store meanwhile."""
    db, cleanup = open_read_only(db_path)
    try:
        yield db
    finally:
        db.close()
        cleanup()


def open_read_only(db_path: Path) -> tuple[sqlite3.Connection, Callable[[], None]]:
    """A ``mode=ro`` connection (rows as ``sqlite3.Row``) and the cleanup to call after closing it: the
    ``-wal``/``-shm`` files SQLite creates beside a WAL database for a reader are removed again when they
    did not exist and hold no data."""
    sidecars = [db_path.with_name(db_path.name + suffix) for suffix in ("-wal", "-shm")]
    existed = [path.exists() for path in sidecars]
    try:
        uri = f"file:{quote(str(db_path.resolve()))}?mode=ro{_immutable(db_path)}"
        db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as exc:
        raise UserError(f"cannot open result store {db_path}: {exc}") from None
    db.row_factory = sqlite3.Row

    def cleanup() -> None:
        wal, shm = sidecars
        if not any(existed) and (not wal.exists() or wal.stat().st_size == 0):
            for sidecar in (wal, shm):
                with contextlib.suppress(OSError):  # absent, or a read-only store: nothing to remove
                    sidecar.unlink(missing_ok=True)

    return db, cleanup


def _immutable(db_path: Path) -> str:
    """``&immutable=1`` for a store on read-only media (or in a folder this user cannot write): SQLite
    cannot make the ``-shm`` file a WAL database's readers need, and nothing can change the file."""
    return "" if os.access(db_path.parent, os.W_OK) else "&immutable=1"


def empty_in_memory() -> sqlite3.Connection:
    """An empty store of the current schema in memory: what a reader sees where no database is yet."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.row_factory = sqlite3.Row
    register_functions(db)
    migrate(db)
    return db


def stored_version(db_path: Path) -> int:
    """The store schema version of an existing database (0 when it has no tables yet)."""
    with read_only(db_path) as db:
        try:
            return _current_version(db)
        except sqlite3.DatabaseError as exc:
            raise UserError(f"cannot read result store {db_path}: {exc}") from None


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


def connect(db_path: Path) -> sqlite3.Connection:
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
    with transaction(db):
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
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on any exception) on an autocommit connection; another
    writer's lock is reported and waited for, bounded (``locking.begin_immediate``)."""
    begin_immediate(db)
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
