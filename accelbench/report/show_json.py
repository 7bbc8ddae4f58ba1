"""The ``show --json`` sections that rank and compare: the leaderboards with the unverified cells listed
apart (``normalize.ranking``), and the serving overheads (``normalize.serving``). Built here from their
typed records: the only place they become JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from accelbench.normalize.ranking import Entry, leaderboards, unverified
from accelbench.normalize.serving import serving_comparisons
from accelbench.results import Result


def leaderboard_document(results: Sequence[Result], include_unverified: bool = False) -> dict[str, Any]:
    """``leaderboard`` and ``unverified`` sections of ``show --json``."""
    boards = [
        {
            "workload": board.workload,
            "size": board.size,
            "variant": board.variant,
            "scenario": board.scenario,
            "entries": [_entry_document(entry) for entry in board.entries],
        }
        for board in leaderboards(results, include_unverified)
    ]
    listed = [
        {
            "cell": r.cell.key,
            "stack": r.cell.stack,
            "status": r.head.status,
            "reason": r.head.reason,
            "qps": r.qps,
        }
        for r in unverified(results)
    ]
    return {"leaderboard": boards, "unverified": listed, "include_unverified": include_unverified}


def _entry_document(entry: Entry) -> dict[str, Any]:
    result = entry.result
    latency = result.latency
    return {
        "rank": entry.rank,
        "stack": result.cell.stack,
        "device": result.cell.device,
        "cell": result.cell.key,
        "qps": result.qps,
        "headline": dict(zip(("metric", "value"), result.headline, strict=True)) if result.headline else None,
        "p50_s": latency.p50_s if latency else None,
        "p99_s": latency.p99_s if latency else None,
        "status": result.head.status,
        "verified": entry.verified,
    }


def serving_document(results: Sequence[Result]) -> dict[str, Any]:
    """``{"serving": [...]}`` for ``show --json`` when the results hold served stacks, else empty."""
    comparisons = serving_comparisons(results)
    return {"serving": [c.to_dict() for c in comparisons]} if comparisons else {}
