"""The stacks driven directly (no runner): tiny conv net and tiny BERT through null, torch-eager,
torch-inductor and onnxruntime, checked against torch eager fp32.

The two models are defined here on purpose, independent of the real workloads.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import torch

from accelbench.errors import Unsupported
from accelbench.stacks.base import CellContext, ModelSpec, Stack
from accelbench.stacks.null import NullStack
from accelbench.stacks.onnx_export import export_onnx
from accelbench.stacks.onnxruntime import OnnxRuntime
from accelbench.stacks.torch_eager import TorchEager
from accelbench.stacks.torch_inductor import TorchInductor
from tests.e2e.tiny_models import bert_case, conv_case

MAX_NORMALISED_ERROR = 1e-5
THREADS = 1


CASES = {"conv": conv_case, "bert": bert_case}


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest) -> tuple[torch.nn.Module, ModelSpec]:
    """One of the two tiny models with its example inputs."""
    return CASES[request.param]()


@pytest.fixture
def ctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CellContext:
    """A CPU cell with a fresh cache folder and the Inductor cache pointed inside it."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache" / "inductor"))
    return CellContext("cpu", THREADS, tmp_path / "work", tmp_path / "cache")


def _reference(model: torch.nn.Module, spec: ModelSpec) -> np.ndarray:
    with torch.no_grad():
        return model(*(torch.from_numpy(array) for array in spec.example)).numpy()


def _assert_matches(output: np.ndarray, reference: np.ndarray) -> None:
    assert output.shape == reference.shape
    error = np.max(np.abs(output - reference)) / np.max(np.abs(reference))
    assert error < MAX_NORMALISED_ERROR


def _other_sample(spec: ModelSpec) -> ModelSpec:
    """The same spec with different inputs, so a stack that replays the example output is caught."""
    rng = np.random.default_rng(1)
    if spec.example[0].dtype == np.int64:
        inputs = (rng.integers(1, 100, size=(1, 8), dtype=np.int64), np.ones((1, 8), dtype=np.int64))
    else:
        inputs = (rng.standard_normal(spec.example[0].shape, dtype=np.float32),)
    return ModelSpec(spec.workload, spec.size, spec.seed, spec.variant, spec.input_names, inputs)


@pytest.mark.parametrize("stack", [TorchEager(), OnnxRuntime()], ids=lambda stack: stack.name)
def test_stack_matches_eager_fp32(stack: Stack, case: tuple, ctx: CellContext) -> None:
    model, spec = case
    session = stack.prepare(model, spec, ctx)
    assert session.effective_precision == "fp32"
    assert session.details["threads"] == str(THREADS)
    for sample in (spec, _other_sample(spec)):
        _assert_matches(session.infer(sample.example), _reference(model, sample))


def test_torch_eager_records_first_call(ctx: CellContext) -> None:
    model, spec = conv_case()
    session = TorchEager().prepare(model, spec, ctx)
    assert session.compile_s == 0.0
    assert float(session.details["first_call_s"]) > 0


def test_onnxruntime_compile_time_is_export_plus_session(ctx: CellContext) -> None:
    model, spec = conv_case()
    first = OnnxRuntime().prepare(model, spec, ctx)
    second = OnnxRuntime().prepare(model, spec, ctx)
    assert float(first.details["export_s"]) > 0
    assert first.compile_s == pytest.approx(
        float(first.details["export_s"]) + float(first.details["session_s"]), abs=1e-5
    )
    assert float(second.details["export_s"]) == 0.0
    assert 0 < second.compile_s < first.compile_s
    assert first.details["providers"] == "CPUExecutionProvider"


def test_torch_inductor_compiles_and_reuses_warm_cache(case: tuple, ctx: CellContext) -> None:
    model, spec = case
    cold = TorchInductor().prepare(model, spec, ctx)
    assert cold.details["cache"] == "cold"
    assert cold.details["freezing"] == "True"
    assert cold.compile_s > 0
    assert cold.effective_precision == "fp32"
    for sample in (spec, _other_sample(spec)):
        _assert_matches(cold.infer(sample.example), _reference(model, sample))
    warm = TorchInductor().prepare(model, spec, ctx)
    assert warm.details["cache"] == "warm"
    assert warm.details["cache_dir"] == str(ctx.cache_dir / "inductor")


