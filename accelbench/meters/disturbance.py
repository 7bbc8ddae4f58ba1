"""The noise guard's judgement: was a measurement disturbed, and was it from outside the run?

``accelbench.meters.noise`` observes a measurement (other processes' load, steal, the reference probe,
the samples' shift) into ``Evidence``; this module judges it (``disturbance``), and tells apart the part
only something outside the run causes (``outside_disturbance``: other processes, the hypervisor), which
a timing audit's failure is weighed against (``accelbench.audits.status``). ``recorded`` rebuilds the
evidence from a stored noise record, so ``verify`` judges as the run did.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from accelbench.head import NoiseProbe

OTHER_LOAD_LIMIT_CORES = 0.1
"""Other processes' load (in cores, averaged over the measurement) from which it counts as disturbed, or
``OTHER_LOAD_SHARE`` of the usable cores where that is more (``other_load_limit_cores``)."""
OTHER_LOAD_SHARE = 0.05
"""A share of the machine's usable cores: another process taking 5% of the capacity a cell may use can
move its headline by 5%, the smallest change a headline is judged on (0.1 cores of 2)."""
STEAL_LIMIT_CORES = 0.1
"""Hypervisor steal (in cores, averaged over the measurement) from which it counts as disturbed when the
measurement shows it (its samples shifted or its probe drifted), or the share of a big machine's cores
that other load is judged by, where that is more."""
STEAL_SURE_CORES = 0.25
"""Steal (in cores on a machine of up to 2 usable cores, scaled with the steal limit on a bigger one) from
which a measurement is disturbed whatever it shows: spread evenly, it slows each of two vCPUs by 12%."""


@dataclass(frozen=True, slots=True)
class Shift:
    """The timed samples' median, last third against first third."""

    relative: float
    """``median(last) / median(first) - 1``: positive when the samples got slower."""
    significant: bool
    """Beyond ``noise.SHIFT_SIGMAS`` standard errors of the difference and at least ``noise.SHIFT_MIN``."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the guard judges a measurement by."""

    other_cores: float
    steal_cores: float
    drift: float
    threshold: float
    """The probe's drift limit (the run's floor-derived one)."""
    shift: Shift | None
    probe_slower: bool
    """The probe after the measurement was slower than before it."""
    other_limit_cores: float = OTHER_LOAD_LIMIT_CORES


def disturbance(evidence: Evidence) -> str:
    """Why the evidence says the measurement was disturbed, or "" (see the module text)."""
    outside = outside_disturbance(evidence)
    if outside:
        return outside
    drift, shift = evidence.drift, evidence.shift
    if drift <= evidence.threshold:
        return ""
    probe = f"reference probe drifted {drift:.0%} during the measurement (limit {evidence.threshold:.0%})"
    if shift is None:
        return f"unstable: {probe}"
    if shift.significant and (shift.relative > 0) == evidence.probe_slower:
        return f"unstable: {probe} and the timed samples moved {shift.relative:+.0%} with it"
    return ""


def _moved(evidence: Evidence) -> bool:
    """The measurement shows a disturbance of its own: the samples shifted significantly (either way: a
    steal early makes the first third slower), or the probe drifted beyond its limit."""
    shift = evidence.shift
    return bool(shift and shift.significant) or evidence.drift > evidence.threshold


def _how(evidence: Evidence) -> str:
    shift = evidence.shift
    if shift is not None and shift.significant:
        return f" and the timed samples moved {shift.relative:+.0%}"
    if evidence.drift > evidence.threshold:
        return f" and the reference probe drifted {evidence.drift:.0%}"
    return ""


def other_load_limit_cores(cores: int | None = None) -> float:
    """``OTHER_LOAD_LIMIT_CORES`` or ``OTHER_LOAD_SHARE`` of ``cores`` (default: this process's usable
    cores), whichever is more."""
    usable = cores if cores is not None else len(os.sched_getaffinity(0))
    return max(OTHER_LOAD_LIMIT_CORES, OTHER_LOAD_SHARE * usable)


def outside_disturbance(evidence: Evidence) -> str:
    """The part of ``disturbance`` that only something outside the run causes: other processes' load,
    the hypervisor's steal; or "". Not the probe's drift nor the samples' shift, which the stack's own
    work moves too. A timing audit's failure is weighed against it (``accelbench.audits.status``)."""
    other, steal, limit = evidence.other_cores, evidence.steal_cores, evidence.other_limit_cores
    if other >= limit:
        return f"unstable: other processes kept {other:.2f} cores busy while it ran (limit {limit:.2f})"
    limit = max(STEAL_LIMIT_CORES, limit)
    if steal >= limit and (steal >= STEAL_SURE_CORES * limit / STEAL_LIMIT_CORES or _moved(evidence)):
        stole = f"the hypervisor stole {steal:.2f} cores while it ran (limit {limit:.2f})"
        return f"unstable: {stole}{_how(evidence)}"
    return ""


def recorded(record: NoiseProbe, other_limit_cores: float) -> Evidence:
    """The evidence a stored noise record was judged by, with the other-load limit ``other_limit_cores``
    (``other_load_limit_cores`` of the machine's usable cores)."""
    before, after = float(record.before_s), float(record.after_s)
    shift = record.samples_shift
    return Evidence(
        other_cores=float(record.other_load_cores),
        steal_cores=float(record.steal_cores),
        drift=abs(after - before) / before if before > 0 else 0.0,
        threshold=float(record.threshold),
        shift=None if shift is None else Shift(float(shift), record.samples_shifted),
        probe_slower=after > before,
        other_limit_cores=other_limit_cores,
    )


def outside_reason(record: NoiseProbe | None, other_limit_cores: float | None = None) -> str:
    """``outside_disturbance`` of a noise record judged again from its numbers (None: the limit of this
    process's usable cores, as ``end`` judged it), or "" without a record."""
    if record is None:
        return ""
    limit = other_load_limit_cores() if other_limit_cores is None else other_limit_cores
    return outside_disturbance(recorded(record, limit))
