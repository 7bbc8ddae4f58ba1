"""jax-xla, opencl and the seed stacks: driven directly on the tiny models of ``tiny_models`` and checked
against torch eager fp32; the OpenCL probes against numpy; then full cells through the runner on the tiny
``bert-base`` and ``resnet50`` workloads.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from accelbench import runner
from accelbench.config import RunConfig
from accelbench.errors import Unavailable, Unsupported
from accelbench.hardware.detect import detect_machine
from accelbench.results import Result
from accelbench.stacks._export_graph import export_plan
from accelbench.stacks.base import CellContext, ModelSpec
from accelbench.stacks.jax_xla import _CUDA_PLUGINS, JaxXla, xla_cpu_flags
from accelbench.stacks.opencl import (
    OpenCl,
    opencl_copy_bytes_per_s,
    opencl_gemm,
    opencl_gemm_flops_per_s,
)
from accelbench.stacks.seeds import Glow, NvFuser, OneFlow, PlaidMl
from accelbench.store import open_store
from tests.e2e.cli import result_ok
from tests.e2e.tiny_models import (
    CASES,
    MAX_NORMALISED_ERROR,
    bert_case,
    conv_case,
    mlp_case,
    normalised_error,
    other_sample,
    reference,
)

THREADS = 1
SEEDS = {"glow": Glow(), "plaidml": PlaidMl(), "oneflow": OneFlow(), "nvfuser": NvFuser()}


ENVIRONMENT = ("XLA_FLAGS", "POCL_CACHE_DIR", "POCL_MAX_PTHREAD_COUNT", "POCL_CPU_MAX_CU_COUNT")
"""Variables the stacks set in ``prepare``: restored after each test."""


@pytest.fixture
def ctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CellContext:
    """A CPU cell with fresh work and cache folders; the variables the stacks set are restored after."""
    for variable in ENVIRONMENT:
        monkeypatch.delenv(variable, raising=False)
    return CellContext("cpu", THREADS, tmp_path / "work", tmp_path / "cache")


def _assert_matches_eager(session: Any, model: torch.nn.Module, spec: ModelSpec) -> None:
    for sample in (spec, other_sample(spec)):
        assert (
            normalised_error(session.infer(sample.example), reference(model, sample)) < MAX_NORMALISED_ERROR
        )


class CumSum(torch.nn.Module):
    """A model whose only op (``aten.cumsum``) neither jax-xla nor opencl lowers."""

    def forward(self, values: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(values, dim=1)


def _cumsum_case() -> tuple[torch.nn.Module, ModelSpec]:
    values = np.arange(6, dtype=np.float32).reshape(1, 6)
    return CumSum(), ModelSpec("cumsum", "tiny", 0, "canonical", ("values",), (values,))


class Normalised(torch.nn.Module):
    """Linear then L2 normalisation, as sentence-transformers ends (``aten.linalg_vector_norm``)."""

    def __init__(self) -> None:
        super().__init__()
        self.project = torch.nn.Linear(16, 8)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.normalize(self.project(tokens), dim=-1)


def _normalised_case() -> tuple[torch.nn.Module, ModelSpec]:
    torch.manual_seed(0)
    tokens = np.random.default_rng(0).standard_normal((1, 4, 16), dtype=np.float32)
    return Normalised().eval(), ModelSpec("normalised", "tiny", 0, "canonical", ("tokens",), (tokens,))


@pytest.mark.parametrize(
    "make_case",
    [*CASES.values(), _normalised_case],
    ids=[*CASES, "normalised"],
)
def test_jax_xla_matches_eager_fp32(make_case: Any, ctx: CellContext) -> None:
    model, spec = make_case()
    session = JaxXla().prepare(model, spec, ctx)
    assert session.effective_precision == "fp32"
    assert session.compile_s > 0
    assert float(session.details["xla_compile_s"]) > 0
    assert session.details["threads"] == str(THREADS)
    assert xla_cpu_flags(THREADS) in session.details["xla_flags"]
    _assert_matches_eager(session, model, spec)


def test_jax_xla_names_the_op_it_cannot_lower(ctx: CellContext) -> None:
    model, spec = _cumsum_case()
    with pytest.raises(Unsupported, match=r"^jax-xla: no lowering for aten\.cumsum$"):
        JaxXla().prepare(model, spec, ctx)


def test_jax_xla_weights_are_arguments_not_constants(ctx: CellContext) -> None:
    """Changing a weight in the plan must change the output: XLA did not fold the weights in."""
    model, spec = mlp_case()
    plan, _ = export_plan(model, spec, "test")
    assert len(plan.weights) == 6  # two Linear and one LayerNorm, weight and bias each
    session = JaxXla().prepare(model, spec, ctx)
    with torch.no_grad():
        model.down.bias.add_(1.0)
    changed = JaxXla().prepare(model, spec, ctx)
    assert np.allclose(changed.infer(spec.example) - session.infer(spec.example), 1.0, atol=1e-5)


def test_jax_xla_flags_set_before_jax_is_imported(tmp_path: Path) -> None:
    """In a fresh interpreter (as in a cell) prepare sets XLA_FLAGS before anything imports jax."""
    script = (
        "import sys; from pathlib import Path\n"
        "from accelbench.stacks.base import CellContext\n"
        "from accelbench.stacks.jax_xla import JaxXla\n"
        "from tests.e2e.tiny_models import mlp_case\n"
        "assert 'jax' not in sys.modules\n"
        "model, spec = mlp_case()\n"
        f"ctx = CellContext('cpu', 2, Path({str(tmp_path)!r}), Path({str(tmp_path)!r}))\n"
        "session = JaxXla().prepare(model, spec, ctx)\n"
        "details = session.details\n"
        "print(details['jax_imported_before'], details['xla_flags'], details['xla_cpus'])\n"
    )
    env = {name: value for name, value in os.environ.items() if name not in ENVIRONMENT}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    first_two = ",".join(str(cpu) for cpu in sorted(os.sched_getaffinity(0))[:2])
    assert done.stdout.split() == ["False", *xla_cpu_flags(2).split(), first_two]


def write_opencl_report(path: str) -> None:
    """Drive the opencl stack and probes; write what the tests check as JSON to ``path``.

    Run in a fresh interpreter (``opencl_report``): Intel's OpenCL driver cannot load into a process
    where OpenVINO already loaded its older TBB, as the other stack tests of this session may have.
    """
    import tempfile

    rng = np.random.default_rng(0)
    a = rng.standard_normal((37, 53), dtype=np.float32)
    b = rng.standard_normal((53, 29), dtype=np.float32)
    report: dict[str, Any] = {
        "gemm_error": normalised_error(opencl_gemm(a, b), a @ b),
        "gemm_flops_per_s": opencl_gemm_flops_per_s(n=64, repeats=2),
        "copy_bytes_per_s": opencl_copy_bytes_per_s(n_bytes=2**20, repeats=2),
    }
    folder = Path(tempfile.mkdtemp())
    ctx = CellContext("cpu", THREADS, folder / "work", folder / "cache")
    model, spec = mlp_case()
    session = OpenCl().prepare(model, spec, ctx)
    samples = (spec, other_sample(spec))
    report["mlp_errors"] = [
        normalised_error(session.infer(one.example), reference(model, one)) for one in samples
    ]
    report["mlp"] = {
        "precision": session.effective_precision,
        "compile_s": session.compile_s,
        **session.details,
    }
    for name, make_case in (("conv", conv_case), ("bert", bert_case)):
        try:
            OpenCl().prepare(*make_case(), ctx)
            report[name] = "prepared"
        except Unsupported as exc:
            report[name] = str(exc)
    Path(path).write_text(json.dumps(report))


@pytest.fixture(scope="module")
def opencl_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``write_opencl_report`` run in a fresh interpreter."""
    path = tmp_path_factory.mktemp("opencl") / "report.json"
    script = f"from {__name__} import write_opencl_report; write_opencl_report({str(path)!r})"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(path.read_text())


