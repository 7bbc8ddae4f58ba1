"""A planted stack that takes a process-shared lock the way tqdm does (its first progress bar makes a
``multiprocessing.RLock``: ONNX export, GGUF loading), then hangs until the runner kills its cell."""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

from accelbench.stacks.base import CellContext, ModelSpec, Session
from tests.e2e.planted import HangStack

HELD: list[Any] = []


class LockThenHangStack(HangStack):
    """Takes a ``multiprocessing.RLock`` in prepare and never returns: the cell ends ``timeout``."""

    name = "planted-lock-hang"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        HELD.append(multiprocessing.RLock())  # what tqdm.std.TqdmDefaultWriteLock.create_mp_lock does
        time.sleep(3600)
        raise AssertionError("unreachable")
