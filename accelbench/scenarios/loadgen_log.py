"""Parsing of MLPerf LoadGen's logs: ``mlperf_log_summary.txt`` and ``mlperf_log_detail.txt``.

Pure text parsing, no LoadGen import, so stored logs can be re-read anywhere. Latencies are converted
from LoadGen's nanoseconds to seconds. The summary format is LoadGen's ``PerformanceSummary::LogSummary``
(``loadgen/results.cc``); the detail log has one ``:::MLLOG {json}`` record per line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_HEADER = "MLPerf Results Summary"
_MLLOG_PREFIX = ":::MLLOG "
_NS = 1e-9
_SCENARIO_NAMES = {
    "SingleStream": "single-stream",
    "MultiStream": "multi-stream",
    "Server": "server",
    "Offline": "offline",
}
_CONSTRAINTS = ("Performance constraints", "Min duration", "Min queries", "Early stopping")
_TARGET_LATENCY = re.compile(r"^([\d.]+)th percentile latency \(ns\)$")
_PERCENTILE = re.compile(r"^([\d.]+) percentile latency \(ns\)$")
_QUERY_COUNTS = (
    re.compile(r"Processed at least \d+ queries \((\d+)\)"),
    re.compile(r"Only processed (\d+) queries"),
    re.compile(r"Processed (\d+) queries"),
)


@dataclass(frozen=True, slots=True)
class Summary:
    """What LoadGen's summary log says about one run. Latencies are in seconds.

    ``min/max/mean_latency_s`` and ``latency_percentiles_s`` are per query in multi-stream (a query is
    ``samples_per_query`` samples) and per sample otherwise, as LoadGen prints them.
    """

    scenario: str
    """accelbench's spelling: ``single-stream``, ``multi-stream``, ``server`` or ``offline``."""
    mode: str
    """LoadGen's test mode, e.g. ``PerformanceOnly``."""
    valid: bool
    invalid_reasons: tuple[str, ...]
    min_duration_met: bool
    min_queries_met: bool
    early_stopping_met: bool
    min_latency_s: float
    max_latency_s: float
    mean_latency_s: float
    latency_percentiles_s: Mapping[float, float]
    """Keyed by percentile in percent, as printed: 50.0, 90.0, 95.0, 97.0, 99.0, 99.9."""
    samples_per_query: int
    target_qps: float
    """The load LoadGen planned for (from expected latency / expected or target QPS)."""
    min_duration_s: float
    min_query_count: int
    performance_sample_count: int
    sut_name: str = ""
    perf_constraints_met: bool | None = None
    """Server only: the latency bound held at the target percentile."""
    target_percentile: float | None = None
    """Single-stream (0.9) and multi-stream (0.99): the percentile of the headline latency."""
    target_latency_s: float | None = None
    """The single-stream 90th / multi-stream 99th percentile latency, LoadGen's headline metric."""
    qps_with_loadgen_overhead: float | None = None
    qps_without_loadgen_overhead: float | None = None
    samples_per_s: float | None = None
    """Offline throughput."""
    completed_samples_per_s: float | None = None
    scheduled_samples_per_s: float | None = None
    latency_bound_s: float | None = None
    """Server: the latency bound (``target_latency``); None elsewhere."""
    queries: int | None = None
    """Queries processed, when the early stopping lines state it (not for offline or a passing server)."""
    early_stopping: tuple[str, ...] = ()
    warnings: int = 0
    errors: int = 0
    extra: Mapping[str, str] = field(default_factory=dict)
    """Every other ``key : value`` line of the log, verbatim."""

    @property
    def qps(self) -> float:
        """The scenario throughput: queries/s (single-stream), samples/s (the others).

        LoadGen prints no throughput for multi-stream; there it is samples per query over the mean
        per-query latency.
        """
        values = {
            "single-stream": self.qps_with_loadgen_overhead,
            "offline": self.samples_per_s,
            "server": self.completed_samples_per_s,
        }
        value = values.get(self.scenario)
        if value is None:
            return self.samples_per_query / self.mean_latency_s if self.mean_latency_s > 0 else 0.0
        return value


