"""The ``tensorflow`` (TF2 + XLA) and ``litert`` stacks on the tiny conv net, BERT and MLP, against torch
eager fp32; the conversion cache, named failures, availability, and one cell of each through the runner.

Each tiny model is exported and converted once for the whole module (onnx2tf takes seconds per model):
the sessions are prepared in a module-scoped fixture sharing one cache folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from accelbench.errors import Unsupported
from accelbench.results import Result
from accelbench.stacks import _onnx_tf
from accelbench.stacks.base import CellContext, ModelSpec, Session, Stack
from accelbench.stacks.litert import LiteRt
from accelbench.stacks.tensorflow import TensorFlow
from tests.e2e.cli import result_ok
from tests.e2e.test_stacks_compilers import _plant_custom_op_onnx, _run_cells
from tests.e2e.test_stacks_direct import THREADS
from tests.e2e.tiny_models import CASES, MAX_NORMALISED_ERROR, normalised_error, other_sample, reference

pytestmark = pytest.mark.skipif(
    TensorFlow().unavailable_reason("cpu") is not None or LiteRt().unavailable_reason("cpu") is not None,
    reason="tensorflow / litert not installed (pip install accelbench[tensorflow])",
)
STACKS: dict[str, Stack] = {"tensorflow": TensorFlow(), "litert": LiteRt()}
Prepared = dict[tuple[str, str], tuple[torch.nn.Module, ModelSpec, Session]]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run cache for the module: each model is exported and converted once."""
    return tmp_path_factory.mktemp("tf-cache")


def _ctx(cache_dir: Path) -> CellContext:
    return CellContext("cpu", THREADS, cache_dir.parent / "work", cache_dir)


@pytest.fixture(scope="module")
def prepared(cache_dir: Path) -> Prepared:
    """Both stacks prepared on the three tiny models (tensorflow first: it converts without pseudo ops)."""
    sessions: Prepared = {}
    for case_name, case in CASES.items():
        for stack_name, stack in STACKS.items():
            model, spec = case()
            sessions[stack_name, case_name] = (model, spec, stack.prepare(model, spec, _ctx(cache_dir)))
    return sessions


@pytest.mark.slow
@pytest.mark.parametrize("case_name", sorted(CASES))
@pytest.mark.parametrize("stack_name", sorted(STACKS))
def test_matches_eager_fp32(stack_name: str, case_name: str, prepared: Prepared) -> None:
    model, spec, session = prepared[stack_name, case_name]
    assert session.effective_precision == "fp32"
    assert session.compile_s > 0 and float(session.details["first_call_s"]) > 0
    assert session.details["threads"] == str(THREADS)
    for sample in (spec, other_sample(spec)):
        output = session.infer(sample.example)
        assert output.dtype == np.float32
        assert normalised_error(output, reference(model, sample)) < MAX_NORMALISED_ERROR


@pytest.mark.slow
def test_litert_replaces_erf_only_where_there_is_one(prepared: Prepared) -> None:
    # the conv net has no Erf: LiteRT reads the .tflite of the tensorflow stack's conversion
    conv_folder = prepared["tensorflow", "conv"][2].details["saved_model"]
    assert prepared["litert", "conv"][2].details["tflite_file"] == f"{conv_folder}/{_onnx_tf.FLOAT32_TFLITE}"
    assert prepared["litert", "conv"][2].details["erf"] == "none in graph"
    # BERT and the MLP use exact GELU (Erf), which LiteRT lacks: their LiteRT graphs are converted apart
    for case_name in ("bert", "mlp"):
        lite = prepared["litert", case_name][2].details
        assert lite["erf"].startswith("onnx2tf polynomial")
        assert (
            lite["tflite_file"].split("/")[0] != prepared["tensorflow", case_name][2].details["saved_model"]
        )


@pytest.mark.slow
def test_conversion_is_cached_per_run(prepared: Prepared, cache_dir: Path) -> None:
    for stack_name in STACKS:
        model, spec, first = prepared[stack_name, "conv"]
        second = STACKS[stack_name].prepare(model, spec, _ctx(cache_dir))
        assert float(second.details["convert_s"]) == 0.0 and float(second.details["export_s"]) == 0.0
        assert float(first.details["convert_s"]) > 0 or stack_name == "litert"  # litert reused tensorflow's
        assert normalised_error(second.infer(spec.example), reference(model, spec)) < MAX_NORMALISED_ERROR
    assert not list((cache_dir / "onnx2tf").glob(".*.tmp"))


@pytest.mark.parametrize("stack_name", sorted(STACKS))
def test_unknown_op_is_unsupported_and_named(stack_name: str, tmp_path: Path) -> None:
    ctx = CellContext("cpu", THREADS, tmp_path / "work", tmp_path / "cache")
    spec = _plant_custom_op_onnx(ctx.cache_dir)
    with pytest.raises(
        Unsupported, match=rf"^{stack_name}: onnx2tf conversion failed: unsupported op UnknownOp"
    ):
        STACKS[stack_name].prepare(torch.nn.Identity(), spec, ctx)
    converted = ctx.cache_dir / "onnx2tf"
    assert not [one.name for one in converted.iterdir() if one.suffix != ".lock"]


@pytest.mark.parametrize(("stack_name", "module"), [("tensorflow", "onnx2tf"), ("litert", "ai_edge_litert")])
def test_missing_module_is_unavailable(stack_name: str, module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    stack = STACKS[stack_name]
    assert stack.unavailable_reason("cpu") is None
    monkeypatch.setitem(sys.modules, module, None)  # what an uninstalled package looks like to find_spec
    assert stack.unavailable_reason("cpu") == f"{module} not installed (pip install accelbench[tensorflow])"
    assert "cuda" not in stack.devices  # a CPU-only stack: unavailable on cuda:0 with or without a GPU
    assert "device kind 'cuda' is not supported" in (stack.unavailable_reason("cuda:0") or "")


def test_versions_and_layers() -> None:
    for stack in STACKS.values():
        versions = stack.versions()
        assert versions["torch"] == torch.__version__ and versions["tensorflow"].startswith("2.")
        assert "?" not in versions.values()
        assert set(stack.layers) == {"framework", "compiler", "platform"}
    assert "ai-edge-litert" in STACKS["litert"].versions()


def test_output_permutation_undoes_channel_last() -> None:
    assert _onnx_tf.output_permutation((1, 10), (1, 10)) is None
    permutation = _onnx_tf.output_permutation((1, 4, 5, 8), (1, 8, 4, 5))
    nhwc = np.arange(160).reshape(1, 4, 5, 8)
    assert permutation is not None
    assert np.array_equal(nhwc.transpose(permutation), np.moveaxis(nhwc, -1, 1))
    with pytest.raises(Unsupported, match="shape"):
        _onnx_tf.output_permutation((1, 11), (1, 10))


@pytest.fixture(scope="module")
def runner_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Result]:
    """Both stacks through the runner (forkserver cells that preloaded torch) on the tiny ``bert-base``."""
    return _run_cells(tmp_path_factory.mktemp("tf-runner") / "store", ("tensorflow", "litert"))


@pytest.mark.slow
@pytest.mark.parametrize("stack_name", sorted(STACKS))
def test_runner_cell_is_ok(stack_name: str, runner_results: dict[str, Result]) -> None:
    result = runner_results[stack_name]
    assert result_ok(result), (result.head.status, result.head.reason, result.stderr_tail)
    assert result.head.effective_precision == "fp32"
    assert result.head.compile_s > 0
    assert result.latency is not None and result.latency.p50_s > 0
    assert result.head.quality is not None and result.head.quality.passed
