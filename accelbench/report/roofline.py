"""Rich tables for the roofline probe (``accelbench probe``): peaks, every measurement, the libraries.

The peaks table also shows the machine peak: the best of every probe and library measurement of the
kind and dtype, which every "% of peak" divides by, and marks a peak that a result beat as SUSPECT.

Stored values are SI (flop/s, byte/s, s); they become GFLOP/s, GB/s (10^9 bytes) and ms only here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.table import Table

from accelbench.probe.best import machine_peak
from accelbench.probe.roofline import MeasuredPeaks, Measurement, Peak


def peaks_table(peaks: MeasuredPeaks, suspects: Mapping[str, Sequence[str]] | None = None) -> Table:
    """One row per peak: the probe's value next to the best installed library's, their ratio, and the
    machine peak every share divides by (the best of all measurements, ``normalize.peak_share``).

    ``suspects`` (``cell_figures.suspect_reasons``: ``"gemm fp32"`` -> reasons) marks a peak some result
    beat; the reasons are the caption.
    """
    title = f"Measured peaks (threads {peaks.threads}, {peaks.wall_s:.1f} s, {peaks.measured_at})"
    table = Table(title=title, title_justify="left")
    numbers = ("probe", "best library", "ratio", "machine peak")
    headers = ("kind", "dtype", "probe", "method", "best library", "library method", "ratio")
    for column in (*headers, "machine peak", "machine peak method", "check"):
        table.add_column(column, justify="right" if column in numbers else "left")
    found = suspects or {}
    for peak in peaks.peaks:
        beaten = found.get(f"{peak.kind} {peak.dtype}", ())
        check = f"[bold red]SUSPECT: {len(beaten)} results above it[/]" if beaten else "ok"
        table.add_row(*_peak_row(peak), *_machine_columns(peaks, peak), check)
    reasons = [f"SUSPECT {reason}" for name in sorted(found) for reason in found[name]]
    if reasons:
        table.caption, table.caption_justify = "\n".join(reasons), "left"
    return table


def _machine_columns(peaks: MeasuredPeaks, peak: Peak) -> list[str]:
    best = machine_peak(peaks, "gemm" if peak.kind == "gemm" else "bandwidth", peak.dtype)
    return ["-", "-"] if best is None else [rate_text(best.value_per_s, best.unit), best.method]


def _peak_row(peak: Peak) -> list[str]:
    ratio = peak.ratio_to_best_library
    library = peak.best_library_per_s
    return [
        peak.kind,
        peak.dtype,
        rate_text(peak.value_per_s, peak.unit),
        peak.method,
        rate_text(library, peak.unit) if library else "-",
        peak.best_library or "-",
        "-" if ratio is None else _ratio_text(ratio),
    ]


def measurements_table(peaks: MeasuredPeaks) -> Table:
    """Every timed method of the probe: role, size, threads, best time, repeats and rate."""
    table = Table(title="Probe measurements (best call of each)", title_justify="left")
    for column in ("kind", "dtype", "role", "method", "size", "threads", "best ms", "calls", "rate"):
        table.add_column(
            column, justify="right" if column in ("size", "threads", "best ms", "calls", "rate") else "left"
        )
    seen: set[Measurement] = set()
    for measurement in (m for peak in peaks.peaks for m in peak.measurements):
        if measurement not in seen:
            seen.add(measurement)
            table.add_row(*_measurement_row(measurement))
    return table


def _measurement_row(m: Measurement) -> list[str]:
    unit = "flop/s" if m.kind == "gemm" else "byte/s"
    size = str(m.size) if m.kind == "gemm" else f"{m.size * 4 / 2**20:.0f} MiB"
    best_ms = f"{m.best_s * 1e3:.2f}"
    return [
        m.kind,
        m.dtype,
        m.role,
        m.method,
        size,
        str(m.threads),
        best_ms,
        str(m.repeats),
        rate_text(m.value_per_s, unit),
    ]


def libraries_table(peaks: MeasuredPeaks) -> Table:
    """The libraries, BLAS builds and BLAS environment the probe ran with."""
    table = Table(title="Libraries", title_justify="left", show_header=False)
    table.add_column("name")
    table.add_column("value")
    for name, value in sorted(peaks.libraries.items()):
        table.add_row(name, value)
    return table


def rate_text(value: float, unit: str) -> str:
    """``123.4 GFLOP/s`` or ``12.3 GB/s`` (decimal prefixes)."""
    return f"{value / 1e9:.1f} GFLOP/s" if unit == "flop/s" else f"{value / 1e9:.1f} GB/s"


def _ratio_text(ratio: float) -> str:
    text = f"{ratio:.2f}"
    return text if ratio >= 0.9 else f"[yellow]{text}[/]"
