"""The noise guard: a fixed reference probe before and after each measurement, and other processes' load.

Shared machines drift between fast and slow phases that the load average does not show (and the load
average is raised by the benchmark itself). Two observations are kept with every result:
- the probe: a fixed amount of dense arithmetic timed before and after; when the two differ by more than
  ``DRIFT_THRESHOLD`` the measurement is marked unstable;
- other load: CPU time the whole machine spent (``/proc/stat``) minus what this process spent, per
  second of wall time, i.e. how many cores other processes kept busy while we measured.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from accelbench.hardware.detect import loadavg_1m
from accelbench.results import NoiseProbe

DRIFT_THRESHOLD = 0.05
"""Relative change of the probe time above which a cell is marked unstable."""
OTHER_LOAD_WARNING_CORES = 0.25
"""Other processes' load (in cores) above which a result carries a "machine busy" warning."""

_PROBE_N = 384
_PROBE_REPEATS = 9


def probe_s() -> float:
    """Best-of-``_PROBE_REPEATS`` time of a fixed float64 384x384 matmul on one BLAS thread (~2 ms each).

    One thread, because a multi-threaded BLAS call right after a framework's own thread pool has run
    reads 4-12% slower on this 2-core VM for reasons that are not the machine's drift (measured: after
    0.5 s of torch inference, the 2-thread probe was a median 5% slower than before even 0.5 s later;
    the 1-thread probe stayed within 3%).
    """
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    a = rng.standard_normal((_PROBE_N, _PROBE_N))
    b = rng.standard_normal((_PROBE_N, _PROBE_N))
    best = float("inf")
    with threadpool_limits(limits=1):
        for _ in range(_PROBE_REPEATS):
            start = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - start)
    return best


@dataclass(frozen=True, slots=True)
class CpuClock:
    """A reading of the machine's busy CPU seconds, this process's CPU seconds, and wall time."""

    machine_busy_s: float
    own_s: float
    wall_s: float


def cpu_clock(proc_stat: str = "/proc/stat") -> CpuClock:
    """Read the clocks now (machine busy time is 0 where /proc/stat is unreadable)."""
    times = os.times()
    return CpuClock(_machine_busy_s(proc_stat), times.user + times.system, time.monotonic())


def _machine_busy_s(proc_stat: str) -> float:
    try:
        with open(proc_stat) as handle:
            fields = handle.readline().split()[1:]
    except OSError:
        return 0.0
    jiffies = [int(f) for f in fields]
    idle = jiffies[3] + (jiffies[4] if len(jiffies) > 4 else 0)  # idle + iowait
    busy = sum(jiffies[:8]) - idle  # guest time is already inside user/nice
    return busy / os.sysconf("SC_CLK_TCK")


def other_load_cores(start: CpuClock, end: CpuClock) -> float:
    """Cores kept busy by other processes between two readings (never negative)."""
    wall_s = end.wall_s - start.wall_s
    if wall_s <= 0:
        return 0.0
    others_s = (end.machine_busy_s - start.machine_busy_s) - (end.own_s - start.own_s)
    return max(0.0, others_s / wall_s)


@dataclass(frozen=True, slots=True)
class ProbeStart:
    """What was observed before the measurement."""

    probe_s: float
    loadavg: float
    clock: CpuClock


def begin() -> ProbeStart:
    """Observe before the measurement."""
    return ProbeStart(probe_s(), loadavg_1m(), cpu_clock())


def end(start: ProbeStart) -> NoiseProbe:
    """Observe after the measurement and build the stored record."""
    other = other_load_cores(start.clock, cpu_clock())
    after_s = probe_s()
    drift = abs(after_s - start.probe_s) / start.probe_s if start.probe_s > 0 else 0.0
    return NoiseProbe(
        before_s=start.probe_s,
        after_s=after_s,
        drift=drift,
        loadavg_before=start.loadavg,
        loadavg_after=loadavg_1m(),
        other_load_cores=other,
        unstable=drift > DRIFT_THRESHOLD,
    )


def unstable_reason(probe: NoiseProbe) -> str:
    """Why the measurement is unstable, or "" (the probe drifted past ``DRIFT_THRESHOLD``)."""
    if not probe.unstable:
        return ""
    limit = DRIFT_THRESHOLD
    return f"unstable: reference probe drifted {probe.drift:.0%} during the measurement (limit {limit:.0%})"
