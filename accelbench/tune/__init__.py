"""``accelbench tune MODEL``: bring your own model, find the fastest stack that runs it correctly.

MODEL is an ONNX file or ``module:function`` returning ``(torch module, example inputs tuple)``. The model
becomes a workload like any other and every chosen stack measures it through the ordinary path: a
planned cell per stack, run by ``runner`` in its own process (isolation, LoadGen scenario, quality
gate), one result per stack in the store. The ranking lists the verified stacks by throughput; the
speedup of the best one is over the reference stack: ``torch-eager`` for torch models, ``onnxruntime``
(CPU execution provider) for ONNX files.

The model is a workload of ``accelbench.workloads.user_model`` (how it reaches the cell process, how
its samples are drawn); the cells run through the one cell pipeline (``accelbench.cell.pipeline``).

ONNX files are read with ``onnx.load`` and verified with ``onnx.checker`` (never unpickled). The stacks
that run ONNX files (``Stack.reads_onnx``) get the user's file itself: it is placed where
``onnx_export.onnx_path`` looks for the cell's export, so nothing is re-exported. The quality reference
of an ONNX file is ``onnx.reference.ReferenceEvaluator`` (the ONNX specification's own semantics, in
numpy). Stacks that run torch modules would need an ONNX -> torch converter (onnx2torch needs
torchvision, which is not installed beside this torch): they are recorded ``unsupported`` with that
reason.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from accelbench import registry, runner
from accelbench.cell.pipeline import now, result_of, run_cell
from accelbench.cellspec import PlannedCell
from accelbench.config import RunConfig
from accelbench.hardware.detect import Machine
from accelbench.outcome import Outcome
from accelbench.results import Cell, Result
from accelbench.stacks.base import ModelSpec
from accelbench.stacks.onnx_export import onnx_path
from accelbench.store import Store
from accelbench.workloads.user_model import ModelSource, workload_reference

log = logging.getLogger(__name__)

REFERENCE_STACK = {"torch": "torch-eager", "onnx": "onnxruntime"}
"""The stack the best one's speedup is measured against, per model kind."""
SIZE = "standard"
SAMPLES = 32
_NO_CONVERTER = (
    "runs torch modules; an ONNX file would need an ONNX->torch converter (onnx2torch needs torchvision, "
    "which is not installed beside this torch)"
)


@dataclass(frozen=True, slots=True)
class Ranking:
    """The outcome of a tune run: every result, verified ones first by throughput, and the winner."""

    run_id: str
    source: ModelSource
    reference_stack: str
    results: tuple[Result, ...]
    best: Result | None
    speedup: float | None
    """Throughput of ``best`` over the reference stack's; None when either is not verified."""


def default_stacks() -> tuple[str, ...]:
    """Every registered stack except ``null`` and the served ones (``<stack>@<server>``: they start a
    server per cell; name them with ``--stacks``); unavailable ones are recorded as such."""
    return tuple(name for name in registry.table("stack") if name != "null" and not registry.is_served(name))


def tune(
    store: Store,
    source: ModelSource,
    config: RunConfig,
    machine: Machine,
    on_result: Callable[[Result], None] = lambda result: None,
    failure: tuple[str, str] | None = None,
) -> Ranking:
    """Measure ``source`` on every stack of ``config`` (one cell each) and rank the verified ones.

    ``failure``: (status, reason) of a model function that crashed or hung in its check
    (``accelbench.workloads.user_check``): every cell is stored with it, none is run."""
    stacks = registry.resolve("stack", config.stacks)
    run_id = runner.start_run(store, config, machine)
    run_dir = store.run_dir(run_id).resolve()
    if source.kind == "onnx":
        _place_onnx(run_dir, source, config)
    reference = workload_reference(source)
    driver_ref = registry.table("driver")[registry.driver_of(reference)]
    store.set_run_status(run_id, "running")
    for stack, stack_ref in stacks.items():
        cell = Cell(source.name, stack, config.scenarios[0], config.devices[0], config.size)
        planned = PlannedCell(cell, reference, stack_ref, driver_ref)
        if failure is not None:
            outcome = Outcome.failed(*failure)
            result = result_of(run_id, planned, outcome, machine.fingerprint, now(), 0.0, "")
        elif source.kind == "onnx" and runner.reads_onnx(stack_ref) is False:  # None: recorded when run
            outcome = Outcome.failed("unsupported", f"{stack} {_NO_CONVERTER}")
            result = result_of(run_id, planned, outcome, machine.fingerprint, now(), 0.0, "")
        else:
            result = run_cell(planned, run_id, config, run_dir, machine.fingerprint)
        store.add_result(result)
        on_result(result)
    store.set_run_status(run_id, "complete")
    return rank(run_id, source, store.results(run_id))


def tune_config(
    source: ModelSource, stacks: Sequence[str], scenario: str, rules: str, timeout_s: float
) -> RunConfig:
    """The stored configuration of a tune run (one workload, one scenario, on the CPU)."""
    return RunConfig(
        suite="tune",
        workloads=(source.name,),
        stacks=tuple(stacks),
        scenarios=(scenario,),
        size=SIZE,
        rules=rules,
        samples=SAMPLES,
        timeout_s=timeout_s,
    )


def _place_onnx(run_dir: Path, source: ModelSource, config: RunConfig) -> None:
    """Copy the user's file to where the ONNX stacks look for the cell's export (no re-export)."""
    spec = ModelSpec(
        workload=source.name,
        size=config.size,
        seed=config.seed,
        variant="canonical",
        input_names=(),
        example=(),
    )
    target = onnx_path(spec, run_dir / "cache")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source.location, target)


def rank(run_id: str, source: ModelSource, results: Sequence[Result]) -> Ranking:
    """Verified results by throughput (best first), then the others; the best one's speedup."""
    verified = sorted((r for r in results if r.head.status == "ok" and r.qps), key=lambda r: -(r.qps or 0.0))
    others = [r for r in results if r not in verified]
    reference_stack = REFERENCE_STACK[source.kind]
    reference = next((r for r in verified if r.cell.stack == reference_stack), None)
    best = verified[0] if verified else None
    speedup = best.qps / reference.qps if best and reference and best.qps and reference.qps else None
    return Ranking(
        run_id=run_id,
        source=source,
        reference_stack=reference_stack,
        results=(*verified, *others),
        best=best,
        speedup=speedup,
    )


def ranking_document(ranking: Ranking) -> dict[str, Any]:
    """The JSON form of a ranking (``accelbench tune --json``)."""
    reference = next((r for r in ranking.results if r.cell.stack == ranking.reference_stack), None)
    reference_qps = reference.qps if reference is not None and reference.head.status == "ok" else None
    return {
        "run_id": ranking.run_id,
        "model": asdict(ranking.source),
        "reference_stack": ranking.reference_stack,
        "best_stack": ranking.best.cell.stack if ranking.best else None,
        "speedup_vs_reference": ranking.speedup,
        "ranking": [_row(r, reference_qps) for r in ranking.results],
    }


def _row(result: Result, reference_qps: float | None) -> dict[str, Any]:
    head = result.head
    verified = head.status == "ok"
    qps = result.qps if verified else None
    return {
        "stack": result.cell.stack,
        "status": head.status,
        "verified": verified,
        "reason": head.reason,
        "qps": qps,
        "p50_s": result.latency.p50_s if verified and result.latency else None,
        "speed_vs_reference": qps / reference_qps if qps and reference_qps else None,
        "quality": asdict(head.quality) if head.quality else None,
        "effective_precision": head.effective_precision,
    }
