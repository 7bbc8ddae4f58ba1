"""The max-QPS search of an endpoint cell (``--arrivals poisson``): MLPerf's server scenario over HTTP.

A probe sends ``probe_requests(qps)`` fresh salted prompts (stream ``poisson``, probe number) as Poisson
arrivals at ``qps`` (``accelbench.endpoint.driver.run_arrivals``: an open loop, no cap on the requests
in flight, TTFT from each request's scheduled arrival). It passes when p99 TTFT and p99 TPOT are within
the workload's goodput bounds and no request failed. The search (``accelbench.scenarios.server_search``'s
``search``) starts at the request throughput the curve measured at its lowest concurrency, doubles until
a probe fails (halves while none has passed), then bisects geometrically until the lowest failing target
is within ``RESOLUTION`` of the highest passing one, in ``PROBE_BUDGET`` probes at most. The max QPS is
the highest passing target. A probe where every request failed (the server is gone) ends the search,
with that reason; a failed request is never an exception. The search does not start (``start_problem``)
after a ladder cut short, or when one request at a time already misses a bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from accelbench.cell.seeds import sub_seed
from accelbench.curve import CurvePoint, QpsProbe, QpsSearch
from accelbench.endpoint import figures as point_figures
from accelbench.endpoint.client import Target
from accelbench.endpoint.driver import POISSON, arrival_times_s, run_arrivals
from accelbench.endpoint.prompts import salted, seeded_texts
from accelbench.endpoint.records import RequestRecord
from accelbench.scenarios import server_search
from accelbench.scenarios.server_search import RESOLUTION

PROBE_BUDGET = 6
MIN_PROBE_REQUESTS = 16
MIN_PROBE_DURATION_S = 3.0
"""A probe sends at least this many seconds' worth of arrivals at its target (and 16 requests)."""


@dataclass(frozen=True, slots=True)
class Probing:
    """What every probe needs: where to send, the cell's secret input seed and lengths, the bounds, and
    where its records go as soon as a probe ends (``requests.jsonl``)."""

    target: Target
    tokenizer: Any
    input_seed: int
    lengths: tuple[int, int]
    max_tokens: int
    count_tokens: Callable[[str], int]
    bounds: point_figures.Bounds
    keep: Callable[[Sequence[RequestRecord]], None]


class _ServerGone(Exception):
    """Every request of a probe failed: the search ends with this reason."""


def probe_requests(qps: float) -> int:
    """The requests of a probe at ``qps``: ``MIN_PROBE_DURATION_S`` worth, ``MIN_PROBE_REQUESTS`` at least."""
    return max(MIN_PROBE_REQUESTS, math.ceil(MIN_PROBE_DURATION_S * qps))


def run_probe(probing: Probing, number: int, qps: float) -> tuple[QpsProbe, list[RequestRecord]]:
    """Probe ``number`` of the search: its Poisson arrivals at ``qps``, judged, and its records."""
    n, seed = probe_requests(qps), probing.input_seed
    texts = seeded_texts(seed, probing.lengths, n, POISSON, number)
    prompts = salted(probing.tokenizer, seed, texts, POISSON, number)
    schedule_s = arrival_times_s(qps, n, sub_seed(seed, "arrivals", number))
    records = run_arrivals(probing.target, prompts, schedule_s, probing.max_tokens, probing.count_tokens, qps)
    return judged(qps, point_figures.point(0, records, probing.bounds), probing.bounds), records


def judged(qps: float, measured: CurvePoint, bounds: point_figures.Bounds) -> QpsProbe:
    """The probe record of ``measured`` (a probe's figures): passed, or why not."""
    reasons = []
    if measured.error_rate > 0:
        reasons.append(f"{measured.error_rate:.0%} of requests failed")
    if measured.ttft_p99_s > bounds.ttft_s:
        reasons.append(f"p99 TTFT {measured.ttft_p99_s * 1e3:.0f} ms > {bounds.ttft_s * 1e3:.0f} ms")
    if measured.tpot_p99_s > bounds.tpot_s:
        reasons.append(f"p99 TPOT {measured.tpot_p99_s * 1e3:.0f} ms > {bounds.tpot_s * 1e3:.0f} ms")
    m = measured
    return QpsProbe(
        target_qps=qps,
        requests=m.requests,
        requests_per_s=m.requests_per_s,
        output_tokens_per_s=m.output_tokens_per_s,
        ttft_p50_s=m.ttft_p50_s,
        ttft_p90_s=m.ttft_p90_s,
        ttft_p99_s=m.ttft_p99_s,
        tpot_p50_s=m.tpot_p50_s,
        tpot_p90_s=m.tpot_p90_s,
        tpot_p99_s=m.tpot_p99_s,
        goodput_requests_per_s=m.goodput_requests_per_s,
        error_rate=m.error_rate,
        passed=not reasons,
        reason="; ".join(reasons),
    )


