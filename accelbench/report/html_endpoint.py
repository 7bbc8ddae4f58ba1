"""The HTML report's served-LLM charts: each endpoint cell's curve as a step function of system output
tokens/s against tokens/s per user (the throughput-vs-interactivity trade), and TTFT / TPOT p90
against concurrency. Only measured points are drawn: a step between two of them implies nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from accelbench.report.endpoint import is_curve
from accelbench.report.html_leaderboard import LAYOUT
from accelbench.results import Result


def _label(result: Result) -> str:
    name = f"{result.cell.stack} ({result.cell.workload})"
    return name if result.status == "ok" else f"{name} (UNVERIFIED: {result.status})"


def curve_figures(title: str, results: Sequence[Result]) -> list[go.Figure]:
    """The step chart and the latency chart of the endpoint results among ``results`` (none: [])."""
    curves = [(r, (r.generation or {}).get("curve") or []) for r in results if is_curve(r)]
    curves = [(r, c) for r, c in curves if c]
    if not curves:
        return []
    return [_pareto(title, curves), _latency(title, curves)]


def _pareto(title: str, curves: Sequence[tuple[Result, Sequence[Mapping[str, Any]]]]) -> go.Figure:
    figure = go.Figure()
    for result, points in curves:
        ordered = sorted(points, key=lambda p: float(p.get("tokens_per_s_per_user") or 0.0))
        figure.add_trace(
            go.Scatter(
                x=[p.get("tokens_per_s_per_user") for p in ordered],
                y=[p.get("output_tokens_per_s") for p in ordered],
                mode="lines+markers+text",
                line_shape="hv",
                text=[f"c={p.get('concurrency')}" for p in ordered],
                textposition="top center",
                name=_label(result),
            )
        )
    figure.update_layout(title=f"{title}: system vs per-user output tokens/s (step)", **LAYOUT)
    figure.update_xaxes(title="tokens/s per user (1 / p90 TPOT)", rangemode="tozero")
    figure.update_yaxes(title="system output tokens/s (client-counted)", rangemode="tozero")
    return figure


def _latency(title: str, curves: Sequence[tuple[Result, Sequence[Mapping[str, Any]]]]) -> go.Figure:
    figure = go.Figure()
    for result, points in curves:
        for key, what in (("ttft_p90_s", "TTFT p90"), ("tpot_p90_s", "TPOT p90")):
            figure.add_trace(
                go.Scatter(
                    x=[p.get("concurrency") for p in points],
                    y=[(p.get(key) or 0.0) * 1e3 for p in points],
                    mode="lines+markers",
                    line_shape="hv",
                    name=f"{_label(result)}: {what}",
                )
            )
    figure.update_layout(title=f"{title}: TTFT and TPOT p90 vs concurrency", **LAYOUT)
    figure.update_xaxes(title="requests in flight (fixed concurrency)", type="log")
    figure.update_yaxes(title="ms", rangemode="tozero")
    return figure
