"""The noise guard: was a measurement disturbed? Evidence from outside the run, a probe, and the samples.

Shared machines drift between fast and slow phases that the load average does not show (and the load
average is raised by the benchmark itself). Around each measurement the guard keeps (``NoiseProbe``):

- **other load**: CPU time the whole machine spent (``/proc/stat``) minus the run's own process tree's
  (``accelbench.meters.cputime``: the cell, its trial processes, servers, compilers, the runner, the
  orphans the cell adopts and the children the kernel reaped for a parent ignoring SIGCHLD), per second
  of wall time: how many cores *other* processes kept busy while we measured;
- **steal**: CPU time the hypervisor gave to other guests while this VM wanted to run, in cores, judged
  by what the measurement shows of it (``STEAL_SURE_CORES``);
- **the probe**: a fixed amount of one-thread float64 arithmetic timed before and after (the median of
  rounds, each the best of a few calls, ~0.1 s: ``accelbench.meters.reference_probe``);
- **the samples' own shift**: the median latency of the last third of the timed samples against the
  first third's, judged by a test that knows their dispersion (``samples_shift``).

The measurement was **disturbed** (the cell is ``unstable``; measured once more unless the disturbance
is still going on, ``worth_retrying``) when other load reached ``other_load_limit_cores`` or steal
``STEAL_LIMIT_CORES`` (the same share on a big machine), or when the probe drifted beyond the run's
limit and the timed samples (where there are enough) moved the same way; with too few samples the
probe alone decides, unless the caller measures the same work again to corroborate it (``runs_shift``,
``rejudged``: a served curve runs its first point again).
The limit comes from the run's own noise floor, handed to the cell in its spec, never read from a file
(``accelbench.meters.reference_probe``): the probe on
these VMs differs by a median 2-3% between two idle calls a second apart, so a fixed 5% limit alarmed on
a third of idle cells. A shift of the samples with no outside evidence is the stack's own (warm-up,
throttling): a warning. What the guard detects and cannot: ``docs/noise.md``. The evidence is judged in
``accelbench.meters.disturbance`` (its records and rules are re-exported here).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from accelbench.hardware.detect import loadavg_1m
from accelbench.head import NoiseProbe
from accelbench.meters import reference_probe
from accelbench.meters.cputime import (
    AutoReapedWatch,
    CpuClock,
    adopt_orphans,
    cpu_clock,
    remote_server,
    run_root_pid,
    server_roots,
)
from accelbench.meters.disturbance import (
    OTHER_LOAD_LIMIT_CORES,
    OTHER_LOAD_SHARE,
    STEAL_LIMIT_CORES,
    STEAL_SURE_CORES,
    Evidence,
    Shift,
    disturbance,
    other_load_limit_cores,
    outside_disturbance,
    outside_reason,
    recorded,
)
from accelbench.meters.reference_probe import probe_s

__all__ = [
    "OTHER_LOAD_LIMIT_CORES",
    "OTHER_LOAD_SHARE",
    "OTHER_LOAD_WARNING_CORES",
    "STEAL_LIMIT_CORES",
    "STEAL_SURE_CORES",
    "STILL_BUSY_CORES",
    "CpuClock",
    "Evidence",
    "Shift",
    "begin",
    "cpu_clock",
    "disturbance",
    "drift_alone",
    "end",
    "guard_warnings",
    "other_load_cores",
    "other_load_limit_cores",
    "outside_disturbance",
    "outside_reason",
    "probe_s",
    "recorded",
    "rejudged",
    "retry_warnings",
    "runs_shift",
    "samples_shift",
    "unstable_reason",
    "worth_retrying",
]

STILL_BUSY_CORES = 0.5
"""Other load during the closing probe from which a disturbed measurement is not measured again: the
disturbance is still going on, a second attempt would only be disturbed too (``worth_retrying``)."""
OTHER_LOAD_WARNING_CORES = 0.25
"""Other processes' load (in cores) above which a result carries a "machine busy" warning."""
SHIFT_MIN = 0.025
"""Smallest relative move of the samples' median (last third vs first) that corroborates a probe drift."""
SHIFT_WARNING = 0.05
"""Relative move of the samples' median, with no outside evidence, above which a warning is kept."""
SHIFT_SIGMAS = 3.0
"""A shift counts when it exceeds this many standard errors of the difference of the two medians."""
SHIFT_MIN_SAMPLES = 30
"""Fewer timed samples than this: the samples' shift is not judged (None)."""


def other_load_cores(start: CpuClock, end: CpuClock) -> float:
    """Cores kept busy by processes outside the run between two readings (never negative)."""
    wall_s = end.wall_s - start.wall_s
    if wall_s <= 0:
        return 0.0
    others_s = (end.machine_busy_s - start.machine_busy_s) - (end.own_s - start.own_s)
    return max(0.0, others_s / wall_s)


