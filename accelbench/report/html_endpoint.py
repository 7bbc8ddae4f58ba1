"""The HTML report's served-LLM charts: each endpoint cell's curve as a step function of system output
tokens/s against tokens/s per user (the throughput-vs-interactivity trade), and TTFT / TPOT p90
against concurrency. Only measured points are drawn: a step between two of them implies nothing. Where
a cell's server ran on the machine that measured it (``accelbench.report.documents.served_chips``), a
button switches the step chart to output tokens/s per chip (a ``--serve-url`` server's curve, whose
chips are not known, is hidden then)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from accelbench.curve import CurvePoint
from accelbench.report.endpoint import curves_of
from accelbench.report.html_leaderboard import LAYOUT
from accelbench.results import Result


def _label(result: Result) -> str:
    name = f"{result.cell.stack} ({result.cell.workload})"
    return name if result.status == "ok" else f"{name} (UNVERIFIED: {result.status})"


Chips = Mapping[tuple[str, str], float]
"""Chips counted, per (run id, cell key) of an endpoint cell whose server ran on the measuring machine."""


def curve_figures(title: str, results: Sequence[Result], chips: Chips | None = None) -> list[go.Figure]:
    """The step chart (with ``chips``, its per-chip button) and the latency chart of the endpoint results
    among ``results`` (none: [])."""
    curves = [(r, section.curve) for r, section in curves_of(results) if section.curve]
    if not curves:
        return []
    return [_pareto(title, curves, chips or {}), _latency(title, curves)]


def _pareto(title: str, curves: Sequence[tuple[Result, Sequence[CurvePoint]]], chips: Chips) -> go.Figure:
    figure = go.Figure()
    system: list[list[float]] = []
    per_chip: list[list[float] | None] = []
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
        count = chips.get((result.run_id, result.cell.key))
        system.append([p.output_tokens_per_s for p in ordered])
        per_chip.append(None if count is None else [p.output_tokens_per_s / count for p in ordered])
    if any(values is not None for values in per_chip):
        axis = "output tokens/s per chip (the server's machine)"
        buttons = [
            {"label": "system", "method": "update",
             "args": [{"y": system, "visible": [True] * len(system)},
                      {"yaxis.title.text": "system output tokens/s (client-counted)"}]},
            {"label": "per chip", "method": "update",
             "args": [{"y": [v or [] for v in per_chip], "visible": [v is not None for v in per_chip]},
                      {"yaxis.title.text": axis}]},
        ]  # fmt: skip
        figure.update_layout(updatemenus=[{"type": "buttons", "direction": "right", "buttons": buttons}])
    figure.update_layout(title=f"{title}: system vs per-user output tokens/s (step)", **LAYOUT)
    figure.update_xaxes(title="tokens/s per user (1 / p90 TPOT)", rangemode="tozero")
    figure.update_yaxes(title="system output tokens/s (client-counted)", rangemode="tozero")
    return figure


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
    figure.update_layout(title=f"{title}: TTFT and TPOT p90 vs concurrency", **LAYOUT)
    figure.update_xaxes(title="requests in flight (fixed concurrency)", type="log")
    figure.update_yaxes(title="ms", rangemode="tozero")
    return figure
