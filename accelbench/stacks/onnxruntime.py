"""The ``onnxruntime`` stack: the module exported to ONNX (dynamo exporter), run by ONNX Runtime.

CPU uses the CPU execution provider (MLAS kernels). CUDA uses the CUDA execution provider with TF32
switched off, preceded by TensorRT when this onnxruntime build has it. ONNX Runtime quietly falls back
to the CPU when a GPU provider fails to load, so the providers the session really got are checked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from accelbench.errors import Unavailable, Unsupported
from accelbench.stacks._torch_device import (
    first_line,
    gpu_default_batch,
    precision_of,
    split_device,
)
from accelbench.stacks.base import CellContext, ModelSpec, Session
from accelbench.stacks.onnx_export import OnnxFileStack, export_onnx
from accelbench.workloads.base import Inputs

if TYPE_CHECKING:
    import torch

_INSTALL = "accelbench[onnxruntime]"
_QUIET_LOG_LEVEL = 3
"""ORT's C++ log: 3 = errors only (it warns about harmless graph rewrites otherwise)."""


def providers_for(device: str, available: list[str]) -> list[Any]:
    """The execution providers (with options) to ask for on ``device``, best first."""
    kind, index = split_device(device)
    if kind == "cpu":
        return ["CPUExecutionProvider"]
    device_id = str(index or 0)
    wanted: list[Any] = []
    if "TensorrtExecutionProvider" in available:
        wanted.append(("TensorrtExecutionProvider", {"device_id": device_id}))
    wanted.append(("CUDAExecutionProvider", {"device_id": device_id, "use_tf32": "0"}))
    return [*wanted, "CPUExecutionProvider"]


class OnnxRuntime(OnnxFileStack):
    """ONNX Runtime on the ONNX file exported once per run; compile time = export + session creation."""

    install: ClassVar[str] = _INSTALL
    modules: ClassVar[tuple[str, ...]] = ("onnxruntime",)
    distributions: ClassVar[tuple[str, ...]] = ("onnxruntime",)
    name: ClassVar[str] = "onnxruntime"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "ONNX (from PyTorch)",
        "compiler": "ONNX Runtime graph optimizer",
        "platform": "CPU EP (MLAS); CUDA/TensorRT EP",
    }
    devices: ClassVar[tuple[str, ...]] = ("cpu", "cuda")

    def unavailable_reason(self, device: str) -> str | None:
        """None when the libraries import and, for CUDA, this onnxruntime has the CUDA provider."""
        reason = super().unavailable_reason(device)
        if reason is not None or split_device(device)[0] != "cuda":
            return reason
        import onnxruntime as ort

        if "CUDAExecutionProvider" not in ort.get_available_providers():
            return "no CUDAExecutionProvider in this onnxruntime (pip install onnxruntime-gpu)"
        return None

    def default_batch(self, device: str) -> int:
        """1 on CPU: samples/s hardly moved with the batch (``BATCH_MEASURED``); 32 on CUDA (not measured)."""
        return gpu_default_batch(device)

    def prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """Export (or reuse) the ONNX file and open an InferenceSession on it."""
        import onnxruntime as ort

        path, export_s = export_onnx(model, spec, ctx.cache_dir)
        wanted = providers_for(ctx.device, ort.get_available_providers())
        start_s = time.perf_counter()
        try:
            session = ort.InferenceSession(str(path), _session_options(ctx.threads), providers=wanted)
        except Exception as exc:
            raise Unsupported(f"onnxruntime session failed: {first_line(exc)}") from exc
        session_s = time.perf_counter() - start_s
        got = session.get_providers()
        _check_providers(ctx.device, got)
        details = {
            "threads": str(ctx.threads),
            "providers": ",".join(got),
            "onnx_file": path.name,
            "export_s": f"{export_s:.6f}",
            "session_s": f"{session_s:.6f}",
        }
        precision = "tf32" if got[0] == "TensorrtExecutionProvider" else precision_of(model)
        return Session(_make_infer(session, spec), precision, export_s + session_s, details)


def _session_options(threads: int) -> Any:
    """SessionOptions: ``threads`` intra-op, one inter-op, all graph optimisations, sequential."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = _QUIET_LOG_LEVEL
    return options


def _check_providers(device: str, got: list[str]) -> None:
    """Raise Unavailable when the session lacks the device's provider (ORT's silent CPU fallback)."""
    required = "CUDAExecutionProvider" if split_device(device)[0] == "cuda" else "CPUExecutionProvider"
    if required not in got:
        raise Unavailable(f"onnxruntime could not load {required} (got {', '.join(got)})")


def _make_infer(session: Any, spec: ModelSpec) -> Callable[[Inputs], np.ndarray]:
    """``infer`` feeding the inputs by name; inputs the exporter pruned (unused) are left out."""
    graph_inputs = {one.name for one in session.get_inputs()}
    kept = [(position, name) for position, name in enumerate(spec.input_names) if name in graph_inputs]
    output_names = [session.get_outputs()[0].name]

    def infer(inputs: Inputs) -> np.ndarray:
        feed = {name: inputs[position] for position, name in kept}
        return session.run(output_names, feed)[0]

    return infer
