"""``run --resume``: the stored configuration checked whole before a run goes on, and a complete run
left exactly as it is (said, and nothing written)."""

from __future__ import annotations

import dataclasses

from rich.console import Console

from accelbench import runner
from accelbench.config import RunConfig
from accelbench.errors import UserError
from accelbench.hardware.detect import Machine
from accelbench.store import Store


def stored_config(store: Store, run_id: str, machine: Machine) -> RunConfig:
    """The stored configuration of ``run_id``; UserError (one line) when it is not a whole one (a
    configuration that is ``[]``, not JSON or too deep reads as empty, with a warning)."""
    stored = store.run(run_id).config
    fields = dataclasses.fields(RunConfig)
    needed = [f.name for f in fields if dataclasses.MISSING is f.default is f.default_factory]
    missing = [name for name in needed if name not in stored]
    if missing:
        raise UserError(
            f"run {run_id}'s stored configuration lacks {', '.join(missing)}: it cannot be resumed"
            " (see: accelbench store check)"
        )
    return runner.resume_config(store, run_id, machine)


def already_complete(store: Store, run_id: str, config: RunConfig, err_console: Console) -> bool:
    """True, having said so, when ``run_id`` is complete with every planned cell stored: the resume
    then changes nothing (no status, seed or configuration is written again)."""
    if store.run(run_id).status != "complete" or runner.pending_count(store, run_id, config):
        return False
    err_console.print(
        f"run {run_id} is already complete: nothing to resume, the store is unchanged", soft_wrap=True
    )
    return True
