"""A planted stack that takes a process-shared lock the way tqdm does (its first progress bar makes a
``multiprocessing.RLock``: ONNX export, GGUF loading), then hangs until the runner kills its cell."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from typing import Any

from accelbench.stacks.base import CellContext, ModelSpec, Session
from tests.e2e.planted import HangStack

HELD: list[Any] = []
TAKEN = "lock-taken.txt"
"""Written once the lock is held, so a test knows the kill came after it."""


class LockThenHangStack(HangStack):
    """Takes a ``multiprocessing.RLock`` in prepare and never returns: the cell ends ``timeout``."""

    name = "planted-lock-hang"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        HELD.append(multiprocessing.RLock())  # what tqdm.std.TqdmDefaultWriteLock.create_mp_lock does
        Path(TAKEN).write_text("taken\n")  # in the cell's folder (its working directory)
        time.sleep(3600)
        raise AssertionError("unreachable")
