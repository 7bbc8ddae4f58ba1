"""Measure one inference function under an MLPerf scenario, driven by the real LoadGen.

``measure`` calibrates the expected latency first (a wrong guess makes LoadGen run out of generated
queries or end an offline run early, and the run comes out INVALID), builds LoadGen's settings from the
rule set, runs the test with a Python SUT that calls ``infer`` synchronously in LoadGen's issue thread
(one batch at a time, in the order LoadGen sends the samples: ``batch`` samples per call, cut inside
each query, so single-stream and server always run one sample per call), and parses the logs LoadGen
wrote.

Which inputs each issued sample stands for is the ``Feed``'s decision: ``PlainFeed`` maps a QSL index to
its sample; the audits' feed (``accelbench.audits.feed``) also slips audit samples in at random points
and keeps copies of outputs, after each sample is completed (so LoadGen never times the copy). The SUT
records the wall time of every ``infer`` call (a diagnostic beside LoadGen's figures). An exception
raised by ``infer`` is kept, the queries are completed so LoadGen can finish, and it is raised again
once LoadGen returns. An INVALID LoadGen result is data, never an exception.

An ``infer`` with a ``submit(inputs, done)`` method (a served model, ``accelbench.serving``) gets the
asynchronous SUT instead (``AsyncSut``; both SUTs are in ``accelbench.scenarios.sut``): queries are sent
when LoadGen issues them and completed when their replies arrive, so a slow reply never delays later
sends (no coordinated omission).
"""

from __future__ import annotations

import logging
import secrets
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg
import numpy as np

from accelbench.loadgen_figures import LoadgenVerdict
from accelbench.scenarios import batching, early_end, vault
from accelbench.scenarios.loadgen_log import Summary, parse_detail, parse_detail_values, parse_summary
from accelbench.scenarios.rules import LOADGEN_SCENARIOS, Rules
from accelbench.scenarios.sut import AsyncSut, Feed, Infer, Sut
from accelbench.workloads.base import Inputs

log = logging.getLogger(__name__)

SUMMARY_FILE = "mlperf_log_summary.txt"
DETAIL_FILE = "mlperf_log_detail.txt"

_LOADGEN_SCENARIOS = {
    "single-stream": lg.TestScenario.SingleStream,
    "multi-stream": lg.TestScenario.MultiStream,
    "server": lg.TestScenario.Server,
    "offline": lg.TestScenario.Offline,
}
_MIN_EXPECTED_LATENCY_S = 5e-5
"""Floor of the latency LoadGen is told: a Python SUT cannot go faster, and the floor caps how many
queries LoadGen pre-generates (memory) for a near no-op ``infer``."""
_LATENCY_HEADROOM = 0.25
"""Single/multi-stream: tell LoadGen the SUT is this much faster than calibrated, so it pre-generates
enough queries even if the model speeds up after calibration (costs memory only, not time). 0.5 left
cells INVALID ("min duration not satisfied") when calibration ran while another process was busy, as
on a two-node fleet sharing this VM's two cores; an INVALID cell does not rank."""
_MAX_TOLD_LATENCY_S = 5e-4
"""Cap of the stream latency LoadGen is told: at least 4000 queries per second of min duration are
pre-generated, whatever the calibration said (memory only, bounded by ``_MAX_GENERATED_QUERIES``)."""
_MAX_GENERATED_QUERIES = 1_000_000
_MIN_TOLD_LATENCY_S = 1e-5
"""Floor of the stream latency LoadGen is told (the 50 us offline floor left a 35 us onnxruntime cell
INVALID: it ran out of queries before the minimum duration). The null stack still outruns it."""
_OFFLINE_HEADROOM = 1.5
"""Offline: ask for this many times the calibrated QPS so the single query outlasts the min duration."""


