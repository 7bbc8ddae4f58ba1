"""The HTML report's agentic-session charts (``accelbench.sessions``): each sessions cell's ladder as system
output tokens/s against ``e2e_interactivity`` (the agents-at-once vs speed-per-agent trade), and TTFT
and TPOT p50 against the context each turn had. Only measured loads and turns are drawn: a line between
two of them implies nothing. The cache state a figure was measured with is in each trace's name (a
cache-on figure is never drawn unlabelled beside a cache-off one). A rate point's marker and trace say
its rate (``rate 0.5/s (got 0.46/s)``), a concurrency point's its sessions at once."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from accelbench.report.html_leaderboard import LAYOUT
from accelbench.report.sessions import ladders_of, load_text
from accelbench.results import Result
from accelbench.session_figures import SessionFigures, SessionPoint


def _label(result: Result, ladder: SessionFigures) -> str:
    cache = ladder.prefix_cache or "not recorded"
    name = f"{result.cell.stack} ({result.cell.workload}; prefix cache {cache})"
    return name if result.head.status == "ok" else f"{name} (UNVERIFIED: {result.head.status})"


def _point_label(point: SessionPoint) -> str:
    """A closed-loop point's ``N sessions``; a rate point labelled as a rate (``load_text``)."""
    return f"{point.sessions} sessions" if point.rate_per_s is None else load_text(point)


def session_figures(title: str, results: Sequence[Result]) -> list[go.Figure]:
    """The trade chart and the by-context chart of the sessions results among ``results`` (none: [])."""
    ladders = [(r, ladder) for r, ladder in ladders_of(results) if ladder.sessions_ladder]
    if not ladders:
        return []
    return [_trade(title, ladders), _by_context(title, ladders)]


def _trade(title: str, ladders: Sequence[tuple[Result, SessionFigures]]) -> go.Figure:
    figure = go.Figure()
    for result, ladder in ladders:
        points = sorted(ladder.sessions_ladder, key=lambda p: p.e2e_interactivity_tokens_per_s)
        figure.add_trace(
            go.Scatter(
                x=[p.e2e_interactivity_tokens_per_s for p in points],
                y=[p.output_tokens_per_s for p in points],
                mode="lines+markers+text",
                text=[_point_label(p) for p in points],
                textposition="top center",
                name=_label(result, ladder),
            )
        )
    figure.update_layout(title=f"{title}: system output tokens/s vs e2e interactivity", **LAYOUT)
    figure.update_xaxes(
        title="e2e interactivity: output tokens over summed turn times (tokens/s)", rangemode="tozero"
    )
    figure.update_yaxes(title="system output tokens/s (client-counted)", rangemode="tozero")
    return figure


def _by_context(title: str, ladders: Sequence[tuple[Result, SessionFigures]]) -> go.Figure:
    figure = go.Figure()
    for result, ladder in ladders:
        for point in ladder.sessions_ladder:
            turns = sorted(point.by_turn, key=lambda t: t.context_tokens_p50)
            for what, values_s in (
                ("TTFT p50", [t.ttft_p50_s for t in turns]),
                ("TPOT p50", [t.tpot_p50_s for t in turns]),
            ):
                figure.add_trace(
                    go.Scatter(
                        x=[t.context_tokens_p50 for t in turns],
                        y=[value_s * 1e3 for value_s in values_s],
                        mode="lines+markers",
                        text=[f"turn {t.turn} ({t.turns} ok)" for t in turns],
                        name=f"{_label(result, ladder)}, {_point_label(point)}: {what}",
                    )
                )
    figure.update_layout(title=f"{title}: TTFT and TPOT by turn, against the turn's context", **LAYOUT)
    figure.update_xaxes(title="context tokens at the turn (p50 over sessions)", rangemode="tozero")
    figure.update_yaxes(title="ms", rangemode="tozero")
    return figure
