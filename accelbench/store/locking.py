"""Waiting for another process that holds the store: said within a second, bounded, never silent.

Two locks can make a store command wait: the exclusive ``flock`` on the store folder (held while a
process opens or inspects the database) and SQLite's own lock on ``results.sqlite`` (held by a writer's
transaction). Each is tried without blocking first; when another process holds it, one line goes to
stderr at once -- ``store locked by pid N, retrying for S s`` (the pid read from ``/proc/locks``, the
kernel's table of locks) -- and the attempt is retried until ``lock_wait_s()`` has passed, then a
one-line ``UserError`` names the store and the holder.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from accelbench.errors import UserError

LOCK_WAIT_S = 30.0
"""How long a command waits for another process's lock on the store (``ACCELBENCH_LOCK_WAIT_S``)."""
LOCK_WAIT_ENV = "ACCELBENCH_LOCK_WAIT_S"
RETRY_S = 0.1
"""The pause between two tries."""
FIRST_BUSY_MS = 500
"""SQLite's own wait before the first word is said (well within the promised second)."""


def lock_wait_s() -> float:
    """The bound on a wait: ``$ACCELBENCH_LOCK_WAIT_S`` when it is a number from 0 to 3600, else 30 s."""
    try:
        given = float(os.environ.get(LOCK_WAIT_ENV, LOCK_WAIT_S))
    except ValueError:
        return LOCK_WAIT_S
    return given if 0 <= given <= 3600 else LOCK_WAIT_S


def holders(path: Path) -> list[int]:
    """The pids holding a lock on ``path``'s inode, from ``/proc/locks`` (empty when unknown)."""
    try:
        found = os.stat(path)
        table = Path("/proc/locks").read_text()
    except OSError:
        return []
    inode = f":{found.st_ino}"
    pids = []
    for line in table.splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[5].endswith(inode) and fields[4].isdigit():
            pids.append(int(fields[4]))
    return sorted(set(pids) - {os.getpid()})


def say_locked(what: Path, wait_s: float) -> str:
    """The line said once when ``what`` is held by another process; returned for the final error."""
    pids = holders(what)
    holder = f"pid {', '.join(map(str, pids))}" if pids else "another process"
    line = f"store locked by {holder}, retrying for {wait_s:g} s"
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"accelbench: {line} ({what})\n")
        sys.stderr.flush()
    return holder


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the store folder while a database connection is opened or
    inspected (released when the folder's descriptor is closed, also by a killed process); another
    holder is reported at once and waited for at most ``lock_wait_s()``."""
    try:
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise UserError(f"cannot open result store directory {folder}: {exc.strerror or exc}") from None
    try:
        _flock(handle, folder)
        yield
    finally:
        os.close(handle)


def _flock(handle: int, folder: Path) -> None:
    wait_s, holder = lock_wait_s(), None
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            holder = holder or say_locked(folder, wait_s)
        except OSError as exc:
            raise UserError(f"cannot lock result store directory {folder}: {exc.strerror or exc}") from None
        if time.monotonic() >= deadline:
            raise UserError(f"result store {folder} is still locked by {holder} after {wait_s:g} s")
        time.sleep(RETRY_S)


def begin_immediate(db: sqlite3.Connection) -> None:
    """``BEGIN IMMEDIATE`` on ``db``; a write lock held by another process is reported within a second
    and waited for at most ``lock_wait_s()``, then a one-line ``UserError``. The connection's own busy
    timeout is put back afterwards."""
    before_ms = db.execute("PRAGMA busy_timeout").fetchone()[0]
    try:
        db.execute(f"PRAGMA busy_timeout = {FIRST_BUSY_MS}")
        if _began(db):
            return
        db_path = Path(db.execute("PRAGMA database_list").fetchone()[2] or ":memory:")
        wait_s = lock_wait_s()
        holder = say_locked(db_path, wait_s)
        db.execute(f"PRAGMA busy_timeout = {int(wait_s * 1000)}")
        if not _began(db):
            raise UserError(f"result store {db_path} is still locked by {holder} after {wait_s:g} s")
    finally:
        db.execute(f"PRAGMA busy_timeout = {int(before_ms)}")


def _began(db: sqlite3.Connection) -> bool:
    """``BEGIN IMMEDIATE`` done (True), or refused because another process holds the lock (False)."""
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if "locked" not in str(exc) and "busy" not in str(exc):
            raise
        return False
    return True