PRINTED_DIGITS = 6
"""LoadGen logs a float setting such as the server's target QPS with this many significant digits (summary
and detail logs alike): a search's exact target is logged rounded."""


def as_printed(value: float) -> float:
    """``value`` as LoadGen logs it (``PRINTED_DIGITS`` significant digits)."""
    return float(f"{value:.{PRINTED_DIGITS}g}")


def parse_summary(text: str) -> Summary:
    """Parse a LoadGen ``mlperf_log_summary.txt``; raises ValueError if it is not one."""
    if _HEADER not in text or "Result is :" not in text:
        raise ValueError(f"not a LoadGen summary log: no {_HEADER!r} header or 'Result is' line")
    values, blocks = _scan(text)
    early_stopping = tuple(blocks.get("Early Stopping Result", ()))
    met = {name: _yes(values, f"{name} satisfied") for name in _CONSTRAINTS}
    valid = _required(values, "Result is") == "VALID"
    scenario = _scenario(_required(values, "Scenario"))
    return Summary(
        scenario=scenario,
        mode=_required(values, "Mode"),
        valid=valid,
        invalid_reasons=_invalid_reasons(valid, met, blocks.get("Recommendations", ()), early_stopping),
        min_duration_met=bool(met["Min duration"]),
        min_queries_met=bool(met["Min queries"]),
        early_stopping_met=bool(met["Early stopping"]),
        perf_constraints_met=met["Performance constraints"],
        **_latencies(values),
        **_throughputs(values, scenario),
        samples_per_query=int(_number(values, "samples_per_query")),
        target_qps=_number(values, "target_qps"),
        min_duration_s=_number(values, "min_duration (ms)") * 1e-3,
        min_query_count=int(_number(values, "min_query_count")),
        performance_sample_count=int(_number(values, "performance_sample_count")),
        sut_name=values.pop("SUT name", ""),
        queries=_query_count(early_stopping),
        early_stopping=early_stopping,
        warnings=_count(text, "warning"),
        errors=_count(text, "error"),
        extra=values,
    )


def parse_detail(text: str) -> list[str]:
    """The errors and warnings of a LoadGen ``mlperf_log_detail.txt``, as ``"key: message"`` lines.

    Raises ValueError if the text holds no ``:::MLLOG`` record.
    """
    found = []
    for record in _records(text):
        metadata = record.get("metadata") or {}
        key = str(record.get("key", ""))
        flagged = bool(metadata.get("is_error") or metadata.get("is_warning"))
        if flagged or key.startswith(("error", "warning")):
            found.append(f"{key}: {record.get('value')}")
    return found


def parse_detail_values(text: str) -> dict[str, Any]:
    """Every ``key -> value`` of a LoadGen detail log (the last one wins), e.g. ``result_query_count``.

    Raises ValueError if the text holds no ``:::MLLOG`` record.
    """
    return {str(record.get("key")): record.get("value") for record in _records(text)}


def _records(text: str) -> list[dict[str, Any]]:
    records = []
    lines = [line for line in text.splitlines() if line.startswith(_MLLOG_PREFIX)]
    if not lines:
        raise ValueError("not a LoadGen detail log: no ':::MLLOG' record")
    for line in lines:
        try:
            record = json.loads(line[len(_MLLOG_PREFIX) :])
        except json.JSONDecodeError:
            continue  # a record cut short (log truncated while LoadGen wrote it)
        if isinstance(record, dict):
            records.append(record)
    return records


