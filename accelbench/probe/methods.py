"""The timed methods behind the roofline probes, the interleaved race that times them, and their setting.

A ``TimedMethod`` is one method (``torch.mm``, ``numpy.copyto``, ...) at one size; its operands are
built on first use, untimed. ``race`` warms sizes smallest first, all methods of a size together,
while the next size is expected to fit; then it times every warmed method round-robin (A B C A B C
...) until the phase's deadline, so the drift of a shared machine hits all of them alike; each keeps
every call time and reports its best. ``thread_limit`` gives torch and numpy's
BLAS the same thread count; ``library_versions`` records which BLAS each of them runs.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from accelbench.hardware.detect import Machine

logger = logging.getLogger(__name__)

GEMM_SIZES = (512, 1024, 1536, 2048, 3072, 4096)
"""Square sizes; every method runs at each size the budget allows, so probe and libraries compare alike."""
BANDWIDTH_LLC_MULTIPLE = 4
MIN_ARRAY_BYTES = 64 * 2**20
MAX_ARRAY_BYTES = 512 * 2**20
MAX_LEVEL_SHARE = 1 / 4
"""A size is started only when one call of every method at it is estimated to fit this share of the phase."""
TRIAD_SCALAR = 3.0
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
ONEDNN_LINEAR = "torch.ops.mkldnn._linear_pointwise"
"""oneDNN's GEMM as torch reaches it (what inductor's CPU freezing uses); faster than MKL on AMD CPUs."""
BANDWIDTH_METHODS = (  # role, kind, method, arrays moved per call (STREAM counting)
    ("probe", "copy", "torch.Tensor.copy_", 2),
    ("library", "copy", "numpy.copyto", 2),
    ("probe", "triad", "torch.add(alpha)", 3),
    ("library", "triad", "numpy multiply+add", 3),
)
_TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
_TORCH_BLAS_PATTERNS = (
    ("torch_blas", r"BLAS_INFO=(\w+)"),
    ("torch_mkl", r"Math Kernel Library Version ([\w.]+)"),
    ("torch_onednn", r"(?:oneDNN|MKL-DNN) (v[\w.]+)"),
)
_ENV_NAMES = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

Setup = Callable[[], Callable[[], object]]
"""Builds a method's timed call; allocations happen here, untimed."""


@dataclass(slots=True, eq=False)
class TimedMethod:
    """One method at one size being raced: mutable bookkeeping of a probe, never stored as such."""

    role: str
    """``probe`` (what accelbench reports) or ``library`` (what it is compared with)."""
    kind: str
    method: str
    dtype: str
    size: int
    work: float
    """FLOPs (gemm) or bytes (copy, triad) of one call."""
    setup: Setup
    call: Callable[[], object] | None = None
    times_s: list[float] = field(default_factory=list)

    def run(self) -> None:
        """Set up on first use (untimed), then time one call."""
        if self.call is None:
            self.call = self.setup()
        start = time.perf_counter()
        self.call()
        self.times_s.append(time.perf_counter() - start)

    def rate_per_s(self) -> float:
        """Best work per second so far."""
        return self.work / min(self.times_s)


def race(methods: list[TimedMethod], phase_s: float) -> None:
    """Warm the sizes that fit, smallest first, then time every method round-robin for ``phase_s``.

    All methods of a size run, or none: the probe and the libraries are always compared at the same
    sizes. Methods that did not fit keep no times (reported as not run). Operands are dropped after.
    """
    deadline = time.perf_counter() + phase_s
    started = _warm_up(methods, deadline, phase_s * MAX_LEVEL_SHARE)
    ran = True
    while ran:
        ran = False
        for method in started:
            if time.perf_counter() + min(method.times_s) <= deadline:
                method.run()
                ran = True
    for method in methods:
        method.call = None


def _warm_up(methods: list[TimedMethod], deadline: float, max_level_s: float) -> list[TimedMethod]:
    """Run each size's methods once, smallest size first, while the next size is expected to fit."""
    started: list[TimedMethod] = []
    for size in sorted({m.size for m in methods}):
        level = [m for m in methods if m.size == size]
        if started:
            best_rate = max(m.rate_per_s() for m in started)
            estimate_s = sum(m.work for m in level) / best_rate
            if estimate_s > max_level_s or time.perf_counter() + estimate_s > deadline:
                break
        for method in level:
            method.run()
        started += level
    return started


def gemm_methods(dtype: str) -> list[TimedMethod]:
    """Probe and library GEMMs in ``dtype`` (``fp32`` or ``bf16``), smallest first, operands shared."""
    operands: dict[int, tuple[torch.Tensor, ...]] = {}

    def tensors(n: int) -> tuple[torch.Tensor, ...]:
        if n not in operands:
            operands[n] = gemm_operands(n, _TORCH_DTYPES[dtype])
        return operands[n]

    names = [("probe", "torch.mm")]
    if onednn_available():
        names.append(("probe", ONEDNN_LINEAR))
    names.append(("library", "torch.matmul(a, b.T)"))
    if dtype == "fp32":  # numpy has no bf16
        names.append(("library", "numpy.matmul"))
    return [
        TimedMethod(
            role=role,
            kind="gemm",
            method=method,
            dtype=dtype,
            size=n,
            work=2.0 * n**3,
            setup=_gemm_setup(method, n, tensors),
        )
        for n in GEMM_SIZES
        for role, method in names
    ]


