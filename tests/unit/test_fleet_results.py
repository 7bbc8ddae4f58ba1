"""A fleet's results come from other machines: they are stored with their node's fingerprint, and
normalized with the node's machine, never refused (the bug: a multi-machine fleet run aborted)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from accelbench import runner
from accelbench.cell.pipeline import now, result_of
from accelbench.config import RunConfig
from accelbench.fleet.scheduler import FleetExecutor, fleet_result
from accelbench.hardware.detect import Machine, detect_machine, machine_to_dict
from accelbench.normalize.lookup import machine_of
from accelbench.outcome import Outcome
from accelbench.results import Result
from accelbench.store import open_store
from accelbench.stored import to_dict

FLEET_SPANS_MACHINES = next(
    f.default for f in dataclasses.fields(FleetExecutor) if f.name == "spans_machines"
)
CONFIG = RunConfig("tiny", ("resnet50",), ("null",), ("single-stream",), "tiny", "quick")


def _other_machine(here: Machine) -> Machine:
    return dataclasses.replace(here, logical_cores=here.logical_cores * 4, mem_bytes=here.mem_bytes * 4)


@dataclass(frozen=True, slots=True)
class _RemoteNodes:
    """What ``FleetExecutor`` yields, without Ray: each cell's node report through ``fleet_result``."""

    node: Machine
    spans_machines: bool = bool(FLEET_SPANS_MACHINES)

    def results(self, run_id: str, config: RunConfig, pending: list[runner.PlannedCell]) -> Iterator[Result]:
        for planned in pending:
            outcome = Outcome.failed("unavailable", "measured elsewhere")
            measured = result_of(run_id, planned, outcome, self.node.fingerprint, now(), 0.0, "")
            report = {
                "result": to_dict(measured),
                "machine": machine_to_dict(self.node),
                "node": {"node_id": "remote", "ip": "10.0.0.2", "host": "remote", "run_dir": "/tmp/x"},
            }
            yield fleet_result(report)


def test_a_result_from_another_machine_is_stored_with_its_own_fingerprint(tmp_path: Path) -> None:
    here = detect_machine(probe_gpus=False)
    remote = _other_machine(here)
    assert remote.fingerprint != here.fingerprint and FLEET_SPANS_MACHINES is True
    with open_store(tmp_path / "store") as store:
        run_id = runner.start_run(store, CONFIG, here)
        done = runner.execute(store, run_id, CONFIG, here, executor=_RemoteNodes(remote))
        stored = store.results(run_id)
        assert store.run(run_id).machine_fingerprint == here.fingerprint
    assert len(done) == len(stored) == len(runner.plan(CONFIG)) == 1
    (result,) = stored
    assert result.machine_fingerprint == remote.fingerprint
    assert result.head.settings["fleet_node"]["node_id"] == "remote"
    # normalization reads the node's machine, not the driver's
    assert machine_of(result, machine_to_dict(here))["logical_cores"] == remote.logical_cores


def test_a_single_machine_executor_still_refuses_a_foreign_result(tmp_path: Path) -> None:
    here = detect_machine(probe_gpus=False)
    nodes = dataclasses.replace(_RemoteNodes(_other_machine(here)), spans_machines=False)
    with open_store(tmp_path / "store") as store:
        run_id = runner.start_run(store, CONFIG, here)
        with pytest.raises(ValueError, match="measured on machine"):
            runner.execute(store, run_id, CONFIG, here, executor=nodes)
        assert store.results(run_id) == []
