"""The share of the chip this machine is, decided from evidence: every share and the decision, repeated.

Detects the machine, matches its chip, then measures the roofline peaks ``REPEATS`` times (as ``accelbench
run`` does before its cells) and prints, for each measurement: the measured FP32 GEMM peak, the datasheet
peak of SMT siblings and of whole cores at every clock the chip's facts give (and the measured peak as a
share of each), and the decision (model, count, clock judged against, failed assumption if any). The last
lines count how often SMT siblings were ruled out and how often no model explained the measured peak: on a
machine whose chip match is right, the second is the guard's false-alarm rate (a datasheet SUSPECT on an
honest run). Usage: ``python benchmarks/normalize_share.py [REPEATS] [BUDGET_S]``.
"""

from __future__ import annotations

import os
import sys
import time

from accelbench.hardware.detect import detect_machine
from accelbench.hardware.match import match_machine, narrowed
from accelbench.hardware.share import clock_aware, clock_peaks
from accelbench.probe.best import machine_peak
from accelbench.probe.roofline import measure_peaks


def main() -> None:
    """Print the shares and the decision of each repeat, then the counts."""
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    budget_s = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
    machine = detect_machine(probe_gpus=False)
    match = match_machine(machine)
    chip = match.chip
    print(
        f"CPU {machine.cpu_model!r} ({machine.microarchitecture}), {machine.logical_cores} logical CPUs, "
        f"{machine.physical_cores} cores as the guest reports; VM: {machine.virtual_machine}"
    )
    print(f"matched: {chip.key if chip else None} ({match.basis}); {match.count_basis}")
    if chip is None or not clock_aware(chip) or chip.cores is None:
        sys.exit("the chip has no clocks and FP32 FLOP/cycle: nothing to decide")
    socket = chip.cores.value.central
    high = match.count_high if match.count_high is not None else match.count
    for label, count in (("SMT siblings", match.count), ("whole cores", high)):
        sheet = ", ".join(f"{p.name} {p.flops_per_s / 1e9:.1f}" for p in clock_peaks(chip, count * socket))
        print(f"datasheet GFLOP/s, {label} ({count * socket:g} cores): {sheet}")
    ruled_out = failed = 0
    for repeat in range(repeats):
        start = time.perf_counter()
        peaks = measure_peaks(len(os.sched_getaffinity(0)), budget_s=budget_s, machine=machine)
        seconds = time.perf_counter() - start
        gemm = machine_peak(peaks, "gemm", "fp32")
        measured = gemm.value_per_s if gemm is not None else None
        decided = narrowed(match, measured)
        decision = decided.decision
        assert decision is not None
        shares = ", ".join(
            f"{p.name} {measured / p.flops_per_s:.0%}" if measured else "-"
            for p in (*decision.smt_peaks, *decision.peaks)
        )
        ruled_out += decision.model == "whole cores" and bool(decision.smt_peaks)
        failed += bool(decision.failed)
        print(
            f"[{repeat + 1}/{repeats}] measured {measured / 1e9 if measured else float('nan'):.1f} GFLOP/s "
            f"in {seconds:.1f} s; measured as a share of (SMT siblings..., whole/decided...): {shares}"
        )
        print(f"    decision: {decision.summary()}")
        if decision.failed:
            print(f"    FAILED: {decision.failed}")
    print(
        f"SMT siblings ruled out in {ruled_out}/{repeats} repeats; no model explained the peak in "
        f"{failed}/{repeats} (false alarms when the chip match is right)"
    )


if __name__ == "__main__":
    main()
