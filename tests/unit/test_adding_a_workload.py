"""A new workload takes the two places ``docs/adding-a-workload.md`` counts: checked by adding one.

``tests.unit.example_workload`` is the module a developer writes; the fixture adds the one line that names
it (an entry point of the ``accelbench.workloads`` group, as an installed package adds it). The harness's
own code does the rest: ``list``, the planner, a real measured cell on onnxruntime (the model exported by
the same exporter every ONNX stack uses, run in the stack's own process) with its quality gate, and the store.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from accelbench import registry, runner
from accelbench.config import RunConfig
from accelbench.hardware.detect import detect_machine
from accelbench.store import open_store
from tests.unit import example_workload

NAME = "example-mlp"


@pytest.fixture
def with_example_mlp(monkeypatch: pytest.MonkeyPatch) -> None:
    """The workload's one line: an entry point, as ``pip install`` of a package holding it writes one."""
    plugin = EntryPoint(NAME, f"{example_workload.__name__}:ExampleMlp", "accelbench.workloads")
    real = registry.entry_points
    monkeypatch.setattr(
        registry, "entry_points", lambda group: [plugin] if group == plugin.group else real(group=group)
    )


def test_it_is_known_by_name_and_planned_in_every_loadgen_scenario(with_example_mlp: None) -> None:
    assert registry.table("workload")[NAME] == "tests.unit.example_workload:ExampleMlp"
    config = RunConfig(
        "tiny", (NAME,), ("onnxruntime", "null"), ("single-stream", "offline"), "tiny", "quick"
    )
    planned = {
        (p.cell.stack, p.cell.scenario, registry.driver_name(p.driver_ref)) for p in runner.plan(config)
    }
    assert planned == {
        (stack, scenario, "loadgen")
        for stack in ("onnxruntime", "null")
        for scenario in ("single-stream", "offline")
    }


def test_a_cell_of_it_is_measured_and_passes_its_quality_gate(with_example_mlp: None, tmp_path: Path) -> None:
    """What the test is about is the workload's way through the harness, not the machine's quiet: the
    status may be ``unstable`` or ``unverified`` on a loaded machine (the timing audits), never a failure
    of the cell itself."""
    here = detect_machine(probe_gpus=False)
    config = RunConfig("tiny", (NAME,), ("onnxruntime",), ("single-stream",), "tiny", "quick")
    with open_store(tmp_path / "store") as store:
        run_id = runner.start_run(store, config, here)
        runner.execute(store, run_id, config, here)
        (result,) = store.results(run_id)
    assert result.cell.workload == NAME and result.driver == "loadgen"
    assert result.head.status in ("ok", "unstable", "unverified"), (result.head.status, result.head.reason)
    assert result.head.quality is not None and result.head.quality.passed, result.head.quality
    assert result.head.quality.metric == "top1" and result.head.effective_precision == "fp32"
    assert result.latency is not None and result.latency.samples > 0 and result.latency.p50_s > 0
