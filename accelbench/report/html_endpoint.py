"""The HTML report's served-LLM charts: each endpoint cell's curve as a step function of system output
tokens/s against tokens/s per user (the throughput-vs-interactivity trade), and TTFT / TPOT p90
against concurrency. Only measured points are drawn: a step between two of them implies nothing. Where
a cell's chips are known (its server ran on the machine that measured it, or a ``--serve-url`` server's
were declared: ``accelbench.report.documents.served_chips``), buttons switch the step chart to output
tokens/s per chip, per TDP watt and per thousand purchase dollars (``accelbench.normalize.denominators``),
the axis naming each denominator's provenance and source class (a curve whose chips are not known is
hidden then)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from accelbench.curve import CurvePoint
from accelbench.hardware.match import ChipMatch
from accelbench.normalize.denominators import served_denominators
from accelbench.report.endpoint import curves_of
from accelbench.report.html_leaderboard import LAYOUT
from accelbench.results import Result


def _label(result: Result) -> str:
    name = f"{result.cell.stack} ({result.cell.workload})"
    return name if result.head.status == "ok" else f"{name} (UNVERIFIED: {result.head.status})"


Chips = Mapping[tuple[str, str], ChipMatch]
"""The chips of each endpoint cell whose chips are known, per (run id, cell key): matched on the measuring
machine, or declared for a ``--serve-url`` server (``accelbench.report.documents.served_chips``)."""


def curve_figures(title: str, results: Sequence[Result], chips: Chips | None = None) -> list[go.Figure]:
    """The step chart (with ``chips``, its per-chip button) and the latency chart of the endpoint results
    among ``results`` (none: [])."""
    curves = [(r, section.curve) for r, section in curves_of(results) if section.curve]
    if not curves:
        return []
    return [_pareto(title, curves, chips or {}), _latency(title, curves)]


_VIEWS = (  # (button, denominator, scale, axis title)
    ("per chip", "chip", 1.0, "output tokens/s per chip"),
    ("per TDP W", "tdp_w", 1.0, "output tokens/s per TDP watt"),
    ("per k$", "usd", 1e3, "output tokens/s per thousand USD of purchase price"),
)


def _pareto(title: str, curves: Sequence[tuple[Result, Sequence[CurvePoint]]], chips: Chips) -> go.Figure:
    figure = go.Figure()
    system: list[list[float]] = []
    for result, points in curves:
        ordered = sorted(points, key=lambda p: p.tokens_per_s_per_user)
        figure.add_trace(
            go.Scatter(
                x=[p.tokens_per_s_per_user for p in ordered],
                y=[p.output_tokens_per_s for p in ordered],
                mode="lines+markers+text",
                line_shape="hv",
                text=[f"c={p.concurrency}" for p in ordered],
                textposition="top center",
                name=_label(result),
            )
        )
        system.append([p.output_tokens_per_s for p in ordered])
    buttons = [_button(view, curves, chips) for view in _VIEWS]
    shown = [b for b in buttons if b is not None]
    if shown:
        first = {
            "label": "system",
            "method": "update",
            "args": [
                {"y": system, "visible": [True] * len(system)},
                {"yaxis.title.text": "system output tokens/s (client-counted)"},
            ],
        }
        figure.update_layout(
            updatemenus=[{"type": "buttons", "direction": "right", "buttons": [first, *shown]}]
        )
    figure.update_layout(title=f"{title}: system vs per-user output tokens/s (step)", **LAYOUT)
    figure.update_xaxes(title="tokens/s per user (1 / p90 TPOT)", rangemode="tozero")
    figure.update_yaxes(title="system output tokens/s (client-counted)", rangemode="tozero")
    return figure


def _button(
    view: tuple[str, str, float, str], curves: Sequence[tuple[Result, Sequence[CurvePoint]]], chips: Chips
) -> dict[str, Any] | None:
    """The button of one denominator: each curve over it (hidden where unknown), the axis naming the
    provenance and source class of the denominators; None when no curve has it."""
    label, per, scale, axis = view
    values: list[list[float] | None] = []
    sources: list[str] = []
    for result, points in curves:
        match = chips.get((result.run_id, result.cell.key))
        found = {d.per: d for d in served_denominators(match)} if match is not None else {}
        if per not in found:
            values.append(None)
            continue
        ordered = sorted(points, key=lambda p: p.tokens_per_s_per_user)
        values.append([found[per].rate(p.output_tokens_per_s).central * scale for p in ordered])
        sources.append(f"{found[per].provenance}, source class: {found[per].source_class}")
    if not sources:
        return None
    title = f"{axis} ({'; '.join(dict.fromkeys(sources))})"
    return {
        "label": label,
        "method": "update",
        "args": [
            {"y": [v or [] for v in values], "visible": [v is not None for v in values]},
            {"yaxis.title.text": title},
        ],
    }


def _latency(title: str, curves: Sequence[tuple[Result, Sequence[CurvePoint]]]) -> go.Figure:
    figure = go.Figure()
    for result, points in curves:
        for values_s, what in (
            ([p.ttft_p90_s for p in points], "TTFT p90"),
            ([p.tpot_p90_s for p in points], "TPOT p90"),
        ):
            figure.add_trace(
                go.Scatter(
                    x=[p.concurrency for p in points],
                    y=[value_s * 1e3 for value_s in values_s],
                    mode="lines+markers",
                    line_shape="hv",
                    name=f"{_label(result)}: {what}",
                )
            )
        for medians_s, intervals_s, what in (
            (
                [p.ttft_p50_s for p in points],
                [(p.ttft_p50_low_s, p.ttft_p50_high_s) for p in points],
                "TTFT p50",
            ),
            (
                [p.tpot_p50_s for p in points],
                [(p.tpot_p50_low_s, p.tpot_p50_high_s) for p in points],
                "TPOT p50",
            ),
        ):
            figure.add_trace(
                go.Scatter(
                    x=[p.concurrency for p in points],
                    y=[value_s * 1e3 for value_s in medians_s],
                    error_y=_interval_bars(medians_s, intervals_s),
                    mode="markers",
                    name=f"{_label(result)}: {what} (95% interval)",
                )
            )
    figure.update_layout(
        title=f"{title}: TTFT and TPOT (p50 with its 95% interval, p90) vs concurrency", **LAYOUT
    )
    figure.update_xaxes(title="requests in flight (fixed concurrency)", type="log")
    figure.update_yaxes(title="ms", rangemode="tozero")
    return figure


def _interval_bars(medians_s: Sequence[float], intervals_s: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """Asymmetric error bars in ms from each median to its interval's ends (none where not stored)."""
    above = [
        (high - m) * 1e3 if high > 0 else 0.0 for m, (_, high) in zip(medians_s, intervals_s, strict=True)
    ]
    below = [
        (m - low) * 1e3 if high > 0 else 0.0 for m, (low, high) in zip(medians_s, intervals_s, strict=True)
    ]
    return {"type": "data", "symmetric": False, "array": above, "arrayminus": below}
