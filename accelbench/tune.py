"""``accelbench tune MODEL``: bring your own model, find the fastest stack that runs it correctly.

MODEL is an ONNX file or ``module:function`` returning ``(torch module, example inputs tuple)``. The model
becomes a workload like any other and every chosen stack measures it through the ordinary path: a
planned cell per stack, run by ``runner`` in its own process (isolation, LoadGen scenario, quality
gate), one result per stack in the store. The ranking lists the verified stacks by throughput; the
speedup of the best one is over the reference stack: ``torch-eager`` for torch models, ``onnxruntime``
(CPU execution provider) for ONNX files.

How the model reaches the cell process: its description (kind, location, import root) is carried in
the workload reference itself, ``accelbench.tune:model_<base64 JSON>``; this module's ``__getattr__``
turns such a name back into a workload factory, so the cell imports exactly what was planned.

ONNX files are read with ``onnx.load`` and verified with ``onnx.checker`` (never unpickled). The stacks
that consume ONNX (``ONNX_STACKS``) get the user's file itself: it is placed where
``onnx_export.onnx_path`` looks for the cell's export, so nothing is re-exported. The quality reference
of an ONNX file is ``onnx.reference.ReferenceEvaluator`` (the ONNX specification's own semantics, in
numpy). Stacks that run torch modules would need an ONNX -> torch converter (onnx2torch needs
torchvision, which is not installed beside this torch): they are recorded ``unsupported`` with that
reason. Samples: sample 0 is the model's example (torch) or a seeded draw (ONNX); the others are seeded
draws of the same shape and dtype (floats from the example's mean and spread, integers within its range;
ONNX integers in ``[0, ONNX_INT_HIGH)``, symbolic dimensions set to 1).
"""

from __future__ import annotations

import base64
import functools
import importlib
import json
import logging
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from accelbench import registry, runner
from accelbench.config import RunConfig
from accelbench.errors import UserError
from accelbench.hardware.detect import Machine
from accelbench.results import Cell, Result
from accelbench.stacks.base import ModelSpec
from accelbench.stacks.onnx_export import onnx_path
from accelbench.store import Store
from accelbench.workloads.base import Inputs, Variant, Workload

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

ONNX_STACKS = frozenset({"onnxruntime", "openvino", "openvino-bf16", "iree", "tvm", "tvm-tuned"})
"""Stacks that consume the model as an ONNX file (through ``onnx_export``)."""
REFERENCE_STACK = {"torch": "torch-eager", "onnx": "onnxruntime"}
"""The stack the best one's speedup is measured against, per model kind."""
ONNX_INT_HIGH = 2
"""Integer inputs of an ONNX file are drawn from ``[0, ONNX_INT_HIGH)`` (their valid range is unknown)."""
SIZE = "standard"
SAMPLES = 32
_REF_PREFIX = "model_"
_NO_CONVERTER = (
    "runs torch modules; an ONNX file would need an ONNX->torch converter (onnx2torch needs torchvision, "
    "which is not installed beside this torch)"
)


@dataclass(frozen=True, slots=True)
class ModelSource:
    """A user's model: ``kind`` ``onnx`` (``location``: absolute path) or ``torch`` (``module:function``)."""

    kind: str
    location: str
    name: str
    """The workload name its results are stored under (``tune-<stem>``)."""
    import_root: str = ""
    """Folder put on ``sys.path`` before importing a ``module:function`` (the directory tune ran in)."""


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


def parse_model(text: str) -> ModelSource:
    """The source named by ``text``, checked in this process: a bad file or function is a UserError."""
    path = Path(text)
    if path.suffix == ".onnx" or path.is_file():
        check_onnx(path)
        return ModelSource("onnx", str(path.resolve()), f"tune-{_slug(path.stem)}")
    if ":" not in text:
        raise UserError(f"model {text!r} is neither an ONNX file nor module:function")
    source = ModelSource("torch", text, f"tune-{_slug(text.rpartition(':')[2])}", os.getcwd())
    load_torch_model(source, seed=0)
    return source


def check_onnx(path: Path) -> Any:
    """The ``onnx.ModelProto`` at ``path`` after ``onnx.checker``; unreadable or invalid is a UserError."""
    import onnx

    if not path.is_file():
        raise UserError(f"ONNX file {path} does not exist")
    try:
        model = onnx.load(str(path))
        onnx.checker.check_model(model, full_check=True)
    except Exception as err:
        raise UserError(f"{path} is not a valid ONNX model: {_first_line(err)}") from None
    if not _graph_inputs(model) or not model.graph.output:
        raise UserError(f"{path}: the ONNX graph needs at least one input and one output")
    return model


