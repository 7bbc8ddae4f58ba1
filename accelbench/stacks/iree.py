"""The ``iree`` stack: the shared ONNX file imported to MLIR, compiled by IREE for ``llvm-cpu``, run on CPU.

Steps: ``export_onnx`` (once per run) -> ``iree.compiler.tools.import_onnx`` (ONNX -> torch-dialect MLIR,
in this process) -> ``iree-compile`` (its own process, through ``iree.compiler.compile_file``) for the
``llvm-cpu`` backend with ``--iree-llvmcpu-target-cpu=host`` -> a ``.vmfb`` module cached in the run's
cache folder, named after the ONNX file and a digest of the flags and compiler version, so the cells of
one workload compile once -> loaded by ``iree.runtime`` on the ``local-task`` driver. The entry function
is named after the ONNX graph (``main_graph``).

Threads: the ``local-task`` driver takes its task topology from IREE's process-wide runtime flags, read
once when the driver is first created; ``--task_topology_group_count`` is set to ``ctx.threads`` before
that. A process can therefore run one thread count only (each cell is its own process); asking for
another one later is Unsupported rather than silently wrong.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from accelbench.errors import Unsupported
from accelbench.stacks._onnx_inputs import input_positions
from accelbench.stacks._torch_device import first_line, precision_of
from accelbench.stacks.base import CellContext, ModelSpec, Session
from accelbench.stacks.onnx_export import OnnxFileStack, export_onnx
from accelbench.workloads.base import Inputs

if TYPE_CHECKING:
    import torch

ENTRY_FUNCTION = "main_graph"
"""IREE names the entry function after the ONNX graph; the dynamo exporter calls it ``main_graph``."""
COMPILE_FLAGS = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
    "--iree-opt-level=O3",
    "--iree-llvmcpu-stack-allocation-limit=65536",
)
"""``iree-compile`` flags: the host CPU's own ISA (AVX-512 etc. where present), full optimisation.

The stack allocation limit is doubled from 32 KiB: at any batch above 1, MiniLM's LayerNorm dispatch
needs 37056 bytes of stack and the default limit refused it (measured at batch 3, 4 and 8). The
``local-task`` workers have 128 KiB stacks (``--task_worker_stack_size`` default), so half is left."""
DRIVER = "local-task"
_ONNX_OP = re.compile(r"onnx\.([A-Za-z][A-Za-z0-9_]*)")
_DIAGNOSTIC_TAIL = re.compile(r": %|\sloc\(")
"""Where a diagnostic's message ends and the printed op (or its location) begins."""
_driver_threads: int | None = None
"""The task topology this process's ``local-task`` driver was created with (None: not created yet)."""


class Iree(OnnxFileStack):
    """IREE ``llvm-cpu``: ONNX -> MLIR -> vmfb (cached per run) -> ``local-task`` with ``ctx.threads``."""

    install: ClassVar[str] = "accelbench[iree]"
    modules: ClassVar[tuple[str, ...]] = ("iree.compiler", "iree.runtime")
    distributions: ClassVar[tuple[str, ...]] = ("iree-base-compiler", "iree-base-runtime")
    name: ClassVar[str] = "iree"
    layers: ClassVar[Mapping[str, str]] = {
        "framework": "ONNX (from PyTorch)",
        "compiler": "IREE (MLIR, torch-mlir ONNX import, LLVM codegen)",
        "platform": "CPU (local-task HAL driver)",
    }

    def prepare(self, model: torch.nn.Module, spec: ModelSpec, ctx: CellContext) -> Session:
        """Export, import and compile (or reuse the cached vmfb), then load it on ``local-task``."""
        path, export_s = export_onnx(model, spec, ctx.cache_dir)
        vmfb, import_s, compile_s = compiled_module(path, ctx.cache_dir)
        start_s = time.perf_counter()
        function, positions = _load(vmfb, path, spec, ctx.threads)
        load_s = time.perf_counter() - start_s
        details = {
            "threads": str(ctx.threads),
            "driver": DRIVER,
            "task_topology_group_count": str(ctx.threads),
            "compile_flags": " ".join(COMPILE_FLAGS),
            "target_cpu": "host",
            "onnx_file": path.name,
            "vmfb_file": vmfb.name,
            "vmfb_cache": "hit" if import_s == compile_s == 0.0 else "miss",
            "export_s": f"{export_s:.6f}",
            "import_s": f"{import_s:.6f}",
            "iree_compile_s": f"{compile_s:.6f}",
            "load_s": f"{load_s:.6f}",
        }
        total_s = export_s + import_s + compile_s + load_s
        return Session(_make_infer(function, positions), precision_of(model), total_s, details)


