"""A LoadGen summary log checked against the detail log of the same trial.

``rederive`` computes a cell's figures from the summary; an edit that doubles the summary's figures, the
stored result's figures and the MANIFEST together would match there. LoadGen writes every headline number
twice (the summary in words, the detail log as ``result_*`` records), so the two files of one trial must
agree: latencies exactly (both print whole nanoseconds), rates within ``RATE_RELATIVE`` (the summary rounds
them to a few decimals), and the validity word. These tolerances are this module's own on purpose: the rest
of ``bundle`` compares a figure with the code's own result on the same numbers (``bundle.tolerance``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accelbench.scenarios.loadgen_log import Summary

NS = 1e-9
LATENCY_TOLERANCE_S = 1e-9
"""Both logs print whole nanoseconds; one nanosecond absorbs the float round trip."""
RATE_RELATIVE = 1e-3
"""The summary prints a rate to 2 or 3 decimals; 0.1% covers that for any rate above 1/s."""
PERCENTS = (50.0, 90.0, 95.0, 97.0, 99.0, 99.9)


def disagreements(summary: Summary, detail: Mapping[str, Any]) -> list[str]:
    """Every figure the summary and the detail log of one trial state differently, as
    ``name summary X, detail Y``; empty when they agree."""
    per_query = "_query" if summary.scenario == "multi-stream" else ""
    percentile = "_per_query" if per_query else ""
    latencies: list[tuple[str, float | None, str]] = [
        ("min latency", summary.min_latency_s, f"result_min{per_query}_latency_ns"),
        ("max latency", summary.max_latency_s, f"result_max{per_query}_latency_ns"),
        ("mean latency", summary.mean_latency_s, f"result_mean{per_query}_latency_ns"),
    ]
    latencies += [
        (
            f"p{p:g} latency",
            summary.latency_percentiles_s.get(p),
            f"result_{p:.2f}_percentile{percentile}_latency_ns",
        )
        for p in PERCENTS
    ]
    found = [
        f"{name} summary {_s(said):.9g} s, detail {_s(_ns(detail.get(key))):.9g} s"
        for name, said, key in latencies
        if not _agree(said, _ns(detail.get(key)), LATENCY_TOLERANCE_S, 0.0)
    ]
    rates = [
        ("samples/s", summary.samples_per_s, "result_samples_per_second"),
        ("completed samples/s", summary.completed_samples_per_s, "result_completed_samples_per_sec"),
        ("queries/s", summary.qps_with_loadgen_overhead, "result_qps_with_loadgen_overhead"),
    ]
    found += [
        f"{name} summary {_s(said):.6g}, detail {_s(_number(detail.get(key))):.6g}"
        for name, said, key in rates
        if said is not None and not _agree(said, _number(detail.get(key)), 0.0, RATE_RELATIVE)
    ]
    validity = detail.get("result_validity")
    if validity is not None and (validity == "VALID") != summary.valid:
        found.append(f"validity summary {'VALID' if summary.valid else 'INVALID'}, detail {validity}")
    return found


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _ns(value: object) -> float | None:
    number = _number(value)
    return None if number is None else number * NS


def _s(value: float | None) -> float:
    return float("nan") if value is None else value


def _agree(said: float | None, logged: float | None, absolute: float, relative: float) -> bool:
    """Equal within the tolerances (not ``bundle.tolerance.same``: two files LoadGen printed, one rounded,
    not a figure against the code's own result); a figure one log holds and the other lacks counts as a
    disagreement only when the summary states it (older LoadGen builds write fewer detail keys)."""
    if said is None:
        return True
    if logged is None:
        return False
    return abs(said - logged) <= absolute + relative * max(abs(said), abs(logged))
