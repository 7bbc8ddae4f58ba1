"""LoadGen's own figures of a cell: per-query latency, LoadGen's verdict and the scenario's headline.

The loadgen and tokens drivers fill them from LoadGen's logs (``accelbench.scenarios.figures``); a
result holds them (``accelbench.results.Result``: ``latency``, ``loadgen``, ``figures``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Latency:
    """Per-query latency statistics in seconds; CI is a bootstrap interval of the median."""

    p50_s: float
    p90_s: float
    p99_s: float
    mean_s: float
    min_s: float
    median_ci_s: tuple[float, float]
    samples: int


@dataclass(frozen=True, slots=True)
class LoadgenVerdict:
    """What MLPerf LoadGen said about the run (parsed from its summary log)."""

    scenario: str
    valid: bool
    invalid_reasons: tuple[str, ...]
    qps: float
    """Scenario metric: queries (single-stream) or samples (offline) per second, as LoadGen reports."""
    queries: int
    rules: str
    official: bool
    log_dir: str
    """Where the raw LoadGen logs were kept, relative to the run folder."""


HEADLINES = {
    "single-stream": "latency_p90_s",
    "multi-stream": "latency_p99_per_query_s",
    "offline": "samples_per_s",
    "server": "max_qps",
}
"""The headline metric of each LoadGen scenario, as MLPerf reports it: seconds for latencies (lower is
better), per second for throughputs (higher is better)."""


@dataclass(frozen=True, slots=True)
class Figures:
    """LoadGen's own figures of one cell: the scenario's headline and what LoadGen printed beside it.

    Every trial is a whole LoadGen run; each number here is the mean over the trials (all of them:
    throughput and percentiles come from the same runs), and ``ci`` is the 95% Student-t interval of
    the headline's mean across the ``trials`` (the value itself for one trial). Latencies are LoadGen's,
    from issue to completion, per query: a multi-stream query is 8 samples, a server latency includes
    the queueing. The SUT's own timer around each ``infer`` call is a diagnostic: ``sut_s`` and
    ``loadgen_s`` are the two timers' seconds per query (per sample for offline) and ``timer_ratio`` is
    ``sut_s / loadgen_s``; past ``accelbench.scenarios.figures.TIMER_TOLERANCE`` the cell is unstable.
    """

    scenario: str
    metric: str
    """The headline's name, ``HEADLINES[scenario]``: ``latency_p90_s``, ``latency_p99_per_query_s``,
    ``samples_per_s`` or ``max_qps``."""
    value: float
    ci: tuple[float, float]
    trial_values: tuple[float, ...]
    qps: float
    """Throughput: queries/s (single-stream), samples/s (multi-stream, offline, server completed)."""
    p50_s: float
    p90_s: float
    p99_s: float
    early_stopping_s: float | None
    """LoadGen's early-stopping estimate of the headline percentile (single-stream, multi-stream)."""
    valid: bool
    """Every trial VALID (for server: the searched QPS's run)."""
    batch: int
    sut_s: float
    loadgen_s: float
    timer_ratio: float

    @property
    def trials(self) -> int:
        """How many LoadGen runs the figures average over."""
        return len(self.trial_values)

    @property
    def lower_is_better(self) -> bool:
        """True for a latency headline."""
        return self.metric.startswith("latency_")
