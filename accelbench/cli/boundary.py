"""The CLI's one error boundary: whatever reaches the top becomes one line and an exit code.

    UserError, and an OS error naming a file  ->  exit 2 (bad input: a file, an option, the store)
    CellError                                  ->  exit 1 (a measurement that failed)
    KeyboardInterrupt (start-up included)      ->  exit 130
    anything else                              ->  exit 1, "internal error"

Nothing but that line reaches stdout or stderr; the full traceback of anything but bad input (a
``UserError``, an OS error on a named file) or Ctrl-C goes to a crash file
(``$XDG_STATE_HOME/accelbench/crashes``, else ``~/.local/state``, else the temporary folder), whose
path the line gives. This module imports the standard library only, so that
a Ctrl-C while the heavy modules load is caught here too (what it needs only for a crash file loads then).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from accelbench.errors import CellError, UserError

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130
_INPUT_ERRNOS = frozenset(
    {errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENAMETOOLONG, errno.EISDIR}
    | {errno.ENOTDIR, errno.ELOOP, errno.ENOSPC, errno.EDQUOT, errno.EEXIST, errno.ENXIO}
)
"""An OS error with one of these on a named file is the user's environment, not accelbench."""


def guarded(entry: Callable[[], object]) -> None:
    """Call ``entry`` (the typer app) and exit: its own code, or the boundary's for what escaped."""
    try:
        entry()
    except SystemExit:
        raise
    except BaseException as exc:  # the boundary: nothing escapes as a traceback
        if interrupted(exc):  # a KeyboardInterrupt, or an error one caused
            _leave("interrupted", EXIT_INTERRUPTED)
        message, code = describe(exc)
        _leave(message, code)
    sys.exit(0)


def leave(entry: Callable[[], object]) -> None:
    """``guarded(entry)``, then out of the process without the interpreter's teardown: the console
    script's and ``python -m accelbench``'s way out (a one-cell run that imported torch ended 0.3-0.6 s
    sooner, of 8-10 s). What a normal exit does first is done here too: the ``atexit``
    handlers (multiprocessing's, which stop its helpers; logging's), then stdout and stderr flushed.
    A thread that is no daemon (which a normal exit waits for) keeps the normal exit. In-process
    callers (tests) call ``guarded`` and keep their interpreter."""
    try:
        guarded(entry)
        code = 0
    except SystemExit as done:
        code = exit_code(done)
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if others:
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: a normal exit ignores it too
            stream.flush()
    os._exit(code)


def exit_code(done: SystemExit) -> int:
    """The process's exit status for ``done``, as Python's own exit reads it: None 0, a number itself,
    anything else printed on stderr and 1."""
    if done.code is None:
        return 0
    if isinstance(done.code, int):
        return done.code & 0xFF
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"{done.code}\n")
    return 1


def interrupted(exc: BaseException) -> bool:
    """Whether a Ctrl-C caused ``exc``: a KeyboardInterrupt in its chain of causes. Python 3.11 wraps one
    raised in ``__set_name__`` (a class being made while a module imports: numpy's ``finfo``) in a
    RuntimeError whose cause it is; that Ctrl-C is still exit 130, not an internal error."""
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        if isinstance(found, KeyboardInterrupt):
            return True
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return False


def describe(exc: BaseException) -> tuple[str, int]:
    """The one line and exit code for ``exc`` (its traceback written to a crash file unless bad input)."""
    from accelbench.inputs import one_line

    if isinstance(exc, UserError):
        return one_line(str(exc)), EXIT_BAD_INPUT
    if isinstance(exc, OSError) and exc.filename is not None and exc.errno in _INPUT_ERRNOS:
        return one_line(f"{exc.filename}: {exc.strerror or exc}"), EXIT_BAD_INPUT  # the user's environment
    crash = _crash_file(exc)
    where = f" (traceback: {crash})" if crash else ""
    if isinstance(exc, CellError):
        return one_line(f"measurement failed ({exc.status}): {exc}") + where, EXIT_FAILED
    if isinstance(exc, RecursionError | MemoryError):
        return one_line(f"an input is too deep or too large ({type(exc).__name__})") + where, EXIT_BAD_INPUT
    return one_line(f"internal error {type(exc).__name__}: {exc}") + where, EXIT_FAILED


def crash_folder() -> Path:
    """Where crash files go: ``$XDG_STATE_HOME/accelbench/crashes``, else ``~/.local/state/...``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "accelbench" / "crashes"


def _crash_file(exc: BaseException) -> Path | None:
    """The traceback of ``exc`` written to a new file (None when no folder could take it)."""
    import tempfile
    import time
    import traceback

    text = "".join(traceback.format_exception(exc))
    name = f"crash-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.txt"
    for folder in (crash_folder(), Path(tempfile.gettempdir()) / "accelbench-crashes"):
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = folder / name
            with open(path, "x", encoding="utf-8") as stream:
                stream.write(text)
            return path
        except OSError:
            continue
    return None


def _leave(message: str, code: int) -> None:
    """Print ``accelbench: error: MESSAGE`` on stderr (a closed stderr tolerated) and exit ``code``."""
    try:
        sys.stderr.write(f"accelbench: error: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    sys.exit(code)
