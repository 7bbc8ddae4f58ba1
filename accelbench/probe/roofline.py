"""Roofline probes: this machine's own measured peaks, GEMM FLOP/s per dtype and memory bandwidth.

A peak is only worth dividing by if nothing installed beats it, so every probe is raced, in the same
run, against what the installed libraries achieve, and the ratio is stored with it:

* ``gemm``: the probe is the better of torch's two GEMM paths, ``torch.mm(a, b, out=c)`` (MKL) and
  oneDNN's linear (``torch.ops.mkldnn._linear_pointwise``, what inductor's CPU freezing uses; MKL
  takes a slow path on AMD CPUs), on square sizes 512..4096 with the run's thread count. The
  libraries, at the same sizes, are ``numpy.matmul`` (its own BLAS, limited to the same threads
  through threadpoolctl) and ``torch.matmul`` with ``b`` stored transposed (``nn.Linear``'s layout,
  another BLAS path). A multiply-add is 2 FLOPs, so one call is ``2 n^3`` FLOPs. ``fp32`` always;
  ``bf16`` (bf16 inputs, fp32 accumulation) when the CPU has ``avx512_bf16`` or ``amx_bf16``
  (numpy has no bf16: torch paths only).
* ``copy`` / ``triad``: float32 arrays well above the last-level cache (``BANDWIDTH_LLC_MULTIPLE``
  times it, within 64..512 MiB). Bytes follow the STREAM convention: copy ``a = b`` moves 2 x size,
  triad ``a = b + s*c`` moves 3 x size; write-allocate traffic is not counted. The probes are
  ``torch.Tensor.copy_`` and ``torch.add(b, c, alpha=s, out=a)`` (threaded by torch); the libraries
  are ``numpy.copyto`` and a numpy two-pass triad (single-threaded).

The methods, sizes and the interleaved race that times them live in ``probe_methods``: a size is
started only when one call fits a share of its phase, so the probe stays close to ``budget_s`` (small
budgets skip the large sizes, and the peak's ``detail`` names what was not run). The peak is the
probe's best call; ``ratio_to_best_library`` below ``RATIO_WARNING`` adds a warning.

Stored form (``MeasuredPeaks.to_dict``) history (bump ``PEAKS_SCHEMA_VERSION`` on every change):
    1  first format: peaks (kind, dtype, value, unit, threads, method, best library and ratio, detail,
       every measurement), machine fingerprint, time, threads, budget, wall time, other processes'
       load, libraries, warnings.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from accelbench.files import check_schema_version
from accelbench.hardware.detect import Machine, detect_machine
from accelbench.meters import noise

if TYPE_CHECKING:
    from accelbench.probe.methods import TimedMethod

PEAKS_SCHEMA_VERSION = 1
DEFAULT_BUDGET_S = 10.0
"""Default probe time: with interpreter start and setup the probe stays under ~15 s on 2 cores."""
RATIO_WARNING = 0.9
"""Below this ratio to the best library, the peak carries a warning: the probe is not the ceiling."""
_KIND_UNITS = {"gemm": "flop/s", "copy": "byte/s", "triad": "byte/s"}
_LIBRARY_GROUP = {"gemm": ("gemm",), "copy": ("copy", "triad"), "triad": ("copy", "triad")}


@dataclass(frozen=True, slots=True)
class Measurement:
    """One method timed at one size: the best of ``repeats`` calls."""

    role: str
    """``probe`` (what accelbench reports) or ``library`` (what it is compared with)."""
    kind: str
    method: str
    dtype: str
    size: int
    """GEMM: the side ``n`` of the square matrices; bandwidth: float32 elements per array."""
    threads: int
    work: float
    """FLOPs (gemm) or bytes (copy, triad) of one call."""
    best_s: float
    repeats: int
    value_per_s: float


@dataclass(frozen=True, slots=True)
class Peak:
    """A measured peak of this machine and how it compares with the best installed library."""

    kind: str
    """``gemm``, ``copy`` or ``triad``."""
    dtype: str
    value_per_s: float
    unit: str
    """``flop/s`` (gemm) or ``byte/s`` (copy, triad)."""
    threads: int
    method: str
    best_library_per_s: float | None
    best_library: str
    ratio_to_best_library: float | None
    """``value_per_s / best_library_per_s``; None when no library call fitted the budget."""
    detail: str
    measurements: tuple[Measurement, ...] = ()


@dataclass(frozen=True, slots=True)
class MeasuredPeaks:
    """Every peak measured in one probe, with the machine and the libraries it ran on."""

    peaks: tuple[Peak, ...]
    machine_fingerprint: str
    measured_at: str
    threads: int = 0
    budget_s: float = 0.0
    wall_s: float = 0.0
    other_load_cores: float = 0.0
    """CPU time other processes used during the probe, per second of wall time (see meters.noise)."""
    libraries: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    schema_version: int = PEAKS_SCHEMA_VERSION

    def peak(self, kind: str, dtype: str = "fp32") -> Peak | None:
        """The peak of ``kind`` (gemm, copy, triad) and ``dtype``; None when it was not measured."""
        return next((p for p in self.peaks if p.kind == kind and p.dtype == dtype), None)

    def gemm_flops_per_s(self, dtype: str = "fp32") -> float | None:
        """Measured peak GEMM FLOP/s in ``dtype``; None when not measured (e.g. bf16 without ISA)."""
        found = self.peak("gemm", dtype)
        return found.value_per_s if found else None

    def bandwidth_bytes_per_s(self) -> float | None:
        """The memory roof: the best of the copy and triad peaks (STREAM byte counting)."""
        values = [p.value_per_s for p in self.peaks if p.kind in ("copy", "triad")]
        return max(values) if values else None

    def to_dict(self) -> dict[str, Any]:
        """The stored JSON document."""
        doc = dataclasses.asdict(self)
        doc["libraries"] = dict(self.libraries)
        return doc

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> MeasuredPeaks:
        """Rebuild from ``to_dict``'s document; raises ValueError on another schema version."""
        check_schema_version(doc, (PEAKS_SCHEMA_VERSION,), "peaks")
        data = dict(doc)
        data["peaks"] = tuple(_peak_from_dict(p) for p in doc["peaks"])
        data["warnings"] = tuple(doc.get("warnings", ()))
        data["libraries"] = dict(doc.get("libraries", {}))
        return cls(**data)