def search_max_qps(
    probing: Probing, start_qps: float, budget: int = PROBE_BUDGET
) -> tuple[QpsSearch, list[RequestRecord]]:
    """The search from ``start_qps`` (see the module text) and every request it sent."""
    probes: list[QpsProbe] = []
    records: list[RequestRecord] = []

    def run(qps: float) -> server_search.Probe:
        probe, done = run_probe(probing, len(probes), qps)
        probes.append(probe)
        records.extend(done)
        probing.keep(done)
        if not any(r.ok for r in done):
            raise _ServerGone(f"every request failed at {qps:.3g} QPS: {done[0].status}: {done[0].error}")
        return server_search.Probe(qps, probe.passed, probe.ttft_p99_s, probe.requests_per_s)

    try:
        server_search.search(run, start_qps, budget, probing.bounds.ttft_s)
        ended = ""
    except _ServerGone as gone:
        ended = str(gone).rstrip(": ")
    return searched(probes, probing.bounds, budget, ended), records


def searched(
    probes: Sequence[QpsProbe], bounds: point_figures.Bounds, budget: int, ended: str = ""
) -> QpsSearch:
    """The stored search of ``probes``; ``ended`` says why it stopped when not by its own rule."""
    best = max((p for p in probes if p.passed), key=lambda p: p.target_qps, default=None)
    floor_qps = best.target_qps if best else 0.0
    high = min((p.target_qps for p in probes if not p.passed and p.target_qps > floor_qps), default=math.inf)
    if not ended:
        bracketed = best is not None and high <= floor_qps * (1 + RESOLUTION)
        ended = f"bracketed within {RESOLUTION:.0%}" if bracketed else f"budget of {budget} probes spent"
        ended += "" if best else "; no probe met the bounds"
    return QpsSearch(
        ttft_bound_s=bounds.ttft_s,
        tpot_bound_s=bounds.tpot_s,
        max_qps=best.target_qps if best else 0.0,
        goodput_requests_per_s=best.goodput_requests_per_s if best else 0.0,
        probes=tuple(probes),
        resolution=RESOLUTION,
        budget=budget,
        ended=ended,
    )


def start_problem(curve: Sequence[CurvePoint], stopped: str, bounds: point_figures.Bounds) -> str:
    """Why the search cannot start from ``curve`` (the ladder stopped early: ``stopped``), or "": no
    point, no request throughput at the lowest one, or a lowest point at concurrency 1 already past a
    bound (one request at a time: no arrival rate can meet it, and probes at ever lower rates would run
    for minutes)."""
    if stopped:
        return f"not searched: the ladder stopped ({stopped})"
    lowest = min(curve, key=lambda p: p.concurrency, default=None)
    if lowest is None or lowest.requests_per_s <= 0:
        return "not searched: no curve point measured a request throughput to start from"
    if lowest.concurrency == 1 and not judged(lowest.requests_per_s, lowest, bounds).passed:
        missed = judged(lowest.requests_per_s, lowest, bounds).reason
        return f"not searched: one request at a time already misses the bounds ({missed})"
    return ""


def not_searched(bounds: point_figures.Bounds, why: str) -> QpsSearch:
    """A search that could not start (no curve point to start from), with the reason."""
    return QpsSearch(
        ttft_bound_s=bounds.ttft_s,
        tpot_bound_s=bounds.tpot_s,
        max_qps=0.0,
        goodput_requests_per_s=0.0,
        probes=(),
        resolution=RESOLUTION,
        budget=PROBE_BUDGET,
        ended=why,
    )
