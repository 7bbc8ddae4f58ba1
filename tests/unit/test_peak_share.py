"""The "% of peak" denominator: the machine's best measurement, the datasheet's, and the suspect mark."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelbench.hardware.chips import Chip, Fact
from accelbench.normalize.cell_figures import cell_figures, shares_above, suspect_reasons
from accelbench.normalize.peak_share import SUSPECT_SHARE, datasheet_peak, peak_share
from accelbench.probe.best import machine_peak
from accelbench.probe.roofline import MeasuredPeaks, Peak
from accelbench.ranges import Range
from accelbench.report import roofline as roofline_report
from accelbench.report import terminal
from accelbench.workloads.flops import WorkloadCost
from tests.unit.report_cases import GFLOP, gemm_peaks, result


def test_the_peak_is_the_best_measurement_library_included() -> None:
    best = machine_peak(gemm_peaks(143.8, 193.1), "gemm")
    assert best is not None
    assert best.value_per_s == pytest.approx(193.1 * GFLOP) and best.role == "library"
    assert best.probe_per_s == pytest.approx(143.8 * GFLOP)
    assert "numpy.matmul" in best.method and "best of 2 calls" in best.method


def test_the_memory_roof_is_the_best_of_copy_and_triad() -> None:
    roof = machine_peak(gemm_peaks(), "bandwidth")
    assert roof is not None and roof.value_per_s == pytest.approx(25 * GFLOP) and roof.unit == "byte/s"
    assert "triad" in roof.method


def test_a_peak_without_measurements_counts_by_its_value_and_absent_ones_are_none() -> None:
    bare = Peak("gemm", "bf16", 300 * GFLOP, "flop/s", 2, "torch.mm size 1024", None, "", None, "")
    peaks = MeasuredPeaks((bare,), "fp", "now")
    found = machine_peak(peaks, "gemm", "bf16")
    assert found is not None and found.value_per_s == 300 * GFLOP and found.role == "probe"
    assert machine_peak(peaks, "gemm", "fp32") is None and machine_peak(peaks, "bandwidth") is None


def test_a_share_above_the_measured_peak_is_suspect_with_a_reason() -> None:
    best = machine_peak(gemm_peaks(), "gemm")
    assert best is not None
    fine = peak_share(150 * GFLOP, best)
    assert fine.share_of_measured == pytest.approx(150 / 193.1) and not fine.suspect and fine.reason == ""
    beaten = peak_share(208.5 * GFLOP, best)  # the 108% of the issue, against the best measurement
    assert beaten.share_of_measured > SUSPECT_SHARE and beaten.suspect
    assert "108%" in beaten.reason and "numpy.matmul" in beaten.reason


def test_the_datasheet_peak_is_the_part_used_with_its_share() -> None:
    fact = Fact(Range.between(3.0e12, 4.0e12, 3.5e12), "datasheet", "vendor sheet")
    chip = Chip("cpu-x", "v", "X", "cpu", "s", peak_fp32_flop_per_s=fact)
    found = datasheet_peak(chip, 0.1, "fp32")
    assert found is not None
    sheet, source = found
    assert sheet.central == pytest.approx(3.5e11) and "cpu-x" in source and "0.1 chips" in source
    best = machine_peak(gemm_peaks(), "gemm")
    assert best is not None
    share = peak_share(175 * GFLOP, best, found)
    assert share.share_of_datasheet is not None and share.share_of_datasheet.central == pytest.approx(0.5)
    assert share.share_of_datasheet.low < 0.5 < share.share_of_datasheet.high
    assert datasheet_peak(chip, 0.1, "bf16") is None and datasheet_peak(None, 1.0) is None


def test_cell_figures_mark_every_share_above_the_peak(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A synthetic result beating the machine's best GEMM: marked suspect, never shown silently."""
    cost = WorkloadCost(
        "resnet50", "tiny", flops=5 * 10**9, bytes_moved=10**8, arithmetic_intensity=50.0, method="synthetic"
    )
    monkeypatch.setattr("accelbench.variants.cost.workload_cost", lambda *a, **k: cost)
    fast = result("fast", "offline", qps=50.0)  # 250 GFLOP/s > 193.1
    slow = result("slow", "offline", qps=20.0, with_figures=False)  # 100 GFLOP/s
    found = cell_figures([fast, slow], {}, gemm_peaks(), tmp_path)
    high = found[fast.cell.key].to_dict()["roofline"]
    low = found[slow.cell.key].to_dict()["roofline"]
    assert high["share_of_peak"] == pytest.approx(250 / 193.1) and high["suspect"]
    assert high["peak_role"] == "library" and high["probe_peak_flops_per_s"] == pytest.approx(143.8 * GFLOP)
    assert low["share_of_peak"] == pytest.approx(100 / 193.1) and not low["suspect"]
    assert shares_above(found.values()) == []
    reasons = suspect_reasons(found)
    assert list(reasons) == ["gemm fp32"] and fast.cell.key in reasons["gemm fp32"][0]
    checks = terminal.checks_table([fast, slow], found)
    shares = [str(text) for text in checks.columns[8].cells]
    assert any("SUSPECT" in text for text in shares) and sum("SUSPECT" in t for t in shares) == 1
    assert "SUSPECT" in str(checks.caption) and fast.cell.key in str(checks.caption)
    table = roofline_report.peaks_table(gemm_peaks(), reasons)
    gemm_row = [str(next(iter(column.cells))) for column in table.columns]
    assert "SUSPECT" in gemm_row[-1] and gemm_row[7] == "193.1 GFLOP/s" and "numpy.matmul" in gemm_row[8]