def steal_cores(start: CpuClock, end: CpuClock) -> float:
    """Cores' worth of time the hypervisor stole between two readings."""
    wall_s = end.wall_s - start.wall_s
    return max(0.0, (end.steal_s - start.steal_s) / wall_s) if wall_s > 0 else 0.0


def samples_shift(samples_s: Sequence[float]) -> Shift | None:
    """The shift of the samples (in the order they were timed), or None with too few of them.

    The standard error of each third's median is ``1.2533 sigma / sqrt(n)`` with ``sigma`` the third's
    own robust spread (1.4826 x its median absolute deviation), so a wide latency distribution needs a
    bigger move to count, as pyperf judges a run by its own dispersion.
    """
    values = np.asarray(samples_s, dtype=float)
    if values.size < SHIFT_MIN_SAMPLES:
        return None
    third = values.size // 3
    return _shift(values[:third], values[-third:])


def runs_shift(first_s: Sequence[float], again_s: Sequence[float]) -> Shift | None:
    """The shift of ``again_s`` (the same work measured again at the end) against ``first_s``, judged as
    ``samples_shift`` judges its thirds; None when either has fewer than a third of
    ``SHIFT_MIN_SAMPLES``."""
    first, again = np.asarray(first_s, dtype=float), np.asarray(again_s, dtype=float)
    if min(first.size, again.size) < SHIFT_MIN_SAMPLES // 3:
        return None
    return _shift(first, again)


def _shift(first: np.ndarray, last: np.ndarray) -> Shift | None:
    m_first, m_last = float(np.median(first)), float(np.median(last))
    if m_first <= 0:
        return None
    se = math.hypot(_median_se(first), _median_se(last))
    move = m_last - m_first
    relative = move / m_first
    return Shift(relative, abs(move) > SHIFT_SIGMAS * se and abs(relative) >= SHIFT_MIN)


def _median_se(part: np.ndarray) -> float:
    mad = float(np.median(np.abs(part - np.median(part))))
    return 1.2533 * 1.4826 * mad / math.sqrt(part.size)


@dataclass(frozen=True, slots=True)
class ProbeStart:
    """What was observed before the measurement."""

    probe_s: float
    loadavg: float
    clock: CpuClock
    floor: reference_probe.NoiseFloor
    servers: frozenset[int] = frozenset()
    """Roots of a local server the run measures but did not start (``cputime.server_roots``)."""
    outside_view: str = ""
    """The server the cell measures on another machine (``cputime.remote_server``), else ""."""
    watch: AutoReapedWatch | None = None
    """The tree's auto-reaped children, watched until ``end`` (``cputime.AutoReapedWatch``)."""


def begin(
    floor: Mapping[str, Any] | reference_probe.NoiseFloor | None, serve_url: str | None = None
) -> ProbeStart:
    """Observe before the measurement. ``floor``: the run's noise floor as the cell's spec carries it
    (``CellSpec.noise_floor``; its limit is derived again from its pairs, ``floor_from_dict``), never
    read from a file; None: measured here (~3.4 s). This process becomes the subreaper of what it
    starts (``cputime.adopt_orphans``). A server on this machine behind ``serve_url`` counts as the
    run's; one on another machine is outside the guard's view (``NoiseProbe.outside_view``)."""
    adopt_orphans()
    servers = server_roots(serve_url)
    floor_used = _spec_floor(floor)
    watch = AutoReapedWatch(run_root_pid(), servers)  # before the clock: a child that exits is seen
    return ProbeStart(
        probe_s=probe_s(),
        loadavg=loadavg_1m(),
        clock=cpu_clock(servers=servers),
        floor=floor_used,
        servers=servers,
        outside_view=remote_server(serve_url),
        watch=watch,
    )


def _spec_floor(floor: Mapping[str, Any] | reference_probe.NoiseFloor | None) -> reference_probe.NoiseFloor:
    if floor is None:
        return reference_probe.measure_floor()
    if isinstance(floor, reference_probe.NoiseFloor):
        floor = reference_probe.floor_to_dict(floor)
    return reference_probe.floor_from_dict(floor)