def _peak_from_dict(doc: Mapping[str, Any]) -> Peak:
    data = dict(doc)
    data["measurements"] = tuple(Measurement(**m) for m in doc.get("measurements", ()))
    return Peak(**data)


def measure_peaks(
    threads: int, budget_s: float = DEFAULT_BUDGET_S, machine: Machine | None = None
) -> MeasuredPeaks:
    """Measure this machine's peaks with ``threads`` threads in about ``budget_s`` seconds.

    ``machine`` (default: detected now) gives the fingerprint, the last-level cache and the ISA flags.
    """
    from accelbench.probe.methods import (  # torch: imported by the probes only, not by readers of peaks
        array_elements,
        bandwidth_methods,
        bf16_support,
        gemm_methods,
        library_versions,
        race,
        thread_limit,
    )

    if threads < 1 or budget_s <= 0:
        raise ValueError("threads must be >= 1 and budget_s > 0")
    machine = machine or detect_machine()
    started, measured_at = time.perf_counter(), datetime.now(UTC).isoformat(timespec="seconds")
    bf16, bf16_reason = bf16_support(machine.isa_flags)
    methods: list[TimedMethod] = []
    clock = noise.cpu_clock()
    with thread_limit(threads):
        for name, phase_s in phase_budgets(budget_s, bf16).items():
            phase = (
                bandwidth_methods(array_elements(machine)) if name == "bandwidth" else gemm_methods(name[5:])
            )
            race(phase, phase_s)
            methods += phase
    other_load = noise.other_load_cores(clock, noise.cpu_clock())
    peaks = tuple(_peaks(methods, threads, bf16_reason))
    return MeasuredPeaks(
        peaks=peaks,
        machine_fingerprint=machine.fingerprint,
        measured_at=measured_at,
        threads=threads,
        budget_s=budget_s,
        wall_s=time.perf_counter() - started,
        other_load_cores=other_load,
        libraries=library_versions(),
        warnings=tuple(_warnings(peaks, bf16, other_load)),
    )


