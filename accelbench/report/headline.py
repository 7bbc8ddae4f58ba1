"""What a table shows of one result, by scenario: MLPerf's headline first, in SI units (no formatting).

The figure a reader compares follows the scenario, as MLPerf reports it (``loadgen_figures.HEADLINES``):

============== ==================================== ==========================================
scenario       headline                             beside it
============== ==================================== ==========================================
single-stream  p90 latency                          p50, p99, queries/s
multi-stream   p99 latency per query (8 samples)    p50, p90, samples/s
server         searched max QPS                     p99 at that QPS, the latency bound
offline        samples/s                            nothing: latency is not an offline figure
============== ==================================== ==========================================

plus, where the result has them, the 95% interval across trials, the batch size and the diagnostic
ratio of the SUT's own timer to LoadGen's. A result stored before schema 5 (no ``figures``) falls back
to the SUT timer's percentiles and LoadGen's QPS, and says so in ``source``. Offline latencies stay in
the stored document (``--json``); they are left out here. The rule set a figure was measured under is
part of it: ``rules_note`` is the sentence every table and chart carries.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from accelbench.loadgen_figures import HEADLINES
from accelbench.results import Result
from accelbench.sections import ServerSearch

LOADGEN = "LoadGen"
SUT_TIMER = "SUT timer"
QUICK_NOTE = "quick look, not comparable with MLPerf durations"
_RULES_NOTES = {
    "quick": QUICK_NOTE,
    "standard": "accelbench's durations, shorter than MLPerf's; unofficial",
    "official": "MLPerf's durations and query counts",
}
_LATENCY_SCENARIOS = ("single-stream", "multi-stream", "server")


@dataclass(frozen=True, slots=True)
class Headline:
    """The figures of one result a table shows; None where the scenario does not report it or it is absent."""

    scenario: str
    metric: str
    """``HEADLINES[scenario]``; ``qps`` for a scenario without an MLPerf headline."""
    value: float
    source: str
    """``LoadGen`` (schema 5 figures) or ``SUT timer`` (an older result's latency fallback)."""
    ci: tuple[float, float] | None = None
    trials: int | None = None
    qps: float | None = None
    p50_s: float | None = None
    p90_s: float | None = None
    p99_s: float | None = None
    early_stopping_s: float | None = None
    valid: bool | None = None
    batch: int | None = None
    timer_ratio: float | None = None
    bound_s: float | None = None
    """Server: the p99 latency bound the QPS search held."""
    rules: str = ""

    @property
    def lower_is_better(self) -> bool:
        """True for a latency headline."""
        return self.metric.startswith("latency_")


def headline(result: Result) -> Headline | None:
    """The scenario's figures of ``result``; None when it was not measured."""
    figures = result.figures
    if figures is None:
        return _fallback(result)
    latency = figures.scenario in _LATENCY_SCENARIOS
    return Headline(
        scenario=figures.scenario,
        metric=figures.metric,
        value=figures.value,
        source=LOADGEN,
        ci=figures.ci,
        trials=figures.trials,
        qps=figures.qps,
        p50_s=figures.p50_s if latency else None,
        p90_s=figures.p90_s if latency else None,
        p99_s=figures.p99_s if latency else None,
        early_stopping_s=figures.early_stopping_s if latency else None,
        valid=figures.valid,
        batch=figures.batch,
        timer_ratio=figures.timer_ratio,
        bound_s=_bound_s(result.server_search),
        rules=rules_of(result),
    )


def _fallback(result: Result) -> Headline | None:
    """A result without LoadGen figures: the SUT timer's percentile, or LoadGen's QPS."""
    scenario, latency, verdict = result.cell.scenario, result.latency, result.loadgen
    metric = HEADLINES.get(scenario, "qps")
    if metric.startswith("latency_"):
        if latency is None:
            return None
        value = latency.p90_s if scenario == "single-stream" else latency.p99_s
        source = SUT_TIMER
    elif verdict is not None:
        value, source = verdict.qps, LOADGEN
    else:
        return None
    shown = latency if scenario in _LATENCY_SCENARIOS else None
    return Headline(
        scenario=scenario,
        metric=metric,
        value=value,
        source=source,
        qps=verdict.qps if verdict else None,
        p50_s=shown.p50_s if shown else None,
        p90_s=shown.p90_s if shown else None,
        p99_s=shown.p99_s if shown else None,
        valid=verdict.valid if verdict else None,
        batch=result.batch_size,
        bound_s=_bound_s(result.server_search),
        rules=rules_of(result),
    )


def _bound_s(search: ServerSearch | None) -> float | None:
    return search.bound_s if search is not None else None


def sort_key(result: Result) -> tuple[float, str]:
    """Best first: the lowest latency headline, or the highest throughput; unmeasured last."""
    shown = headline(result)
    if shown is None:
        return float("inf"), result.cell.key
    return (shown.value if shown.lower_is_better else -shown.value), result.cell.key


def rules_of(result: Result) -> str:
    """The rule set a result was measured under (``quick``, ``standard``, ``official``), or ``""``."""
    if result.loadgen is not None and result.loadgen.rules:
        return result.loadgen.rules
    return result.rules_setting


def rules_note(names: Iterable[str]) -> str:
    """``rules quick: quick look, not comparable with MLPerf durations`` for the rule sets named.

    Several rule sets are listed with their notes; none known gives ``rules unknown``.
    """
    chosen = sorted({name for name in names if name})
    if not chosen:
        return "rules unknown"
    notes = [f"{name}: {_RULES_NOTES[name]}" if name in _RULES_NOTES else name for name in chosen]
    return "rules " + "; ".join(notes)


def results_rules_note(results: Iterable[Result]) -> str:
    """``rules_note`` of the rule sets of ``results``."""
    return rules_note(rules_of(r) for r in results)
