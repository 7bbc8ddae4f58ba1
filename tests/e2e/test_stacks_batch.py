"""Every registered stack at batch 3 on the tiny real workloads: each output row is its sample's.

A session is prepared for 3 concatenated samples (an odd batch, so nothing rounds to a power of two) and
row ``i`` of its output must match the batch-1 fp32 torch eager output of sample ``i`` within the
precision audit's budget for the precision the stack declares. Pairs that cannot run (a missing kernel,
a converter failure) must say so with a non-empty ``Unsupported`` reason; workloads whose samples cannot
be batched must give a reason in ``Workload.batch_reason``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from accelbench import registry, variants
from accelbench.audits.precision import BUDGETS, FP32_BUDGET
from accelbench.errors import Unsupported
from accelbench.stacks.base import CellContext, ModelSpec, Stack
from accelbench.workloads.base import Inputs, Workload
from tests.e2e.test_stacks_direct import THREADS

BATCH = 3
SIZE = "tiny"
SEED = 0
WORKLOADS = ("resnet50", "bert-base", "minilm-l6")
SLOW_STACKS = ("torch-inductor", "tensorflow", "litert")
"""Each compiles or converts for tens of seconds per tiny model here."""
SKIPPED_STACKS = ("tvm-tuned", *(name for name in registry.STACKS if "@" in name))
"""Tuning takes minutes even at a tiny budget; it builds from the same batch-keyed ONNX file as tvm.
Served stacks (``<stack>@<server>``) start a server per session: their batched rows are checked in
``test_serving.py``, which stops each server it starts."""
KNOWN_UNSUPPORTED = {
    ("iree", "resnet50"): "Conv",
    ("opencl", "resnet50"): "aten.convolution",
    ("opencl", "bert-base"): "aten.gather",
    ("opencl", "minilm-l6"): "aten.gather",
    ("tensorflow", "minilm-l6"): "ReduceL2",
    ("litert", "minilm-l6"): "ReduceL2",
}
"""(stack, workload) pairs that fail at batch 1 as well, with a word of the reason they give."""
UNBATCHABLE = ("gnn-sage", "dlrm-bags", "dynamic-seq")
BATCHABLE = ("resnet50", "bert-base", "minilm-l6", "moe-topk", "ssm-scan")


def _available_stacks() -> list[str]:
    names = []
    for name, reference in registry.STACKS.items():
        stack = registry.instantiate(reference)
        if name not in SKIPPED_STACKS and stack.unavailable_reason("cpu") is None:
            names.append(name)
    return names


def _cases() -> list[object]:
    cases = []
    for stack in _available_stacks():
        for workload in WORKLOADS:
            marks = [pytest.mark.slow] if stack in SLOW_STACKS else []
            if stack in SLOW_STACKS and (stack, workload) in KNOWN_UNSUPPORTED:
                # 12 s each converting until the op it cannot take; make test keeps the named-op failure
                # (test_stacks_tensorflow's unknown op) and every stack's batched rows
                marks.append(pytest.mark.exhaustive)
            elif (stack, workload) == ("torch-inductor", "minilm-l6"):
                # 15 s; make test keeps inductor's batched rows on bert-base, the same encoder family
                marks.append(pytest.mark.exhaustive)
            cases.append(pytest.param(stack, workload, marks=marks, id=f"{stack}-{workload}"))
    return cases


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run cache for the module: each workload is exported to ONNX once, shared by the stacks."""
    return tmp_path_factory.mktemp("batch-cache")


def _samples(workload: Workload) -> list[Inputs]:
    return [variants.make_sample(workload, SIZE, SEED, index, None) for index in range(BATCH)]


def _joined(samples: list[Inputs]) -> Inputs:
    return tuple(np.concatenate(parts, axis=0) for parts in zip(*samples, strict=True))


def _references(workload: Workload, samples: list[Inputs]) -> list[np.ndarray]:
    model = variants.build_model(workload, SIZE, SEED, None)
    with torch.no_grad():
        return [model(*(torch.from_numpy(array) for array in sample)).numpy() for sample in samples]


@pytest.mark.parametrize(("stack_name", "workload_name"), _cases())
def test_batch_rows_match_batch_one_reference(
    stack_name: str, workload_name: str, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache_dir / "inductor"))
    stack: Stack = registry.instantiate(registry.STACKS[stack_name])
    workload: Workload = registry.instantiate(registry.WORKLOADS[workload_name])
    assert stack.batch_reason(workload_name, BATCH) is None
    assert workload.batch_reason(SIZE) is None
    samples = _samples(workload)
    spec = ModelSpec(workload_name, SIZE, SEED, "canonical", workload.input_names(), _joined(samples), BATCH)
    ctx = CellContext("cpu", THREADS, cache_dir.parent / f"work-{stack_name}", cache_dir)
    model = variants.build_model(workload, SIZE, SEED, None) if stack.computes else None
    known = KNOWN_UNSUPPORTED.get((stack_name, workload_name))
    if known is not None:
        with pytest.raises(Unsupported, match=known):
            stack.prepare(model, spec, ctx)  # type: ignore[arg-type]
        return
    session = stack.prepare(model, spec, ctx)  # type: ignore[arg-type]
    output = session.infer(spec.example)
    if not stack.computes:
        assert output.shape[0] == BATCH
        return
    budget = BUDGETS.get(session.effective_precision, FP32_BUDGET)
    for row, reference in enumerate(_references(workload, samples)):
        got = output[row : row + 1]
        assert got.shape == reference.shape
        error = float(np.abs(got - reference).max() / np.abs(reference).max())
        assert error <= budget, f"row {row}: error {error:.3g} over the {session.effective_precision} budget"


@pytest.mark.parametrize("name", UNBATCHABLE + BATCHABLE)
def test_workload_batch_reason(name: str) -> None:
    workload: Workload = registry.instantiate(registry.WORKLOADS[name])
    for size in ("tiny", "standard"):
        reason = workload.batch_reason(size)
        if name in UNBATCHABLE:
            assert reason and "\n" not in reason
        else:
            assert reason is None


def test_batchable_workloads_compute_rows_independently() -> None:
    """The eager model on 3 concatenated samples gives, row by row, its batch-1 outputs."""
    for name in BATCHABLE:
        workload: Workload = registry.instantiate(registry.WORKLOADS[name])
        samples = _samples(workload)
        model = variants.build_model(workload, SIZE, SEED, None)
        with torch.no_grad():
            batched = model(*(torch.from_numpy(array) for array in _joined(samples))).numpy()
        for row, reference in enumerate(_references(workload, samples)):
            error = np.abs(batched[row : row + 1] - reference).max() / np.abs(reference).max()
            assert error <= FP32_BUDGET, name


@pytest.mark.parametrize("name", [name for name in registry.STACKS if name not in SKIPPED_STACKS])
def test_default_batch_is_positive(name: str) -> None:
    stack: Stack = registry.instantiate(registry.STACKS[name])
    for device in ("cpu", "cuda:0"):
        assert stack.default_batch(device) >= 1