def test_opencl_gemm_probe_matches_numpy(opencl_report: dict[str, Any]) -> None:
    assert opencl_report["gemm_error"] < MAX_NORMALISED_ERROR
    assert opencl_report["gemm_flops_per_s"] > 0
    assert opencl_report["copy_bytes_per_s"] > 0


def test_opencl_runs_an_attention_free_model(opencl_report: dict[str, Any]) -> None:
    assert max(opencl_report["mlp_errors"]) < MAX_NORMALISED_ERROR
    details = opencl_report["mlp"]
    assert details["precision"] == "fp32"
    assert details["compile_s"] > 0
    assert int(details["kernel_launches"]) > 0
    assert details["compute_units"] == str(THREADS)


def test_opencl_names_the_op_it_lacks(opencl_report: dict[str, Any]) -> None:
    assert opencl_report["conv"] == "opencl: no kernel for aten.convolution"
    assert opencl_report["bert"].startswith("opencl: no kernel for aten.")


def test_opencl_and_jax_xla_availability() -> None:
    for stack in (JaxXla(), OpenCl()):
        assert stack.unavailable_reason("cpu") is None
        assert stack.unavailable_reason("tpu") is not None
        assert stack.versions()["torch"] == torch.__version__
        assert set(stack.layers) == {"framework", "compiler", "platform"}
    cuda_reason = JaxXla().unavailable_reason("cuda:0")  # hinges on jax's CUDA plugin, not on a GPU
    if any(importlib.util.find_spec(name) for name in _CUDA_PLUGINS):
        assert cuda_reason is None
    else:
        assert "jax has no CUDA plugin" in (cuda_reason or "")


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seed_stacks_are_unavailable_with_a_reason(name: str, ctx: CellContext) -> None:
    stack = SEEDS[name]
    reason = stack.unavailable_reason("cpu")
    assert reason
    assert set(stack.layers) == {"framework", "compiler", "platform"}
    with pytest.raises(Unavailable, match=f"^{name}: "):
        stack.prepare(torch.nn.Identity(), _cumsum_case()[1], ctx)


