"""Terminal table of the served-LLM curves (``accelbench.endpoint``): a row per point of each curve.

Reads the ``generation`` section's ``curve`` of the endpoint cells; the only place its seconds and
rates are formatted. Each point's joules per output token and per token (prompt and output) come from
the energy its window consumed (``accelbench.endpoint.energy``; ``est``: estimated, the meter in the
caption). With a price per hour (``show --price-per-hour``, ``accelbench.meters.cost``), each point's $
per million output tokens: the machine's hour over the point's system output tokens/s (cost is
computed at read time, not stored). The curve is a step function: each row is one measured
concurrency, nothing is implied between two rows. A cell that did not pass every audit says so in its
status column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from accelbench.curve import CurvePoint, EndpointFigures
from accelbench.endpoint.extension import POINT_WIDTH
from accelbench.hardware.match import ChipMatch
from accelbench.meters.cost import HourlyRate, usd_per_million_queries
from accelbench.normalize.denominators import Denominator, served_denominators
from accelbench.ranges import range_document
from accelbench.report.columns import whole_ms
from accelbench.report.endpoint_qps import qps_table
from accelbench.report.section_table import titled_table
from accelbench.results import Result

TITLE = "Served LLM curves (fixed concurrency; client-side token counts)"
COLUMNS = (
    "workload",
    "stack",
    "status",
    "concurrency",
    "requests",
    "output tok/s",
    "tok/s per user",
    "TTFT p50/p90 ms",
    "TTFT p50 95% CI",
    "TPOT p50/p90 ms",
    "TPOT p50 95% CI",
    "ITL p50 ms",
    "e2e p90 s",
    "req/s",
    "goodput req/s",
    "errors",
    "J/output tok",
    "J/tok (in+out)",
)
_LEFT = ("workload", "stack", "status")
COST_COLUMN = "$/M output tok"
CHIP_COLUMN = "output tok/s per chip"
WATT_COLUMN = "output tok/s per TDP W"
USD_COLUMN = "output tok/s per k$"
"""Per thousand USD of the chips' purchase (launch) price."""


def curve_table(
    results: Sequence[Result], rate: HourlyRate | None = None, chips: Mapping[str, ChipMatch] | None = None
) -> Table | None:
    """One row per point of every endpoint result (with ``rate``: its $ per million output tokens, the
    basis in the caption; with ``chips``, per cell key the chips its server ran on: its output tokens/s
    per chip); None when there is none."""
    curves = sorted(curves_of(results), key=lambda pair: pair[0].cell.key)
    if not curves:
        return None
    chips = chips or {}
    extra = (*((CHIP_COLUMN, WATT_COLUMN, USD_COLUMN) if chips else ()), *((COST_COLUMN,) if rate else ()))
    table = titled_table(TITLE, (*COLUMNS, *extra), _LEFT)
    for result, section in curves:
        match = chips.get(result.cell.key)
        for point in section.curve:
            rate_s = point.output_tokens_per_s
            per_chip = [] if not chips else [per_chip_text(rate_s, match)]
            if chips:
                per_chip += [_per_denominator(rate_s, match, "tdp_w", 1.0)]
                per_chip += [_per_denominator(rate_s, match, "usd", 1e3)]
            cost = [] if rate is None else [_usd(usd_per_million_output_tokens(rate, point))]
            table.add_row(*_row(result, point), *per_chip, *cost)
    captions = [
        f"{r.cell.stack} energy: {section.energy_note.split(';')[0]}"
        for r, section in curves
        if section.energy_note
    ]
    captions += [
        f"{r.cell.stack} server prefix cache: {section.prefix_cache}"
        for r, section in curves
        if section.prefix_cache
    ]
    captions.append(
        "p50 95% CI: the median's distribution-free interval and its half-width over the median ('-': "
        "under 6 replies); under --rules standard or official a point goes on until both are within "
        f"±{POINT_WIDTH:.0%} or its time cap"
    )
    captions += [
        f"{CHIP_COLUMN} ({key}): {match.count:.4g} chips counted ({match.count_basis or match.basis})"
        for key, match in sorted(chips.items())
    ]
    captions += [line for key, match in sorted(chips.items()) for line in _denominator_caption(key, match)]
    if chips and any(r.cell.key not in chips for r, _ in curves):
        captions.append(
            f"{CHIP_COLUMN} -: a server at --serve-url whose chips were not declared (--serve-hardware)"
        )
    if rate is not None:
        captions.append(f"{COST_COLUMN}: the machine's hour at {rate.basis} over the point's output tokens/s")
    table.caption = "\n".join(captions) or None
    return table


def curve_tables(
    results: Sequence[Result], rate: HourlyRate | None = None, chips: Mapping[str, ChipMatch] | None = None
) -> tuple[Table | None, Table | None]:
    """The curves' table (``curve_table``) and the max-QPS searches' (``report.endpoint_qps``)."""
    return curve_table(results, rate, chips), qps_table(results)


def usd_per_million_output_tokens(rate: HourlyRate, point: CurvePoint) -> float | None:
    """Dollars for a million output tokens at the point's system output tokens/s (None: no tokens)."""
    if point.output_tokens_per_s <= 0:
        return None
    return usd_per_million_queries(rate, 1.0 / point.output_tokens_per_s)


