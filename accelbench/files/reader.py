"""The guarded reader: the one way accelbench reads a file that a user, another process or an earlier
run could have touched (the store's run and cell folders, configs, chip files, MLPerf imports, bundles,
keys, traces, caches).

Each read is bounded before anything is parsed:

- a regular file only: a directory, FIFO, socket or device (``/dev/zero``) is refused, checked before
  opening and again on the descriptor, which is opened with ``O_NONBLOCK`` so that a FIFO swapped in
  meanwhile cannot block the read (the only way a read of a local file could wait forever);
- at most ``max_bytes`` (``MAX_FILE_BYTES`` unless the caller states a tighter limit);
- JSON nested at most ``MAX_NESTING`` deep, found by a scan before the parser recurses;
- numbers finite, and within ``MAX_MAGNITUDE`` either way where the caller asks for datasheet-like
  facts (``number_problem``): 1e308 or 5e-324 is finite, but its products are not.

Every violation is a ``UserError`` naming the file (and the field) -- one line, exit code 2 -- or, for a
caller that skips what it cannot read, the same message as a ``ValueError`` subclass it already catches.
The rules on bytes and nesting live in ``accelbench.inputs``, which this module builds on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from accelbench.errors import UserError
from accelbench.inputs import MAX_INPUT_BYTES, MAX_NESTING, parse_json, read_input

MAX_FILE_BYTES = MAX_INPUT_BYTES
"""The largest file read whole (64 MiB): the store's documents and the logs of a cell are far below."""
MAX_MAGNITUDE = 1e30
"""A datasheet fact or imported figure is at most this, and at least its inverse (when not 0)."""


class UnreadableFile(UserError, ValueError):
    """A file the guarded reader refused: a ``UserError`` (one line, exit 2), and a ``ValueError`` for
    the readers that skip an unreadable file with a warning."""


def read_bytes(path: Path, what: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (``what`` names it in errors), at most ``max_bytes``."""
    try:
        return read_input(Path(path), what, max_bytes)
    except UserError as exc:
        raise UnreadableFile(str(exc)) from None


def read_text(path: Path, what: str, max_bytes: int = MAX_FILE_BYTES, errors: str = "strict") -> str:
    """``read_bytes`` decoded as UTF-8 (``errors="replace"`` for logs kept as they are)."""
    data = read_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"{what} {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_json(path: Path, what: str, max_bytes: int = MAX_FILE_BYTES, finite: bool = True) -> Any:
    """The JSON document in ``path``: bounded (``read_bytes``), nested at most ``MAX_NESTING`` deep,
    every number finite (unless ``finite`` is False: a document whose writer stores NaN on purpose);
    ``UnreadableFile`` naming the file (and the field) otherwise."""
    return json_text(read_text(path, what, max_bytes), f"{what} {path}", finite)


def json_text(text: str | bytes, where: str, finite: bool = True) -> Any:
    """JSON text that another process or an earlier run wrote (a stored document): the rules of
    ``read_json`` without the file. ``finite=False`` for a result document: the store keeps a NaN
    quality value of a wrong output on purpose, and the record's own checks judge it."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    try:
        value = parse_json(text, where)
    except UserError as exc:
        raise UnreadableFile(str(exc)) from None
    field = _non_finite_field(value, "") if finite else None
    if field is not None:
        raise UnreadableFile(f"{where}: field {field or '(top)'} is not a finite number")
    return value


def check_schema_version(document: Mapping[str, Any], readable: tuple[int, ...], what: str) -> int:
    """The ``schema_version`` of the stored ``document`` (a ``what``: "peaks", "cost", "machine");
    ValueError when this code cannot read it (not one of ``readable``)."""
    version = document.get("schema_version")
    if version not in readable:
        known = readable[0] if len(readable) == 1 else f"one of {readable}"
        raise ValueError(f"{what} schema_version {version!r} is not {known}")
    return int(version)


def number_problem(value: Any, field: str) -> str | None:
    """Why ``value`` is no datasheet-like number (not finite, or outside ``MAX_MAGNITUDE`` either way:
    1e308 and 5e-324 are refused); None when it is one. ``field`` names it in the message."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{field} must be a number, got {str(value)[:40]!r}"
    if not math.isfinite(value):
        return f"{field} must be finite, got {value}"
    if value != 0 and not 1 / MAX_MAGNITUDE <= abs(value) <= MAX_MAGNITUDE:
        low, high = 1 / MAX_MAGNITUDE, MAX_MAGNITUDE
        return f"{field} is {value:g}, outside the accepted magnitudes {low:g} to {high:g}"
    return None


def _non_finite_field(value: Any, field: str, depth: int = 0) -> str | None:
    """The dotted name of the first non-finite float in ``value`` (None: all finite)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else field
    if depth > MAX_NESTING:
        return None  # parse_json refused deeper documents already
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _non_finite_field(item, f"{field}.{key}" if field else str(key), depth + 1)
        if found is not None:
            return found
    return None