@pytest.mark.parametrize("preset", ["unset", "torch-default"])
def test_torch_inductor_uses_cell_cache_dir(
    preset: str, ctx: CellContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    if preset == "unset":
        monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    else:  # what importing transformers models leaves behind
        monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", default_cache_dir())
    monkeypatch.setattr(torch, "compile", lambda module: module)  # the cache folder is what is tested
    model, spec = conv_case()
    session = TorchInductor().prepare(model, spec, ctx)
    assert session.details["cache_dir"] == str(ctx.cache_dir / "inductor")


def test_torch_inductor_compile_failure_is_unsupported(
    ctx: CellContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_compile(module: torch.nn.Module) -> object:
        def fail(*inputs: torch.Tensor) -> torch.Tensor:
            raise RuntimeError("no kernel for this op\nlong details")

        return fail

    monkeypatch.setattr(torch, "compile", broken_compile)
    model, spec = conv_case()
    with pytest.raises(Unsupported, match=r"no kernel for this op$"):
        TorchInductor().prepare(model, spec, ctx)


def test_export_onnx_is_cached(tmp_path: Path) -> None:
    model, spec = conv_case()
    path, export_s = export_onnx(model, spec, tmp_path)
    assert path == tmp_path / "onnx" / "tinyconv-tiny-canonical-0.onnx"
    assert path.is_file() and export_s > 0
    assert export_onnx(model, spec, tmp_path) == (path, 0.0)
    assert sorted(one.name for one in path.parent.iterdir()) == [path.name, path.name + ".lock"]


def test_export_onnx_failure_is_unsupported(tmp_path: Path) -> None:
    class NoOnnxOp(torch.nn.Module):
        def forward(self, matrix: torch.Tensor) -> torch.Tensor:
            return torch.linalg.eigh(matrix @ matrix.T)[0]

    spec = ModelSpec("eigh", "tiny", 0, "canonical", ("matrix",), (np.eye(3, dtype=np.float32),))
    with pytest.raises(Unsupported, match=r"^onnx export failed: .*eigh"):
        export_onnx(NoOnnxOp(), spec, tmp_path)
    assert [one.name for one in (tmp_path / "onnx").iterdir()] == ["eigh-tiny-canonical-0.onnx.lock"]


def test_null_stack_returns_instantly(ctx: CellContext) -> None:
    model, spec = conv_case()
    session = NullStack().prepare(model, spec, ctx)
    assert not NullStack.computes
    assert (session.effective_precision, session.compile_s) == ("none", 0.0)
    start_s = time.perf_counter()
    outputs = [session.infer(spec.example) for _ in range(1000)]
    assert time.perf_counter() - start_s < 0.5
    assert all(output is outputs[0] for output in outputs)


ALL_STACKS = [NullStack(), TorchEager(), TorchInductor(), OnnxRuntime()]


@pytest.mark.parametrize("stack", ALL_STACKS, ids=lambda stack: stack.name)
def test_availability(stack: Stack) -> None:
    assert stack.unavailable_reason("cpu") is None
    reason = stack.unavailable_reason("cuda:0")
    if isinstance(stack, (TorchEager, TorchInductor)) and torch.cuda.is_available():
        assert reason is None  # a CUDA machine: the torch stacks drive it
    elif reason is not None or not torch.cuda.is_available():  # onnxruntime-gpu on a GPU: no reason
        assert reason is not None and "cuda" in reason.lower()
    assert stack.unavailable_reason("tpu") is not None
    assert stack.unavailable_reason("cuda:x") is not None


@pytest.mark.parametrize("stack", ALL_STACKS[1:], ids=lambda stack: stack.name)
def test_versions_name_torch(stack: Stack) -> None:
    assert stack.versions()["torch"] == torch.__version__


def test_onnxruntime_versions() -> None:
    assert set(OnnxRuntime().versions()) == {"onnxruntime", "onnx", "onnxscript", "torch"}
