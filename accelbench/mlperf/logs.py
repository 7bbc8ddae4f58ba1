"""MLPerf Training result logs (``result_*.txt``) -> run times and the olympic mean.

Three formats, told apart by their line token:
    v0.5   ``:::MLPv0.5.0 resnet 1541660379.58 (file.py:523) run_start``; seconds;
           ``run_stop: {"success": "true"}``
    v0.6   ``:::MLL 1558420845.819 run_start: {"value": null, "metadata": {...}}``; seconds;
           ``run_stop`` metadata ``"status": "success"``
    v0.7+  ``:::MLLOG {"time_ms": ..., "key": "run_start", "value": ..., "metadata": {...}}``; milliseconds
v0.6 and v0.7+ lines are parsed by the ``mlperf-logging`` package's parsers (compliance_checker.mlp_parser);
v0.5 has no parser there and is parsed here. A run's time is run_stop - run_start; a run without a
successful run_stop, or whose last eval_accuracy is below eval_target, did not converge and counts as
infinitely slow. The score drops the fastest and the slowest run and averages the rest (5 runs for ResNet).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench.errors import UserError
from accelbench.inputs import read_input

FORMATS = {":::MLPv0.5.0": "v0.5", ":::MLL ": "v0.6", ":::MLLOG ": "v0.7+"}
MIN_RUNS = 3
_V05_LINE = re.compile(r":::MLPv0\.5\.0 (\S+) ([\d.]+) \(([^)]*)\) (\w+)(?::\s*(.*))?$")
_SUBMISSION_KEYS = (
    "submission_benchmark",
    "submission_org",
    "submission_platform",
    "submission_division",
    "submission_status",
)


@dataclass(frozen=True, slots=True)
class Event:
    """One log line: time in seconds, key, value, metadata."""

    time_s: float
    key: str
    value: Any
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Run:
    """One result log: its format, time to train, whether it converged, and what it says it is."""

    path: str
    log_format: str
    time_s: float
    converged: bool
    submission: Mapping[str, str]
    """``submission_*`` keys of v0.6+ logs (benchmark, org, platform, division, status); empty for v0.5."""


@dataclass(frozen=True, slots=True)
class Score:
    """The olympic mean of a directory of runs."""

    time_s: float
    runs: tuple[Run, ...]
    converged: int
    log_format: str


def read_run(path: Path) -> Run:
    """Parse one result log; UserError (one line, naming the file) when it is malformed."""
    text = read_input(path, "MLPerf log").decode("latin-1")
    log_format = _format(text, path)
    events = _events(text, log_format, path)
    return _run(events, log_format, path)


def score_directory(folder: Path) -> Score:
    """The olympic mean over ``result_*.txt`` in a folder; UserError for too few, mixed or bad logs."""
    paths = sorted(folder.glob("result_*.txt"))
    if len(paths) < MIN_RUNS:
        raise UserError(
            f"{folder}: found {len(paths)} result_*.txt logs; the olympic mean needs at least {MIN_RUNS}"
        )
    runs = tuple(read_run(p) for p in paths)
    formats = {r.log_format for r in runs}
    if len(formats) > 1:
        raise UserError(f"{folder}: the logs mix formats ({', '.join(sorted(formats))})")
    time_s = olympic_mean([r.time_s if r.converged else math.inf for r in runs])
    if not math.isfinite(time_s):
        raise UserError(f"{folder}: more than one run did not converge; the result has no score")
    return Score(time_s, runs, sum(r.converged for r in runs), runs[0].log_format)


def olympic_mean(times_s: list[float]) -> float:
    """Drop the fastest and the slowest, average the rest (inf for an unconverged run sorts slowest)."""
    if len(times_s) < MIN_RUNS:
        raise ValueError(f"the olympic mean needs at least {MIN_RUNS} runs, got {len(times_s)}")
    kept = sorted(times_s)[1:-1]
    return math.fsum(kept) / len(kept) if all(math.isfinite(t) for t in kept) else math.inf


def _format(text: str, path: Path) -> str:
    for line in text.splitlines():
        for token, name in FORMATS.items():
            if token in line:
                return name
    raise UserError(f"MLPerf log {path}: no ':::MLPv0.5.0', ':::MLL' or ':::MLLOG' line")


def _events(text: str, log_format: str, path: Path) -> list[Event]:
    if log_format == "v0.5":
        return _v05_events(text, path)
    from mlperf_logging.compliance_checker.mlp_parser import ruleset_060, ruleset_070

    parser = ruleset_060 if log_format == "v0.6" else ruleset_070
    if log_format == "v0.7+":
        _check_times(text, path)
    try:
        lines, failed = parser.parse_generator(text.splitlines())
    except Exception as exc:  # the parsers raise KeyError/TypeError on JSON of the wrong shape
        raise UserError(
            f"MLPerf log {path}: unparsable {log_format} line ({type(exc).__name__}: {exc})"
        ) from None
    if failed:
        raise UserError(
            f"MLPerf log {path}: unparsable {log_format} line {failed[0][0][:80]!r}: {failed[0][1]}"
        )
    scale = 1e-3 if log_format == "v0.7+" else 1.0
    return [_parsed_event(line, scale, log_format, path) for line in lines]


def _parsed_event(line: Any, scale: float, log_format: str, path: Path) -> Event:
    value = line.value
    if log_format == "v0.6" and isinstance(value, dict) and "value" in value:
        value = {"value": value.get("value"), "metadata": value.get("metadata") or {}}
    if not isinstance(value, dict) or not isinstance(value.get("metadata") or {}, dict):
        raise UserError(f"MLPerf log {path}: line {line.lineno + 1} has no value/metadata object")
    stamp = _timestamp(line.timestamp)
    if stamp is None:
        raise UserError(f"MLPerf log {path}: line {line.lineno + 1} has no finite number as its timestamp")
    return Event(stamp * scale, str(line.key), value.get("value"), value.get("metadata") or {})


def _check_times(text: str, path: Path) -> None:
    """Every v0.7+ line's ``time_ms`` is a JSON number (the parser would read ``true`` as 1 ms)."""
    for number, line in enumerate(text.splitlines(), start=1):
        _, mark, payload = line.partition(":::MLLOG ")
        try:
            record = json.loads(payload) if mark else None
        except (ValueError, RecursionError):
            continue  # the parser names the line
        stamp = record.get("time_ms") if isinstance(record, dict) else 0
        if isinstance(stamp, bool) or not isinstance(stamp, int | float):
            shown = json.dumps(stamp)[:40]
            raise UserError(f"MLPerf log {path}: line {number} has a time_ms that is not a number: {shown}")