def _scan(text: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    """``key : value`` lines, and the ``*`` bullet lists under ``Recommendations:`` and the like."""
    values: dict[str, str] = {}
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if current is not None and line.startswith(" * "):
            current.append(line[3:].strip())
            continue
        if current is not None and line.startswith(" ") and line.strip() and current:
            current[-1] = f"{current[-1]} {line.strip()}"
            continue
        current = None
        stripped = line.strip()
        if stripped.endswith(":") and not line.startswith(" "):
            current = blocks.setdefault(stripped[:-1].strip(), [])
        elif ":" in stripped:
            key, _, value = stripped.partition(":")
            values.setdefault(key.strip(), value.strip())
    return values, blocks


def _invalid_reasons(
    valid: bool,
    met: Mapping[str, bool | None],
    recommendations: tuple[str, ...] | list[str],
    early_stopping: tuple[str, ...],
) -> tuple[str, ...]:
    if valid:
        return ()
    reasons = [f"{name.lower()} not satisfied" for name, ok in met.items() if ok is False]
    reasons.extend(recommendations)
    if met["Early stopping"] is False and early_stopping:
        reasons.append("early stopping: " + " ".join(early_stopping))
    return tuple(reasons) or ("LoadGen result INVALID",)


def _latencies(values: dict[str, str]) -> dict[str, Any]:
    percentiles: dict[float, float] = {}
    target: dict[str, Any] = {}
    for key in list(values):
        if match := _PERCENTILE.match(key):
            percentiles[float(match.group(1))] = _number(values, key) * _NS
        elif match := _TARGET_LATENCY.match(key):
            target = {
                "target_percentile": float(match.group(1)) / 100,
                "target_latency_s": _number(values, key) * _NS,
            }
    if not percentiles:
        raise ValueError("LoadGen summary log has no percentile latency lines")
    return {
        "min_latency_s": _number(values, "Min latency (ns)") * _NS,
        "max_latency_s": _number(values, "Max latency (ns)") * _NS,
        "mean_latency_s": _number(values, "Mean latency (ns)") * _NS,
        "latency_percentiles_s": percentiles,
        **target,
    }


def _throughputs(values: dict[str, str], scenario: str) -> dict[str, Any]:
    found = {
        "qps_with_loadgen_overhead": _optional_number(values, "QPS w/ loadgen overhead"),
        "qps_without_loadgen_overhead": _optional_number(values, "QPS w/o loadgen overhead"),
        "samples_per_s": _optional_number(values, "Samples per second"),
        "completed_samples_per_s": _optional_number(values, "Completed samples per second"),
        "scheduled_samples_per_s": _optional_number(values, "Scheduled samples per second"),
        "latency_bound_s": None,
    }
    bound_ns = _optional_number(values, "target_latency (ns)")
    if scenario == "server" and bound_ns is not None:
        found["latency_bound_s"] = bound_ns * _NS
    return found


def _scenario(name: str) -> str:
    compact = name.replace(" ", "")
    if compact not in _SCENARIO_NAMES:
        raise ValueError(f"LoadGen summary log names an unknown scenario {name!r}")
    return _SCENARIO_NAMES[compact]


def _required(values: dict[str, str], key: str) -> str:
    if key not in values:
        raise ValueError(f"LoadGen summary log has no {key!r} line")
    return values.pop(key)


def _number(values: dict[str, str], key: str) -> float:
    text = _required(values, key)
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"LoadGen summary log: {key!r} is not a number: {text!r}") from None


def _optional_number(values: dict[str, str], key: str) -> float | None:
    return _number(values, key) if key in values else None


def _yes(values: dict[str, str], key: str) -> bool | None:
    """``Yes`` -> True, ``NO`` -> False, absent -> None."""
    if key not in values:
        return None
    return values.pop(key).lower() == "yes"


def _query_count(early_stopping: tuple[str, ...]) -> int | None:
    for line in early_stopping:
        for pattern in _QUERY_COUNTS:
            if match := pattern.search(line):
                return int(match.group(1))
    return None


def _count(text: str, kind: str) -> int:
    """Warnings or errors from LoadGen's closing ``N warnings encountered`` lines (0 when 'No ...')."""
    match = re.search(rf"^(\d+) {kind}s? encountered", text, re.IGNORECASE | re.MULTILINE)
    return int(match.group(1)) if match else 0