def load_torch_model(source: ModelSource, seed: int) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """Call ``module:function`` (torch seeded by ``seed``) and check it returns (module, tensors)."""
    import torch

    function = _import_function(source)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        try:
            returned = function()
        except Exception as err:
            raise UserError(f"{source.location} raised {type(err).__name__}: {_first_line(err)}") from None
    if not (isinstance(returned, tuple) and len(returned) == 2 and isinstance(returned[0], torch.nn.Module)):
        raise UserError(f"{source.location} must return (torch.nn.Module, tuple of example tensors)")
    module, example = returned
    if not (
        isinstance(example, tuple | list) and example and all(isinstance(t, torch.Tensor) for t in example)
    ):
        raise UserError(f"{source.location}: the example inputs must be a non-empty tuple of tensors")
    return module.eval(), tuple(t.detach().cpu() for t in example)


def _import_function(source: ModelSource) -> Callable[[], Any]:
    module_name, _, attribute = source.location.partition(":")
    if source.import_root and source.import_root not in sys.path:
        sys.path.insert(0, source.import_root)
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except Exception as err:
        raise UserError(
            f"cannot import {source.location}: {type(err).__name__}: {_first_line(err)}"
        ) from None
    if not callable(function):
        raise UserError(f"{source.location} is not a function")
    return function


class TorchFunctionModel(Workload):
    """A user's ``module:function`` as a workload; outputs compared by cosine."""

    name = "tune-torch"
    task = "user-model"
    quality_metric = "cosine"

    def __init__(self, source: ModelSource) -> None:
        self.source = source

    @functools.cache  # noqa: B019 -- one instance per cell process
    def _loaded(self, seed: int) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
        return load_torch_model(self.source, seed)

    def input_names(self) -> tuple[str, ...]:
        """``input0``, ``input1``, ... one per example tensor."""
        return tuple(f"input{i}" for i in range(len(self._loaded(0)[1])))

    def build_model(self, size: str, seed: int, variant: Variant | None = None) -> torch.nn.Module:
        """The module the function returns (a fresh call per cell process, torch seeded by ``seed``)."""
        return self._loaded(seed)[0]

    def make_sample(self, size: str, seed: int, index: int, variant: Variant | None = None) -> Inputs:
        """Sample 0 is the example; others are seeded draws like it (see the module docstring)."""
        example = tuple(t.numpy() for t in self._loaded(seed)[1])
        if index == 0:
            return example
        rng = np.random.default_rng([0x7E, seed, index])
        return tuple(_like(rng, array) for array in example)


def _like(rng: np.random.Generator, array: np.ndarray) -> np.ndarray:
    """A random array of ``array``'s shape and dtype, in its range (floats: its mean and spread)."""
    if array.dtype == np.bool_:
        return rng.random(array.shape) < max(float(array.mean()), 0.5)
    if np.issubdtype(array.dtype, np.integer):
        return rng.integers(int(array.min()), int(array.max()) + 1, size=array.shape).astype(array.dtype)
    spread = float(array.std()) or 1.0
    return (rng.standard_normal(array.shape) * spread + float(array.mean())).astype(array.dtype)


class OnnxReference:
    """Builds the torch module whose forward evaluates the ONNX file with ``onnx.reference``."""

    @staticmethod
    def module(model_bytes: bytes) -> torch.nn.Module:
        """An ``nn.Module`` computing the first output of the ONNX model (numpy reference evaluator)."""
        import torch

        class _Reference(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model_bytes = model_bytes
                self._evaluator: Any = None

            def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
                from onnx.reference import ReferenceEvaluator

                if self._evaluator is None:
                    self._evaluator = ReferenceEvaluator(self.model_bytes)
                names = self._evaluator.input_names
                feeds = {name: t.numpy() for name, t in zip(names, tensors, strict=True)}
                return torch.from_numpy(np.ascontiguousarray(self._evaluator.run(None, feeds)[0]))

        return _Reference().eval()


class OnnxFileModel(Workload):
    """A user's ONNX file as a workload; the quality reference is ``onnx.reference.ReferenceEvaluator``."""

    name = "tune-onnx"
    task = "user-model"
    quality_metric = "cosine"

    def __init__(self, source: ModelSource) -> None:
        self.source = source

    @functools.cached_property
    def _proto(self) -> Any:
        return check_onnx(Path(self.source.location))

    def input_names(self) -> tuple[str, ...]:
        """The graph inputs that are not initializers, in graph order."""
        return tuple(one.name for one in _graph_inputs(self._proto))

    def build_model(self, size: str, seed: int, variant: Variant | None = None) -> torch.nn.Module:
        """The reference module (weights are in the file; ``seed`` only draws the samples)."""
        return OnnxReference.module(self._proto.SerializeToString())

    def make_sample(self, size: str, seed: int, index: int, variant: Variant | None = None) -> Inputs:
        """Seeded inputs of the declared shapes and dtypes (see the module docstring)."""
        rng = np.random.default_rng([0x7F, seed, index])
        return tuple(_onnx_input(rng, one) for one in _graph_inputs(self._proto))


def _graph_inputs(model: Any) -> list[Any]:
    initializers = {one.name for one in model.graph.initializer}
    return [one for one in model.graph.input if one.name not in initializers]


def _onnx_input(rng: np.random.Generator, value_info: Any) -> np.ndarray:
    """A random array for one ONNX graph input (symbolic dimensions are 1)."""
    from onnx import helper

    tensor = value_info.type.tensor_type
    shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in tensor.shape.dim)
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, ONNX_INT_HIGH, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def workload_reference(source: ModelSource) -> str:
    """The ``module:attribute`` reference the cell process imports to build ``source``'s workload."""
    payload = base64.urlsafe_b64encode(json.dumps(asdict(source)).encode()).decode().rstrip("=")
    return f"{__name__}:{_REF_PREFIX}{payload}"


