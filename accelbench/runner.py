"""Plan the cells of a run, execute each in its own process, store each result as it finishes, resume.

The runner owns the order of work: one cell at a time (the machine is shared; parallel cells would time
each other), stacks that are unavailable here are recorded without starting a process, and one failing
cell never stops the run. ``--resume RUN_ID`` replays the stored configuration and skips finished cells.
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from accelbench import registry
from accelbench.cellspec import CellSpec
from accelbench.config import RunConfig, effective_mem_limit_bytes, effective_threads
from accelbench.errors import UserError
from accelbench.hardware.detect import Machine, machine_to_dict
from accelbench.isolation import run_cell
from accelbench.results import SCHEMA_VERSION, Cell, Result, from_dict
from accelbench.store import Store

log = logging.getLogger(__name__)

_DEVICE = re.compile(r"^(cpu|cuda:\d+)$")


@dataclass(frozen=True, slots=True)
class PlannedCell:
    """A cell with the references its process will import."""

    cell: Cell
    workload_ref: str
    stack_ref: str


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus a short random suffix."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def plan(config: RunConfig) -> list[PlannedCell]:
    """Every (workload, stack, device, scenario) cell of the configuration, names resolved."""
    workloads = registry.resolve("workload", config.workloads)
    stacks = registry.resolve("stack", config.stacks)
    bad = [d for d in config.devices if not _DEVICE.match(d)]
    if bad:
        raise UserError(f"unknown device {', '.join(bad)}; use cpu or cuda:N")
    return [
        PlannedCell(Cell(workload, stack, scenario, device, config.size), workloads[workload], stacks[stack])
        for workload in config.workloads
        for stack in config.stacks
        for device in config.devices
        for scenario in config.scenarios
    ]


def start_run(store: Store, config: RunConfig, machine: Machine) -> str:
    """Register a new run in the store and return its id."""
    run_id = new_run_id()
    store.create_run(run_id, config.to_dict(), machine_to_dict(machine), machine.fingerprint)
    return run_id


def resume_config(store: Store, run_id: str, machine: Machine) -> RunConfig:
    """The stored configuration of ``run_id``; refuses to resume on another machine."""
    record = store.run(run_id)
    if record.machine_fingerprint != machine.fingerprint:
        raise UserError(f"run {run_id} was made on another machine ({record.machine_fingerprint})")
    return RunConfig.from_dict(record.config)


def execute(
    store: Store,
    run_id: str,
    config: RunConfig,
    machine: Machine,
    on_result: Callable[[Result], None] = lambda result: None,
) -> list[Result]:
    """Run the planned cells not yet finished in ``run_id``; return the new results."""
    done = store.finished_cell_keys(run_id)
    pending = [p for p in plan(config) if p.cell.key not in done]
    store.set_run_status(run_id, "running")
    results = []
    for planned in pending:
        result = _run_one(store, run_id, config, machine, planned)
        store.add_result(result)
        results.append(result)
        on_result(result)
    store.set_run_status(run_id, "complete")
    return results


def pending_count(store: Store, run_id: str, config: RunConfig) -> int:
    """How many planned cells of ``run_id`` have no result yet."""
    done = store.finished_cell_keys(run_id)
    return sum(1 for p in plan(config) if p.cell.key not in done)


def _run_one(store: Store, run_id: str, config: RunConfig, machine: Machine, planned: PlannedCell) -> Result:
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    reason = _unavailable_reason(planned)
    if reason:
        outcome: dict[str, Any] = {"status": "unavailable", "reason": reason}
        wall_s, tail = 0.0, ""
    else:
        spec = _spec(store, run_id, config, planned)
        start = time.perf_counter()
        child = run_cell(spec, config.timeout_s, effective_mem_limit_bytes(config))
        outcome, wall_s, tail = child.outcome, time.perf_counter() - start, child.stderr_tail
    log.info("%s: %s %s", planned.cell.key, outcome.get("status"), outcome.get("reason", ""))
    document = {
        **outcome,
        "run_id": run_id,
        "cell": _cell_dict(planned.cell),
        "machine_fingerprint": machine.fingerprint,
        "started_at": started_at,
        "wall_s": wall_s,
        "stderr_tail": tail if outcome.get("status") != "ok" else "",
        "schema_version": SCHEMA_VERSION,
    }
    return from_dict(document)


def _unavailable_reason(planned: PlannedCell) -> str | None:
    try:
        stack = registry.instantiate(planned.stack_ref)
    except Exception as err:  # a plugin that does not even import is unavailable, not fatal
        return f"stack does not load: {type(err).__name__}: {err}"
    reason: str | None = stack.unavailable_reason(planned.cell.device)
    return reason


def _spec(store: Store, run_id: str, config: RunConfig, planned: PlannedCell) -> CellSpec:
    run_dir = store.run_dir(run_id).resolve()  # the cell process works in its own folder
    cell_dir = run_dir / "cells" / _safe_name(planned.cell.key)
    return CellSpec(
        run_id=run_id,
        cell=planned.cell,
        workload_ref=planned.workload_ref,
        stack_ref=planned.stack_ref,
        rules=config.rules,
        threads=effective_threads(config),
        seed=config.seed,
        samples=config.samples,
        cell_dir=str(cell_dir),
        run_dir=str(run_dir),
        cache_dir=str(run_dir / "cache"),
        result_path=str(cell_dir / "outcome.json"),
    )


def _cell_dict(cell: Cell) -> dict[str, str]:
    return {
        "workload": cell.workload,
        "stack": cell.stack,
        "scenario": cell.scenario,
        "device": cell.device,
        "size": cell.size,
        "variant": cell.variant,
    }


def _safe_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", key)


def run_folder(store: Store, run_id: str) -> Path:
    """The folder that holds a run's logs, caches and private HOME."""
    return store.run_dir(run_id)
