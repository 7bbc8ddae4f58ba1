"""Cells as Ray tasks: placed on nodes whose resources match, streamed back as they finish, retried.

Each cell is one task holding one unit of the ``accelbench`` resource (so a node runs one cell at a
time) and, for ``cuda:N``, ``N + 1`` GPUs (so it lands only on a node with that many). Ray retries a
task whose worker or node died (``max_retries``), on any node that offers its resources; after that
the cell is recorded ``crashed`` with Ray's reason. A cell that no live node can take is not left
waiting: ``unavailable`` when no node ever offered it, ``crashed`` when the nodes that could were lost.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.cell import seeds
from accelbench.cell.pipeline import now, result_of
from accelbench.cellspec import PlannedCell
from accelbench.config import RunConfig
from accelbench.fleet.cluster import FLEET_RESOURCE, Fleet, first_line
from accelbench.fleet.node import fleet_task
from accelbench.outcome import Outcome
from accelbench.results import Result
from accelbench.stored import from_dict

log = logging.getLogger(__name__)

RETRIES = 2
"""Times Ray re-runs a cell whose worker process or node died, before it is recorded as crashed."""
POLL_S = 2.0
"""How long to wait for a finished cell before checking that some live node can still take the rest."""
NO_CUDA_REMAP = {"env_vars": {"RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1"}}
"""A GPU task keeps the node's numbering (``cuda:N`` means the node's N-th GPU, as detected there)."""


def demand(device: str) -> dict[str, float]:
    """The Ray resources a cell on ``device`` holds while it runs."""
    need = {FLEET_RESOURCE: 1.0}
    if device.startswith("cuda:"):
        need["GPU"] = float(int(device.split(":", 1)[1]) + 1)
    return need


def task_options(device: str, retries: int) -> dict[str, Any]:
    """``.options()`` of the Ray task of a cell on ``device``."""
    need = demand(device)
    options: dict[str, Any] = {
        "num_cpus": 0,  # the accelbench resource is the one that limits a node to one cell
        "resources": {FLEET_RESOURCE: need[FLEET_RESOURCE]},
        "max_retries": retries,
        "retry_exceptions": False,  # a cell's own failure is an outcome, not something to retry
        "scheduling_strategy": "SPREAD",  # idle nodes first, not the driver's node first
    }
    if "GPU" in need:
        options["num_gpus"] = need["GPU"]
        options["runtime_env"] = NO_CUDA_REMAP
    return options


@dataclass(frozen=True, slots=True)
class FleetExecutor:
    """Runs a run's cells on the nodes of a ``Fleet``; a ``runner.Executor``."""

    fleet: Fleet
    retries: int = RETRIES
    poll_s: float = POLL_S
    spans_machines: bool = True
    """Each result keeps the fingerprint of the node that measured it (the store accepts them)."""

    def results(self, run_id: str, config: RunConfig, pending: list[PlannedCell]) -> Iterator[Result]:
        """Submit every cell, then yield results as they finish; on exit, cancel what is still running."""
        ray = self.fleet.ray
        task = ray.remote(fleet_task)
        workers = self.fleet.workers()
        running: dict[Any, PlannedCell] = {}
        without = dataclasses.replace(config, input_seed=None)  # a node gets its cell's seed, not the run's
        for planned in pending:
            need = demand(planned.cell.device)
            if not any(node.offers(need) for node in workers):
                yield _unplaced(run_id, planned, f"no node of the fleet offers {_text(need)}", "unavailable")
                continue
            options = task_options(planned.cell.device, self.retries)
            ref = task.options(**options).remote(run_id, without, planned, _cell_seed(config, planned))
            running[ref] = planned
        try:
            yield from self._collect(run_id, running)
        finally:
            for ref in running:  # interrupted: stop the cells still queued or running
                ray.cancel(ref, force=True)

    def _collect(self, run_id: str, running: dict[Any, PlannedCell]) -> Iterator[Result]:
        while running:
            done, _ = self.fleet.ray.wait(list(running), num_returns=1, timeout=self.poll_s)
            for ref in done:
                yield self._finished(run_id, running.pop(ref), ref)
            if not done:
                yield from self._stranded(run_id, running)

    def _finished(self, run_id: str, planned: PlannedCell, ref: Any) -> Result:
        ray = self.fleet.ray
        try:
            report = ray.get(ref)
        except ray.exceptions.RayError as err:
            reason = f"fleet: {first_line(err)} (after up to {self.retries} retries)"
            log.warning("%s: %s", planned.cell.key, reason)
            return _unplaced(run_id, planned, reason, "crashed")
        return fleet_result(report)

    def _stranded(self, run_id: str, running: dict[Any, PlannedCell]) -> Iterator[Result]:
        """Cells that no live node can take any more: cancelled and recorded as crashed."""
        workers = self.fleet.workers()
        for ref, planned in list(running.items()):
            need = demand(planned.cell.device)
            if not any(node.offers(need) for node in workers):
                self.fleet.ray.cancel(ref, force=True)
                del running[ref]
                yield _unplaced(
                    run_id, planned, f"fleet: no live node offers {_text(need)} any more", "crashed"
                )


def fleet_result(report: Mapping[str, Any]) -> Result:
    """The result a node reported; the node and its machine go into ``settings.fleet_node``."""
    document = dict(report["result"])
    node = {**report["node"], "machine": report["machine"]}
    document["settings"] = {**document.get("settings", {}), "fleet_node": node}
    return from_dict(document)


def _unplaced(run_id: str, planned: PlannedCell, reason: str, status: str) -> Result:
    """A cell no node measured: no machine's fingerprint."""
    return result_of(run_id, planned, Outcome.failed(status, reason), "", now(), 0.0, "")


def _text(need: Mapping[str, float]) -> str:
    return ", ".join(f"{name}={amount:g}" for name, amount in sorted(need.items()))


def _cell_seed(config: RunConfig, planned: PlannedCell) -> int | None:
    """The cell's input seed under the run's (None: the node draws a fresh one)."""
    return None if config.input_seed is None else seeds.cell_seed(config.input_seed, planned.cell.key)
