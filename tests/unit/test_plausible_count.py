"""Physical plausibility: what the machine measured narrows the chips counted, and a share above 100% of
the datasheet peak is marked SUSPECT like one above the measured peak (issue 29, item 5)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from accelbench.hardware.chips import Chip, ChipTable, Fact
from accelbench.hardware.detect import machine_to_dict
from accelbench.hardware.match import match_machine, narrowed
from accelbench.normalize.cell_figures import cell_figures, shares_above
from accelbench.ranges import Range
from accelbench.report import terminal
from accelbench.workloads.flops import WorkloadCost
from tests.unit.report_cases import GFLOP, gemm_peaks, result
from tests.unit.test_chip_match import _machine

SHEET = Fact(Range.point(5.0e12), "datasheet", "vendor sheet")
"""A 64-core, 128-thread socket at 5 TFLOP/s fp32: 78.1 GFLOP/s per hardware thread, 156.3 per core."""
CHIP = Chip(
    "CPU: Synthetic 64", "AMD", "Synthetic 64", "cpu", "test", microarchitecture="Zen 3",
    cores=Fact(Range.point(64), "datasheet", "s"), threads=Fact(Range.point(128), "datasheet", "s"),
    peak_fp32_flop_per_s=SHEET,
)  # fmt: skip
TABLE = ChipTable({CHIP.key: CHIP})
VM = _machine("AMD EPYC Processor", "Zen 3")  # 2 vCPUs: 1/64 of a socket (threads) or 2/64 (cores)


def test_a_measured_peak_above_the_low_counts_datasheet_rules_that_count_out() -> None:
    match = match_machine(VM, TABLE)
    assert (match.count, match.count_high) == pytest.approx((1 / 64, 2 / 64))
    assert narrowed(match, 70 * GFLOP) == match  # 70 < 78.1: both counts stay possible
    ruled = narrowed(match, 120 * GFLOP)  # above 78.1 (one core's threads), below 156.3 (two cores)
    assert ruled.count == pytest.approx(2 / 64) and ruled.count_high is None and ruled.count_range.is_point
    assert "120.0 GFLOP/s is above the datasheet peak of 0.0156 chips (78.1 GFLOP/s)" in ruled.notes[-1]
    assert "ruled out" in ruled.count_basis and ruled.threads_per_core == 1.0


def test_a_measured_peak_above_every_count_narrows_nothing_and_says_so() -> None:
    match = match_machine(VM, TABLE)
    beyond = narrowed(match, 174.8 * GFLOP)  # the Zen 3 VM: above 156.3 too
    assert (beyond.count, beyond.count_high) == (match.count, match.count_high)
    assert "highest count (0.0312 chips)" in beyond.notes[-1] and "not plausible" in beyond.notes[-1]
    no_sheet = match_machine(
        VM, ChipTable({CHIP.key: Chip(CHIP.key, "AMD", "X", "cpu", "t", cores=CHIP.cores)})
    )
    assert narrowed(no_sheet, 1e15) == no_sheet


def _documents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, qps: tuple[float, ...], probe_gflops: float):
    cost = WorkloadCost("resnet50", "tiny", 10**9, 10**7, 100.0, "synthetic")  # 1 GFLOP per sample
    monkeypatch.setattr("accelbench.variants.cost.workload_cost", lambda *a, **k: cost)
    results = [result(f"stack{n}", "offline", qps=q) for n, q in enumerate(qps)]
    peaks = gemm_peaks(probe_gflops, probe_gflops)
    return results, cell_figures(results, machine_to_dict(VM), peaks, tmp_path, TABLE)


def test_the_datasheet_share_uses_the_count_the_measurement_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Measured 120 GFLOP/s: the low count (78.1 GFLOP/s) is ruled out, so 100 GFLOP/s is 64% of the
    datasheet peak of two cores (156.3), not 128% of one core's threads; per-chip figures use it too."""
    results, found = _documents(tmp_path, monkeypatch, (100.0,), 120.0)
    documents = {key: cell.to_dict() for key, cell in found.items()}
    roofline = documents[results[0].cell.key]["roofline"]
    assert roofline["share_of_datasheet_peak"]["central"] == pytest.approx(100 / 156.25)
    assert not roofline["datasheet_suspect"] and "0.03125 chips counted" in roofline["datasheet_source"]
    chip = documents[results[0].cell.key]["figures"]["chip"]
    assert chip["denominator"]["low"] == chip["denominator"]["high"] == pytest.approx(2 / 64)
    assert shares_above(found.values()) == []


def test_a_share_above_the_datasheet_peak_is_suspect_in_the_document_and_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Measured 174.8 GFLOP/s beats every count, so none is narrowed: 170 GFLOP/s is 218% and 100 GFLOP/s
    128% of the low count's datasheet peak (78.1), both SUSPECT in the datasheet column with a reason,
    while both stay under the measured peak (no SUSPECT there)."""
    results, found = _documents(tmp_path, monkeypatch, (170.0, 100.0), 174.8)
    fast, slow = (found[r.cell.key].to_dict()["roofline"] for r in results)
    assert fast["share_of_datasheet_peak"]["central"] == pytest.approx(170 / 78.125)  # count not narrowed
    assert fast["datasheet_suspect"] and not fast["suspect"]
    assert "of the datasheet peak of the part used" in fast["datasheet_suspect_reason"]
    assert slow["share_of_datasheet_peak"]["central"] > 1 and slow["datasheet_suspect"]
    assert shares_above(found.values()) == []
    marked = found[results[0].cell.key]
    assert marked.roofline is not None
    share = dataclasses.replace(marked.roofline.share, datasheet_suspect=False)
    unmarked = dataclasses.replace(marked, roofline=dataclasses.replace(marked.roofline, share=share))
    assert shares_above([unmarked]) == [pytest.approx(170 / 78.125)]
    columns = terminal.checks_table(results, found).columns
    measured = [str(text) for text in columns[8].cells]
    datasheet = [str(text) for text in columns[9].cells]
    assert not any("SUSPECT" in text for text in measured)
    assert all("SUSPECT" in text for text in datasheet) and datasheet[0].startswith("[bold red]217.6")
