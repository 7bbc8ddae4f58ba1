"""Check a user's ``module:function`` in a child process, never in the CLI's own.

``accelbench tune module:function`` runs user code; like every cell, that code runs in a child:
``check_in_child`` starts ``python -m accelbench.workloads.user_check MODULE:FUNCTION IMPORT_ROOT`` in a
session of its own, which imports the module, calls the function once (torch seeded) and checks what it
returns (``accelbench.workloads.user_model.load_torch_model``). Its answer:

* ``None``: the function builds a model; the cells measure it.
* ``UserError``: the function is not usable (cannot be imported, raises, returns something else): one
  line, exit code 2, before anything is stored.
* ``(status, reason)``: the child died (a signal such as SIGABRT or SIGSEGV, an interrupt, another exit)
  or outlived ``timeout_s`` (the whole session is killed): every cell of the model gets that status
  (``crashed`` or ``timeout``) with the reason, and the CLI prints its summary and exits normally.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

from accelbench.errors import UserError

USER_ERROR_MARK = "accelbench-user-error: "
"""The prefix of the child's one stderr line that is a UserError (any other output is the user's)."""
STDERR_TAIL_CHARS = 400


def check_in_child(location: str, import_root: str, timeout_s: float) -> tuple[str, str] | None:
    """None when ``location`` builds a model; UserError when unusable; (status, reason) when the child
    crashed or hung (see the module docstring)."""
    command = [sys.executable, "-m", "accelbench.workloads.user_check", location, import_root]
    child = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        _, stderr = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_session(child)
        return "timeout", f"timeout: {location} did not return within {timeout_s:g} s (killed)"
    finally:
        _kill_session(child)  # whatever the function started in its session ends with it
    return _verdict(location, child.returncode, stderr)


def _verdict(location: str, code: int, stderr: str) -> tuple[str, str] | None:
    if code == 0:
        return None
    marked = [line for line in stderr.splitlines() if line.startswith(USER_ERROR_MARK)]
    if code == 2 and marked:
        raise UserError(marked[-1].removeprefix(USER_ERROR_MARK))
    tail = " ".join(stderr.strip().splitlines()[-1:])[-STDERR_TAIL_CHARS:]
    how = f"exit code {code}"
    if code < 0 and -code in signal.valid_signals():
        how = f"killed by {signal.Signals(-code).name}"
    return "crashed", f"crashed: {location} {how} while building the model" + (f": {tail}" if tail else "")


def _kill_session(child: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def main(argv: list[str]) -> int:
    """The child: call the function once; exit 0, or 2 with the UserError line."""
    from accelbench.workloads.user_model import ModelSource, load_torch_model

    location, import_root = argv
    try:
        load_torch_model(ModelSource("torch", location, "tune-check", import_root), seed=0)
    except UserError as err:
        sys.stderr.write(USER_ERROR_MARK + " ".join(str(err).split()) + "\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
