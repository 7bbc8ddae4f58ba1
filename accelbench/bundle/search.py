"""A server cell's max-QPS search derived again from its probes' LoadGen logs (``server_search``).

The search's probes are LoadGen runs under ``cells/<folder>/loadgen/a<attempt>-t0-search/p<N>/`` (trial 0
of the scored attempt searches); a scored round that LoadGen called INVALID backs the target off one step,
and the next round's trials carry ``-b<round>``. ``accelbench.scenarios.server_search.Search`` is rebuilt
from those logs (each probe's target and verdict, the first INVALID trial of every earlier round) and its
``max_qps`` and bracket are the derived claims.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from accelbench.bundle.rederive import TRIAL
from accelbench.bundle.tolerance import same
from accelbench.scenarios.loadgen_log import Summary, parse_summary
from accelbench.scenarios.server_search import Probe, Search
from accelbench.sections import ServerSearch


def derived_search(files: Mapping[str, bytes], folder: str, scored: Sequence[str]) -> Search | None:
    """The search of the server cell in ``folder`` whose scored trial folders are ``scored``; None
    without probe logs. ValueError when a log does not parse."""
    prefix = f"cells/{folder}/loadgen/"
    match = TRIAL.fullmatch(scored[0][len(prefix) :]) if scored else None
    if match is None:
        return None
    attempt, last_round = int(match[1]), int(match[3] or 0)
    root = f"{prefix}a{attempt}-t0-search/"
    names = {p[len(root) :].split("/")[0] for p in files if p.startswith(root)}
    ordered = sorted((n for n in names if n[1:].isdigit()), key=lambda n: int(n[1:]))
    if not ordered:
        return None
    probes = tuple(_probe(_summary(files, f"{root}{name}")) for name in ordered)
    failures = tuple(f for k in range(last_round) if (f := _failure(files, prefix, attempt, k)) is not None)
    return Search(bound_s=0.0, probes=probes, scored_failures=failures)


def search_differences(found: Search, stored: ServerSearch | None) -> list[tuple[str, object, object]]:
    """(field, derived, stored) where the stored ``server_search`` differs from the derived one."""
    if stored is None:
        return [("server_search", "derived from the probe logs", None)]
    low, high = found.bracket
    derived: dict[str, object] = {
        "max_qps": found.max_qps,
        "bracket": [low, high if math.isfinite(high) else None],
        "probes": [[p.target_qps, p.valid] for p in found.probes],
    }
    claimed: dict[str, object] = {
        "max_qps": stored.max_qps,
        "bracket": list(stored.bracket),
        "probes": [[p.target_qps, p.valid] for p in stored.probes],
    }
    return [(k, derived[k], claimed[k]) for k in derived if not same(derived[k], claimed[k], as_logged=True)]


def _failure(files: Mapping[str, bytes], prefix: str, attempt: int, round_number: int) -> Probe | None:
    """The first INVALID trial of a scored round (the one that backed the search off)."""
    suffix = f"-b{round_number}" if round_number else ""
    number = 0
    while f"{prefix}a{attempt}-t{number}{suffix}/mlperf_log_summary.txt" in files:
        summary = _summary(files, f"{prefix}a{attempt}-t{number}{suffix}")
        if not summary.valid:
            return _probe(summary)
        number += 1
    return None


def _probe(summary: Summary) -> Probe:
    return Probe(
        target_qps=summary.target_qps,
        valid=summary.valid,
        p99_s=summary.latency_percentiles_s.get(99.0, 0.0),
        completed_qps=summary.qps,
        reasons=summary.invalid_reasons,
    )


def _summary(files: Mapping[str, bytes], folder: str) -> Summary:
    path = f"{folder}/mlperf_log_summary.txt"
    if path not in files:
        raise ValueError(f"missing {path}")
    return parse_summary(files[path].decode(errors="replace"))
