"""The ``jax-xla`` stack: the workload's PyTorch module (same weights) run as a JAX function compiled by XLA.

There is no maintained PyTorch-to-JAX bridge for this torch (torchax 0.0.13 fails to import beside torch
2.13), so the lowering is ours and small: ``torch.export`` decomposes the module to Core ATen
(``accelbench.stacks._export_graph``), each ATen op is replaced by its ``jax.numpy``/``jax.lax``
implementation (``accelbench.stacks._jax_ops``), and the resulting function of ``(weights, inputs)`` is
``jax.jit``-lowered and compiled ahead of time. The weights are jit *arguments*, not constants folded into
the program, so XLA cannot specialise on them. An op without a JAX implementation makes the cell
``unsupported`` with the op named.

Threads: XLA:CPU sizes its thread pool when JAX's CPU backend starts, from the CPUs the process may run
on; ``XLA_FLAGS`` (``--xla_cpu_multi_thread_eigen``, ``intra_op_parallelism_threads``) no longer limit it
in jaxlib 0.10 (measured: 1.9 CPUs busy with the 1-thread flags on 2 cores). So ``prepare`` sets the flags,
then starts the backend while the process is pinned to ``threads`` CPUs and restores the affinity: the
pool's threads keep the narrow mask (measured: 1.0 CPU busy). Both are recorded; ``jax_imported_before``
says the backend may have started earlier in this process (a test session), where neither applies. The
cell process imports jax nowhere else.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Callable, Mapping
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from accelbench.errors import Unavailable, Unsupported
from accelbench.stacks._export_graph import GraphPlan, Step, evaluate, export_plan, first_missing_op
from accelbench.stacks._torch_device import (
    device_kind_reason,
    first_line,
    gpu_default_batch,
    precision_of,
    split_device,
)
from accelbench.stacks.base import CellContext, ModelSpec, Session, Stack
from accelbench.workloads.base import Inputs

if TYPE_CHECKING:
    import torch

_INSTALL = "accelbench[jax]"
_CUDA_PLUGINS = ("jax_cuda13_plugin", "jax_cuda12_plugin")


def xla_cpu_flags(threads: int) -> str:
    """The XLA:CPU flags for ``threads`` threads: Eigen's thread pool on or off, and its size."""
    multi = "true" if threads > 1 else "false"
    return f"--xla_cpu_multi_thread_eigen={multi} intra_op_parallelism_threads={threads}"


def set_xla_flags(threads: int) -> str:
    """Add ``xla_cpu_flags(threads)`` to ``XLA_FLAGS`` (keeping what the user set); return the value."""
    ours = xla_cpu_flags(threads)
    current = os.environ.get("XLA_FLAGS", "")
    if ours not in current:
        os.environ["XLA_FLAGS"] = f"{current} {ours}".strip()
    return os.environ["XLA_FLAGS"]


def start_jax_cpu(threads: int) -> str:
    """Import jax and start its backends while this process may use only its first ``threads`` CPUs.

    The affinity is restored afterwards: only the threads XLA created meanwhile keep the narrow mask.
    Returns those CPUs, or ``"unpinned"`` where the OS has no CPU affinity (XLA then uses every core).
    """
    if not hasattr(os, "sched_getaffinity"):
        import jax

        jax.devices()
        return "unpinned"
    allowed = os.sched_getaffinity(0)
    pinned = set(sorted(allowed)[:threads])
    os.sched_setaffinity(0, pinned)
    try:
        import jax

        jax.devices()
    finally:
        os.sched_setaffinity(0, allowed)
    return ",".join(str(cpu) for cpu in sorted(pinned))


