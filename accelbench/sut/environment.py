"""What the harness gives a SUT process and reads of it from outside: the import path its environment adds,
and its peak resident memory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from accelbench.sut.remote import SutProcess


def sut_environment() -> dict[str, str]:
    """What the SUT process's environment adds: this interpreter's import path (plugins and planted
    test stacks import there exactly as here)."""
    return {"PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in sys.path if p)}


def peak_rss_bytes(sut: SutProcess) -> int:
    """The SUT process's peak resident memory (its ``VmHWM``), 0 when it cannot be read."""
    if not sut.pid:
        return 0
    try:
        status = Path(f"/proc/{sut.pid}/status").read_text()
    except OSError:
        return 0
    line = next((x for x in status.splitlines() if x.startswith("VmHWM:")), "")
    return int(line.split()[1]) * 1024 if line else 0
