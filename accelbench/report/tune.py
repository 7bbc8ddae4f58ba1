"""The ranking of ``accelbench tune`` in the terminal: verified stacks by throughput, then the others."""

from __future__ import annotations

from rich.table import Table

from accelbench.head import Head
from accelbench.tune import Ranking


def ranking_table(ranking: Ranking) -> Table:
    """One row per stack: rank (verified only), status, throughput, p50 latency, speed vs the reference."""
    title = f"accelbench tune {ranking.source.location} (run {ranking.run_id})"
    table = Table(title=title, title_justify="left")
    for column in (
        "#",
        "stack",
        "status",
        "QPS",
        "p50 ms",
        f"vs {ranking.reference_stack}",
        "quality / reason",
    ):
        table.add_column(column, justify="right" if column in ("#", "QPS", "p50 ms") else "left")
    reference = next((r for r in ranking.results if r.cell.stack == ranking.reference_stack), None)
    reference_qps = reference.qps if reference is not None and reference.head.status == "ok" else None
    rank = 0
    for result in ranking.results:
        verified = result.head.status == "ok" and result.qps
        rank += 1 if verified else 0
        qps = result.qps if verified else None
        table.add_row(
            str(rank) if verified else "-",
            result.cell.stack,
            result.head.status,
            f"{qps:.1f}" if qps else "-",
            f"{result.latency.p50_s * 1e3:.3f}" if verified and result.latency else "-",
            f"{qps / reference_qps:.2f}x" if qps and reference_qps else "-",
            _note(result.head),
        )
    return table


def verdict_line(ranking: Ranking) -> str:
    """One sentence: the best verified stack and its speedup over the reference."""
    if ranking.best is None:
        return "[red]no stack ran the model correctly[/]"
    speedup = f"{ranking.speedup:.2f}x" if ranking.speedup is not None else "n/a (reference not verified)"
    return (
        f"best verified stack: [green]{ranking.best.cell.stack}[/], "
        f"{speedup} the throughput of {ranking.reference_stack}"
    )


def no_result_line(ranking: Ranking) -> str:
    """Why no stack produced a verified result, stack by stack (``stack: status reason``; the reason cut)."""
    why = "; ".join(f"{r.cell.stack}: {r.head.status} {_note(r.head)[:80]}".strip() for r in ranking.results)
    return f"no stack produced a verified result ({why or 'no stack ran'})"


def _note(head: Head) -> str:
    if head.status == "ok" and head.quality is not None:
        return f"{head.quality.metric} {head.quality.value:.6f} >= {head.quality.threshold:g}"
    return " ".join(head.reason.split())[:120]
