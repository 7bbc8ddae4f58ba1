"""``accelbench probe`` end to end: JSON peaks with their ratio to the best library, tables, bad input."""

from __future__ import annotations

import json
import os
import subprocess

from accelbench.probe.roofline import MeasuredPeaks
from tests.e2e import cli


def test_probe_json_reports_peaks_and_their_ratio_to_the_best_library() -> None:
    done = accelbench("probe", "--json", "--budget-s", "3")
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(done.stdout)
    peaks = MeasuredPeaks.from_dict(document)
    assert peaks.threads == len(os.sched_getaffinity(0)) and peaks.budget_s == 3.0
    assert {(p.kind, p.dtype) for p in peaks.peaks} >= {("gemm", "fp32"), ("copy", "fp32"), ("triad", "fp32")}
    for peak in peaks.peaks:
        assert peak.unit == ("flop/s" if peak.kind == "gemm" else "byte/s")
        assert peak.value_per_s > 0 and peak.best_library_per_s and peak.best_library
        assert peak.ratio_to_best_library is not None and peak.ratio_to_best_library > 0.5
        roles = {m.role for m in peak.measurements}
        assert roles == {"probe", "library"}
    assert peaks.gemm_flops_per_s() > 1e9  # type: ignore[operator]


def test_probe_prints_tables_with_threads_option() -> None:
    done = accelbench("probe", "--budget-s", "1", "--threads", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Measured peaks (threads 1," in done.stdout and "GFLOP/s" in done.stdout and "GB/s" in done.stdout


def test_bad_budget_is_a_one_line_error() -> None:
    done = accelbench("probe", "--budget-s", "0")
    assert done.returncode == 2
    assert done.stderr.startswith("accelbench: error:") and done.stderr.count("\n") == 1


def accelbench(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    """The CLI with this module's default time limit."""
    return cli.accelbench(*args, timeout_s=timeout_s)
