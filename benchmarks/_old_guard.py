"""The noise guard as of commit 592e5bc, the BEFORE of ``noise_guard.py``: best-of-9 probe, unstable when
it drifted > 5%; "machine busy" when the machine's CPU time minus the process's own exceeded 0.25 cores."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

_N = 384


def old_probe_s() -> float:
    """The old guard's probe: best of 9 calls of a one-thread 384x384 float64 matmul."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((_N, _N)), rng.standard_normal((_N, _N))
    best = float("inf")
    with threadpool_limits(limits=1):
        for _ in range(9):
            start = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - start)
    return best


def old_clock() -> tuple[float, float, float]:
    """The old guard's clock: machine busy seconds (steal included), this process's CPU seconds, wall."""
    with open("/proc/stat") as handle:
        jiffies = [int(f) for f in handle.readline().split()[1:]]
    busy = sum(jiffies[:8]) - jiffies[3] - jiffies[4]
    times = os.times()
    return busy / os.sysconf("SC_CLK_TCK"), times.user + times.system, time.monotonic()


@dataclass(frozen=True, slots=True)
class OldVerdict:
    """What the old guard said about one cell."""

    unstable: bool
    busy_warning: bool
    other_cores: float


class OldGuard:
    """The old guard's begin/end."""

    def begin(self) -> None:
        """Probe, then read the clock."""
        self.before_s = old_probe_s()
        self.clock = old_clock()

    def end(self) -> OldVerdict:
        """Read the clock, probe, judge."""
        busy, own, wall = old_clock()
        after_s = old_probe_s()
        other = max(0.0, ((busy - self.clock[0]) - (own - self.clock[1])) / (wall - self.clock[2]))
        drift = abs(after_s - self.before_s) / self.before_s
        return OldVerdict(drift > 0.05, other > 0.25, other)
