"""Rendering of normalized figures: ``accelbench explain`` and ``accelbench history``, as tables and JSON.

The only place where normalized SI values become display units (minutes, billions of transistors, kWh)
and where ranges become text like ``4.84x (2.60-4.84)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from accelbench.mlperf.history import HistoryEntry
from accelbench.normalize.explain import (
    RESIDUAL,
    CmosComparison,
    Decomposition,
    Explanation,
    Factor,
    ratio_check,
)
from accelbench.normalize.factors import Figure
from accelbench.normalize.subjects import Subject
from accelbench.ranges import Range, range_document, weakest
from accelbench.report.section_table import titled_table

HISTORY_PER = {
    "chip": ("chip",),
    "transistor": ("transistor",),
    "mm2": ("mm2",),
    "watt": ("tdp_w",),
    "dollar": ("usd_cloud", "usd"),
}
_AFTER = {
    "chips": "per chip",
    "transistors per chip": "per transistor",
    "die area per chip": "per mm²",
    "TDP per chip": "per TDP watt",
}
DISPLAY = {  # figure unit -> (display unit for training runs, scale from SI)
    "chip*s": ("chip-min", 1 / 60),
    "transistor*s": ("B-transistor-min", 1e-9 / 60),
    "mm2*s": ("m²-min", 1e-6 / 60),
    "J": ("kWh", 1 / 3.6e6),
    "USD*s": ("USD-h of hardware", 1 / 3600),
    "USD": ("USD", 1.0),
}
_QUANTITY = {
    "chips": ("", 1.0),
    "transistors": (" B", 1e-9),
    "mm2": (" mm²", 1.0),
    "W": (" W", 1.0),
    "ps": (" ps", 1.0),
    "fJ": (" fJ", 1.0),
}


def times(value: Range) -> str:
    """``27.3x`` or ``4.84x (2.60-4.84)``."""
    text = f"{_num(value.central)}x"
    return text if value.is_point else f"{text} ({_num(value.low)}-{_num(value.high)})"


def explanation_renderables(explanation: Explanation) -> list[Any]:
    """What ``accelbench explain`` prints: subjects, main table, variants, figures, CMOS, warnings."""
    out: list[Any] = [_subject_line("A", explanation.a), _subject_line("B", explanation.b)]
    out.append(_decomposition_table(explanation, explanation.main))
    out.append(_variants_table(explanation))
    out.append(_figures_table(explanation))
    if explanation.cmos is not None:
        out.append(_cmos_line(explanation.cmos))
    out += [f"[yellow]warning[/] {text}" for text in explanation.warnings]
    return out


def explanation_document(explanation: Explanation) -> dict[str, Any]:
    """``accelbench explain --json``: the same numbers, in SI units."""
    cmos = explanation.cmos
    return {
        "a": _subject_document(explanation.a, explanation.figures_a),
        "b": _subject_document(explanation.b, explanation.figures_b),
        "ratio": range_document(explanation.ratio),
        "decompositions": [_decomposition_document(d) for d in explanation.decompositions],
        "gains": {per: range_document(value) for per, value in explanation.gains.items()},
        "cmos": None if cmos is None else _cmos_document(cmos),
        "warnings": list(explanation.warnings),
    }


def history_table(rows: Sequence[tuple[HistoryEntry, Sequence[Figure]]], per: str) -> Table:
    """``accelbench history``: one row per entry, with the normalized cost columns of ``per``."""
    table = Table(
        title=f"MLPerf Training history (normalized per {per}; lower cost is better)", title_justify="left"
    )
    for column in ("id", "chip", "chips", "time min"):
        table.add_column(column, justify="right" if column in ("chips", "time min") else "left")
    for name in HISTORY_PER[per]:
        table.add_column(_column_title(name), justify="right")
    for entry, found in rows:
        by_per = {f.per: f for f in found}
        cells = [_cost_text(by_per[n], show_unit=False) if n in by_per else "-" for n in HISTORY_PER[per]]
        time_text = f"{entry.time_s / 60:.3f}" if entry.time_s is not None else "-"
        table.add_row(entry.id, entry.chip_key, str(entry.accelerator_count or "-"), time_text, *cells)
    return table


def history_document(rows: Sequence[tuple[HistoryEntry, Sequence[Figure]]]) -> list[dict[str, Any]]:
    """``accelbench history --json``: every entry with its time (s) and every figure."""
    return [
        {
            "id": entry.id,
            "benchmark": entry.benchmark,
            "round": entry.round,
            "submitter": entry.submitter,
            "system_name": entry.system_name,
            "chip_key": entry.chip_key,
            "accelerator_count": entry.accelerator_count,
            "time_s": entry.time_s,
            "time_basis": entry.time_basis,
            "availability": entry.availability,
            "origin": entry.origin,
            "source": entry.source,
            "figures": {f.per: f.to_dict() for f in found},
        }
        for entry, found in rows
    ]


def _subject_line(name: str, subject: Subject) -> str:
    chip = subject.chip.key if subject.chip else "unknown chip"
    if subject.kind == "time-to-train":
        amount = f"{subject.seconds_per_work / 60:.3f} min to train"
    else:
        unit = subject.work_unit.split(" ")[0]
        amount = f"{subject.speed:.4g} {'queries' if unit == 'query' else unit + 's'}/s"
    counted = subject.counted
    count = (
        f"{subject.count:g}"
        if counted.is_point
        else f"{subject.count:.3g} ({counted.low:.3g}-{counted.high:.3g})"
    )
    return f"[bold]{name}[/] {subject.id}: {subject.label}; {count} x {chip}; {amount}"


def _decomposition_table(explanation: Explanation, decomposition: Decomposition) -> Table:
    table = titled_table(
        "ratio = chips x transistors per chip x node x residual",
        ("factor", "B / A", "A", "B", "left after this step", "provenance"),
        ("factor", "provenance"),
    )
    a, b = explanation.a, explanation.b
    table.add_row("measured speed ratio", times(explanation.ratio), _amount(a), _amount(b), "", "measured")
    for factor in decomposition.factors:
        table.add_row(*_factor_cells(factor))
    check = ratio_check(decomposition)
    table.add_row("product of the factors", f"{_num(check)}x", "", "", "= measured ratio", "")
    return table


def _factor_cells(factor: Factor) -> list[str]:
    left = (
        ""
        if factor.name == RESIDUAL
        else f"{times(factor.remaining)} {_AFTER.get(factor.name, 'after node credit')}"
    )
    name = factor.name + (f" [dim]({factor.note})[/]" if factor.note and "folded" in factor.note else "")
    quantities = [_quantity(factor.a, factor.unit), _quantity(factor.b, factor.unit)]
    return [name, times(factor.value), *quantities, left, factor.provenance]


def _variants_table(explanation: Explanation) -> Table:
    table = titled_table(
        "variants: the per-chip quantity replaced",
        ("per", "chips", "per-chip quantity", "node", "per-quantity ratio", "residual"),
        ("per",),
    )
    for decomposition in explanation.decompositions:
        chips, quantity, node, residual = decomposition.factors
        table.add_row(
            decomposition.per,
            times(chips.value),
            times(quantity.value),
            times(node.value),
            times(quantity.remaining),
            times(residual.value),
        )
    return table


def _figures_table(explanation: Explanation) -> Table:
    table = titled_table(
        "normalized cost per unit of work (lower is better)",
        ("per", "A", "B", "gain B over A", "provenance", "source class"),
        ("per", "provenance", "source class"),
    )
    by_per = {f.per: f for f in explanation.figures_b}
    for figure in explanation.figures_a:
        other = by_per.get(figure.per)
        if other is None or figure.per not in explanation.gains:
            continue
        table.add_row(
            figure.per,
            _cost_text(figure, explanation.a),
            _cost_text(other, explanation.b),
            times(explanation.gains[figure.per]),
            weakest(figure.provenance, other.provenance),
            source_classes(figure, other),
        )
    return table


def source_classes(*found: Figure) -> str:
    """The source classes of figures, once each, A's first: ``vendor datasheet / review``."""
    return " / ".join(dict.fromkeys(f.source_class for f in found))