def end(start: ProbeStart, samples_s: Sequence[float] = ()) -> NoiseProbe:
    """Observe after the measurement (``samples_s``: its timed latencies in order) and judge it."""
    gone_s = start.watch.close() if start.watch is not None else 0.0
    clock = _with_gone(cpu_clock(servers=start.servers), gone_s)
    after_s = probe_s()
    closing = _with_gone(cpu_clock(servers=start.servers), gone_s)
    shift = samples_shift(samples_s)
    evidence = Evidence(
        other_cores=other_load_cores(start.clock, clock),
        steal_cores=steal_cores(start.clock, clock),
        drift=abs(after_s - start.probe_s) / start.probe_s if start.probe_s > 0 else 0.0,
        threshold=start.floor.threshold,
        shift=shift,
        probe_slower=after_s > start.probe_s,
        other_limit_cores=other_load_limit_cores(),
    )
    reason = disturbance(evidence)
    return NoiseProbe(
        before_s=start.probe_s,
        after_s=after_s,
        drift=evidence.drift,
        loadavg_before=start.loadavg,
        loadavg_after=loadavg_1m(),
        other_load_cores=evidence.other_cores,
        unstable=bool(reason),
        steal_cores=evidence.steal_cores,
        threshold=evidence.threshold,
        floor=start.floor.median_drift,
        samples_shift=None if shift is None else shift.relative,
        samples_shifted=bool(shift and shift.significant),
        reason=reason,
        other_load_after_cores=other_load_cores(clock, closing),
        outside_view=start.outside_view,
    )


def _with_gone(clock: CpuClock, gone_s: float) -> CpuClock:
    """``clock`` with the run's auto-reaped children's time added to its own time."""
    return dataclasses.replace(clock, own_s=clock.own_s + gone_s)


def drift_alone(probe: NoiseProbe) -> bool:
    """The measurement is ``unstable`` on the probe's drift alone, with no samples judged: neither other
    load nor steal reached its limit (the case ``rejudged`` can settle)."""
    limit = other_load_limit_cores()
    quiet = probe.other_load_cores < limit and (probe.steal_cores or 0.0) < max(STEAL_LIMIT_CORES, limit)
    return probe.unstable and quiet and probe.samples_shift is None


def rejudged(probe: NoiseProbe, shift: Shift | None) -> NoiseProbe:
    """``probe`` judged again with ``shift`` (``runs_shift`` of the same work measured at the start and
    again at the end) as its samples' shift: a drift the work did not share is the probe's own."""
    evidence = Evidence(
        other_cores=probe.other_load_cores,
        steal_cores=probe.steal_cores or 0.0,
        drift=probe.drift,
        threshold=probe.threshold,
        shift=shift,
        probe_slower=probe.after_s > probe.before_s,
        other_limit_cores=other_load_limit_cores(),
    )
    reason = disturbance(evidence)
    return dataclasses.replace(
        probe,
        unstable=bool(reason),
        reason=reason,
        samples_shift=None if shift is None else shift.relative,
        samples_shifted=bool(shift and shift.significant),
    )


def drift_as_warning(probe: NoiseProbe) -> tuple[NoiseProbe, list[str]]:
    """For a measurement with no series of samples to corroborate the probe (a training cell: a few runs
    of different lengths), a drift alone is a warning, not ``unstable``: the probe alone false-alarms on
    2-4% of idle cells (``benchmarks/noise_guard.py``, PROBE1), other load and steal are judged as ever."""
    if not drift_alone(probe):
        return probe, []
    note = f"{probe.reason.removeprefix('unstable: ')}, with no timed series to corroborate it (a warning)"
    return dataclasses.replace(probe, unstable=False, reason=""), [note]


def worth_retrying(probe: NoiseProbe) -> bool:
    """A disturbed measurement is measured again unless other processes were still busy (from
    ``STILL_BUSY_CORES``) during the closing probe: on a machine that stays busy a second attempt is
    disturbed too, and only doubles the cell's time."""
    if not probe.unstable:
        return False
    after = probe.other_load_after_cores
    return after is None or after < STILL_BUSY_CORES


def unstable_reason(probe: NoiseProbe) -> str:
    """Why the measurement is unstable, or "" (a record stored before the reason was: the probe)."""
    if not probe.unstable:
        return ""
    if probe.reason:
        return probe.reason
    limit = probe.threshold
    return f"unstable: reference probe drifted {probe.drift:.0%} during the measurement (limit {limit:.0%})"


def retry_warnings(probe: NoiseProbe) -> list[str]:
    """The warning of a cell measured twice: why its first attempt was discarded (none: measured once)."""
    return [f"measured twice: the first attempt was discarded ({probe.retried})"] if probe.retried else []


def guard_warnings(probe: NoiseProbe) -> list[str]:
    """Warnings a result keeps from its noise record: a busy machine, samples that moved on their own."""
    notes = [probe.outside_view] if probe.outside_view else []
    notes += retry_warnings(probe)
    if probe.other_load_cores > OTHER_LOAD_WARNING_CORES:
        notes.append(f"machine busy: other processes used {probe.other_load_cores:.2f} cores meanwhile")
    shift = probe.samples_shift
    if not probe.unstable and probe.samples_shifted and shift is not None and abs(shift) > SHIFT_WARNING:
        way = "slower" if shift > 0 else "faster"
        notes.append(
            f"the timed samples' last third ran {abs(shift):.0%} {way} than the first, with nothing else "
            "busy: the stack's own drift (warm-up, throttling)"
        )
    return notes