def vmfb_path(onnx_file: Path, cache_dir: Path) -> Path:
    """Where the compiled module of ``onnx_file`` lives: keyed by the flags and the compiler version."""
    from importlib.metadata import version

    key = " ".join((*COMPILE_FLAGS, version("iree-base-compiler")))
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return cache_dir / "iree" / f"{onnx_file.stem}-{digest}.vmfb"


def compiled_module(onnx_file: Path, cache_dir: Path) -> tuple[Path, float, float]:
    """The vmfb of ``onnx_file``, and the seconds spent importing and compiling it (0.0, 0.0 if cached).

    The MLIR file is temporary; the module is written under a temporary name and renamed into place, so
    a half-written one is never reused. Raises Unsupported("iree: ...") naming the ONNX op when the
    import or the compilation fails.
    """
    vmfb = vmfb_path(onnx_file, cache_dir)
    if vmfb.exists():
        return vmfb, 0.0, 0.0
    vmfb.parent.mkdir(parents=True, exist_ok=True)
    # temporary: the weights are inline as hex text, twice their size
    mlir = vmfb.with_name(f".{vmfb.stem}.{os.getpid()}.mlir")
    start_s = time.perf_counter()
    try:
        _import_onnx(onnx_file, mlir)
        import_s = time.perf_counter() - start_s
        _compile(mlir, vmfb)
    finally:
        mlir.unlink(missing_ok=True)
    return vmfb, import_s, time.perf_counter() - start_s - import_s


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _import_onnx(onnx_file: Path, mlir: Path) -> None:
    """ONNX -> torch-dialect MLIR with IREE's importer (what the ``iree-import-onnx`` script runs)."""
    from iree.compiler.tools.import_onnx.__main__ import main, parse_arguments

    try:
        main(parse_arguments([str(onnx_file), "-o", str(mlir)]))
    except Exception as exc:
        raise Unsupported(f"iree: import failed: {_failure_reason(exc)}") from exc


def _compile(mlir: Path, vmfb: Path) -> None:
    """MLIR -> vmfb with ``iree-compile`` and ``COMPILE_FLAGS``."""
    import iree.compiler as ireec

    temp = _temporary(vmfb)
    try:
        # extended diagnostics print the failing op (e.g. torch.operator "onnx.Foo"), so errors can name it
        ireec.compile_file(
            str(mlir), output_file=str(temp), extra_args=list(COMPILE_FLAGS), extended_diagnostics=True
        )
        os.replace(temp, vmfb)
    except Exception as exc:
        raise Unsupported(f"iree: {_failure_reason(exc)}") from exc
    finally:
        temp.unlink(missing_ok=True)


def _failure_reason(exc: BaseException) -> str:
    """The first ``error:`` of the diagnostics (no location, no op dump), prefixed by the ONNX op it names."""
    text = str(exc)
    errors = [line.split("error:", 1)[1] for line in text.splitlines() if "error:" in line]
    line = _DIAGNOSTIC_TAIL.split(errors[0])[0].strip() if errors else first_line(exc)
    op = _ONNX_OP.search(text)
    return f"unsupported op {op.group(1)}: {line}" if op else line


def _configure_threads(threads: int) -> None:
    """Set the task topology before the process's ``local-task`` driver exists; refuse a later change."""
    import iree.runtime as ireert

    global _driver_threads
    if _driver_threads is None:
        ireert.flags.parse_flags(f"--task_topology_group_count={threads}")
        _driver_threads = threads
    elif _driver_threads != threads:
        raise Unsupported(
            f"iree: this process's {DRIVER} driver already runs {_driver_threads} threads, not {threads}"
        )


def _load(vmfb: Path, onnx_file: Path, spec: ModelSpec, threads: int) -> tuple[Any, list[int]]:
    """The entry function of ``vmfb`` on ``local-task``, and the input positions it takes, in order."""
    import iree.runtime as ireert

    _configure_threads(threads)
    config = ireert.Config(DRIVER)
    context = ireert.SystemContext(config=config)
    context.add_vm_module(ireert.VmModule.mmap(config.vm_instance, str(vmfb)))
    return context.modules.module[ENTRY_FUNCTION], _input_positions(onnx_file, spec)


def _input_positions(onnx_file: Path, spec: ModelSpec) -> list[int]:
    """Positions in ``spec.input_names`` of the ONNX graph's inputs (the exporter drops unused ones)."""
    try:
        return [position for position, _ in input_positions(onnx_file, spec)]
    except Unsupported as exc:
        raise Unsupported(f"iree: {exc}") from exc


def _make_infer(function: Any, positions: list[int]) -> Callable[[Inputs], np.ndarray]:
    """``infer``: the kept inputs in graph order, the output brought back to host memory."""

    def infer(inputs: Inputs) -> np.ndarray:
        return np.asarray(function(*(inputs[position] for position in positions)).to_host())

    return infer