def _timestamp(raw: Any) -> float | None:
    """A log line's time as a finite float; None for anything else (``true`` is not a time)."""
    if isinstance(raw, bool):
        return None
    try:
        stamp = float(raw)
    except (TypeError, ValueError):
        return None
    return stamp if math.isfinite(stamp) else None


def _v05_events(text: str, path: Path) -> list[Event]:
    events = []
    for number, line in enumerate(text.splitlines(), start=1):
        if ":::MLPv0.5.0" not in line:
            continue
        found = _V05_LINE.search(line.strip())
        if found is None:
            raise UserError(f"MLPerf log {path}: line {number} is not a v0.5 log line: {line.strip()[:80]!r}")
        events.append(
            Event(float(found.group(2)), found.group(4), _v05_value(found.group(5), path, number), {})
        )
    return events


def _v05_value(raw: str | None, path: Path, number: int) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise UserError(
            f"MLPerf log {path}: line {number} has a value that is not JSON: {raw[:60]!r}"
        ) from None


def _run(events: list[Event], log_format: str, path: Path) -> Run:
    starts = [e.time_s for e in events if e.key == "run_start"]
    stops = [e for e in events if e.key == "run_stop"]
    if not starts:
        raise UserError(f"MLPerf log {path}: no run_start")
    if not stops:
        return Run(str(path), log_format, math.inf, False, _submission(events))
    time_s = stops[-1].time_s - starts[0]
    if not math.isfinite(time_s) or time_s <= 0:
        raise UserError(f"MLPerf log {path}: run_stop is not after run_start")
    converged = _succeeded(stops[-1], log_format) and _reached_target(events)
    return Run(str(path), log_format, time_s, converged, _submission(events))


def _succeeded(stop: Event, log_format: str) -> bool:
    if log_format == "v0.5":
        success = stop.value.get("success") if isinstance(stop.value, dict) else None
        return success is True or str(success).lower() == "true"
    return str(stop.metadata.get("status", "")).lower() == "success"


def _reached_target(events: list[Event]) -> bool:
    """False when the log states a target and its last accuracy is below it (else True: trust run_stop)."""
    targets = [e.value for e in events if e.key == "eval_target" and isinstance(e.value, (int, float))]
    found = [_accuracy(e.value) for e in events if e.key == "eval_accuracy"]
    accuracies = [a for a in found if a is not None]
    if not targets or not accuracies:
        return True
    return accuracies[-1] >= float(targets[-1])


def _accuracy(value: Any) -> float | None:
    if isinstance(value, dict):
        value = value.get("value")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _submission(events: list[Event]) -> dict[str, str]:
    return {e.key.removeprefix("submission_"): str(e.value) for e in events if e.key in _SUBMISSION_KEYS}