def _cmos_line(cmos: CmosComparison) -> str:
    return (
        f"CMOS potential (Fuchs & Wentzlaff 2019, Rankine model): {cmos.potential_a.chip_key} is "
        f"{cmos.potential_a.limited_by}-limited, {cmos.potential_b.chip_key} is "
        f"{cmos.potential_b.limited_by}-limited; "
        f"potential gain of the systems {times(cmos.potential_gain)}; "
        f"specialization return (measured / potential) {times(cmos.specialization_return)}"
    )


def _amount(subject: Subject) -> str:
    if subject.kind == "time-to-train":
        return f"{subject.seconds_per_work / 60:.3f} min"
    return f"{subject.speed:.4g}/s"


def _quantity(value: Range | None, unit: str) -> str:
    if value is None:
        return ""
    suffix, scale = _QUANTITY.get(unit, (f" {unit}", 1.0))
    text = f"{_num(value.central * scale)}{suffix}"
    return text if value.is_point else f"{text} ({_num(value.low * scale)}-{_num(value.high * scale)})"


def _cost_text(figure: Figure, subject: Subject | None = None, show_unit: bool = True) -> str:
    if subject is not None and subject.kind == "throughput":
        return f"{_num(figure.value.central)} {figure.unit}" + ("" if figure.value.is_point else " (range)")
    unit, scale = DISPLAY.get(figure.unit, (figure.unit, 1.0))
    value = figure.value
    text = f"{_num(value.central * scale)} {unit}" if show_unit else _num(value.central * scale)
    return text if value.is_point else f"{text} ({_num(value.low * scale)}-{_num(value.high * scale)})"