def test_nvfuser_says_why_it_cannot_run() -> None:
    if torch.cuda.is_available():  # holds on both: the reason names what this machine lacks
        assert "run it on a cuda device" in (NvFuser().unavailable_reason("cpu") or "")
        reason = NvFuser().unavailable_reason("cuda:0")
        assert reason is None if importlib.util.find_spec("nvfuser") else "nvfuser" in (reason or "")
        return
    assert "no CUDA device" in (NvFuser().unavailable_reason("cpu") or "")
    assert "no CUDA device" in (NvFuser().unavailable_reason("cuda:0") or "")


def test_list_stacks_shows_the_new_stacks(listed_stacks: dict[str, dict[str, Any]]) -> None:
    rows = listed_stacks  # accelbench list stacks --json (conftest)
    assert rows["jax-xla"]["available"] and rows["opencl"]["available"]
    for name in SEEDS:
        assert not rows[name]["available"] and rows[name]["reason"]
        assert rows[name]["layers"]["compiler"]


@pytest.fixture(scope="module")
def runner_results(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Result]:
    """Tiny bert-base and resnet50 through jax-xla and opencl: one quick single-stream run."""
    config = RunConfig(
        suite="test",
        workloads=("bert-base", "resnet50"),
        stacks=("jax-xla", "opencl"),
        scenarios=("single-stream",),
        size="tiny",
        rules="quick",
        samples=8,
        timeout_s=300.0,
    )
    machine = detect_machine()
    with open_store(tmp_path_factory.mktemp("jax_opencl") / "store") as store:
        run_id = runner.start_run(store, config, machine)
        runner.execute(store, run_id, config, machine)
        return {(result.cell.workload, result.cell.stack): result for result in store.results(run_id)}


@pytest.mark.parametrize("workload", ["bert-base", "resnet50"])
def test_runner_jax_xla_cell_is_ok(workload: str, runner_results: dict[tuple[str, str], Result]) -> None:
    result = runner_results[(workload, "jax-xla")]
    assert result_ok(result), (result.head.status, result.head.reason, result.stderr_tail)
    assert result.head.effective_precision == "fp32"
    assert result.head.compile_s > 0
    assert result.latency is not None and result.latency.p50_s > 0
    assert result.head.quality is not None and result.head.quality.passed
    assert result.head.settings["stack"]["jax_imported_before"] == "False"


def test_runner_opencl_conv_cell_is_unsupported(runner_results: dict[tuple[str, str], Result]) -> None:
    result = runner_results[("resnet50", "opencl")]
    assert result.head.status == "unsupported"
    assert result.head.reason == "opencl: no kernel for aten.convolution"
