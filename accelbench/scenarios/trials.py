"""The timed part of one trial of a LoadGen cell: calibrate, (server: search the max QPS), run it.

``run_trial`` calibrates the seconds per ``infer`` call on the calibration samples (never on the timed
pool); for server, unless the target QPS is given (the cell's first trial searched it), it searches the
max QPS (``server_search``; those probes use the timed pool and are not scored); then it runs the
scored LoadGen test with the audit feed slipping its probes in. The ``window`` (energy, device memory)
brackets the scored test alone. Each trial of a cell runs in a fresh process (``accelbench.cell.trial``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from accelbench.scenarios import batching, server_search
from accelbench.scenarios.loadgen import Measurement, PlainFeed, batch_for, calibrate, measure
from accelbench.scenarios.rules import Rules
from accelbench.scenarios.sut import Feed
from accelbench.workloads.base import Inputs


class Window(Protocol):
    """Meters that bracket the scored test (``begin`` then ``end``)."""

    def begin(self, name: str) -> None:
        """The window ``name`` opens."""

    def end(self, name: str, samples: int) -> Any:
        """The window closes after ``samples`` completed samples; returns its readings."""


@dataclass(frozen=True, slots=True)
class Timed:
    """The scored test of a trial, its meter readings, and the server search when this trial ran it."""

    measurement: Measurement
    metered: Any
    latency_s: float
    """Calibrated seconds per ``infer`` call (one batch)."""
    search: server_search.Search | None = None


def run_trial(
    scenario: str,
    infer: Callable[[Inputs], Any],
    timed: Sequence[Inputs],
    calibration: Sequence[Inputs],
    rules: Rules,
    log_dir: Path,
    window: Window,
    feed: Feed | None = None,
    batch: int = 1,
    target_qps: float | None = None,
) -> Timed:
    """Measure one trial of ``scenario`` as the module text says; LoadGen logs go to ``log_dir``."""
    batch = batch_for(scenario, batch)
    latency_s = calibrate(infer, _calibration_batches(calibration, batch), rules.calibration_budget_s)
    search = None
    if scenario == "server" and target_qps is None:
        search = _search(infer, timed, rules, log_dir.parent / f"{log_dir.name}-search", latency_s)
        target_qps = search.max_qps or min(p.target_qps for p in search.probes)
    window.begin(log_dir.name)
    measurement = measure(
        scenario, infer, timed, rules, log_dir, latency_s, feed=feed, batch=batch, target_qps=target_qps
    )
    metered = window.end(log_dir.name, len(measurement.sut_latencies_s) * measurement.batch)
    summary = measurement.summary
    if scenario == "offline" and not summary.min_duration_met and summary.samples_per_s:
        # the one query ended early: the SUT ran faster than calibrated (LoadGen: "increase expected
        # QPS"); measured once more at the rate LoadGen saw, as a user would set offline_expected_qps
        latency_s = batch / summary.samples_per_s
        retry = log_dir.parent / f"{log_dir.name}-r"
        window.begin(retry.name)
        measurement = measure(scenario, infer, timed, rules, retry, latency_s, feed=feed, batch=batch)
        metered = window.end(retry.name, len(measurement.sut_latencies_s) * measurement.batch)
    return Timed(measurement, metered, latency_s, search)


def _calibration_batches(calibration: Sequence[Inputs], batch: int) -> list[Inputs]:
    """Batches cut from the calibration samples in turn (each sample used once before any repeats)."""
    count = max(1, len(calibration) // batch)
    picks = [[calibration[(b * batch + k) % len(calibration)] for k in range(batch)] for b in range(count)]
    return [batching.join(pick, batch) for pick in picks]


def _search(
    infer: Callable[[Inputs], Any], timed: Sequence[Inputs], rules: Rules, log_root: Path, latency_s: float
) -> server_search.Search:
    """The server max-QPS search: each probe a LoadGen server run over the timed pool, unscored."""
    bound_s = rules.server_latency_bound_for(latency_s)
    counter = iter(range(rules.server_search_probes))

    def probe(target_qps: float) -> server_search.Probe:
        log_dir = log_root / f"p{next(counter)}"
        run = measure(
            "server", infer, timed, rules, log_dir, latency_s, PlainFeed(timed), target_qps=target_qps
        )
        summary = run.summary
        return server_search.Probe(
            target_qps=target_qps,
            valid=summary.valid,
            p99_s=summary.latency_percentiles_s.get(99.0, 0.0),
            completed_qps=summary.qps,
            reasons=summary.invalid_reasons,
        )

    start = rules.server_load_fraction / max(latency_s, 1e-6)
    return server_search.search(probe, start, rules.server_search_probes, bound_s)