def cost_document(results: Sequence[Result], rate: HourlyRate) -> dict[str, Any]:
    """``show --json``'s served-LLM cost: the rate and, per point of each curve, $ per million output
    tokens (null for a point without tokens)."""
    points = [
        {
            "cell_key": r.cell.key,
            "concurrency": p.concurrency,
            "usd_per_million_output_tokens": usd_per_million_output_tokens(rate, p),
        }
        for r, section in sorted(curves_of(results), key=lambda pair: pair[0].cell.key)
        for p in section.curve
    ]
    return {"served_llm_cost": {"usd_per_hour": rate.usd_per_hour, "basis": rate.basis, "points": points}}


def curves_of(results: Sequence[Result]) -> list[tuple[Result, EndpointFigures]]:
    """The endpoint results among ``results``, each with its section."""
    return [(r, section) for r in results if (section := r.curve) is not None]


def _row(result: Result, point: CurvePoint) -> list[str]:
    return [
        result.cell.workload,
        result.cell.stack,
        result.head.status,
        str(point.concurrency),
        str(point.requests),
        f"{point.output_tokens_per_s:.1f}",
        f"{point.tokens_per_s_per_user:.2f}",
        f"{whole_ms(point.ttft_p50_s)} / {whole_ms(point.ttft_p90_s)}",
        _interval(point.ttft_p50_low_s, point.ttft_p50_high_s, point.ttft_p50_half_width),
        f"{whole_ms(point.tpot_p50_s)} / {whole_ms(point.tpot_p90_s)}",
        _interval(point.tpot_p50_low_s, point.tpot_p50_high_s, point.tpot_p50_half_width),
        whole_ms(point.itl_p50_s),
        f"{point.e2e_p90_s:.2f}",
        f"{point.requests_per_s:.2f}",
        f"{point.goodput_requests_per_s:.2f}",
        f"{point.error_rate:.0%}",
        joules_text(point.joules_per_output_token, point.energy_provenance),
        joules_text(point.joules_per_token, point.energy_provenance),
    ]


def _interval(low_s: float, high_s: float, half_width: float | None) -> str:
    """A median's 95% interval in ms and its half-width over the median (``-``: too few replies)."""
    if half_width is None:
        return "-"
    return f"{whole_ms(low_s)}-{whole_ms(high_s)} ±{half_width:.0%}"


def joules_text(value: float | None, provenance: str) -> str:
    """Joules (per token, per session); an estimate is marked ``est`` (``accelbench.endpoint.energy``)."""
    if value is None:
        return "-"
    return f"{value:.3g} est" if provenance == "estimated" else f"{value:.3g}"


def per_chip_document(results: Sequence[Result], chips: Mapping[str, ChipMatch]) -> dict[str, Any]:
    """``show --json``'s served-LLM normalized figures: per endpoint cell whose chips are known (matched
    here or declared), the chips counted (and how), each denominator (chips, chips x TDP W, chips x
    purchase USD) with its provenance and source class, and each point's output tokens/s per chip, per
    TDP watt and per purchase USD (central values; the denominators carry the ranges)."""
    cells = []
    for result, section in sorted(curves_of(results), key=lambda pair: pair[0].cell.key):
        match = chips.get(result.cell.key)
        if match is None:
            continue
        found = served_denominators(match)
        cells.append(
            {
                "cell_key": result.cell.key,
                "chip_key": match.chip.key if match.chip is not None else None,
                "chips": match.count,
                "count_basis": match.count_basis or match.basis,
                "declared": match.basis == "declared",
                "denominators": {d.per: _denominator_document(d) for d in found},
                "points": [_point_document(point, match, found) for point in section.curve],
            }
        )
    return {"served_llm_per_chip": cells} if cells else {}


def _denominator_document(denominator: Denominator) -> dict[str, Any]:
    return {
        "value": range_document(denominator.value),
        "unit": denominator.unit,
        "provenance": denominator.provenance,
        "source_class": denominator.source_class,
        "source": denominator.source,
    }


def _point_document(point: CurvePoint, match: ChipMatch, found: Sequence[Denominator]) -> dict[str, Any]:
    rates = {
        f"output_tokens_per_s_per_{d.per}": d.rate(point.output_tokens_per_s).central
        for d in found
        if d.per != "chip"
    }
    return {
        "concurrency": point.concurrency,
        "output_tokens_per_s_per_chip": _divided(point, match),
        **rates,
    }


def _divided(point: CurvePoint, match: ChipMatch) -> float:
    return point.output_tokens_per_s / match.count


def per_chip_text(tokens_per_s: float, match: ChipMatch | None) -> str:
    """Output tokens/s per chip of ``match`` (``decl``: declared chips; ``-``: unknown)."""
    if match is None:
        return "-"
    value = tokens_per_s / match.count
    text = f"{value:.0f}" if value >= 100 else f"{value:.3g}"
    return f"{text} decl" if match.basis == "declared" else text


def _per_denominator(tokens_per_s: float, match: ChipMatch | None, per: str, scale: float) -> str:
    """Output tokens/s over the match's ``per`` denominator, times ``scale``; ``-`` when unknown."""
    found = {d.per: d for d in served_denominators(match)} if match is not None else {}
    if per not in found:
        return "-"
    value = found[per].rate(tokens_per_s).central * scale
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def _denominator_caption(key: str, match: ChipMatch) -> list[str]:
    """Where each served denominator came from: its value, provenance and source class."""
    lines = []
    for found in served_denominators(match):
        if found.per == "chip":
            continue
        column = WATT_COLUMN if found.per == "tdp_w" else USD_COLUMN
        lines.append(
            f"{column} ({key}): {found.value.central:.4g} {found.unit} ({found.provenance}; source class: "
            f"{found.source_class})"
        )
    return lines


def _usd(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