def phase_budgets(budget_s: float, bf16: bool) -> dict[str, float]:
    """Seconds given to each phase: ``gemm-fp32``, ``gemm-bf16`` (when supported), ``bandwidth``."""
    shares = {"gemm-fp32": 0.4, "gemm-bf16": 0.3, "bandwidth": 0.3}
    if not bf16:
        shares = {"gemm-fp32": 0.6, "bandwidth": 0.4}
    return {name: share * budget_s for name, share in shares.items()}


def _peaks(methods: list[TimedMethod], threads: int, bf16_reason: str) -> Iterator[Peak]:
    """One peak per (kind, dtype) whose probe ran, compared with the libraries of its group."""
    ran = [m for m in methods if m.times_s]
    for kind, dtype in dict.fromkeys((m.kind, m.dtype) for m in ran if m.role == "probe"):
        probes = [m for m in ran if m.role == "probe" and (m.kind, m.dtype) == (kind, dtype)]
        libraries = [
            m for m in ran if m.role == "library" and m.dtype == dtype and m.kind in _LIBRARY_GROUP[kind]
        ]
        not_run = [
            f"{m.method} {m.size}" for m in methods if not m.times_s and (m.kind, m.dtype) == (kind, dtype)
        ]
        best = max(probes, key=lambda m: m.rate_per_s())
        library = max(libraries, key=lambda m: m.rate_per_s(), default=None)
        library_per_s = library.rate_per_s() if library else None
        yield Peak(
            kind=kind,
            dtype=dtype,
            value_per_s=best.rate_per_s(),
            unit=_KIND_UNITS[kind],
            threads=threads,
            method=f"{best.method} size {best.size}",
            best_library_per_s=library_per_s,
            best_library=f"{library.method} size {library.size}" if library else "",
            ratio_to_best_library=best.rate_per_s() / library_per_s if library_per_s else None,
            detail=_detail(kind, dtype, bf16_reason, not_run),
            measurements=tuple(_measurement(m, threads) for m in probes + libraries),
        )


def _measurement(method: TimedMethod, threads: int) -> Measurement:
    best_s = min(method.times_s)
    return Measurement(
        role=method.role,
        kind=method.kind,
        method=method.method,
        dtype=method.dtype,
        size=method.size,
        threads=threads,
        work=method.work,
        best_s=best_s,
        repeats=len(method.times_s),
        value_per_s=method.work / best_s,
    )


def _detail(kind: str, dtype: str, bf16_reason: str, not_run: list[str]) -> str:
    if kind == "gemm":
        text = "square GEMM, 2 n^3 FLOPs per call (multiply-add = 2), best call of interleaved rounds"
        if dtype == "bf16":
            text += f"; bf16 inputs, fp32 accumulation; {bf16_reason}"
    else:
        moved = "2 x" if kind == "copy" else "3 x"
        text = f"float32 arrays above the last-level cache; STREAM bytes: {moved} array size per call"
        text += " (write-allocate not counted)"
    if not_run:
        text += f"; not run within the budget: {', '.join(not_run)}"
    return text


def _warnings(peaks: Sequence[Peak], bf16: bool, other_load: float) -> Iterator[str]:
    if other_load > noise.OTHER_LOAD_WARNING_CORES:
        busy = noise.OTHER_LOAD_WARNING_CORES
        yield f"other processes kept more than {busy} cores busy during the probe: the peaks are understated"
    for peak in peaks:
        ratio = peak.ratio_to_best_library
        if ratio is None:
            yield f"{peak.kind} {peak.dtype}: no library result fitted the budget; the ratio is unknown"
        elif ratio < RATIO_WARNING:
            yield f"{peak.kind} {peak.dtype}: the probe is below {RATIO_WARNING} x {peak.best_library}"
    measured = {(p.kind, p.dtype) for p in peaks}
    expected = [("gemm", "fp32"), ("copy", "fp32"), ("triad", "fp32")] + ([("gemm", "bf16")] if bf16 else [])
    for kind, dtype in expected:
        if (kind, dtype) not in measured:
            yield f"{kind} {dtype}: not measured within the budget; give the probe more time"
