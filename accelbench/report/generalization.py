"""Terminal tables of the generalization document and of the audits (formatting only)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from accelbench.results import Result

AUDITS = ("caching", "alternate_seed", "precision")


def stacks_table(document: Mapping[str, Any]) -> Table:
    """One row per (workload, stack, device, scenario): Goodhart gap, spread, success rate, compile growth."""
    seed = document.get("variant_seed")
    table = Table(title=f"Generalization to unseen variants (variant seed {seed})", title_justify="left")
    for column in ("workload", "stack", "device", "scenario"):
        table.add_column(column)
    for column in ("Goodhart gap", "95% CI", "spread", "95% CI ", "success", "compile growth"):
        table.add_column(column, justify="right")
    for row in document["stacks"]:
        table.add_row(
            row["workload"],
            row["stack"],
            row["device"],
            row["scenario"],
            _ratio(row["goodhart_gap"]),
            _interval(row["gap_ci"], _ratio),
            _share(row["spread"]),
            _interval(row["spread_ci"], _share),
            f"{row['variants_ok']}/{row['variants_total']}",
            _ratio(row["compile_growth"]),
        )
    return table


def variants_table(document: Mapping[str, Any]) -> Table:
    """One row per variant: FLOPs relative to the canonical model and the mutations."""
    table = Table(title="Variants", title_justify="left")
    for column in ("workload", "variant", "GFLOP/sample", "x canonical", "mutations"):
        table.add_column(column, justify="right" if column[0] in "Gx" else "left")
    for row in document["variants"]:
        mutations = "; ".join(m["detail"] for m in row["mutations"]) or "-"
        flops = f"{row['flops'] / 1e9:.3g}"
        table.add_row(row["workload"], row["variant"], flops, f"{row['flops_ratio']:.2f}", mutations)
    return table


def audits_table(results: Sequence[Result]) -> Table | None:
    """One row per audited result with a flagged audit; None when nothing is flagged."""
    rows = [r for r in sorted(results, key=lambda r: r.cell.key) if r.audit and flagged_audits(r.audit)]
    if not rows:
        return None
    table = Table(title="Audits flagged", title_justify="left")
    for column in ("workload", "variant", "stack", "scenario", "flagged"):
        table.add_column(column)
    for column in ("caching speedup", "fp32 error"):
        table.add_column(column, justify="right")
    for result in rows:
        audit = result.audit or {}
        cell = result.cell
        table.add_row(
            cell.workload,
            cell.variant,
            cell.stack,
            cell.scenario,
            ", ".join(flagged_audits(audit)),
            _ratio((audit.get("caching") or {}).get("speedup")),
            _error((audit.get("precision") or {}).get("max_norm_abs_err")),
        )
    return table


def audits_line(results: Sequence[Result]) -> str | None:
    """A one-line summary: how many results were audited and how many flagged (None: no audits)."""
    audited = [r for r in results if r.audit]
    if not audited:
        return None
    flagged = sum(1 for r in audited if flagged_audits(r.audit or {}))
    return f"audits (caching, alternate seed, precision): {len(audited)} results checked, {flagged} flagged"


def flagged_audits(audit: Mapping[str, Any]) -> list[str]:
    """Names of the flagged audits of one result."""
    return [name for name in AUDITS if (audit.get(name) or {}).get("flagged")]


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _error(value: float | None) -> str:
    return "-" if value is None else f"{value:.1e}"


def _interval(bounds: Sequence[float] | None, fmt: Any) -> str:
    return "-" if bounds is None else f"{fmt(bounds[0])} - {fmt(bounds[1])}"
