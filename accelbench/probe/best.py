"""This machine's best measured rate of a kind and dtype: the best of *every* measurement the run's
roofline probe made (``accelbench.probe.roofline``), its probes and the libraries it raced them against,
each already the best of its repeated calls. GEMM peaks are ``gemm`` measurements; the memory roof is
the best ``copy`` or ``triad`` measurement (STREAM byte counting). The denominator of "% of peak"
(``accelbench.normalize.peak_share``) and the runner's FP32 peak for the CPU share decision
(``accelbench.probe.peaks_file.run_fp32_peak``) both read it here.
"""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.probe.roofline import MeasuredPeaks, Measurement

_KINDS = {"gemm": ("gemm",), "bandwidth": ("copy", "triad")}
_UNITS = {"gemm": "flop/s", "bandwidth": "byte/s"}


@dataclass(frozen=True, slots=True)
class MachinePeak:
    """The best measured rate of one kind and dtype on this machine, and which measurement gave it."""

    kind: str
    """``gemm`` (FLOP/s) or ``bandwidth`` (byte/s, the best of copy and triad)."""
    dtype: str
    value_per_s: float
    unit: str
    method: str
    """What gave the best rate: method, size, role (probe or library) and repeats."""
    role: str
    """``probe`` or ``library``."""
    probe_per_s: float | None
    """The probe's own best (what older reports divided by); None when only libraries were timed."""


def machine_peak(peaks: MeasuredPeaks, kind: str, dtype: str = "fp32") -> MachinePeak | None:
    """The best measurement of ``kind`` (``gemm`` or ``bandwidth``) in ``dtype``; None when none was made.

    Every probe and library measurement counts (each is the best of its repeats); a peak stored without
    its measurements counts by its own value, as a probe.
    """
    chosen = [p for p in peaks.peaks if p.kind in _KINDS[kind] and p.dtype == dtype]
    candidates = [
        (m.value_per_s, _method(m), m.role)
        for m in dict.fromkeys(m for p in chosen for m in p.measurements if m.dtype == dtype)
    ]
    candidates += [
        (p.value_per_s, f"{p.kind} {p.method} (probe)", "probe") for p in chosen if not p.measurements
    ]
    if not candidates:
        return None
    value, method, role = max(candidates)
    probe = max((c[0] for c in candidates if c[2] == "probe"), default=None)
    return MachinePeak(
        kind=kind,
        dtype=dtype,
        value_per_s=value,
        unit=_UNITS[kind],
        method=method,
        role=role,
        probe_per_s=probe,
    )


def _method(measurement: Measurement) -> str:
    size = str(measurement.size) if measurement.kind == "gemm" else f"{measurement.size} elements"
    return (
        f"{measurement.kind} {measurement.method} size {size} ({measurement.role}, "
        f"best of {measurement.repeats} calls, {measurement.threads} threads)"
    )
