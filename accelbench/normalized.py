"""Normalized figures of stored results, as documents: roofline position and per-chip denominators.

Everything here is derived at read time from what the store keeps (results, the run's machine, the peaks
the run measured in ``runs/<run_id>/peaks.json``) plus chip facts, so a better chip table or FLOP count
improves old results without re-running them. ``accelbench show`` and the report use these documents.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from accelbench.cellspec import write_json_atomic
from accelbench.hardware.chips import ChipTable, load_chips
from accelbench.hardware.roofline import MeasuredPeaks
from accelbench.report.normalized import figures_document
from accelbench.results import Result

log = logging.getLogger(__name__)

PEAKS_FILE = "peaks.json"


def save_peaks(run_dir: Path, peaks: MeasuredPeaks) -> None:
    """Keep the peaks a run measured in its folder."""
    write_json_atomic(run_dir / PEAKS_FILE, peaks.to_dict())


def load_peaks(run_dir: Path) -> MeasuredPeaks | None:
    """The peaks a run measured, or None when it ran with ``--no-probe`` (or the file is unreadable)."""
    path = run_dir / PEAKS_FILE
    if not path.exists():
        return None
    try:
        return MeasuredPeaks.from_dict(json.loads(path.read_text()))
    except (ValueError, KeyError, TypeError) as err:
        log.warning("ignoring unreadable %s: %s", path, err)
        return None


def normalized_documents(
    results: Sequence[Result],
    machine: Mapping[str, Any],
    peaks: MeasuredPeaks | None,
    cache_dir: Path,
    chips: ChipTable | None = None,
) -> dict[str, dict[str, Any]]:
    """Per cell key: ``roofline`` (achieved FLOP/s, share of measured peak, bound) and ``figures``."""
    from accelbench.lookup import result_figures

    table = chips if chips is not None else load_chips()
    documents = {}
    for result in results:
        if result.status != "ok" or result.effective_precision == "none":
            continue
        documents[result.cell.key] = {
            "roofline": _roofline(result, peaks, cache_dir),
            "figures": figures_document(result_figures(result, machine, table)),
        }
    return documents


def _roofline(result: Result, peaks: MeasuredPeaks | None, cache_dir: Path) -> dict[str, Any] | None:
    from accelbench.hardware.flops import workload_cost
    from accelbench.normalize.roofline import roofline_figures

    seconds = _seconds_per_sample(result)
    if peaks is None or seconds is None:
        return None
    dtype = "bf16" if result.effective_precision == "bf16" and peaks.peak("gemm", "bf16") else "fp32"
    flops_peak, bytes_peak = peaks.gemm_flops_per_s(dtype), peaks.bandwidth_bytes_per_s()
    if not flops_peak or not bytes_peak:
        return None
    cost = workload_cost(
        result.cell.workload, result.cell.size, cache_dir=cache_dir, variant=result.cell.variant
    )
    figures = roofline_figures(cost, seconds, flops_peak, bytes_peak)
    return {
        **dataclasses.asdict(figures),
        "peak_dtype": dtype,
        "flops_per_sample": cost.flops,
        "bytes_per_sample": cost.bytes_moved,
        "cost_method": cost.method,
        "provenance": "measured peaks of this run's machine; FLOPs counted by torch's FlopCounterMode",
        "time_basis": "p50 latency" if result.cell.scenario == "single-stream" else "1 / LoadGen throughput",
    }


def _seconds_per_sample(result: Result) -> float | None:
    if result.cell.scenario == "single-stream" and result.latency is not None:
        return result.latency.p50_s
    qps = result.qps
    return 1.0 / qps if qps else None
