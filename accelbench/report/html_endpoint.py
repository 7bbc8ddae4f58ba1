"""The HTML report's served-LLM charts: each endpoint cell's curve as a step function of system output
tokens/s against tokens/s per user (the throughput-vs-interactivity trade), and TTFT / TPOT p90
against concurrency. Only measured points are drawn: a step between two of them implies nothing."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from accelbench.curve import CurvePoint
from accelbench.report.endpoint import curves_of
from accelbench.report.html_leaderboard import LAYOUT
from accelbench.results import Result


def _label(result: Result) -> str:
    name = f"{result.cell.stack} ({result.cell.workload})"
    return name if result.status == "ok" else f"{name} (UNVERIFIED: {result.status})"


def curve_figures(title: str, results: Sequence[Result]) -> list[go.Figure]:
    """The step chart and the latency chart of the endpoint results among ``results`` (none: [])."""
    curves = [(r, section.curve) for r, section in curves_of(results) if section.curve]
    if not curves:
        return []
    return [_pareto(title, curves), _latency(title, curves)]


def _pareto(title: str, curves: Sequence[tuple[Result, Sequence[CurvePoint]]]) -> go.Figure:
    figure = go.Figure()
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
