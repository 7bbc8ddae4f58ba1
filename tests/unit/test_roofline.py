"""Roofline: the pure arithmetic against hand-computed values, the probe race, and a real tiny probe."""

from __future__ import annotations

import dataclasses
import json
import os
import time

import pytest
from rich.console import Console

from accelbench.hardware.cpuinfo import Cache
from accelbench.hardware.detect import detect_machine
from accelbench.normalize import roofline as rf
from accelbench.probe import methods as probe_methods
from accelbench.probe.methods import TimedMethod, array_elements, bf16_support, race
from accelbench.probe.roofline import (
    RATIO_WARNING,
    MeasuredPeaks,
    Measurement,
    Peak,
    measure_peaks,
    phase_budgets,
)
from accelbench.report.roofline import measurements_table, peaks_table
from accelbench.workloads.flops import WorkloadCost

GFLOP, GB = 1e9, 1e9


def cost(flops: float, bytes_moved: float) -> WorkloadCost:
    """A hand-made cost."""
    return WorkloadCost("w", "tiny", int(flops), int(bytes_moved), flops / bytes_moved, "hand")


def test_achieved_flops_and_share_of_peak() -> None:
    assert rf.achieved_flops_per_s(cost(8.2 * GFLOP, 1e8), 0.1) == pytest.approx(82 * GFLOP)
    assert rf.share_of_peak(50 * GFLOP, 200 * GFLOP) == pytest.approx(0.25)


def test_roofline_is_the_minimum_of_the_two_roofs() -> None:
    # peak 100 GFLOP/s, 20 GB/s: ridge at 5 FLOP/byte
    assert rf.ridge_point(100 * GFLOP, 20 * GB) == pytest.approx(5.0)
    assert rf.attainable_flops_per_s(2.0, 100 * GFLOP, 20 * GB) == pytest.approx(40 * GFLOP)
    assert rf.attainable_flops_per_s(10.0, 100 * GFLOP, 20 * GB) == pytest.approx(100 * GFLOP)


def test_bound_and_kind_compute_vs_memory() -> None:
    compute = cost(1 * GFLOP, 0.1 * GB)  # AI 10: 0.01 s of compute, 0.005 s of memory
    assert rf.roofline_bound_s(compute, 100 * GFLOP, 20 * GB) == pytest.approx(0.01)
    assert rf.bound_kind(compute, 100 * GFLOP, 20 * GB) == "compute"
    memory = cost(1 * GFLOP, 1 * GB)  # AI 1: 0.01 s of compute, 0.05 s of memory
    assert rf.roofline_bound_s(memory, 100 * GFLOP, 20 * GB) == pytest.approx(0.05)
    assert rf.bound_kind(memory, 100 * GFLOP, 20 * GB) == "memory"


def test_roofline_figures_of_a_memory_bound_pass() -> None:
    figures = rf.roofline_figures(cost(1 * GFLOP, 1 * GB), 0.1, 100 * GFLOP, 20 * GB)
    assert figures.achieved_flops_per_s == pytest.approx(10 * GFLOP)
    assert figures.share_of_peak == pytest.approx(0.1)
    assert figures.attainable_flops_per_s == pytest.approx(20 * GFLOP)
    assert figures.share_of_roofline == pytest.approx(0.5)
    assert figures.roofline_bound_s == pytest.approx(0.05)
    assert figures.bound_kind == "memory"


@pytest.mark.parametrize("bad", [0.0, -1.0])
def test_non_positive_denominators_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        rf.achieved_flops_per_s(cost(1, 1), bad)
    with pytest.raises(ValueError, match="positive"):
        rf.roofline_bound_s(cost(1, 1), bad, 1.0)


def test_phase_budgets_add_up_to_the_budget() -> None:
    assert sum(phase_budgets(10.0, bf16=True).values()) == pytest.approx(10.0)
    assert set(phase_budgets(10.0, bf16=False)) == {"gemm-fp32", "bandwidth"}


def test_bf16_needs_avx512_bf16_or_amx() -> None:
    assert bf16_support(("avx512f", "avx512_bf16"))[0]
    assert bf16_support(("amx_bf16", "amx_tile"))[0]


def test_bandwidth_arrays_are_well_above_the_last_level_cache() -> None:
    machine = detect_machine(probe_gpus=False)
    l3 = (Cache(3, "unified", 32 * 2**20, 2),)
    assert array_elements(dataclasses.replace(machine, caches=l3)) * 4 == 128 * 2**20
    assert array_elements(dataclasses.replace(machine, caches=())) * 4 == 128 * 2**20
    tiny = (Cache(2, "unified", 2**20, 1),)
    assert array_elements(dataclasses.replace(machine, caches=tiny)) * 4 == probe_methods.MIN_ARRAY_BYTES