class PlainFeed:
    """Each QSL index stands for its sample; nothing is kept."""

    def __init__(self, samples: Sequence[Inputs]) -> None:
        self.samples = samples

    def minimum_samples(self) -> int:
        """No minimum beyond the rules'."""
        return 0

    def start_trial(self, guaranteed_samples: int, expected_samples: int, duration_s: float = 0.0) -> None:
        """Nothing to plan."""

    def sample(self, index: int) -> Inputs:
        """Sample ``index``."""
        return self.samples[index]

    def observe(self, index: int, latency_s: float, output: np.ndarray | None) -> None:
        """Nothing to keep."""

    def end_trial(self) -> None:
        """Nothing to forget."""


@dataclass(frozen=True, slots=True)
class Measurement:
    """The outcome of one LoadGen run of one scenario."""

    summary: Summary
    sut_latencies_s: tuple[float, ...]
    """Wall time of every ``infer`` call during the run, measured by the SUT with perf_counter (one
    call is one batch)."""
    calibrated_latency_s: float
    """Seconds per ``infer`` call (one batch) estimated before the run."""
    settings: Mapping[str, Any]
    """The LoadGen ``TestSettings`` used, by attribute name, plus ``scenario`` and the sample count."""
    detail_messages: tuple[str, ...] = ()
    """Errors and warnings from LoadGen's detail log."""
    query_count: int = 0
    """Queries LoadGen issued (``result_query_count`` of the detail log); offline issues one."""
    detail: Mapping[str, Any] = field(default_factory=dict)
    batch: int = 1

    def to_verdict(self, rules: Rules, log_dir_rel: str) -> LoadgenVerdict:
        """The stored LoadGen verdict; ``queries`` counts samples for offline (its one query)."""
        queries = self.query_count
        if self.summary.scenario == "offline":
            queries = self.summary.samples_per_query
        return LoadgenVerdict(
            scenario=self.summary.scenario,
            valid=self.summary.valid,
            invalid_reasons=self.summary.invalid_reasons,
            qps=self.summary.qps,
            queries=queries,
            rules=rules.name,
            official=rules.official,
            log_dir=log_dir_rel,
        )


def calibrate(infer: Infer, samples: Sequence[Inputs], budget_s: float) -> float:
    """Median seconds per sample of ``infer`` over ``samples`` (cycled), after two warm-up calls.

    Times at least three calls, and keeps going until ``budget_s`` of wall time has passed.
    """
    if not samples:
        raise ValueError("calibrate needs at least one sample")
    for index in range(2):
        infer(samples[index % len(samples)])
    times_s: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(times_s) < 3 or time.perf_counter() < deadline:
        start = time.perf_counter()
        infer(samples[len(times_s) % len(samples)])
        times_s.append(time.perf_counter() - start)
    return statistics.median(times_s)


