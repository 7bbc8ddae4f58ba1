"""The ``openvino`` and ``openvino-bf16`` stacks: the shared ONNX file compiled by OpenVINO's CPU plugin.

OpenVINO's CPU plugin silently runs bf16 on CPUs with AVX512_BF16 or AMX unless told otherwise (2x
faster, ~1e-3 relative error), so the precision is always explicit: ``openvino`` sets the
``INFERENCE_PRECISION_HINT`` to f32, ``openvino-bf16`` to bf16 and is unavailable on CPUs whose plugin
lists no BF16 capability. The hint is read back from the compiled model and reported as the effective
precision, so the quality gate judges what really ran.

Telemetry is off: ``import openvino`` imports the ``ovc`` converter, which sends an "import" event and
writes a client id under ``$HOME/intel`` through the ``openvino_telemetry`` package. Before the first
import of openvino, that package is blocked in ``sys.modules``, so ``ovc`` falls back to the no-op stub it
ships for installs without telemetry. The model is read with ``Core.read_model`` (the runtime's own ONNX
frontend), not ``openvino.convert_model``. Threads are ``INFERENCE_NUM_THREADS`` = ``ctx.threads``, with
the ``LATENCY`` performance hint (one stream; the batch is the static batch of the ONNX file).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from accelbench.errors import Unsupported
from accelbench.stacks._torch_device import first_line
from accelbench.stacks.base import CellContext, ModelSpec, Session
from accelbench.stacks.onnx_export import OnnxFileStack, export_onnx
from accelbench.workloads.base import Inputs

if TYPE_CHECKING:
    import torch

_PRECISION_NAMES = {"f32": "fp32", "bf16": "bf16", "f16": "fp16", "f64": "fp64"}
"""OpenVINO element type names -> accelbench precision names."""
_OP_MARKERS = ("not support", "unsupported", "no conversion rule", "cannot create")
"""Lowercase fragments of the message line that names the failing operation."""
TELEMETRY_PACKAGE = "openvino_telemetry"


def block_telemetry() -> None:
    """Make ``openvino_telemetry`` unimportable unless something imported it already (then too late)."""
    sys.modules.setdefault(TELEMETRY_PACKAGE, None)  # type: ignore[arg-type]


class _OpenVinoStack(OnnxFileStack):
    """OpenVINO CPU at the inference precision ``precision_hint``; subclasses only name it."""

    install: ClassVar[str] = "accelbench[openvino]"
    modules: ClassVar[tuple[str, ...]] = ("openvino",)
    precision_hint: ClassVar[str]
    """OpenVINO's name of the precision asked for: ``f32`` or ``bf16``."""
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "ONNX (from PyTorch)",
        "compiler": "OpenVINO (graph transformations, oneDNN JIT kernels)",
        "platform": "CPU plugin",
    }

    def unavailable_reason(self, device: str) -> str | None:
        """None when the libraries import (and, for bf16, the CPU plugin lists BF16), else why not."""
        block_telemetry()
        reason = super().unavailable_reason(device)
        if reason is not None or self.precision_hint != "bf16":
            return reason
        return _bf16_reason()

    def own_versions(self) -> dict[str, str]:
        """OpenVINO's own build string (``openvino.get_version()``)."""
        block_telemetry()
        import openvino

        return {"openvino": openvino.get_version()}

    def prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """Export (or reuse) the ONNX file, read it, compile it for CPU; compile time includes all three."""
        block_telemetry()
        import openvino as ov

        path, export_s = export_onnx(model, spec, ctx.cache_dir)
        core = ov.Core()
        start_s = time.perf_counter()
        try:
            read = core.read_model(str(path))
            read_s = time.perf_counter() - start_s
            compiled = core.compile_model(read, "CPU", self.compile_config(ctx.threads))
        except Exception as exc:
            raise Unsupported(f"{self.name}: {_failure_line(exc)}") from exc
        compile_model_s = time.perf_counter() - start_s - read_s
        details = {
            "threads": str(compiled.get_property("INFERENCE_NUM_THREADS")),
            "precision_hint_asked": self.precision_hint,
            "precision_hint_effective": _type_name(compiled.get_property("INFERENCE_PRECISION_HINT")),
            "performance_hint": str(compiled.get_property("PERFORMANCE_HINT")),
            "streams": str(compiled.get_property("NUM_STREAMS")),
            "telemetry": "off" if sys.modules.get(TELEMETRY_PACKAGE) is None else "on (imported before)",
            "onnx_file": path.name,
            "export_s": f"{export_s:.6f}",
            "read_s": f"{read_s:.6f}",
            "compile_model_s": f"{compile_model_s:.6f}",
        }
        effective = details["precision_hint_effective"]
        precision = _PRECISION_NAMES.get(effective, effective)
        return Session(_make_infer(compiled, spec), precision, export_s + read_s + compile_model_s, details)

    def compile_config(self, threads: int) -> dict[str, Any]:
        """The CPU plugin properties: explicit precision, ``threads`` threads, latency (one stream)."""
        return {
            "INFERENCE_PRECISION_HINT": self.precision_hint,
            "INFERENCE_NUM_THREADS": threads,
            "PERFORMANCE_HINT": "LATENCY",
        }


class OpenVino(_OpenVinoStack):
    """OpenVINO CPU in fp32: the precision hint is set to f32 (the default would be bf16 on BF16 CPUs)."""

    name: ClassVar[str] = "openvino"
    precision_hint: ClassVar[str] = "f32"


class OpenVinoBf16(_OpenVinoStack):
    """OpenVINO CPU with the bf16 precision hint; reported as ``bf16`` and gated at the bf16 threshold."""

    name: ClassVar[str] = "openvino-bf16"
    precision_hint: ClassVar[str] = "bf16"


def _bf16_reason() -> str | None:
    """None when OpenVINO's CPU plugin lists BF16 among its capabilities, else a one-line reason."""
    import openvino as ov

    capabilities = [str(one) for one in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")]
    if "BF16" in capabilities:
        return None
    return f"this CPU has no bf16 support (OpenVINO CPU capabilities: {', '.join(capabilities)})"


def _type_name(value: Any) -> str:
    """OpenVINO's short name of an element type property (``f32``, ``bf16``), whatever form it comes in."""
    to_string = getattr(value, "to_string", None)
    return str(to_string()) if callable(to_string) else str(value)


def _failure_line(exc: BaseException) -> str:
    """The line of OpenVINO's (often multi-line) error that names the operation, else the first line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    naming = [line for line in lines if any(marker in line.lower() for marker in _OP_MARKERS)]
    return naming[0].lstrip("- ") if naming else first_line(exc)


def _make_infer(compiled: Any, spec: ModelSpec) -> Callable[[Inputs], np.ndarray]:
    """``infer`` feeding the inputs by name (inputs the exporter pruned are left out), output copied."""
    graph_inputs = {name for port in compiled.inputs for name in port.get_names()}
    kept = [(position, name) for position, name in enumerate(spec.input_names) if name in graph_inputs]
    output = compiled.output(0)
    request = compiled.create_infer_request()

    def infer(inputs: Inputs) -> np.ndarray:
        # share_outputs=False: the returned array is a copy, not a view the next call overwrites
        results = request.infer({name: inputs[position] for position, name in kept}, share_outputs=False)
        return np.asarray(results[output])

    return infer
