"""Terminal tables of the generalization document and of the audits (formatting only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from accelbench.audit_section import AuditSection
from accelbench.audits import AUDIT_ORDER, audit_warnings, failed_audits, inconclusive_audits
from accelbench.normalize.generalization import Generalization
from accelbench.results import Result


def stacks_table(figures: Generalization) -> Table:
    """One row per (workload, stack, device, scenario): Goodhart gap, spread, success rate, compile growth."""
    title = f"Generalization to unseen variants (variant seed {figures.variant_seed})"
    table = Table(title=title, title_justify="left")
    for column in ("workload", "stack", "device", "scenario"):
        table.add_column(column)
    for column in ("Goodhart gap", "95% CI", "spread", "95% CI ", "success", "compile growth"):
        table.add_column(column, justify="right")
    for row in figures.stacks:
        group = row.group
        table.add_row(
            group.workload,
            group.stack,
            group.device,
            group.scenario,
            _ratio(row.goodhart_gap),
            _interval(row.gap_ci, _ratio),
            _share(row.spread),
            _interval(row.spread_ci, _share),
            f"{row.variants_ok}/{row.variants_total}",
            _ratio(row.compile_growth),
        )
    return table


def variants_table(figures: Generalization) -> Table:
    """One row per variant: FLOPs relative to the canonical model and the mutations."""
    table = Table(title="Variants", title_justify="left")
    for column in ("workload", "variant", "GFLOP/sample", "x canonical", "mutations"):
        table.add_column(column, justify="right" if column[0] in "Gx" else "left")
    for row in figures.variants:
        mutations = "; ".join(m.detail for m in row.mutations) or "-"
        flops = "-" if row.flops is None else f"{row.flops / 1e9:.3g}"
        ratio = "-" if row.flops_ratio is None else f"{row.flops_ratio:.2f}"
        table.add_row(row.workload, row.variant, flops, ratio, mutations)
    return table


def audits_table(results: Sequence[Result]) -> Table | None:
    """One row per audited result with a failed or inconclusive audit; None when every audit passed."""
    rows = [r for r in sorted(results, key=lambda r: r.cell.key) if audit_warnings(r.audit)]
    if not rows:
        return None
    table = Table(title="Audits that failed or could not conclude", title_justify="left")
    for column in ("workload", "variant", "stack", "scenario", "failed", "inconclusive"):
        table.add_column(column)
    for column in ("repeat ratio", "caching speedup", "error"):
        table.add_column(column, justify="right")
    for result in rows:
        audit = result.audit
        cell = result.cell
        table.add_row(
            cell.workload,
            cell.variant,
            cell.stack,
            cell.scenario,
            ", ".join(failed_audits(audit)) or "-",
            ", ".join(inconclusive_audits(audit)) or "-",
            _ratio(_repeat_ratio(audit)),
            _ratio(_number(audit, "caching", "speedup")),
            _error(_number(audit, "precision", "max_norm_abs_err")),
        )
    return table


def audits_line(results: Sequence[Result]) -> str | None:
    """A one-line summary: how many results were audited, disqualified and inconclusive (None: no audits)."""
    audited = [r.audit for r in results if r.audit is not None and r.audit.entries]
    if not audited:
        return None
    failed = sum(1 for a in audited if failed_audits(a))
    inconclusive = sum(1 for a in audited if inconclusive_audits(a) and not failed_audits(a))
    names = ", ".join(name.replace("_", " ") for name in AUDIT_ORDER)
    return (
        f"audits ({names}): {len(audited)} results checked, {failed} disqualified, "
        f"{inconclusive} inconclusive"
    )


def _number(audit: AuditSection | None, name: str, key: str) -> float | None:
    entry = audit.entries.get(name) if audit is not None else None
    return entry.number(key) if entry is not None else None


def _repeat_ratio(audit: AuditSection | None) -> float | None:
    """The whole run's seen/never-seen ratio (the first window of the repeat audit's evidence)."""
    entry = audit.entries.get("repeat") if audit is not None else None
    ratios = entry.window_ratios() if entry is not None else ()
    return ratios[0] if ratios else None


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _error(value: float | None) -> str:
    return "-" if value is None else f"{value:.1e}"


def _interval(bounds: Sequence[float] | None, fmt: Any) -> str:
    return "-" if bounds is None else f"{fmt(bounds[0])} - {fmt(bounds[1])}"
