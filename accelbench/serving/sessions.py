"""Processes by session id: list them, kill them, and a guard that ends a server with its owner.

Standard library only: the server scripts import it, also from a venv without accelbench (PyTriton's,
where ``triton_app`` puts this folder on ``sys.path``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

POLL_S = 0.25
PORT_RELEASE_S = 5.0
"""How long a killed session's processes (and their ports) may take to go."""
OWNER_STOP_S = 15.0
"""How long a server's own shutdown may take once its owner is gone."""


def session_pids(sid: int) -> list[int]:
    """Live (non-zombie) processes whose session id is ``sid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        with contextlib.suppress(OSError):
            if os.getsid(pid) == sid and not _zombie(pid):
                found.append(pid)
    return found


def _zombie(pid: int) -> bool:
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rpartition(")")[2].split()[0] == "Z"
    return True


def kill_session(sid: int, keep: int | None = None) -> None:
    """SIGKILL every process of session ``sid`` (except ``keep``) and wait up to ``PORT_RELEASE_S``
    for them to go."""
    deadline = time.monotonic() + PORT_RELEASE_S
    while time.monotonic() < deadline:
        pids = [pid for pid in session_pids(sid) if pid != keep]
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def watch_owner(owner_pid: int, shutdown: Callable[[], None], remove: Sequence[str] = ()) -> None:
    """In a server script: when ``owner_pid`` (the cell process) is gone, call ``shutdown``, kill the
    rest of this session and delete the folders in ``remove`` (the server's temp folders, which the
    owner would have deleted), so a cell killed with SIGKILL leaves no server behind."""

    def guard() -> None:
        while _owner_alive(owner_pid):
            time.sleep(POLL_S)
        stopper = threading.Thread(target=_quietly, args=(shutdown,), daemon=True)
        stopper.start()
        stopper.join(OWNER_STOP_S)
        kill_session(os.getsid(0), keep=os.getpid())
        for folder in remove:
            shutil.rmtree(folder, ignore_errors=True)
        os._exit(0)

    threading.Thread(target=guard, name="accelbench-owner-guard", daemon=True).start()


def _quietly(function: Callable[[], None]) -> None:
    with contextlib.suppress(Exception):
        function()


def _owner_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)
