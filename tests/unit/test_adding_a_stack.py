"""A new stack takes the two places ``docs/adding-a-stack.md`` counts, and no other: checked by adding one.

``tests.unit.example_stack`` is the module a developer writes (``example-numpy``: Linear and ReLU layers as
NumPy products); the fixture adds the one line in ``accelbench.registry.STACKS`` that names it. The harness's
own code does the rest: ``--stacks all``, the planner, a real cell in the stack's own process on the worked
example workload ``example-mlp`` (``tests.unit.example_workload``, its line added too) with its audits, its
quality gate and the store.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from accelbench import registry, runner
from accelbench.config import RunConfig
from accelbench.errors import Unsupported
from accelbench.hardware.detect import detect_machine
from accelbench.store import open_store
from tests.unit import example_stack, example_workload

NAME = "example-numpy"
WORKLOAD = "example-mlp"


@pytest.fixture
def with_example_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stack's one line in ``registry.STACKS``, as a developer adds it (and the example workload's)."""
    monkeypatch.setitem(registry.STACKS, NAME, f"{example_stack.__name__}:ExampleNumpy")
    monkeypatch.setitem(registry.WORKLOADS, WORKLOAD, f"{example_workload.__name__}:ExampleMlp")


def test_it_is_known_by_name_available_on_the_cpu_and_planned(with_example_numpy: None) -> None:
    stack = registry.named("stack", NAME)
    assert stack.unavailable_reason("cpu") is None and stack.computes
    assert "not supported" in (stack.unavailable_reason("cuda:0") or "")
    assert NAME in registry.all_stack_names()  # --stacks all takes it
    config = RunConfig("tiny", (WORKLOAD,), (NAME,), ("single-stream", "offline"), "tiny", "quick")
    planned = {
        (p.cell.stack, p.cell.scenario, registry.driver_name(p.driver_ref)) for p in runner.plan(config)
    }
    assert planned == {(NAME, "single-stream", "loadgen"), (NAME, "offline", "loadgen")}


def test_a_cell_on_it_is_measured_and_passes_its_quality_gate(
    with_example_numpy: None, tmp_path: Path
) -> None:
    """About the stack's way through the harness, not the machine's quiet: the status may be ``unstable``
    or ``unverified`` on a loaded machine (the timing audits), never a failure of the cell."""
    here = detect_machine(probe_gpus=False)
    config = RunConfig("tiny", (WORKLOAD,), (NAME,), ("single-stream",), "tiny", "quick")
    with open_store(tmp_path / "store") as store:
        run_id = runner.start_run(store, config, here)
        runner.execute(store, run_id, config, here)
        (measured,) = store.results(run_id)
    assert measured.cell.stack == NAME and measured.driver == "loadgen"
    assert measured.head.status in ("ok", "unstable", "unverified"), (
        measured.head.status,
        measured.head.reason,
    )
    assert measured.head.quality is not None and measured.head.quality.passed, measured.head.quality
    assert measured.head.quality.metric == "top1" and measured.head.effective_precision == "fp32"
    assert measured.head.versions["numpy"] == example_stack.np.__version__
    details = measured.head.settings["stack"]
    assert details == {"layers": "Linear,ReLU,Linear", "threads": str(measured.head.settings["threads"])}
    assert measured.latency is not None and measured.latency.samples > 0 and measured.latency.p50_s > 0


def test_a_model_it_cannot_run_is_unsupported_with_its_reason() -> None:
    """``prepare`` raises ``Unsupported`` (the cell's status ``unsupported``, ``cell.process.outcome_of``)."""
    import torch

    with pytest.raises(Unsupported, match="Linear and ReLU layers in a row, not Conv2d"):
        example_stack.numpy_layers(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Conv2d(1, 1, 1)))
