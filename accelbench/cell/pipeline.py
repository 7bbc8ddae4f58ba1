"""Run one cell: a planned cell in, its ``Result`` out. The only definition of "run one cell".

The local runner, the fleet node and ``tune`` all call ``run_cell``. The steps:
    1. a stack that cannot run on the cell's device is recorded ``unavailable`` (no process started);
    2. the cell's ``CellSpec`` is written for a process of its own (``accelbench.cell.isolation``: timeout,
       memory limit, private HOME); there the scenario's driver measures it (``accelbench.cell.process``);
    3. the child's outcome document is read back typed, by the records of the driver that wrote it
       (``accelbench.outcome.Outcome.from_dict``: the head and the driver's body, ``registry.BODIES``);
       the outcome, the driver's name and what the parent observed (wall time, stderr tail) become the
       immutable ``Result``, stamped with the fingerprint of the machine that measured it, with the
       cell's input seed (``settings.input_seed``, ``accelbench.cell.seeds``) added now that it ended.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from datetime import UTC, datetime
from pathlib import Path

from accelbench import registry, settings
from accelbench.cell import seeds
from accelbench.cell.isolation import run_in_process
from accelbench.cellspec import CellSpec, Folders, PlannedCell, Refs
from accelbench.config import RunConfig, effective_mem_limit_bytes, effective_threads
from accelbench.meters import reference_probe
from accelbench.meters.reference_probe import NoiseFloor
from accelbench.outcome import Outcome
from accelbench.results import Result
from accelbench.sut.loading import load_failure

log = logging.getLogger(__name__)


def run_cell(
    planned: PlannedCell,
    run_id: str,
    config: RunConfig,
    run_dir: Path,
    fingerprint: str,
    input_seed: int | None = None,
    noise_floor: NoiseFloor | None = None,
    measured_fp32_flops_per_s: float | None = None,
) -> Result:
    """Measure ``planned`` on this machine in its own process working in ``run_dir`` (an absolute,
    local folder), or record it unavailable; ``fingerprint`` is this machine's; ``input_seed``: the
    cell's own (a fleet node gets it instead of the run's), else derived from ``config.input_seed``;
    ``noise_floor``: the run's, else this host's (``reference_probe.host_floor``);
    ``measured_fp32_flops_per_s``: the run's measured GEMM peak, for the energy estimate's share."""
    started_at = now()
    reason = unavailable_reason(planned)
    if reason:
        outcome, wall_s, tail = Outcome.failed("unavailable", reason), 0.0, ""
    else:
        floor = noise_floor or reference_probe.host_floor(reference_probe.user_cache())
        spec = cell_spec(run_id, config, planned, run_dir, input_seed, floor)
        spec = dataclasses.replace(spec, measured_fp32_flops_per_s=measured_fp32_flops_per_s)
        child = run_in_process(spec, config.timeout_s, effective_mem_limit_bytes(config))
        wall_s, tail = child.wall_s, child.stderr_tail
        outcome = Outcome.from_dict(registry.driver_name(planned.driver_ref), child.outcome)
        settings = {**outcome.head.settings, "input_seed": spec.input_seed}
        outcome = dataclasses.replace(outcome, head=dataclasses.replace(outcome.head, settings=settings))
    result = result_of(run_id, planned, outcome, fingerprint, started_at, wall_s, tail)
    log.info("%s: %s %s", planned.cell.key, result.head.status, result.head.reason)
    return result


def now() -> str:
    """The current UTC time as stored in ``Result.started_at``."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def unavailable_reason(planned: PlannedCell) -> str | None:
    """Why the cell's stack cannot run on this machine's device, or None; never starts a process. Asked
    here of accelbench's own stacks only: a plugin's code never runs in the runner, which holds the
    run's input seed (its cell asks it in its SUT process, ``accelbench.sut``)."""
    if not registry.is_builtin(planned.stack_ref):
        return None
    try:
        stack = registry.instantiate(planned.stack_ref)
    except Exception as err:  # a plugin that does not even import is unavailable, not fatal
        return load_failure(err)
    reason: str | None = stack.unavailable_reason(planned.cell.device)
    return reason


def cell_spec(
    run_id: str,
    config: RunConfig,
    planned: PlannedCell,
    run_dir: Path,
    input_seed: int | None = None,
    noise_floor: NoiseFloor | None = None,
) -> CellSpec:
    """The spec of a cell whose process works in ``run_dir`` (an absolute, local folder); its input seed
    is ``input_seed``, else derived from the run's (``config.input_seed``; None: a fresh one)."""
    if input_seed is None:
        run_seed = config.input_seed if config.input_seed is not None else seeds.draw()
        input_seed = seeds.cell_seed(run_seed, planned.cell.key)
    cell_dir = run_dir / "cells" / _safe_name(planned.cell.key)
    return CellSpec(
        run_id=run_id,
        cell=planned.cell,
        refs=Refs.of(planned),
        rules=config.rules,
        threads=effective_threads(config),
        seed=config.seed,
        input_seed=input_seed,
        samples=config.samples,
        folders=Folders(
            cell_dir=str(cell_dir),
            run_dir=str(run_dir),
            cache_dir=str(run_dir / "cache"),
            result_path=str(cell_dir / "outcome.json"),
            store_cache_dir=str(run_dir.parent.parent / "cache"),  # run_dir is <store>/runs/<run id>
        ),
        settings=settings.from_config(registry.driver_name(planned.driver_ref), config),
        noise_floor=reference_probe.floor_to_dict(noise_floor) if noise_floor else None,
    )


def result_of(
    run_id: str,
    planned: PlannedCell,
    outcome: Outcome,
    machine_fingerprint: str,
    started_at: str,
    wall_s: float,
    stderr_tail: str,
) -> Result:
    """The result record of a cell from its driver's outcome and what its parent observed: the head, the
    body, and the run facts (the driver's name among them)."""
    return Result(
        run_id=run_id,
        cell=planned.cell,
        head=outcome.head,
        driver=registry.driver_name(planned.driver_ref),
        machine_fingerprint=machine_fingerprint,
        started_at=started_at,
        wall_s=wall_s,
        stderr_tail=stderr_tail if outcome.head.status != "ok" else "",
        body=outcome.body,
    )


def _safe_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", key)