def _column_title(per: str) -> str:
    return {
        "chip": "accelerator-min",
        "transistor": "B-transistor-min",
        "mm2": "m²-min",
        "tdp_w": "kWh at TDP",
        "usd_cloud": "cloud USD",
        "usd": "USD-h of hardware",
    }[per]


def _num(value: float) -> str:
    if value == 0 or 0.01 <= abs(value) < 1e6:
        digits = 3 if abs(value) < 1 else (2 if abs(value) < 10 else (1 if abs(value) < 100 else 0))
        return f"{value:,.{digits}f}"
    return f"{value:.3g}"


def _subject_document(subject: Subject, found: Sequence[Figure]) -> dict[str, Any]:
    return {
        "id": subject.id,
        "label": subject.label,
        "kind": subject.kind,
        "benchmark": subject.benchmark,
        "seconds_per_work": subject.seconds_per_work,
        "work_unit": subject.work_unit,
        "chip_key": subject.chip.key if subject.chip else None,
        "count": subject.count,
        "count_high": subject.count_high,
        "count_basis": subject.count_basis,
        "round": subject.round,
        "time_basis": subject.time_basis,
        "figures": {f.per: f.to_dict() for f in found},
    }


def _decomposition_document(decomposition: Decomposition) -> dict[str, Any]:
    return {
        "per": decomposition.per,
        "factors": [
            {
                "name": f.name,
                "value": range_document(f.value),
                "remaining": range_document(f.remaining),
                "a": range_document(f.a),
                "b": range_document(f.b),
                "unit": f.unit,
                "provenance": f.provenance,
                "note": f.note,
            }
            for f in decomposition.factors
        ],
        "product_of_central_values": ratio_check(decomposition),
    }


def _cmos_document(cmos: CmosComparison) -> dict[str, Any]:
    return {
        "potential_gain": range_document(cmos.potential_gain),
        "specialization_return": range_document(cmos.specialization_return),
        "potentials": {
            p.chip_key: {
                "throughput": range_document(p.throughput),
                "power_w": range_document(p.power_w),
                "effective_transistors": range_document(p.effective_transistors),
                "limited_by": p.limited_by,
                "provenance": p.provenance,
                "extrapolated": list(p.extrapolated),
            }
            for p in (cmos.potential_a, cmos.potential_b)
        },
    }
