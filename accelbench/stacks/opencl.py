"""The ``opencl`` stack and OpenCL probes: pyopencl on a CPU OpenCL driver, or a vendor driver on GPUs.

This is not a compiler for arbitrary models. It runs a workload when its exported Core ATen graph
(``accelbench.stacks._export_graph``) uses only ops of a small hand-written kernel set (``_opencl_ops``:
matmul/addmm, add/sub/mul/div, relu/gelu/tanh, layer_norm, softmax, embedding, mean and the view/permute
family), kernel by kernel on the OpenCL device; otherwise the cell is ``unsupported`` naming the first
op it lacks (a conv net stops at ``aten.convolution``; that is a result, not a failure).

``opencl_gemm_flops_per_s`` and ``opencl_copy_bytes_per_s`` measure the same GEMM kernel and a copy
kernel on their own, for roofline comparisons (OpenCL vs native BLAS on CPUs, OpenCL vs CUDA on GPUs).

Device ``cpu`` is the first OpenCL CPU device that can build kernels: PoCL if its LLVM knows this CPU,
else Intel's CPU runtime (pip ``intel-opencl-rt``; see ``_opencl_devices``). ``cuda:N`` is the N-th GPU
of the NVIDIA OpenCL platform. The device is split to ``ctx.threads`` compute units (device fission).
PoCL's kernel cache goes to ``ctx.cache_dir/pocl`` (``POCL_CACHE_DIR``, read when PoCL starts, so the
runner should set it for the cell), pyopencl's to ``ctx.cache_dir/pyopencl``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from accelbench.errors import Unsupported
from accelbench.stacks._export_graph import Step, TensorMeta, export_plan, first_missing_op
from accelbench.stacks._opencl_devices import cap_compute_units, device_reason, opencl_device
from accelbench.stacks._torch_device import device_kind_reason, import_reason
from accelbench.stacks.base import CellContext, ModelSpec, Session, Stack
from accelbench.versions import installed_versions
from accelbench.workloads.base import Inputs

if TYPE_CHECKING:
    import torch

    from accelbench.stacks._opencl_ops import ClTensor, OpenClRuntime, Schedule

_INSTALL = "accelbench[opencl]"
_PACKAGES = ("pyopencl", "pocl-binary-distribution", "intel-opencl-rt", "torch")


class OpenCl(Stack):
    """The exported graph run op by op with hand-written OpenCL kernels (no graph compiler)."""

    name: ClassVar[str] = "opencl"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "PyTorch (torch.export graph, Core ATen)",
        "compiler": "none: hand-written OpenCL C kernels built by the driver",
        "platform": "OpenCL: PoCL pthread on CPU; vendor driver on GPU",
    }
    devices: ClassVar[tuple[str, ...]] = ("cpu", "cuda")

    def unavailable_reason(self, device: str) -> str | None:
        """Why not: bad device kind, pyopencl or torch missing, or no matching OpenCL device."""
        reason = device_kind_reason(device, self.devices) or import_reason("pyopencl", _INSTALL)
        reason = reason or import_reason("torch", "accelbench")
        if reason is not None:
            return reason
        return device_reason(device)

    def versions(self) -> dict[str, str]:
        """Versions of pyopencl, the CPU drivers' wheels that are installed and torch (the exporter)."""
        return installed_versions(_PACKAGES, missing=None)

    def prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """Export, check every op has kernels, build the program and record the launch schedule."""
        from accelbench.stacks._opencl_ops import OPENCL_OPS, OpenClRuntime, schedule_plan

        os.environ.setdefault("POCL_CACHE_DIR", str(ctx.cache_dir / "pocl"))
        plan, export_s = export_plan(model, spec, self.name)
        missing = first_missing_op(plan, OPENCL_OPS)
        if missing is not None:
            raise Unsupported(f"opencl: no kernel for {missing}")
        device = cap_compute_units(opencl_device(ctx.device), ctx.threads)
        runtime = OpenClRuntime(device, ctx.cache_dir / "pyopencl")
        start_s = time.perf_counter()
        schedule, inputs, output = schedule_plan(runtime, plan, spec.example)
        schedule_s = time.perf_counter() - start_s
        details = {
            "threads": str(ctx.threads),
            "opencl_device": device.name.strip(),
            "opencl_platform": f"{device.platform.name.strip()} ({device.platform.version.strip()})",
            "compute_units": str(device.max_compute_units),
            "kernel_launches": str(len(schedule.launches)),
            "export_s": f"{export_s:.6f}",
            "build_s": f"{runtime.build_s:.6f}",
            "schedule_s": f"{schedule_s:.6f}",
        }
        infer = _make_infer(schedule, inputs, output)
        return Session(infer, "fp32", export_s + runtime.build_s + schedule_s, details)


