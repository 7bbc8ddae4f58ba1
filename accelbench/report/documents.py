"""Normalized figures of stored results, as documents: roofline position and per-chip denominators.

Everything here is derived at read time from what the store keeps (results, the run's machine, the peaks
the run measured, ``accelbench.probe.peaks_file``) plus chip facts, so a better chip table or FLOP count
improves old results without re-running them. ``accelbench show`` and the report use these documents.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from accelbench.hardware.chips import ChipTable, load_chips
from accelbench.hardware.match import ChipMatch
from accelbench.normalize.peak_share import datasheet_peak, decided_peak, peak_share
from accelbench.probe.best import machine_peak
from accelbench.probe.roofline import MeasuredPeaks
from accelbench.ranges import Range
from accelbench.report.normalized import figures_document, range_document
from accelbench.results import Result

log = logging.getLogger(__name__)

DatasheetPeaks = dict[str, tuple[Range, str]]
"""Per dtype: the datasheet FLOP/s of the part used and its source (``normalize.peak_share``)."""


def normalized_documents(
    results: Sequence[Result],
    machine: Mapping[str, Any],
    peaks: MeasuredPeaks | None,
    cache_dir: Path,
    chips: ChipTable | None = None,
) -> dict[str, dict[str, Any]]:
    """Per cell key: ``roofline`` (achieved FLOP/s, shares of the measured and datasheet peaks, bound,
    suspect flags) and ``figures``; the chips counted are narrowed by the measured peak (``_match``)."""
    from accelbench.normalize.lookup import result_figures

    table = chips if chips is not None else load_chips()
    documents = {}
    for result in results:
        if result.head.status != "ok" or result.head.effective_precision == "none":
            continue
        match = _match(result, machine, table, peaks)
        documents[result.cell.key] = {
            "roofline": _with_decision(_roofline(result, peaks, cache_dir, _datasheet(match)), match),
            "figures": figures_document(result_figures(result, machine, table, match)),
        }
    return documents


def served_chips(
    results: Sequence[Result],
    machine: Mapping[str, Any],
    peaks: MeasuredPeaks | None,
    chips: ChipTable | None = None,
    config: Mapping[str, Any] | None = None,
) -> dict[str, ChipMatch]:
    """Per endpoint cell (a curve or a session ladder): the chips its server ran on. A server the cell
    started on this machine: matched here, the count narrowed by the measured peak. A ``--serve-url``
    server (``llm@url``): the run's ``--serve-hardware`` declaration (``config``), basis ``declared``;
    absent without one."""
    served = [r for r in results if r.curve is not None or r.session_ladder is not None]
    if not served:  # the chips table is read only when a curve needs it
        return {}
    table = chips if chips is not None else load_chips()
    declared = _declared(config or {}, table)
    matches = {
        r.cell.key: declared if r.cell.stack == "llm@url" else _match(r, machine, table, peaks)
        for r in served
    }
    return {key: match for key, match in matches.items() if match is not None and match.count > 0}


def _declared(config: Mapping[str, Any], chips: ChipTable) -> ChipMatch | None:
    """The run's ``--serve-hardware`` declaration as a match; None when there is none or it no longer
    names a known chip (a chips table that lost the row)."""
    from accelbench.errors import UserError
    from accelbench.hardware.declared import declared_match

    declaration = config.get("serve_hardware")
    if not declaration or not isinstance(declaration, str):
        return None
    try:
        return declared_match(declaration, str(config.get("serve_hardware_source") or "declared"), chips)
    except (UserError, ValueError) as error:
        log.warning("the run's --serve-hardware %r is not usable: %s", declaration, error)
        return None


def _match(
    result: Result, machine: Mapping[str, Any], chips: ChipTable, peaks: MeasuredPeaks | None
) -> ChipMatch | None:
    """The chip the result ran on, its count narrowed by the run's measured fp32 GEMM peak (a count
    whose datasheet peak the machine beat is ruled out); None when the machine record is unreadable."""
    from accelbench.hardware.detect import machine_from_dict
    from accelbench.hardware.match import match_device, narrowed
    from accelbench.normalize.lookup import machine_of

    try:
        match = match_device(machine_from_dict(machine_of(result, machine)), result.cell.device, chips)
    except (ValueError, TypeError, KeyError):
        return None
    measured = (
        machine_peak(peaks, "gemm", "fp32") if peaks is not None and result.cell.device == "cpu" else None
    )
    return narrowed(match, measured.value_per_s if measured is not None else None)


def _datasheet(match: ChipMatch | None) -> DatasheetPeaks:
    """The datasheet FLOP/s per dtype of the part the result ran on (empty when the chip is unknown)."""
    if match is None:
        return {}
    found = {dtype: datasheet_peak(match.chip, match.count, dtype) for dtype in ("fp32", "bf16")}
    if match.decision is not None and match.chip is not None:
        found["fp32"] = decided_peak(match.chip, match.decision)
    return {dtype: value for dtype, value in found.items() if value is not None}


def _with_decision(roofline: dict[str, Any] | None, match: ChipMatch | None) -> dict[str, Any] | None:
    """The roofline document with the share decision behind its datasheet peak: the model, the count and
    its range, the clock used and every clock's peak, the evidence; an unexplained datasheet share says
    which assumption failed."""
    decision = match.decision if match is not None else None
    if roofline is None or decision is None:
        return roofline
    top = decision.ceiling
    extra: dict[str, Any] = {
        "datasheet_clock": top.name,
        "datasheet_clock_hz": top.clock_hz,
        "datasheet_source_class": top.source_class,
        "share_decision": {
            "model": decision.model,
            "count": decision.count,
            "count_low": decision.count_low,
            "count_high": decision.count_high,
            "cores": decision.cores,
            "measured_flops_per_s": decision.measured_per_s,
            "peaks_flops_per_s": {p.name: p.flops_per_s for p in decision.peaks},
            "smt_sibling_peaks_flops_per_s": {p.name: p.flops_per_s for p in decision.smt_peaks},
            "evidence": list(decision.evidence),
            "failed": decision.failed,
        },
    }
    if roofline.get("datasheet_suspect") and decision.failed:
        extra["datasheet_suspect_reason"] = f"no model explains it: {decision.failed}"
    return {**roofline, **extra}


def _roofline(
    result: Result, peaks: MeasuredPeaks | None, cache_dir: Path, datasheet: DatasheetPeaks
) -> dict[str, Any] | None:
    from accelbench.generation.figures import query_cost
    from accelbench.normalize.roofline import roofline_figures
    from accelbench.variants.cost import workload_cost

    seconds = _seconds_per_sample(result)
    if peaks is None or seconds is None:
        return None
    bf16 = result.head.effective_precision == "bf16" and machine_peak(peaks, "gemm", "bf16")
    dtype = "bf16" if bf16 else "fp32"
    flops_peak, bytes_peak = machine_peak(peaks, "gemm", dtype), machine_peak(peaks, "bandwidth")
    if flops_peak is None or bytes_peak is None:
        return None
    if (decode := result.decode) is not None:
        cost = query_cost(result.cell.workload, result.cell.size, decode)
    else:
        cost = workload_cost(
            result.cell.workload, result.cell.size, cache_dir=cache_dir, variant=result.cell.variant
        )
    figures = roofline_figures(cost, seconds, flops_peak.value_per_s, bytes_peak.value_per_s)
    share = peak_share(figures.achieved_flops_per_s, flops_peak, datasheet.get(dtype))
    return {
        **dataclasses.asdict(figures),
        "peak_dtype": dtype,
        "peak_method": flops_peak.method,
        "peak_role": flops_peak.role,
        "probe_peak_flops_per_s": flops_peak.probe_per_s,
        "bandwidth_method": bytes_peak.method,
        "datasheet_peak_flops_per_s": range_document(share.datasheet_per_s),
        "datasheet_source": share.datasheet_source,
        "share_of_datasheet_peak": range_document(share.share_of_datasheet),
        "suspect": share.suspect,
        "suspect_reason": share.reason,
        "datasheet_suspect": share.datasheet_suspect,
        "datasheet_suspect_reason": share.datasheet_reason,
        "flops_per_sample": cost.flops,
        "bytes_per_sample": cost.bytes_moved,
        "cost_method": cost.method,
        "provenance": "measured peaks of this run's machine (best of every probe and library "
        "measurement); FLOPs counted by torch's FlopCounterMode",
        "time_basis": "p50 latency" if result.cell.scenario == "single-stream" else "1 / LoadGen throughput",
    }


def _seconds_per_sample(result: Result) -> float | None:
    if result.cell.scenario == "single-stream" and result.latency is not None:
        return result.latency.p50_s
    qps = result.qps
    return 1.0 / qps if qps else None
