"""The normalized figures of each stored cell: its roofline position and its per-denominator figures.

Everything here is derived at read time from what the store keeps (results, the run's machine, the peaks
the run measured, ``accelbench.probe.peaks_file``) plus chip facts, so a better chip table or FLOP count
improves old results without re-running them. ``accelbench show`` and the report read these records;
``CellFigures.to_dict`` is the ``normalized`` document of ``show --json``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench.hardware.chips import ChipTable, load_chips
from accelbench.hardware.match import ChipMatch
from accelbench.hardware.share import ShareDecision
from accelbench.normalize.factors import Figure
from accelbench.normalize.peak_share import (
    SUSPECT_SHARE,
    PeakShare,
    datasheet_peak,
    decided_peak,
    peak_share,
)
from accelbench.normalize.roofline import RooflineFigures
from accelbench.probe.best import MachinePeak, machine_peak
from accelbench.probe.roofline import MeasuredPeaks
from accelbench.ranges import Range, range_document
from accelbench.results import Result
from accelbench.workloads.flops import WorkloadCost

DatasheetPeaks = dict[str, tuple[Range, str]]
"""Per dtype: the datasheet FLOP/s of the part used and its source (``normalize.peak_share``)."""
PROVENANCE = (
    "measured peaks of this run's machine (best of every probe and library measurement); FLOPs counted by "
    "torch's FlopCounterMode"
)


@dataclass(frozen=True, slots=True)
class Roofline:
    """Where one result sits under its machine's roofline: achieved FLOP/s, its shares of the measured
    peak (``share.measured``) and of the datasheet peak, the suspect flags, and the share decision behind
    the datasheet peak (None when the chip's share was not decided from its clocks)."""

    position: RooflineFigures
    share: PeakShare
    bandwidth: MachinePeak
    cost: WorkloadCost
    time_basis: str
    """``p50 latency`` (single-stream) or ``1 / LoadGen throughput``."""
    decision: ShareDecision | None = None

    @property
    def suspect(self) -> bool:
        """The achieved rate beats the machine's best measured GEMM."""
        return self.share.suspect

    @property
    def datasheet_suspect(self) -> bool:
        """The achieved rate beats the datasheet peak of the part used (central share above 100%)."""
        return self.share.datasheet_suspect

    @property
    def datasheet_suspect_reason(self) -> str:
        """Why the datasheet share is suspect; when no share model explains the measured peak, which
        assumption failed."""
        if self.decision is not None and self.datasheet_suspect and self.decision.failed:
            return f"no model explains it: {self.decision.failed}"
        return self.share.datasheet_reason

    def to_dict(self) -> dict[str, Any]:
        """The ``roofline`` document of ``show --json`` (SI units)."""
        share = self.share
        document = {
            **dataclasses.asdict(self.position),
            "peak_dtype": share.measured.dtype,
            "peak_method": share.measured.method,
            "peak_role": share.measured.role,
            "probe_peak_flops_per_s": share.measured.probe_per_s,
            "bandwidth_method": self.bandwidth.method,
            "datasheet_peak_flops_per_s": range_document(share.datasheet_per_s),
            "datasheet_source": share.datasheet_source,
            "share_of_datasheet_peak": range_document(share.share_of_datasheet),
            "suspect": share.suspect,
            "suspect_reason": share.reason,
            "datasheet_suspect": share.datasheet_suspect,
            "datasheet_suspect_reason": self.datasheet_suspect_reason,
            "flops_per_sample": self.cost.flops,
            "bytes_per_sample": self.cost.bytes_moved,
            "cost_method": self.cost.method,
            "provenance": PROVENANCE,
            "time_basis": self.time_basis,
        }
        return document if self.decision is None else {**document, **_decision_document(self.decision)}


@dataclass(frozen=True, slots=True)
class CellFigures:
    """The normalized figures of one ``ok`` cell: its roofline (None without measured peaks or a time per
    sample) and its cost figures, one per denominator (``normalize.factors.DENOMINATORS``)."""

    roofline: Roofline | None
    figures: tuple[Figure, ...]

    def figure(self, per: str) -> Figure | None:
        """The figure of denominator ``per``; None when the cell has none."""
        return next((f for f in self.figures if f.per == per), None)

    def to_dict(self) -> dict[str, Any]:
        """The ``normalized`` document of a result in ``show --json``."""
        return {
            "roofline": None if self.roofline is None else self.roofline.to_dict(),
            "figures": {f.per: f.to_dict() for f in self.figures},
        }


def cell_figures(
    results: Sequence[Result],
    machine: Mapping[str, Any],
    peaks: MeasuredPeaks | None,
    cache_dir: Path,
    chips: ChipTable | None = None,
) -> dict[str, CellFigures]:
    """Per cell key of an ``ok`` measured result: its roofline and figures; the chips counted are
    narrowed by the measured peak (``cell_match``)."""
    from accelbench.normalize.lookup import result_figures

    table = chips if chips is not None else load_chips()
    found = {}
    for result in results:
        if result.head.status != "ok" or result.head.effective_precision == "none":
            continue
        match = cell_match(result, machine, table, peaks)
        found[result.cell.key] = CellFigures(
            roofline=_roofline(result, peaks, cache_dir, match),
            figures=result_figures(result, machine, table, match),
        )
    return found


def suspect_reasons(found: Mapping[str, CellFigures]) -> dict[str, list[str]]:
    """Per measured peak (``"gemm fp32"``): ``cell key: reason`` of every suspect roofline."""
    reasons: dict[str, list[str]] = {}
    for key, cell in sorted(found.items()):
        roofline = cell.roofline
        if roofline is not None and roofline.suspect:
            name = f"gemm {roofline.share.measured.dtype}"
            reasons.setdefault(name, []).append(f"{key}: {roofline.share.reason}")
    return reasons


def shares_above(found: Iterable[CellFigures], limit: float = SUSPECT_SHARE) -> list[float]:
    """Shares of the measured or the datasheet peak (its central value) above ``limit`` that are not
    marked suspect (should be empty)."""
    unmarked = []
    for roofline in (cell.roofline for cell in found if cell.roofline is not None):
        share = roofline.position.share_of_peak
        if share > limit and not roofline.suspect:
            unmarked.append(share)
        sheet = roofline.share.share_of_datasheet
        if sheet is not None and sheet.central > limit and not roofline.datasheet_suspect:
            unmarked.append(sheet.central)
    return unmarked


def cell_match(
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


def _decision_document(decision: ShareDecision) -> dict[str, Any]:
    """The share decision behind the datasheet peak: the model, the count and its range, the clock used
    and every clock's peak, the evidence."""
    top = decision.ceiling
    return {
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


def _roofline(
    result: Result, peaks: MeasuredPeaks | None, cache_dir: Path, match: ChipMatch | None
) -> Roofline | None:
    """The result's roofline position; None without measured peaks or a time per sample."""
    from accelbench.normalize.roofline import roofline_figures

    seconds = _seconds_per_sample(result)
    if peaks is None or seconds is None:
        return None
    bf16 = result.head.effective_precision == "bf16" and machine_peak(peaks, "gemm", "bf16")
    dtype = "bf16" if bf16 else "fp32"
    flops_peak, bytes_peak = machine_peak(peaks, "gemm", dtype), machine_peak(peaks, "bandwidth")
    if flops_peak is None or bytes_peak is None:
        return None
    cost = _cost(result, cache_dir)
    position = roofline_figures(cost, seconds, flops_peak.value_per_s, bytes_peak.value_per_s)
    return Roofline(
        position=position,
        share=peak_share(position.achieved_flops_per_s, flops_peak, _datasheet(match).get(dtype)),
        bandwidth=bytes_peak,
        cost=cost,
        time_basis="p50 latency" if result.cell.scenario == "single-stream" else "1 / LoadGen throughput",
        decision=match.decision if match is not None else None,
    )


def _cost(result: Result, cache_dir: Path) -> WorkloadCost:
    """FLOPs and bytes of one sample: a generative cell's mean query, else the workload's forward pass."""
    from accelbench.generation.figures import query_cost
    from accelbench.variants.cost import workload_cost

    if (decode := result.decode) is not None:
        return query_cost(result.cell.workload, result.cell.size, decode)
    return workload_cost(
        result.cell.workload, result.cell.size, cache_dir=cache_dir, variant=result.cell.variant
    )


def _seconds_per_sample(result: Result) -> float | None:
    if result.cell.scenario == "single-stream" and result.latency is not None:
        return result.latency.p50_s
    qps = result.qps
    return 1.0 / qps if qps else None