class JaxXla(Stack):
    """torch.export -> Core ATen -> jax.numpy/lax -> ``jax.jit(...).lower(...).compile()`` (XLA)."""

    name: ClassVar[str] = "jax-xla"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "JAX (PyTorch module lowered via torch.export + Core ATen)",
        "compiler": "XLA (jax.jit, ahead-of-time lower + compile)",
        "platform": "CPU: XLA:CPU (LLVM + Eigen); CUDA: XLA:GPU (jax CUDA plugin)",
    }
    devices: ClassVar[tuple[str, ...]] = ("cpu", "cuda")

    def unavailable_reason(self, device: str) -> str | None:
        """Why not: bad device, jax/jaxlib/torch not installed, or no CUDA plugin for ``cuda`` devices.

        jax is looked up, not imported: importing it here would fix the XLA flags before ``prepare``.
        """
        reason = device_kind_reason(device, self.devices)
        missing = [name for name in ("jax", "jaxlib", "torch") if importlib.util.find_spec(name) is None]
        if reason is None and missing:
            reason = f"{', '.join(missing)} not installed (pip install {_INSTALL})"
        cuda = reason is None and split_device(device)[0] == "cuda"
        if cuda and not any(importlib.util.find_spec(name) for name in _CUDA_PLUGINS):
            reason = "jax has no CUDA plugin here (pip install jax[cuda12] on a CUDA machine)"
        return reason

    def default_batch(self, device: str) -> int:
        """1 on CPU (not measured); 32 on CUDA (not measured here)."""
        return gpu_default_batch(device)

    def versions(self) -> dict[str, str]:
        """Versions of jax, jaxlib and torch (the exporter)."""
        return {name: version(name) for name in ("jax", "jaxlib", "torch")}

    def prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """Export, lower every ATen op to JAX, then jit-lower and XLA-compile for the example's shapes."""
        jax_imported_before = "jax" in sys.modules
        flags = set_xla_flags(ctx.threads)
        cpus = start_jax_cpu(ctx.threads)
        plan, export_s = export_plan(model, spec, self.name)
        from accelbench.stacks._jax_ops import JAX_OPS

        missing = first_missing_op(plan, JAX_OPS)
        if missing is not None:
            raise Unsupported(f"jax-xla: no lowering for {missing}")
        device = _jax_device(ctx.device)
        weights = tuple(_put(array, device) for array in plan.weights)
        compiled, lower_s, compile_s = _compile(_forward(plan, JAX_OPS), weights, spec.example, device)
        details = {
            "threads": str(ctx.threads),
            "xla_flags": flags,
            "xla_cpus": cpus,
            "jax_imported_before": str(jax_imported_before),
            "jax_device": str(device),
            "aten_ops": str(len(plan.op_keys())),
            "export_s": f"{export_s:.6f}",
            "lower_s": f"{lower_s:.6f}",
            "xla_compile_s": f"{compile_s:.6f}",
            "int64": "computed as int32 (jax_enable_x64 off)",
        }
        infer = _make_infer(compiled, weights, device)
        return Session(infer, precision_of(model), export_s + lower_s + compile_s, details)


def _jax_device(device: str) -> Any:
    """The JAX device for an accelbench device string; Unavailable when JAX has no such device."""
    import jax

    kind, index = split_device(device)
    try:
        return jax.devices("cuda" if kind == "cuda" else "cpu")[index or 0]
    except (RuntimeError, IndexError) as exc:
        raise Unavailable(f"jax has no {device} device: {first_line(exc)}") from exc


def _put(array: np.ndarray, device: Any) -> Any:
    """``array`` on ``device`` in the dtype JAX computes it in (int64 -> int32 without x64)."""
    import jax

    return jax.device_put(array.astype(jax.dtypes.canonicalize_dtype(array.dtype), copy=False), device)


def _forward(plan: GraphPlan, table: Mapping[str, Callable[..., Any]]) -> Callable[..., Any]:
    """The JAX function ``(weights, inputs) -> output`` that walks ``plan`` with ``table``."""

    def call(step: Step, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            return table[step.key](*args, **kwargs)
        except Unsupported:
            raise
        except Exception as exc:
            raise Unsupported(f"jax-xla: lowering {step.target} failed: {first_line(exc)}") from exc

    def forward(weights: tuple[Any, ...], inputs: tuple[Any, ...]) -> Any:
        return evaluate(plan, plan.bind(weights, inputs), call)

    return forward


def _compile(
    forward: Callable[..., Any], weights: tuple[Any, ...], example: Inputs, device: Any
) -> tuple[Any, float, float]:
    """``jax.jit(forward)`` lowered (traced) and compiled for the example; both durations in seconds."""
    import jax

    inputs = tuple(_put(array, device) for array in example)
    start_s = time.perf_counter()
    lowered = jax.jit(forward).lower(weights, inputs)
    lower_s = time.perf_counter() - start_s
    start_s = time.perf_counter()
    try:
        compiled = lowered.compile()
    except Exception as exc:
        raise Unsupported(f"jax-xla: XLA compile failed: {first_line(exc)}") from exc
    return compiled, lower_s, time.perf_counter() - start_s


def _make_infer(compiled: Any, weights: tuple[Any, ...], device: Any) -> Callable[[Inputs], np.ndarray]:
    """``infer``: inputs to the device, run the compiled program, wait for it, output back to numpy."""

    def infer(inputs: Inputs) -> np.ndarray:
        output = compiled(weights, tuple(_put(array, device) for array in inputs))
        return np.asarray(output.block_until_ready())

    return infer
