"""Files a command writes (``export -o``, ``report -o``): where they may go, and how they are written.

``checked_output`` refuses, as a one-line ``UserError`` (exit 2):

* a path inside the result store folder (its database, sidecars, run folders), ``--force`` or not: the
  store is written by ``run`` and ``store check --repair`` only;
* an existing directory, device, FIFO or socket;
* an existing non-empty regular file that is not this command's own earlier output (``Kind.own`` looks
  at its first bytes), unless ``force``.

``write_atomically`` writes a temporary file beside the target and renames it over the target, so a
failed or interrupted write leaves the earlier file whole.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from accelbench.errors import UserError

HEAD_BYTES = 4096
"""How much of an existing file ``Kind.own`` reads to recognise an earlier output."""


@dataclass(frozen=True, slots=True)
class Kind:
    """What a command writes: its name in messages, and how an earlier output of it begins."""

    name: str
    own: Callable[[bytes], bool]


def checked_output(path: Path, store: Path, kind: Kind, force: bool = False) -> Path:
    """``path`` when the command may write there; UserError naming the option and the rule otherwise."""
    target = path.resolve()
    if _inside(target, store.resolve()):
        raise UserError(f"-o {path}: it is inside the result store {store}; write the {kind.name} elsewhere")
    try:
        found = os.stat(target)
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise UserError(f"-o {path}: cannot inspect it ({exc.strerror or exc})") from None
    if stat.S_ISDIR(found.st_mode):
        raise UserError(f"-o {path}: it is a directory; name a file")
    if not stat.S_ISREG(found.st_mode):
        raise UserError(f"-o {path}: it exists and is not a regular file (a device, FIFO or socket)")
    head = _head(target)
    if head and not force and not kind.own(head):
        raise UserError(
            f"-o {path}: it exists and is not an earlier {kind.name} of accelbench; use --force to replace it"
        )
    return path


def write_atomically(path: Path, write: Callable[[TextIO], object], what: str) -> None:
    """Write through ``write`` into a temporary file beside ``path``, then rename it over ``path``."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise UserError(f"cannot write {what} {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(handle, "w", newline="", encoding="utf-8") as stream:
            write(stream)
        os.replace(temporary, path)
    except OSError as exc:
        raise UserError(f"cannot write {what} {path}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def _inside(target: Path, folder: Path) -> bool:
    return target == folder or folder in target.parents


def _head(path: Path) -> bytes:
    """The first bytes of a regular file (opened without blocking, should it be swapped for a FIFO)."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        return os.read(handle, HEAD_BYTES) if stat.S_ISREG(os.fstat(handle).st_mode) else b""
    finally:
        os.close(handle)


def write_json_atomic(path: Path, document: Any) -> None:
    """Write ``document`` as JSON to ``path`` via a temporary file and an atomic rename (the cell's spec
    and outcome, the run's peaks, the LLM references: files of the run, not a command's output)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(document, indent=1, sort_keys=True))
    os.replace(tmp, path)
