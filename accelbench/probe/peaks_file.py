"""The peaks a run measured, kept in its folder (``runs/<run_id>/peaks.json``) for the report to read."""

from __future__ import annotations

import logging
from pathlib import Path

from accelbench.files import read_json
from accelbench.outputs import write_json_atomic
from accelbench.probe.roofline import MeasuredPeaks

log = logging.getLogger(__name__)

PEAKS_FILE = "peaks.json"


def save_peaks(run_dir: Path, peaks: MeasuredPeaks) -> None:
    """Keep the peaks a run measured in its folder."""
    write_json_atomic(run_dir / PEAKS_FILE, peaks.to_dict())


def run_fp32_peak(run_dir: Path) -> float | None:
    """The best FP32 GEMM FLOP/s the run measured, as ``accelbench.normalize.peak_share.machine_peak``
    counts it (every probe and library measurement; a peak stored without them by its own value); None
    without a peaks file or a GEMM."""
    peaks = load_peaks(run_dir)
    if peaks is None:
        return None
    chosen = [p for p in peaks.peaks if p.kind == "gemm" and p.dtype == "fp32"]
    values = [m.value_per_s for p in chosen for m in p.measurements if m.dtype == "fp32"]
    values += [p.value_per_s for p in chosen if not p.measurements]
    return max(values, default=None)


def load_peaks(run_dir: Path) -> MeasuredPeaks | None:
    """The peaks a run measured, or None when it ran with ``--no-probe`` (or the file is unreadable)."""
    path = run_dir / PEAKS_FILE
    if not path.exists():
        return None
    try:
        return MeasuredPeaks.from_dict(read_json(path, "peaks file"))
    except (ValueError, KeyError, TypeError) as err:
        log.warning("ignoring unreadable %s: %s", path, err)
        return None
