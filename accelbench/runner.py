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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from accelbench import registry, training
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
    """Every (workload, stack, device, scenario) cell of the configuration, names resolved.

    With ``config.variants`` = N each canonical cell is followed by its N variant cells (not for stacks
    that do not compute, such as the null stack: their time does not depend on the model).
    """
    workloads = registry.resolve("workload", config.workloads)
    stacks = registry.resolve("stack", config.stacks)
    bad = [d for d in config.devices if not _DEVICE.match(d)]
    if bad:
        raise UserError(f"unknown device {', '.join(bad)}; use cpu or cuda:N")
    return [
        PlannedCell(
            Cell(workload, stack, scenario, device, config.size, variant), workloads[workload], stacks[stack]
        )
        for workload in config.workloads
        for stack in config.stacks
        for device in config.devices
        for scenario in config.scenarios
        if training.compatible(workload, scenario)
        for variant in _variants(config, stacks[stack])
    ]


def _variants(config: RunConfig, stack_ref: str) -> tuple[str, ...]:
    """``canonical`` then the run's variant names (none for a stack that does not compute)."""
    from accelbench import variants

    if not config.variants:
        return (variants.CANONICAL,)
    if config.variant_seed is None:
        raise UserError("a run with variants needs a variant seed (accelbench.variants.with_variant_seed)")
    try:
        computes = bool(registry.instantiate(stack_ref).computes)
    except Exception:  # a stack that does not load is recorded unavailable, once per cell
        computes = True
    names = variants.variant_names(config.variant_seed, config.variants) if computes else ()
    return (variants.CANONICAL, *names)


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


class Executor(Protocol):
    """Runs planned cells somewhere and yields each result as it finishes (in any order)."""

    def results(self, run_id: str, config: RunConfig, pending: list[PlannedCell]) -> Iterator[Result]:
        """Results of ``pending``, one per cell; the caller stores each as it arrives."""
        ...


@dataclass(frozen=True, slots=True)
class LocalExecutor:
    """The default: one cell at a time on this machine, each in its own process."""

    store: Store
    machine: Machine

    def results(self, run_id: str, config: RunConfig, pending: list[PlannedCell]) -> Iterator[Result]:
        """Run the cells in plan order, one after the other."""
        for planned in pending:
            yield run_planned(self.store, run_id, config, self.machine, planned)


def execute(
    store: Store,
    run_id: str,
    config: RunConfig,
    machine: Machine,
    on_result: Callable[[Result], None] = lambda result: None,
    executor: Executor | None = None,
) -> list[Result]:
    """Run the planned cells not yet finished in ``run_id``; return the new results.

    ``executor`` decides where cells run (default: ``LocalExecutor``, sequentially on this machine;
    ``accelbench.fleet.FleetExecutor`` spreads them over a Ray cluster). Each result is stored as soon
    as it arrives, so an interruption loses nothing already finished.
    """
    done = store.finished_cell_keys(run_id)
    pending = [p for p in plan(config) if p.cell.key not in done]
    store.set_run_status(run_id, "running")
    chosen = executor if executor is not None else LocalExecutor(store, machine)
    stream = chosen.results(run_id, config, pending)
    results = []
    try:
        for result in stream:
            store.add_result(result)
            results.append(result)
            on_result(result)
    finally:  # an interruption closes the executor now (a fleet cancels its queued cells)
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    store.set_run_status(run_id, "complete")
    return results


def pending_count(store: Store, run_id: str, config: RunConfig) -> int:
    """How many planned cells of ``run_id`` have no result yet."""
    done = store.finished_cell_keys(run_id)
    return sum(1 for p in plan(config) if p.cell.key not in done)


def run_planned(
    store: Store, run_id: str, config: RunConfig, machine: Machine, planned: PlannedCell
) -> Result:
    """Measure one planned cell on this machine in its own process (or record it unavailable)."""
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    reason = unavailable_reason(planned)
    if reason:
        outcome: dict[str, Any] = {"status": "unavailable", "reason": reason}
        wall_s, tail = 0.0, ""
    else:
        spec = cell_spec(run_id, config, planned, store.run_dir(run_id).resolve())
        start = time.perf_counter()
        child = run_cell(spec, config.timeout_s, effective_mem_limit_bytes(config))
        outcome, wall_s, tail = child.outcome, time.perf_counter() - start, child.stderr_tail
    log.info("%s: %s %s", planned.cell.key, outcome.get("status"), outcome.get("reason", ""))
    return result_of(run_id, planned, outcome, machine.fingerprint, started_at, wall_s, tail)


def result_of(
    run_id: str,
    planned: PlannedCell,
    outcome: Mapping[str, Any],
    machine_fingerprint: str,
    started_at: str,
    wall_s: float,
    stderr_tail: str,
) -> Result:
    """The result record of a cell from its outcome document and what its parent observed."""
    document = {
        **outcome,
        "run_id": run_id,
        "cell": _cell_dict(planned.cell),
        "machine_fingerprint": machine_fingerprint,
        "started_at": started_at,
        "wall_s": wall_s,
        "stderr_tail": stderr_tail if outcome.get("status") != "ok" else "",
        "schema_version": SCHEMA_VERSION,
    }
    return from_dict(document)


def unavailable_reason(planned: PlannedCell) -> str | None:
    """Why the cell's stack cannot run on this machine's device, or None; never starts a process."""
    try:
        stack = registry.instantiate(planned.stack_ref)
    except Exception as err:  # a plugin that does not even import is unavailable, not fatal
        return f"stack does not load: {type(err).__name__}: {err}"
    reason: str | None = stack.unavailable_reason(planned.cell.device)
    return reason


def cell_spec(run_id: str, config: RunConfig, planned: PlannedCell, run_dir: Path) -> CellSpec:
    """The spec of a cell whose process works in ``run_dir`` (an absolute, local folder)."""
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
        runs=config.runs,
        nproc=config.nproc,
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
