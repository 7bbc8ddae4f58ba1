"""LoadGen's own figures of a cell, as MLPerf reports them, and the SUT timer's agreement with them.

The headline of each scenario is the number an MLPerf submission reports (``submission_checker``'s
result fields): single-stream the 90th-percentile latency and multi-stream the 99th-percentile latency
per query, both as LoadGen's *early-stopping estimate* (which bounds the percentile with 99%
confidence; the observed percentile is kept as ``p90_s`` / ``p99_s``); offline LoadGen's samples per
second; server the highest target QPS that LoadGen reported VALID (``accelbench.scenarios.server_search``).
Each trial is a whole LoadGen run, and every figure is the mean over the same trials, with a 95%
Student-t interval of the headline across them (for server, the interval is the search's bracket:
the highest VALID and the lowest INVALID target).

The SUT's perf_counter around each ``infer`` call is a diagnostic beside LoadGen's clock. LoadGen times
a query from its issue (server: its scheduled issue) to its completion, so its latency is the SUT's
plus LoadGen's own overhead per query (tens of microseconds in Python). Where the scenario makes the
two comparable (not server, whose latency includes queueing), a disagreement beyond
``TIMER_TOLERANCE`` of LoadGen's figure plus ``TIMER_SLACK_S`` per query means something ran outside
the timed call (or the clock is unreliable): the cell is unstable.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from accelbench.loadgen_figures import HEADLINES, Figures
from accelbench.scenarios.loadgen import Measurement

TIMER_TOLERANCE = 0.10
"""Largest relative disagreement between the SUT timer and LoadGen (beyond the slack) of a stable cell."""
TIMER_SLACK_S = 2e-4
"""LoadGen's own overhead allowed per query (per sample for offline) before the timers disagree."""
_EARLY_STOPPING_KEYS = {
    "single-stream": "early_stopping_latency_ss",
    "multi-stream": "early_stopping_latency_ms",
}
_T_95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262)
"""Two-sided 95% Student-t quantiles for 1 to 9 degrees of freedom (1.96 beyond)."""


def figures_of(
    trials: Sequence[Measurement], max_qps: float | None = None, bracket: tuple[float, float] | None = None
) -> Figures:
    """The figures of a cell from its trials (server: ``max_qps`` and ``bracket`` from the search)."""
    if not trials:
        raise ValueError("figures need at least one trial")
    scenario = trials[0].summary.scenario
    batch = trials[0].batch
    values = [max_qps if max_qps is not None else _headline(t) for t in trials]
    value = statistics.fmean(values)
    ci = bracket if scenario == "server" and bracket is not None else _interval(values)
    early = [_early_stopping_s(t) for t in trials]
    sut_s, loadgen_s = _timers(trials)
    return Figures(
        scenario=scenario,
        metric=HEADLINES[scenario],
        value=value,
        ci=ci,
        trial_values=tuple(values),
        qps=statistics.fmean(t.summary.qps for t in trials),
        p50_s=_mean_percentile(trials, 50.0),
        p90_s=_mean_percentile(trials, 90.0),
        p99_s=_mean_percentile(trials, 99.0),
        early_stopping_s=statistics.fmean(e for e in early if e is not None) if all(early) else None,
        valid=all(t.summary.valid for t in trials),
        batch=batch,
        sut_s=sut_s,
        loadgen_s=loadgen_s,
        timer_ratio=sut_s / loadgen_s if loadgen_s > 0 else math.nan,
    )


def timer_disagreement(figures: Figures) -> str | None:
    """Why the SUT timer and LoadGen disagree beyond the tolerance, or None (server is not compared)."""
    if figures.scenario == "server" or figures.loadgen_s <= 0:
        return None
    allowed = TIMER_TOLERANCE * figures.loadgen_s + TIMER_SLACK_S
    if abs(figures.loadgen_s - figures.sut_s) <= allowed:
        return None
    unit = "per sample" if figures.scenario == "offline" else "per query"
    return (
        f"unstable: the SUT timer says {figures.sut_s * 1e3:.3f} ms {unit} and LoadGen "
        f"{figures.loadgen_s * 1e3:.3f} ms (ratio {figures.timer_ratio:.2f}; allowed "
        f"{TIMER_TOLERANCE:.0%} + {TIMER_SLACK_S * 1e6:.0f} us)"
    )


def _headline(trial: Measurement) -> float:
    summary = trial.summary
    if summary.scenario == "offline":
        return summary.samples_per_s or 0.0
    if summary.scenario == "server":
        return summary.target_qps
    early = _early_stopping_s(trial)
    if early is not None:
        return early
    return (
        summary.target_latency_s
        or summary.latency_percentiles_s[90.0 if summary.scenario == "single-stream" else 99.0]
    )


def _early_stopping_s(trial: Measurement) -> float | None:
    """LoadGen's early-stopping estimate of the scenario's percentile, when it computed one."""
    key = _EARLY_STOPPING_KEYS.get(trial.summary.scenario)
    raw = trial.detail.get(key) if key else None
    return float(raw) * 1e-9 if isinstance(raw, int | float) and raw > 0 else None


def _mean_percentile(trials: Sequence[Measurement], percent: float) -> float:
    return statistics.fmean(t.summary.latency_percentiles_s.get(percent, math.nan) for t in trials)


def _interval(values: Sequence[float]) -> tuple[float, float]:
    """The 95% Student-t interval of the mean, its lower end held at 0: every headline (a latency, samples
    or queries per second) is positive, and 3 spread trials would otherwise give a negative latency."""
    if len(values) < 2:
        return values[0], values[0]
    mean = statistics.fmean(values)
    quantile = _T_95[len(values) - 2] if len(values) - 1 <= len(_T_95) else 1.96
    half = quantile * statistics.stdev(values) / math.sqrt(len(values))
    return max(0.0, mean - half), mean + half


def _timers(trials: Sequence[Measurement]) -> tuple[float, float]:
    """The SUT timer's and LoadGen's seconds per query (per sample for offline), over the trials."""
    scenario, batch = trials[0].summary.scenario, trials[0].batch
    calls = [latency for t in trials for latency in t.sut_latencies_s]
    if scenario == "offline":
        samples = sum(t.summary.samples_per_query for t in trials)
        rates = [t.summary.samples_per_s for t in trials if t.summary.samples_per_s]
        loadgen = statistics.fmean(1 / rate for rate in rates) if rates else 0.0
        return (sum(calls) / samples if samples else 0.0), loadgen
    per_query = -(-trials[0].summary.samples_per_query // batch)  # calls per multi-stream query
    sut = statistics.median(calls) * per_query if calls else 0.0
    return sut, _mean_percentile(trials, 50.0)