def _sleeper(seconds: float) -> probe_methods.Setup:
    return lambda: lambda: time.sleep(seconds)


def test_race_interleaves_and_skips_sizes_that_do_not_fit() -> None:
    small = TimedMethod("probe", "gemm", "m", "fp32", 1, 1.0, _sleeper(0.01))
    other = TimedMethod("library", "gemm", "m2", "fp32", 1, 1.0, _sleeper(0.01))
    big = TimedMethod("probe", "gemm", "m", "fp32", 2, 1000.0, _sleeper(0.01))  # estimated 10 s
    start = time.perf_counter()
    race([big, small, other], phase_s=0.3)
    assert time.perf_counter() - start < 0.3 + 0.1
    assert big.times_s == [] and big.call is None
    assert len(small.times_s) >= 5 and abs(len(small.times_s) - len(other.times_s)) <= 1


def _peaks() -> MeasuredPeaks:
    m = Measurement(
        "probe", "gemm", "torch.mm", "fp32", 1024, 2, 2.0 * 1024**3, 0.02, 5, 2.0 * 1024**3 / 0.02
    )
    lib = dataclasses.replace(
        m, role="library", method="numpy.matmul", best_s=0.025, value_per_s=m.work / 0.025
    )
    best = ("torch.mm size 1024", lib.value_per_s, "numpy.matmul size 1024", 1.25, "hand", (m, lib))
    gemm = Peak("gemm", "fp32", m.value_per_s, "flop/s", 2, *best)
    copy = Peak("copy", "fp32", 20e9, "byte/s", 2, "torch.Tensor.copy_", None, "", None, "hand")
    return MeasuredPeaks(
        peaks=(gemm, copy),
        machine_fingerprint="abc",
        measured_at="2026-11-30T15:00:00+00:00",
        threads=2,
        budget_s=1.0,
        wall_s=1.1,
        other_load_cores=0.1,
        libraries={"numpy": "2"},
        warnings=("w",),
    )


def test_peaks_round_trip_through_json() -> None:
    peaks = _peaks()
    assert MeasuredPeaks.from_dict(json.loads(json.dumps(peaks.to_dict()))) == peaks
    assert peaks.gemm_flops_per_s("fp32") == pytest.approx(2.0 * 1024**3 / 0.02)
    assert peaks.gemm_flops_per_s("bf16") is None
    assert peaks.bandwidth_bytes_per_s() == 20e9
    with pytest.raises(ValueError, match="schema_version"):
        MeasuredPeaks.from_dict({**peaks.to_dict(), "schema_version": 99})


def test_tables_show_rates_in_decimal_units() -> None:
    console = Console(record=True, width=200)
    console.print(peaks_table(_peaks()))
    console.print(measurements_table(_peaks()))
    text = console.export_text()
    assert "107.4 GFLOP/s" in text and "20.0 GB/s" in text and "1.25" in text


def test_a_tiny_probe_on_this_machine() -> None:
    threads = len(os.sched_getaffinity(0))
    start = time.perf_counter()
    peaks = measure_peaks(threads, budget_s=2.0)
    assert time.perf_counter() - start < 6.0
    kinds = {(p.kind, p.dtype) for p in peaks.peaks}
    assert {("gemm", "fp32"), ("copy", "fp32"), ("triad", "fp32")} <= kinds
    for peak in peaks.peaks:
        assert peak.value_per_s > 0 and peak.threads == threads and peak.measurements
        # How close the probe comes to the library is the machine's hour (make test runs lint beside this
        # test; CI saw 0.45): benchmarks/probe.py measures it. Here: a ratio is there, and a low one is said.
        ratio = peak.ratio_to_best_library
        assert ratio is not None and ratio > 0, peak
        assert ratio == pytest.approx(peak.value_per_s / peak.best_library_per_s)  # type: ignore[operator]
        said = any(w.startswith(f"{peak.kind} {peak.dtype}: the probe is below") for w in peaks.warnings)
        assert said == (ratio < RATIO_WARNING), peaks.warnings
    assert peaks.gemm_flops_per_s() > 1e9  # type: ignore[operator]
    assert peaks.machine_fingerprint == detect_machine().fingerprint
    assert "numpy" in peaks.libraries and "torch" in peaks.libraries
    assert MeasuredPeaks.from_dict(json.loads(json.dumps(peaks.to_dict()))) == peaks
