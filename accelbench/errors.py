"""The exception hierarchy of accelbench, drawn in one place.

    AccelbenchError            root: anything accelbench raises on purpose
    ├── UserError              bad input (unknown name, unwritable store, corrupt file):
    │                          the CLI prints one line and exits with code 2
    └── CellError              a cell could not be measured; carries the result status
        ├── Unavailable        the stack or its dependency is missing here ("unavailable")
        └── Unsupported        the stack cannot run this model ("unsupported")

A crash, timeout or out-of-memory of a cell is never an exception in the parent: the runner observes
the child process and records the status directly.
"""

from __future__ import annotations

import re

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


class AccelbenchError(Exception):
    """Root of every error accelbench raises on purpose."""


class UserError(AccelbenchError):
    """Bad input from the user: reported as one line, exit code 2, nothing stored is touched."""


class CellError(AccelbenchError):
    """A cell that cannot be measured; ``status`` is the result status it maps to."""

    status = "crashed"


class Unavailable(CellError):
    """The stack (or a library it needs) is not available on this machine."""

    status = "unavailable"


class Unsupported(CellError):
    """The stack is available but cannot execute this model (op or shape not supported)."""

    status = "unsupported"


def first_line(exc: BaseException, limit: int = 500, root_cause: bool = False) -> str:
    """The one home of a one-line reason: ``Type: first non-empty line`` of ``exc`` (colour codes
    removed), cut at ``limit`` characters; with ``root_cause``, of its innermost ``__cause__``
    (exporters and compilers wrap the real failure, e.g. "No ONNX function found for aten.x", in
    generic errors whose first line only says which step failed)."""
    while root_cause and exc.__cause__ is not None:
        exc = exc.__cause__
    line = first_text_line(str(exc), limit)
    return (f"{type(exc).__name__}: {line}" if line else type(exc).__name__)[:limit]


def first_text_line(text: str, limit: int = 500) -> str:
    """The first non-empty line of ``text`` (a message, a server's error body), stripped, colour codes
    removed, cut at ``limit`` characters; "" when there is none."""
    plain = _ANSI_ESCAPE.sub("", text)
    return next((one.strip() for one in plain.splitlines() if one.strip()), "")[:limit]