def __getattr__(name: str) -> Any:
    """``model_<payload>``: a factory of the workload ``workload_reference`` described."""
    if not name.startswith(_REF_PREFIX):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    payload = name.removeprefix(_REF_PREFIX)
    source = ModelSource(**json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))
    kind = TorchFunctionModel if source.kind == "torch" else OnnxFileModel
    return functools.partial(kind, source)


def default_stacks() -> tuple[str, ...]:
    """Every registered stack except ``null`` (unavailable ones are recorded as such)."""
    return tuple(name for name in registry.table("stack") if name != "null")


def tune(
    store: Store,
    source: ModelSource,
    config: RunConfig,
    machine: Machine,
    on_result: Callable[[Result], None] = lambda result: None,
) -> Ranking:
    """Measure ``source`` on every stack of ``config`` (one cell each) and rank the verified ones."""
    stacks = registry.resolve("stack", config.stacks)
    run_id = runner.start_run(store, config, machine)
    if source.kind == "onnx":
        _place_onnx(store, run_id, source, config)
    reference = workload_reference(source)
    store.set_run_status(run_id, "running")
    for stack, stack_ref in stacks.items():
        cell = Cell(source.name, stack, config.scenarios[0], config.devices[0], config.size)
        if source.kind == "onnx" and stack not in ONNX_STACKS:
            result = _unsupported(run_id, cell, machine, f"{stack} {_NO_CONVERTER}")
        else:
            planned = runner.PlannedCell(cell, reference, stack_ref)
            result = runner.run_planned(store, run_id, config, machine, planned)
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


def _place_onnx(store: Store, run_id: str, source: ModelSource, config: RunConfig) -> None:
    """Copy the user's file to where the ONNX stacks look for the cell's export (no re-export)."""
    spec = ModelSpec(source.name, config.size, config.seed, "canonical", (), ())
    target = onnx_path(spec, store.run_dir(run_id).resolve() / "cache")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source.location, target)


def _unsupported(run_id: str, cell: Cell, machine: Machine, reason: str) -> Result:
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    return Result(
        run_id, cell, "unsupported", reason, machine_fingerprint=machine.fingerprint, started_at=started_at
    )


def rank(run_id: str, source: ModelSource, results: Sequence[Result]) -> Ranking:
    """Verified results by throughput (best first), then the others; the best one's speedup."""
    verified = sorted((r for r in results if r.status == "ok" and r.qps), key=lambda r: -(r.qps or 0.0))
    others = [r for r in results if r not in verified]
    reference_stack = REFERENCE_STACK[source.kind]
    reference = next((r for r in verified if r.cell.stack == reference_stack), None)
    best = verified[0] if verified else None
    speedup = best.qps / reference.qps if best and reference and best.qps and reference.qps else None
    return Ranking(run_id, source, reference_stack, (*verified, *others), best, speedup)


def ranking_document(ranking: Ranking) -> dict[str, Any]:
    """The JSON form of a ranking (``accelbench tune --json``)."""
    reference = next((r for r in ranking.results if r.cell.stack == ranking.reference_stack), None)
    reference_qps = reference.qps if reference is not None and reference.status == "ok" else None
    return {
        "run_id": ranking.run_id,
        "model": asdict(ranking.source),
        "reference_stack": ranking.reference_stack,
        "best_stack": ranking.best.cell.stack if ranking.best else None,
        "speedup_vs_reference": ranking.speedup,
        "ranking": [_row(r, reference_qps) for r in ranking.results],
    }


def _row(result: Result, reference_qps: float | None) -> dict[str, Any]:
    verified = result.status == "ok"
    qps = result.qps if verified else None
    return {
        "stack": result.cell.stack,
        "status": result.status,
        "verified": verified,
        "reason": result.reason,
        "qps": qps,
        "p50_s": result.latency.p50_s if verified and result.latency else None,
        "speed_vs_reference": qps / reference_qps if qps and reference_qps else None,
        "quality": asdict(result.quality) if result.quality else None,
        "effective_precision": result.effective_precision,
    }


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text)[:60] or "model"


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0][:300] if text else type(err).__name__
