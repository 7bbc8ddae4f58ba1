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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

RESOLUTION = 0.10
"""Stop bisecting once the lowest INVALID target is within 10% of the highest VALID one."""
GROWTH = 2.0


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

    @property
    def max_qps(self) -> float:
        """The highest VALID target (0 when none was)."""
        return max((p.target_qps for p in self.probes if p.valid), default=0.0)

    @property
    def bracket(self) -> tuple[float, float]:
        """(highest VALID target, lowest INVALID target above it; inf when every probe was VALID)."""
        low = self.max_qps
        high = min(
            (p.target_qps for p in self.probes if not p.valid and p.target_qps > low), default=math.inf
        )
        return low, high

    def to_dict(self) -> dict[str, Any]:
        """The stored ``server_search`` section."""
        low, high = self.bracket
        return {
            "bound_s": self.bound_s,
            "max_qps": self.max_qps,
            "bracket": [low, high if math.isfinite(high) else None],
            "resolution": RESOLUTION,
            "probes": [
                {
                    "target_qps": p.target_qps,
                    "valid": p.valid,
                    "p99_s": p.p99_s,
                    "completed_qps": p.completed_qps,
                    "reasons": list(p.reasons),
                }
                for p in self.probes
            ],
        }


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