def loadgen_settings(
    scenario: str,
    rules: Rules,
    latency_s: float,
    sample_count: int,
    min_samples: int = 0,
    target_qps: float | None = None,
    batch: int = 1,
) -> dict[str, Any]:
    """The LoadGen ``TestSettings`` attributes for ``scenario`` given a calibrated latency per sample.

    ``min_samples`` raises the minimum query count so that at least that many samples are issued;
    ``target_qps`` sets the server load (default: ``rules.server_load_fraction`` of the capacity);
    the floor of the expected latency holds per call, so it is ``batch`` times lower per sample.
    """
    if scenario not in LOADGEN_SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; choose one of: {', '.join(LOADGEN_SCENARIOS)}")
    expected_s = max(latency_s, _MIN_EXPECTED_LATENCY_S / batch)
    per_query = rules.multi_stream_samples_per_query if scenario == "multi-stream" else 1
    settings: dict[str, Any] = {
        "min_duration_ms": round(rules.min_duration_for(scenario) * 1e3),
        "min_query_count": max(rules.min_queries_for(scenario), -(-min_samples // per_query)),
    }
    if scenario == "single-stream":
        settings["single_stream_expected_latency_ns"] = _told_latency_ns(expected_s, rules.min_duration_s)
    elif scenario == "multi-stream":
        per_query_s = expected_s * rules.multi_stream_samples_per_query
        settings["multi_stream_samples_per_query"] = rules.multi_stream_samples_per_query
        settings["multi_stream_expected_latency_ns"] = _told_latency_ns(per_query_s, rules.min_duration_s)
    elif scenario == "offline":
        settings["offline_expected_qps"] = _OFFLINE_HEADROOM / expected_s
    else:
        load = rules.server_load_fraction / expected_s
        settings["server_target_qps"] = target_qps if target_qps is not None else load
        settings["server_target_latency_ns"] = round(rules.server_latency_bound_for(latency_s) * 1e9)
    return {"scenario": scenario, "performance_sample_count": sample_count, **settings}


def guaranteed_samples(settings: Mapping[str, Any]) -> int:
    """Samples LoadGen issues at the least under ``settings``, however fast or slow the SUT runs."""
    if settings["scenario"] == "offline":  # the one query's size is fixed before the run starts
        return expected_samples(settings, 1.0)
    return int(settings["min_query_count"] * settings.get("multi_stream_samples_per_query", 1))


def _told_latency_ns(latency_s: float, duration_s: float) -> int:
    """The latency LoadGen is told for a stream scenario: ``_LATENCY_HEADROOM`` of the calibrated one,
    at most ``_MAX_TOLD_LATENCY_S``, so that it pre-generates queries for a SUT much faster than
    calibrated (calibration may run while the machine is busy: on a two-node fleet sharing this VM, a
    cell calibrated at 5.4 ms ran at 0.62 ms); and at least what keeps the pre-generated queries
    (2 x min duration / told latency) under ``_MAX_GENERATED_QUERIES``."""
    floor_s = max(_MIN_TOLD_LATENCY_S, 2 * duration_s / _MAX_GENERATED_QUERIES)
    return round(max(floor_s, min(latency_s * _LATENCY_HEADROOM, _MAX_TOLD_LATENCY_S)) * 1e9)


def expected_samples(settings: Mapping[str, Any], latency_s: float) -> int:
    """About how many samples LoadGen will issue under ``settings`` if a sample takes ``latency_s``."""
    duration_s = settings["min_duration_ms"] / 1e3
    queries = settings["min_query_count"]
    scenario = settings["scenario"]
    if scenario == "offline":  # LoadGen: max(min_query_count, 1.1 x expected QPS x min duration)
        return int(max(queries, 1.1 * settings["offline_expected_qps"] * duration_s))
    if scenario == "server":
        return int(max(queries, settings["server_target_qps"] * duration_s))
    per_query = settings.get("multi_stream_samples_per_query", 1)
    return int(max(queries, duration_s / max(latency_s * per_query, 1e-9)) * per_query)


def measure(
    scenario: str,
    infer: Infer,
    samples: Sequence[Inputs],
    rules: Rules,
    log_dir: Path,
    latency_s: float | None = None,
    feed: Feed | None = None,
    batch: int = 1,
    target_qps: float | None = None,
) -> Measurement:
    """Run LoadGen's ``scenario`` over ``samples`` with ``infer`` as the SUT, under ``rules``.

    ``infer`` takes ``batch`` samples per call (``accelbench.scenarios.batching``); ``latency_s`` skips
    calibration when the caller already knows the seconds per call (calibrate on other samples than
    the timed ones: a cache warmed there would be invisible to the run). ``feed`` decides what each
    issued sample stands for (default ``PlainFeed(samples)``); ``target_qps`` sets the server load.
    LoadGen's logs are written to ``log_dir`` (created). An exception raised by ``infer`` propagates at
    once, LoadGen's test left to finish by itself (``accelbench.scenarios.early_end``).
    """
    if not samples:
        raise ValueError("measure needs at least one sample")
    batch = batch_for(scenario, batch)
    if latency_s is None:
        latency_s = calibrate(
            infer, [batching.join([s], batch) for s in samples[:8]], rules.calibration_budget_s
        )
    feed = feed if feed is not None else PlainFeed(samples)
    per_sample_s = latency_s / batch
    settings = loadgen_settings(
        scenario, rules, per_sample_s, len(samples), feed.minimum_samples(), target_qps, batch
    )
    log_dir.mkdir(parents=True, exist_ok=True)
    asynchronous = getattr(infer, "submit", None) is not None  # a served model (accelbench.serving)
    sut = AsyncSut(infer, feed, batch) if asynchronous else Sut(infer, feed, batch)
    log.info("LoadGen %s under %s rules: %s", scenario, rules.name, settings)
    duration_s = 0.0 if scenario == "offline" else settings["min_duration_ms"] / 1e3
    feed.start_trial(guaranteed_samples(settings), expected_samples(settings, per_sample_s), duration_s)
    returned = False
    try:
        returned = early_end.run_test(lambda: _run_loadgen(sut, len(samples), settings, log_dir), sut.failed)
        if returned and isinstance(sut, AsyncSut):
            sut.settle()
    finally:
        if returned:  # a test left at the SUT's error may still be issuing: its feed is not ended under it
            feed.end_trial()
    if sut.error is not None:
        raise sut.error
    return _measurement(sut, latency_s, settings, log_dir)


def batch_for(scenario: str, batch: int) -> int:
    """The samples per call a scenario runs: ``batch`` for offline and multi-stream (which must divide
    a multi-stream query), 1 for single-stream and server (one sample per query)."""
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    if scenario in ("single-stream", "server"):
        return 1
    if scenario == "multi-stream" and 8 % batch:  # MLPerf's 8 samples per query
        raise ValueError(f"a multi-stream batch must divide the 8 samples of a query, got {batch}")
    return batch


LOADGEN_SEEDS = ("qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed")
"""LoadGen's seeds of the sample order and the arrival schedule: drawn with ``secrets`` for every
LoadGen test (recorded in its detail log), so the order of the issued indices, from which a stack that
knew it could tell audit inputs (which replace pool samples) from timed ones, cannot be predicted."""


def _run_loadgen(sut: Sut, sample_count: int, settings: Mapping[str, Any], log_dir: Path) -> None:
    test_settings = lg.TestSettings()
    test_settings.scenario = _LOADGEN_SCENARIOS[settings["scenario"]]
    test_settings.mode = lg.TestMode.PerformanceOnly
    for name, value in settings.items():
        if name not in ("scenario", "performance_sample_count"):
            setattr(test_settings, name, value)
    for name in LOADGEN_SEEDS:  # fixed seeds would let a stack predict which index comes when
        setattr(test_settings, name, secrets.randbits(63))
    with vault.sealed(log_dir) as sealed_dir:  # LoadGen's seeds stay out of a stack's reach meanwhile
        log_settings = lg.LogSettings()
        log_settings.log_output.outdir = str(sealed_dir)
        log_settings.log_output.copy_summary_to_stdout = False
        log_settings.log_output.copy_detail_to_stdout = False
        log_settings.enable_trace = False
        lg_sut = lg.ConstructSUT(sut.issue_queries, sut.flush_queries)
        qsl = lg.ConstructQSL(sample_count, sample_count, _load_nothing, _load_nothing)
        try:
            lg.StartTestWithLogSettings(lg_sut, qsl, test_settings, log_settings)
        finally:
            lg.DestroyQSL(qsl)
            lg.DestroySUT(lg_sut)


def _load_nothing(indices: Sequence[int]) -> None:
    """QSL load/unload callback: every sample is already in memory."""


def _measurement(sut: Sut, latency_s: float, settings: dict[str, Any], log_dir: Path) -> Measurement:
    summary = parse_summary((log_dir / SUMMARY_FILE).read_text())
    detail_text = (log_dir / DETAIL_FILE).read_text()
    values = parse_detail_values(detail_text)
    detail = {key: value for key, value in values.items() if key.startswith(("result_", "early_stopping"))}
    return Measurement(
        summary=summary,
        sut_latencies_s=tuple(sut.latencies_s),
        calibrated_latency_s=latency_s,
        settings=settings,
        detail_messages=tuple(parse_detail(detail_text)),
        query_count=int(values.get("result_query_count", summary.queries or 0)),
        detail=detail,
        batch=sut.batch,
    )
