"""The denominator of "% of peak": this machine's best measured rate, the datasheet's, and a suspect check.

A share of peak is only worth reading if nothing measured on the machine beats its denominator. The
measured peak of a kind and dtype is therefore the best of *every* measurement of that kind and dtype the
run's roofline probe made (``accelbench.probe.roofline``): its probes and the libraries it raced them
against, each already the best of its repeated calls. GEMM peaks are ``gemm`` measurements; the memory
roof is the best ``copy`` or ``triad`` measurement (STREAM byte counting). Where the device was matched to
a chip with a datasheet FLOP/s, the datasheet peak of the part used is a second denominator: for a CPU
whose facts give clocks and FLOP/cycle, its decided cores at the clock they can reach (``decided_peak``,
``accelbench.hardware.share``), else the chip peak x chips counted (a range when the fact is uncertain);
its source names the clock and the source class.

A result whose achieved rate exceeds the measured peak (share above ``SUSPECT_SHARE``) is not shown
silently: its ``PeakShare`` is ``suspect`` with a reason, and ``cell_figures.suspect_reasons`` gathers
those reasons per measured peak so the probe's row can say that a result beat it. A share of the
datasheet peak above ``SUSPECT_SHARE`` (its central value) is as impossible: ``datasheet_suspect``, with
its own reason. (The chips counted were already narrowed by the measured peak,
``accelbench.hardware.match.narrowed``, so what is left above 100% is a wrong chip match, datasheet or
FLOP count.) Pure functions; no formatting.
"""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.hardware.chips import Chip
from accelbench.hardware.share import ShareDecision
from accelbench.probe.best import MachinePeak
from accelbench.ranges import Range

SUSPECT_SHARE = 1.0
"""Above this share of the measured peak a figure is suspect: nothing may beat the machine's best."""
_DATASHEET = {"fp32": "peak_fp32_flop_per_s", "bf16": "peak_fp16_flop_per_s"}


@dataclass(frozen=True, slots=True)
class PeakShare:
    """An achieved rate as a share of the measured peak and, when the chip is known, of the datasheet's."""

    achieved_per_s: float
    measured: MachinePeak
    share_of_measured: float
    datasheet_per_s: Range | None = None
    datasheet_source: str = ""
    share_of_datasheet: Range | None = None
    suspect: bool = False
    reason: str = ""
    datasheet_suspect: bool = False
    """The achieved rate is above the datasheet peak of the part used (central share above 100%)."""
    datasheet_reason: str = ""


def datasheet_peak(chip: Chip | None, count: float, dtype: str = "fp32") -> tuple[Range, str] | None:
    """The datasheet FLOP/s of the part used (chip peak x ``count``) and its source; None when unknown.

    ``bf16`` reads the chip's dense fp16/bf16 figure.
    """
    if chip is None or count <= 0 or dtype not in _DATASHEET:
        return None
    fact = getattr(chip, _DATASHEET[dtype])
    if fact is None:
        return None
    clock = chip.max_boost_hz or chip.clock_hz
    at = ""
    if chip.kind == "gpu" and clock is not None:
        at = f", at {clock.value.central / 1e9:.2f} GHz boost (source class {clock.source_class})"
    source = (
        f"{chip.key} {fact.provenance}, source class {fact.source_class} ({fact.source}) x {count:.4g} chips "
        f"counted{at}"
    )
    return fact.value * count, source


def decided_peak(chip: Chip, decision: ShareDecision) -> tuple[Range, str]:
    """The FP32 datasheet FLOP/s of a decided share (``accelbench.hardware.share``): its cores at the clock
    they can reach, and a source naming the model, the count, the clock and its source class."""
    top = decision.ceiling
    ghz = f" {top.clock_hz / 1e9:.2f} GHz" if top.clock_hz else ""
    source = (
        f"{chip.key}: {decision.model}, {decision.count:.4g} chips counted, at {top.name}{ghz} "
        f"(source class {top.source_class}: {top.source})"
    )
    return Range.point(top.flops_per_s), source


def peak_share(
    achieved_per_s: float, measured: MachinePeak, datasheet: tuple[Range, str] | None = None
) -> PeakShare:
    """The shares of ``achieved_per_s``; suspect when it beats the machine's best measurement."""
    if not achieved_per_s > 0 or not measured.value_per_s > 0:
        raise ValueError("an achieved rate and a peak must be positive")
    share = achieved_per_s / measured.value_per_s
    sheet, source = datasheet if datasheet is not None else (None, "")
    suspect = share > SUSPECT_SHARE
    of_sheet = None if sheet is None else Range.point(achieved_per_s) / sheet
    beyond = of_sheet is not None and of_sheet.central > SUSPECT_SHARE
    return PeakShare(
        achieved_per_s=achieved_per_s,
        measured=measured,
        share_of_measured=share,
        datasheet_per_s=sheet,
        datasheet_source=source,
        share_of_datasheet=of_sheet,
        suspect=suspect,
        reason=_suspect_reason(share, measured) if suspect else "",
        datasheet_suspect=beyond,
        datasheet_reason=_datasheet_reason(of_sheet.central, source) if of_sheet and beyond else "",
    )


def _suspect_reason(share: float, measured: MachinePeak) -> str:
    return (
        f"achieved {share:.0%} of the measured {measured.kind} {measured.dtype} peak "
        f"({measured.method}): either the probe missed this machine's ceiling or the FLOP count "
        "overstates the work (a stack skipping work, or a cheaper kernel the count does not know)"
    )


def _datasheet_reason(share: float, source: str) -> str:
    return (
        f"achieved {share:.0%} of the datasheet peak of the part used ({source}): either the chip match "
        "or the chips counted are wrong, or the FLOP count overstates the work"
    )
