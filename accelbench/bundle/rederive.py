"""LoadGen's figures of a cell derived again from the raw logs in a bundle, with the code that made them.

A cell's LoadGen logs lie in ``cells/<folder>/loadgen/a<attempt>-t<trial>[-b<back-off>][-r]/``. The scored
trials are those of the last attempt (an attempt the noise guard judged disturbed is measured once more)
and, within it, of the last server back-off round; a trial re-measured after an offline run that ended
early (``-r``) counts in place of the first. Each trial's ``mlperf_log_summary.txt`` and
``mlperf_log_detail.txt`` are parsed (``accelbench.scenarios.loadgen_log``) and the figures computed by
``accelbench.scenarios.figures.figures_of``, as the cell did; only the SUT timer (not in LoadGen's logs)
is left at zero, so the derived ``sut_s`` is taken from the stored document for the timer check.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass

from accelbench.bundle.crosscheck import disagreements
from accelbench.bundle.tolerance import same
from accelbench.errors import UserError
from accelbench.loadgen_figures import Figures
from accelbench.scenarios.figures import figures_of
from accelbench.scenarios.loadgen import Measurement
from accelbench.scenarios.loadgen_log import (
    Summary,
    parse_detail,
    parse_detail_values,
    parse_summary,
)
from accelbench.scenarios.rules import Rules

TRIAL = re.compile(r"a(\d+)-t(\d+)(?:-b(\d+))?(-r)?")
COMPARED = (
    "value",
    "trial_values",
    "qps",
    "p50_s",
    "p90_s",
    "p99_s",
    "early_stopping_s",
    "valid",
    "loadgen_s",
)
"""The stored ``figures`` fields derived again from the logs (server: not ``ci``, the search's bracket)."""


@dataclass(frozen=True, slots=True)
class Derived:
    """What the logs of one cell say: its figures, the scored trial folders and their INVALID reasons."""

    figures: Figures
    trials: tuple[str, ...]
    invalid_reasons: tuple[str, ...]
    summaries: tuple[Summary, ...] = ()
    disagreements: tuple[str, ...] = ()
    """Where a scored trial's summary and detail log state a figure differently (``crosscheck``)."""


def scored_trials(files: Mapping[str, bytes], folder: str) -> list[str]:
    """The scored trial folders of a cell (bundle paths), in trial order."""
    prefix = f"cells/{folder}/loadgen/"
    slots: dict[tuple[int, int, int], str] = {}
    for path in files:
        if not path.startswith(prefix) or not path.endswith("/mlperf_log_summary.txt"):
            continue
        name = path[len(prefix) : -len("/mlperf_log_summary.txt")]
        match = TRIAL.fullmatch(name)
        if match is None:
            continue
        attempt, number, backoff = int(match[1]), int(match[2]), int(match[3] or 0)
        slot = (attempt, backoff, number)
        if match[4] or slot not in slots:
            slots[slot] = prefix + name
    if not slots:
        return []
    attempt = max(a for a, _, _ in slots)
    backoff = max(b for a, b, _ in slots if a == attempt)
    return [slots[s] for s in sorted(slots) if s[0] == attempt and s[1] == backoff]


def derived(files: Mapping[str, bytes], folder: str, batch: int, computes: bool) -> Derived | None:
    """The figures of the cell in ``folder`` from its logs; None when it has no LoadGen logs."""
    trials = scored_trials(files, folder)
    if not trials:
        return None
    measurements = [_measurement(files, trial, batch) for trial in trials]
    scenario = measurements[0].summary.scenario
    max_qps = measurements[0].summary.target_qps if scenario == "server" else None
    found = figures_of(measurements, max_qps)
    expected = " (expected for the null stack)" if not computes else ""
    invalid = tuple(
        f"trial {n}{expected}: {'; '.join(m.summary.invalid_reasons) or 'no reason given'}"
        for n, m in enumerate(measurements)
        if not m.summary.valid
    )
    disagreeing = tuple(
        f"{trial.rsplit('/', 1)[-1]} {line}"
        for trial, m in zip(trials, measurements, strict=True)
        for line in disagreements(m.summary, m.detail)
    )
    summaries = tuple(m.summary for m in measurements)
    return Derived(found, tuple(trials), invalid, summaries, disagreeing)


def rule_breaches(found: Derived, rules: Rules, scenario: str) -> list[str]:
    """How the scored trials' LoadGen settings fall short of ``rules`` or ran another scenario."""
    breaches = []
    for trial, summary in zip(found.trials, found.summaries, strict=True):
        name = trial.rsplit("/", 1)[-1]
        if summary.scenario != scenario:
            breaches.append(f"{name} ran {summary.scenario}, not {scenario}")
        if summary.min_duration_s < rules.min_duration_for(scenario) - 1e-9:
            breaches.append(
                f"{name} min duration {summary.min_duration_s:g} s < {rules.min_duration_for(scenario):g} s"
            )
        wanted = rules.min_queries_for(scenario)
        count = summary.samples_per_query if scenario == "offline" else summary.min_query_count
        if count < wanted:
            breaches.append(
                f"{name} {'samples' if scenario == 'offline' else 'min queries'} {count} < {wanted}"
            )
    return breaches


def with_sut_timer(found: Figures, stored: Figures | None) -> Figures:
    """``found`` with the SUT timer's seconds taken from the stored figures (the logs do not hold them)."""
    if stored is None:
        return found
    sut = float(stored.sut_s)
    ratio = sut / found.loadgen_s if found.loadgen_s > 0 else found.timer_ratio
    return dataclasses.replace(found, sut_s=sut, timer_ratio=ratio)


def differences(found: Figures, stored: Figures | None) -> list[tuple[str, object, object]]:
    """(field, derived, stored) for every compared figure that differs beyond rounding (``bundle.tolerance``:
    a server's target QPS is logged rounded)."""
    if stored is None:
        return [("figures", "derived from the logs", None)]
    pairs = ((name, getattr(found, name), getattr(stored, name)) for name in COMPARED)
    return [(name, mine, said) for name, mine, said in pairs if not same(mine, said, as_logged=True)]


def _measurement(files: Mapping[str, bytes], trial: str, batch: int) -> Measurement:
    try:
        summary = parse_summary(_text(files, f"{trial}/mlperf_log_summary.txt"))
        detail_text = _text(files, f"{trial}/mlperf_log_detail.txt")
        values = parse_detail_values(detail_text)
        messages = tuple(parse_detail(detail_text))
    except ValueError as exc:
        raise UserError(f"bundle log {trial}: {exc}") from None
    return Measurement(
        summary=summary,
        sut_latencies_s=(),
        calibrated_latency_s=0.0,
        settings={},
        detail_messages=messages,
        query_count=int(values.get("result_query_count") or 0),
        detail=values,
        batch=max(1, batch),
    )


def _text(files: Mapping[str, bytes], path: str) -> str:
    if path not in files:
        raise ValueError(f"missing {path.rsplit('/', 1)[-1]}")
    return files[path].decode(errors="replace")
