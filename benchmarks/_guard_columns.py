"""The guards of ``noise_guard.py`` as columns: a synthetic cell (``Cell``) and each guard's verdict on it,
its retry and its "machine busy" warning (BEFORE, ROUND1, AFTER, PROBE1/PROBE3, CURVE, TRAIN: see
``noise_guard.py``'s module text)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from _old_guard import OldVerdict

from accelbench.head import NoiseProbe
from accelbench.meters import noise, reference_probe

PROBES = 3
"""Probes at each end of the PROBE3 guard (their medians): tried for the served curves on 2026-12-04, no
fewer idle alarms than one probe (4 of 50 against 3), so not used; the curves corroborate a drift by
measuring their first point again instead (``accelbench.endpoint.confirm``)."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One synthetic cell and both guards' verdicts."""

    load: str
    samples_per_s: float
    old: OldVerdict
    new: NoiseProbe
    round1: NoiseProbe | None = None
    """The guard of round 1 (issue 34) on the same cell: the tree's sum without ``AutoReapedWatch``."""
    opening_s: tuple[float, ...] = ()
    """``PROBES`` probes just before the timed loop and just after it (the probe-only guard)."""
    closing_s: tuple[float, ...] = ()
    curve: bool = False
    """The served curve's verdict: the probe-only guard (one probe at each end), and when it flagged the
    drift alone, the first third of the loop measured again at once and judged by ``noise.runs_shift``
    (``accelbench.endpoint.confirm``'s rule)."""
    confirmed: bool = False
    """The curve's confirm run was spent on this cell."""


def old_flag(cell: Cell) -> bool:
    return cell.old.unstable


def round1_flag(cell: Cell) -> bool:
    return bool(cell.round1 and cell.round1.unstable)


def new_flag(cell: Cell) -> bool:
    return bool(cell.new.unstable)


def probe_only(probes: int) -> Callable[[Cell], bool]:
    """The guard of a cell with no samples to judge (a served curve): other load, steal and the drift of
    the first probe (``probes`` 1) or of the median of ``PROBES`` at each end."""

    def flag(cell: Cell) -> bool:
        return bool(noise.disturbance(probe_evidence(cell, probes)))

    return flag


def probe_evidence(cell: Cell, probes: int) -> noise.Evidence:
    """What the guard of a cell with no samples sees: other load, steal and the drift of the median of
    the first ``probes`` probes at each end."""
    before = float(np.median(cell.opening_s[:probes]))
    after = float(np.median(cell.closing_s[:probes]))
    return noise.Evidence(
        other_cores=cell.new.other_load_cores,
        steal_cores=cell.new.steal_cores or 0.0,
        drift=abs(after - before) / before,
        threshold=cell.new.threshold or reference_probe.DRIFT_MIN,
        shift=None,
        probe_slower=after > before,
        other_limit_cores=noise.other_load_limit_cores(),
    )


def curve_flag(cell: Cell) -> bool:
    return cell.curve


def training_flag(cell: Cell) -> bool:
    """A training cell's guard: AFTER's observations, judged with no samples and a drift alone kept as a
    warning (``noise.drift_as_warning``)."""
    probe = noise.rejudged(cell.new, None)
    return noise.drift_as_warning(probe)[0].unstable


def retried(cell: Cell, label: str) -> bool:
    """The old guard measured every drifted cell again; the new one only while nothing is still busy;
    the curve's column counts its confirm runs (a point measured again)."""
    if label == "BEFORE":
        return cell.old.unstable
    if label == "CURVE":
        return cell.confirmed
    if label == "TRAIN":
        return training_flag(cell)
    if label == "AFTER":
        return noise.worth_retrying(cell.new)
    if label == "ROUND1":
        return cell.round1 is not None and noise.worth_retrying(cell.round1)
    after = cell.new.other_load_after_cores
    flagged = probe_only(1 if label == "PROBE1" else PROBES)(cell)
    return flagged and (after is None or after < noise.STILL_BUSY_CORES)


def busy(cell: Cell, label: str) -> bool:
    if label == "BEFORE":
        return cell.old.busy_warning
    probe = cell.round1 if label == "ROUND1" and cell.round1 is not None else cell.new
    return probe.other_load_cores > noise.OTHER_LOAD_WARNING_CORES
