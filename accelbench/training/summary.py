"""Summaries of timed runs: the olympic mean of times to quality, throughput and scaling efficiency.

MLPerf Training's olympic mean drops the fastest and the slowest run and averages the rest; a run that
did not reach the target counts as the slowest. With fewer than three runs nothing is dropped. When a
run that did not converge survives the drop, there is no olympic mean (None): too few runs converged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from accelbench.training.loop import RunRecord


def olympic_mean_s(runs: Sequence[RunRecord]) -> float | None:
    """Mean time to quality without the fastest and the slowest run; None when too few converged."""
    times = sorted(r.time_to_quality_s if r.converged else math.inf for r in runs)
    kept = times[1:-1] if len(times) >= 3 else times
    if not kept or math.inf in kept:
        return None
    return sum(kept) / len(kept)


def samples_per_s_per_process(runs: Sequence[RunRecord], processes: int) -> float:
    """Training samples per second per process over all runs (evaluation time included)."""
    seconds = sum(r.time_to_quality_s for r in runs)
    return sum(r.samples for r in runs) / seconds / processes if seconds > 0 else 0.0


def scaling_efficiency(per_process: float, baseline_per_process: float) -> float | None:
    """Per-process throughput with N processes over that of one process with the same threads each."""
    return per_process / baseline_per_process if baseline_per_process > 0 else None