def _gemm_setup(method: str, n: int, tensors: Callable[[int], tuple[torch.Tensor, ...]]) -> Setup:
    def setup() -> Callable[[], object]:
        a, b, c = tensors(n)
        if method == "numpy.matmul":
            an, bn, cn = a.numpy(), b.numpy(), c.numpy()
            return lambda: np.matmul(an, bn, out=cn)
        if method == "torch.matmul(a, b.T)":  # the layout of nn.Linear: another BLAS path
            b_t = b.t().contiguous().t()
            return lambda: torch.matmul(a, b_t, out=c)
        if method == ONEDNN_LINEAR:  # weight [out, in]: a @ weight.T == a @ b
            weight = b.t().contiguous()
            return lambda: torch.ops.mkldnn._linear_pointwise(a, weight, None, "none", [], "")
        return lambda: torch.mm(a, b, out=c)

    return setup


def onednn_available() -> bool:
    """Whether torch was built with oneDNN and exposes its fused linear op."""
    return bool(torch.backends.mkldnn.is_available()) and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def gemm_operands(n: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded ``a``, ``b`` in [0, 1) and an output ``c``, all ``n x n`` in ``dtype``."""
    generator = torch.Generator().manual_seed(n)
    a = torch.rand(n, n, generator=generator).to(dtype)
    b = torch.rand(n, n, generator=generator).to(dtype)
    return a, b, torch.empty(n, n, dtype=dtype)


def array_elements(machine: Machine) -> int:
    """float32 elements per bandwidth array: ``BANDWIDTH_LLC_MULTIPLE`` x the largest cache, clamped."""
    llc_bytes = max((cache.size_bytes for cache in machine.caches), default=32 * 2**20)
    size_bytes = min(max(BANDWIDTH_LLC_MULTIPLE * llc_bytes, MIN_ARRAY_BYTES), MAX_ARRAY_BYTES)
    return size_bytes // 4


def bandwidth_methods(n: int) -> list[TimedMethod]:
    """Copy and triad probes and their numpy counterparts over three shared float32 arrays of ``n``."""
    arrays: list[torch.Tensor] = []

    def setup(method: str) -> Setup:
        def make() -> Callable[[], object]:
            if not arrays:  # filled, so every page is touched before timing
                arrays.extend(torch.full((n,), float(i + 1)) for i in range(3))
            return _bandwidth_call(method, *arrays)

        return make

    return [
        TimedMethod(
            role=role,
            kind=kind,
            method=method,
            dtype="fp32",
            size=n,
            work=arrays_moved * 4.0 * n,
            setup=setup(method),
        )
        for role, kind, method, arrays_moved in BANDWIDTH_METHODS
    ]


def _bandwidth_call(method: str, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> Callable[[], object]:
    an, bn, cn = a.numpy(), b.numpy(), c.numpy()
    calls: dict[str, Callable[[], object]] = {
        "torch.Tensor.copy_": lambda: a.copy_(b),
        "numpy.copyto": lambda: np.copyto(an, bn),
        "torch.add(alpha)": lambda: torch.add(b, c, alpha=TRIAD_SCALAR, out=a),
        "numpy multiply+add": lambda: np.add(bn, np.multiply(cn, TRIAD_SCALAR, out=an), out=an),
    }
    return calls[method]


def bf16_support(isa_flags: Sequence[str]) -> tuple[bool, str]:
    """Whether the CPU has a bf16 matmul ISA (/proc/cpuinfo flags, or torch's cpuinfo), and why."""
    capabilities: Mapping[str, Any] = {}
    if hasattr(torch.cpu, "get_capabilities"):
        capabilities = torch.cpu.get_capabilities()
    found = [flag for flag in BF16_FLAGS if flag in isa_flags or capabilities.get(flag)]
    capability = torch.backends.cpu.get_cpu_capability()
    if found:
        return True, f"bf16 ISA: {', '.join(found)} (torch CPU capability {capability})"
    return False, f"no {' / '.join(BF16_FLAGS)} (torch CPU capability {capability}): bf16 not probed"


@contextmanager
def thread_limit(threads: int) -> Iterator[None]:
    """torch intra-op threads and numpy's BLAS threads set to ``threads``; torch's restored after."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with _blas_limit(threads):
            yield
    finally:
        torch.set_num_threads(previous)


def _blas_limit(threads: int) -> Any:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # numpy then keeps its own default thread count
        logger.warning("threadpoolctl is not installed: numpy's BLAS threads are not limited")
        return nullcontext()
    return threadpool_limits(limits=threads, user_api="blas")


def library_versions() -> dict[str, str]:
    """numpy/torch versions, the BLAS each uses (threadpoolctl, torch's build config), BLAS env vars."""
    info = {"numpy": np.__version__, "torch": torch.__version__}
    info["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    config = torch.__config__.show()
    for key, pattern in _TORCH_BLAS_PATTERNS:
        match = re.search(pattern, config)
        if match:
            info[key] = match.group(1)
    info.update(_threadpools())
    info.update({f"env.{name}": os.environ[name] for name in _ENV_NAMES if name in os.environ})
    return info


def _threadpools() -> dict[str, str]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return {"numpy_blas": "unknown (threadpoolctl not installed)"}
    found = {}
    for pool in threadpool_info():
        name = f"threadpool.{pool.get('internal_api')}.{os.path.basename(pool.get('filepath', ''))}"
        found[name] = (
            f"{pool.get('version')} {pool.get('architecture', '')} threads={pool.get('num_threads')}"
        )
    return found
