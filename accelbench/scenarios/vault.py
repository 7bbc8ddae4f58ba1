"""A sealed folder for LoadGen's logs while a test runs: a stack cannot find them, nor open the folder
unseen.

LoadGen writes its drawn seeds (the order of the issued sample indices, the arrival schedule) into its
detail log as a test starts, and nothing in LoadGen defers that (``LoggingMode.EndOfTestOnly`` writes
as soon as ``AsyncPoll`` does, measured). A stack that read them could replay LoadGen's index sequence
and tell an audit input from a timed one. So LoadGen writes into a folder of a random 128-bit name
inside a *vault*: a folder whose mode (``0o311``) lets its owner create and enter, but not list. The SUT
process runs as the same user, so it could ``chmod`` the vault to list it; that changes the vault's
status-change time (``st_ctime``), which no process can set back, so the vault's mode and ``st_ctime``
are taken after the test folder was made and checked once the test ended; a difference is tampering
(``VaultOpened``). Only then are the logs moved to their place in the cell's folder. (The SUT process
drops ``CAP_DAC_READ_SEARCH`` and ``CAP_DAC_OVERRIDE`` when it runs as root, so root is held to the
mode as well: ``accelbench.sut.hardening``.)
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from accelbench.errors import CellError

VAULT_MODE = 0o311
"""Owner: write and search (create and enter a folder whose name it knows), no read (no listing)."""
VAULT_NAME = ".loadgen-vault"
"""The vault's name, before a random suffix of its own per test."""


class VaultOpened(CellError):
    """The vault was opened up (its mode or status changed) while a LoadGen test ran in it."""

    status = "disqualified"


@contextlib.contextmanager
def sealed(log_dir: Path) -> Iterator[Path]:
    """A fresh folder of a secret name in a fresh vault beside ``log_dir``'s parent, for LoadGen to write in;
    its files are moved into ``log_dir`` when the block ends. ``VaultOpened`` when the vault was touched
    meanwhile."""
    # a fresh vault of its own name for every test: one a stack made ahead (a link to a folder it
    # watches) is never used, as mkdir refuses a name that exists
    vault = log_dir.parent.parent / f"{VAULT_NAME}-{secrets.token_hex(8)}"
    vault.parent.mkdir(parents=True, exist_ok=True)
    os.mkdir(vault, VAULT_MODE)
    vault.chmod(VAULT_MODE)  # whatever the umask
    inside = vault / secrets.token_hex(16)
    inside.mkdir()
    before = os.stat(vault, follow_symlinks=False)
    try:
        yield inside
    finally:
        after = _status(vault)
        if after is not None:
            _move_out(inside, log_dir)
            with contextlib.suppress(OSError):  # no folder a reader cannot list is left in the run folder
                vault.rmdir()  # (one a stack put something in stays: that changed its status, below)
    if after is None or (after.st_mode, after.st_ctime_ns) != (before.st_mode, before.st_ctime_ns):
        mode = f"{after.st_mode & 0o777:o}" if after is not None else "gone"
        raise VaultOpened(
            f"boundary audit: the folder of LoadGen's logs was opened up while the test ran "
            f"(mode {before.st_mode & 0o777:o} -> {mode}, status changed)"
        )


def _status(vault: Path) -> os.stat_result | None:
    try:
        return os.stat(vault, follow_symlinks=False)
    except OSError:  # moved away or removed
        return None


def _move_out(inside: Path, log_dir: Path) -> None:
    log_dir.mkdir(parents=True, exist_ok=True)
    for item in inside.iterdir():
        os.replace(item, log_dir / item.name)
    inside.rmdir()


def clear(folder: Path) -> int:
    """Remove the vaults left anywhere below ``folder`` (a cell process that ended before its LoadGen
    test did: at the SUT's first error, ``accelbench.scenarios.early_end``, or killed), opened up first,
    their logs with them; a link of a vault's name is left alone, as is its target. For the runner, once
    the cell's processes are gone. Returns how many were removed."""
    removed = 0
    for parent, folders, _ in os.walk(folder):
        for name in [f for f in folders if f.startswith(VAULT_NAME)]:
            folders.remove(name)
            path = Path(parent) / name
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    _opened(path)
                    shutil.rmtree(path)
                    removed += 1
    return removed


def _opened(vault: Path) -> None:
    """Give the owner read, write and search on ``vault`` and every folder in it, links left alone
    (neither changed nor followed), so that it can be removed."""
    os.chmod(vault, 0o700)
    for parent, folders, _ in os.walk(vault):
        for name in folders:
            path = Path(parent) / name
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    os.chmod(path, 0o700)
