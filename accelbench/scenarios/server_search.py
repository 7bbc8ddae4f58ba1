"""The server scenario's figure: the highest target QPS that LoadGen reports VALID, found by search.

MLPerf's server result is the largest Poisson arrival rate at which the 99th-percentile latency
(LoadGen's, from each query's scheduled issue to its completion, so queueing included) stays under the
bound, with enough queries for early stopping: a VALID run. A target QPS is an input to LoadGen, so
accelbench searches it: start from a fraction of the calibrated capacity, double (or halve) until a
VALID and an INVALID target bracket the answer, then bisect geometrically until the bracket is within
``RESOLUTION`` or the rule set's probe budget is spent. Every probe is a whole LoadGen server run; the
probes are kept with the result (target, VALID, p99, completed QPS, LoadGen's reasons). The budget is
``Rules.server_search_probes`` probes of ``Rules.server_min_duration_s`` each (standard rules: 8 x 10 s
at the most, before the scored trials).

A probe is one LoadGen run, so the scored trials at the target it found can still come out INVALID (a
probe VALID by a hair, a noisier minute). A submitter then lowers the target and runs again; so does
accelbench: ``backed_off`` records the failed scored run and takes the target down by ``BACKOFF`` (one
resolution step), at most ``MAX_BACKOFFS`` times, after which the cell stays INVALID. The reported max
QPS is the target of the scored trials, never a probe's alone.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from accelbench.sections import SearchProbe, ServerSearch

RESOLUTION = 0.10
"""Stop bisecting once the lowest INVALID target is within 10% of the highest VALID one."""
GROWTH = 2.0
BACKOFF = 1 / (1 + RESOLUTION)
"""A failed scored run's target times this is the next target (one resolution step down)."""
MAX_BACKOFFS = 3
"""At most three steps down (0.75x the search's target), each a whole set of scored trials."""


@dataclass(frozen=True, slots=True)
class Probe:
    """One LoadGen server run at a target QPS."""

    target_qps: float
    valid: bool
    p99_s: float
    completed_qps: float
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Search:
    """The probes, in the order they ran, and what they bracket."""

    bound_s: float
    probes: tuple[Probe, ...]
    scored_failures: tuple[Probe, ...] = ()
    """Scored runs that were INVALID at the target the search gave them, in order (see ``backed_off``)."""

    @property
    def max_qps(self) -> float:
        """The target of the scored trials: the highest VALID probe's (0 when none was), taken down by
        ``BACKOFF`` below each failed scored run."""
        found = max((p.target_qps for p in self.probes if p.valid), default=0.0)
        for failure in self.scored_failures:
            found = min(found, failure.target_qps * BACKOFF)
        return found

    @property
    def bracket(self) -> tuple[float, float]:
        """(the scored target, the lowest INVALID target above it among the probes and the failed
        scored runs; inf when there is none)."""
        low = self.max_qps
        failed = [p for p in (*self.probes, *self.scored_failures) if not p.valid]
        high = min((p.target_qps for p in failed if p.target_qps > low), default=math.inf)
        return low, high

    @property
    def can_back_off(self) -> bool:
        """Whether a failed scored run may be retried lower: a VALID target was found and the back-off
        budget is not spent."""
        return self.max_qps > 0 and len(self.scored_failures) < MAX_BACKOFFS

    def backed_off(self, failure: Probe) -> Search:
        """This search with ``failure`` (a scored run at ``max_qps`` that LoadGen reported INVALID)
        recorded, so ``max_qps`` is one ``BACKOFF`` step lower."""
        if failure.valid:
            raise ValueError("only an INVALID scored run backs the search off")
        return dataclasses.replace(self, scored_failures=(*self.scored_failures, failure))

    def record(self) -> ServerSearch:
        """The stored ``server_search`` section (``accelbench.sections.ServerSearch``)."""
        low, high = self.bracket
        return ServerSearch(
            bound_s=self.bound_s,
            max_qps=self.max_qps,
            bracket=(low, high if math.isfinite(high) else None),
            resolution=RESOLUTION,
            probes=tuple(_probe_record(p) for p in self.probes),
            backoff=BACKOFF,
            scored_failures=tuple(_probe_record(p) for p in self.scored_failures),
        )

    def to_dict(self) -> dict[str, Any]:
        """The stored ``server_search`` section as JSON."""
        return self.record().to_dict()


def _probe_record(probe: Probe) -> SearchProbe:
    return SearchProbe(probe.target_qps, probe.valid, probe.p99_s, probe.completed_qps, probe.reasons)


def search(run: Callable[[float], Probe], start_qps: float, max_probes: int, bound_s: float) -> Search:
    """Probe ``run(target_qps)`` from ``start_qps`` up to ``max_probes`` times; see the module text."""
    if start_qps <= 0 or max_probes < 1:
        raise ValueError(f"a server search needs a positive start and probes, got {start_qps}, {max_probes}")
    probes: list[Probe] = []
    target = start_qps
    while len(probes) < max_probes:
        probes.append(run(target))
        low, high = Search(bound_s, tuple(probes)).bracket
        if low > 0 and math.isfinite(high):
            if high / low <= 1 + RESOLUTION:
                break
            target = math.sqrt(low * high)
        elif low > 0:
            target = low * GROWTH
        else:
            target = min(p.target_qps for p in probes) / GROWTH
    return Search(bound_s, tuple(probes))
