"""Which results rank: only cells whose run passed every audit (status ``ok``) are placed on a leaderboard.

Every ranking in accelbench (terminal, ``show``, ``--json``, export, the HTML report) goes through
``leaderboards``; the Goodhart gaps, expressiveness speed-ups, normalized figures, ``explain`` and
``tune`` read ``ok`` results only as well. Cells that were measured but are not verified
(``disqualified``, ``unverified``, ``invalid``, ``unstable``) are listed apart by ``unverified`` with their
reason. ``include_unverified=True`` ranks them too, each entry marked ``verified: False``, for a reader
who wants to see what a cheat or an unstable run would have scored. A stack whose outputs are not the
model's (the null stack, effective precision ``none``) never ranks: it measures the harness alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from accelbench.results import UNVERIFIED_STATUSES, Result


@dataclass(frozen=True, slots=True)
class Entry:
    """One ranked result: its place (1 = best) and whether it passed every audit."""

    rank: int
    result: Result
    verified: bool


@dataclass(frozen=True, slots=True)
class Board:
    """The leaderboard of one workload (size, variant) under one scenario, best headline first."""

    workload: str
    size: str
    variant: str
    scenario: str
    entries: tuple[Entry, ...]


def is_verified(result: Result) -> bool:
    """True when the result may rank: status ``ok`` with a throughput, and the model actually computed."""
    return result.head.status == "ok" and bool(result.qps) and result.head.effective_precision != "none"


def is_rankable(result: Result, include_unverified: bool) -> bool:
    """True when the result goes on a leaderboard (unverified ones only when asked for)."""
    if is_verified(result):
        return True
    measured = result.head.status in UNVERIFIED_STATUSES and bool(result.qps)
    return include_unverified and measured and result.head.effective_precision != "none"


def leaderboards(results: Sequence[Result], include_unverified: bool = False) -> list[Board]:
    """One board per (workload, size, variant, scenario) with at least one entry, in key order."""
    groups: dict[tuple[str, str, str, str], list[Result]] = {}
    for result in results:
        if is_rankable(result, include_unverified):
            cell = result.cell
            groups.setdefault((cell.workload, cell.size, cell.variant, cell.scenario), []).append(result)
    boards = []
    for key, members in sorted(groups.items()):
        ordered = sorted(members, key=order_key)
        entries = tuple(Entry(rank, r, is_verified(r)) for rank, r in enumerate(ordered, start=1))
        boards.append(Board(*key, entries))
    return boards


def order_key(result: Result) -> tuple[float, str]:
    """Best first by the scenario's MLPerf figure: the lowest latency headline (single-stream p90,
    multi-stream p99 per query) or the highest throughput (offline samples/s, server max QPS). A result
    stored before schema 5 falls back to its SUT-timer percentile (latency scenarios) or LoadGen's QPS."""
    figures, latency, scenario = result.figures, result.latency, result.cell.scenario
    if figures is not None:
        return (figures.value if figures.lower_is_better else -figures.value), result.cell.key
    if scenario in ("single-stream", "multi-stream") and latency is not None:
        return (latency.p90_s if scenario == "single-stream" else latency.p99_s), result.cell.key
    return -(result.qps or 0.0), result.cell.key


def unverified(results: Sequence[Result]) -> list[Result]:
    """Measured cells that do not rank, in key order (``disqualified``, ``unverified``, ...)."""
    return sorted((r for r in results if r.head.status in UNVERIFIED_STATUSES), key=lambda r: r.cell.key)