def _make_infer(
    schedule: Schedule, inputs: list[ClTensor], output: ClTensor
) -> Callable[[Inputs], np.ndarray]:
    """``infer``: write the inputs, replay the launches, read the output back (a blocking read)."""
    import pyopencl as cl

    queue = schedule.runtime.queue

    def infer(sample: Inputs) -> np.ndarray:
        for tensor, array in zip(inputs, sample, strict=True):
            cl.enqueue_copy(queue, tensor.buffer, np.ascontiguousarray(array, dtype=tensor.dtype))
        schedule.run()
        result = np.empty(output.shape, dtype=np.float32)
        cl.enqueue_copy(queue, result, output.buffer)
        return result

    return infer


def _probe_runtime(device: str, threads: int | None) -> OpenClRuntime:
    """A runtime on ``device``, split to ``threads`` compute units (None: the whole device)."""
    from accelbench.stacks._opencl_ops import OpenClRuntime

    found = opencl_device(device)
    return OpenClRuntime(found if threads is None else cap_compute_units(found, threads))


def _gemm_schedule(runtime: OpenClRuntime, a: np.ndarray, b: np.ndarray) -> tuple[Schedule, ClTensor]:
    from accelbench.stacks._opencl_ops import Schedule, mm

    schedule = Schedule(runtime)
    step = Step(
        name="probe",
        key="aten.mm",
        target="aten.mm.default",
        args=(),
        kwargs={},
        meta=TensorMeta((a.shape[0], b.shape[1]), "float32"),
    )
    return schedule, mm(schedule, step, schedule.upload(a), schedule.upload(b))


def opencl_gemm(a: np.ndarray, b: np.ndarray, device: str = "cpu") -> np.ndarray:
    """``a @ b`` (fp32 matrices) computed by the stack's GEMM kernel."""
    import pyopencl as cl

    runtime = _probe_runtime(device, None)
    schedule, product = _gemm_schedule(runtime, a.astype(np.float32), b.astype(np.float32))
    schedule.run()
    result = np.empty(product.shape, dtype=np.float32)
    cl.enqueue_copy(runtime.queue, result, product.buffer)
    return result


def _best_s(schedule: Schedule, repeats: int) -> float:
    """Fastest wall time of ``repeats`` replays of ``schedule``, after one warm-up replay."""
    schedule.run()
    schedule.runtime.queue.finish()
    times_s = []
    for _ in range(repeats):
        start_s = time.perf_counter()
        schedule.run()
        schedule.runtime.queue.finish()
        times_s.append(time.perf_counter() - start_s)
    return min(times_s)


def opencl_gemm_flops_per_s(
    n: int = 512, repeats: int = 3, device: str = "cpu", threads: int | None = None
) -> float:
    """fp32 FLOP/s of the GEMM kernel on ``n`` x ``n`` matrices (``2 n^3`` FLOP per product, best run).

    ``threads`` limits the device to that many compute units (None: all of them).
    """
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    schedule, _ = _gemm_schedule(_probe_runtime(device, threads), a, b)
    return 2.0 * n**3 / _best_s(schedule, repeats)


def opencl_copy_bytes_per_s(
    n_bytes: int = 64 * 2**20, repeats: int = 3, device: str = "cpu", threads: int | None = None
) -> float:
    """Device-memory bandwidth of a float4 copy kernel: bytes read plus bytes written per second."""
    from accelbench.stacks._opencl_ops import Schedule

    runtime = _probe_runtime(device, threads)
    schedule = Schedule(runtime)
    vectors = max(n_bytes // 16, 1)
    source, target = schedule.empty((vectors * 4,)), schedule.empty((vectors * 4,))
    schedule.launch("copy", (vectors,), source, target)
    return 2.0 * vectors * 16 / _best_s(schedule, repeats)
