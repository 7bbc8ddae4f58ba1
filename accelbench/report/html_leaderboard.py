"""Plotly figures of the leaderboard: bars per result with switchable normalizations, and the server curve.

Bars start at zero: the value axis is linear with ``rangemode="tozero"``, so a stack 20% slower looks 20%
slower; a second button group switches to a log scale, labelled as such, and back. Error bars are the
95% interval across trials (LoadGen headline) or the ranges of uncertain chip facts. The first view is
the scenario's MLPerf figure (``report.headline``): single-stream p90, multi-stream p99 per query, server
max QPS, offline samples/s. Every title names the rule set. SI values become display units here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from accelbench.normalize.cell_figures import CellFigures, Roofline
from accelbench.normalize.factors import Figure
from accelbench.report.headline import Headline, headline
from accelbench.results import Result
from accelbench.sections import SearchProbe, ServerSearch

Value = tuple[float, float, float]
"""(central, low, high) of one bar."""
LINEAR_LABEL = "linear axis from 0"
LOG_LABEL = "log scale"
LAYOUT = {"template": "plotly_white", "height": 440, "margin": {"l": 70, "r": 20, "t": 130, "b": 80}}
"""The charts' common layout (the served-LLM charts of ``html_endpoint`` too)."""
_AXES = {
    "latency_p90_s": "p90 latency, ms, lower is better (95% CI across trials)",
    "latency_p99_per_query_s": "p99 latency per query, ms, lower is better (95% CI across trials)",
    "samples_per_s": "samples per second, LoadGen (95% CI across trials)",
    "max_qps": "max QPS with p99 under the bound (95% CI across trials)",
    "qps": "queries (samples) per second, LoadGen",
}


@dataclass(frozen=True, slots=True)
class Entry:
    """One stored result on a chart: its label and its normalized figures (``normalize.cell_figures``; None
    for a cell without any)."""

    label: str
    result: Result
    normalized: CellFigures | None

    @property
    def roofline(self) -> Roofline | None:
        """The result's roofline position; None when it has none."""
        return self.normalized.roofline if self.normalized is not None else None

    def figure(self, per: str) -> Figure | None:
        """The result's normalized figure of denominator ``per``; None when it has none."""
        return self.normalized.figure(per) if self.normalized is not None else None


@dataclass(frozen=True, slots=True)
class View:
    """One switchable normalization of the leaderboard: axis title and how to read the value."""

    name: str
    axis: str
    value: Callable[[Entry], Value | None]
    per: str = ""
    """The normalized figure's denominator (``accelbench.normalize.factors.DENOMINATORS``) whose source
    class each bar's hover names; empty for a view that is not a normalized figure."""


def _performance(per: str, scale: float = 1.0) -> Callable[[Entry], Value | None]:
    """Work per (denominator x second) from a cost figure: 1 / cost, its range inverted, times ``scale``."""

    def read(entry: Entry) -> Value | None:
        figure = entry.figure(per)
        if figure is None:
            return None
        value = figure.value
        return scale / value.central, scale / value.high, scale / value.low

    return read


def _headline(entry: Entry) -> Value | None:
    shown = headline(entry.result)
    if shown is None:
        return None
    scale = 1e3 if shown.lower_is_better else 1.0
    low, high = shown.ci if shown.ci is not None else (shown.value, shown.value)
    return shown.value * scale, min(low, shown.value) * scale, max(high, shown.value) * scale


def _throughput(entry: Entry) -> Value | None:
    shown = headline(entry.result)
    if shown is not None and not shown.lower_is_better:
        return None  # the headline view already shows it
    qps = entry.result.qps
    return (qps, qps, qps) if qps else None


def _share_of_peak(entry: Entry) -> Value | None:
    if entry.roofline is None:
        return None
    share = entry.roofline.position.share_of_peak
    return share * 100, share * 100, share * 100


VIEWS = (
    View("raw throughput", "queries (samples) per second, LoadGen", _throughput),
    View("per chip", "per second per chip (share of a socket on CPUs)", _performance("chip"), "chip"),
    View(
        "per transistor", "per second per billion transistors", _performance("transistor", 1e9), "transistor"
    ),
    View("per TDP W", "per joule at TDP (per second per TDP watt)", _performance("tdp_w"), "tdp_w"),
    View("per measured W", "per measured joule", _performance("measured_w"), "measured_w"),
    View("per $ (purchase)", "per second per USD of purchase price", _performance("usd"), "usd"),
    View("per $ (cloud)", "per USD at on-demand cloud prices", _performance("usd_cloud"), "usd_cloud"),
    View(
        "share of peak",
        "% of the machine's best measured GEMM FLOP/s (probes and libraries); >100% is SUSPECT",
        _share_of_peak,
    ),
)
"""The normalizations after the scenario's headline view (``views``)."""


def views(entries: Sequence[Entry]) -> list[View]:
    """The views with data for ``entries``: the scenario's headline first, then ``VIEWS``."""
    shown = next((h for e in entries if (h := headline(e.result)) is not None), None)
    first = [View(_headline_name(shown), _AXES.get(shown.metric, shown.metric), _headline)] if shown else []
    return [v for v in (*first, *VIEWS) if any(v.value(e) for e in entries)]


def _headline_name(shown: Headline) -> str:
    return "headline: " + {
        "latency_p90_s": "p90 latency",
        "latency_p99_per_query_s": "p99 per query",
        "samples_per_s": "samples/s",
        "max_qps": "max QPS",
    }.get(shown.metric, "QPS")


def leaderboard_figure(title: str, entries: Sequence[Entry]) -> go.Figure:
    """Bars per result, one trace per view with error bars, switched by buttons; a linear axis from zero
    with a log-scale toggle."""
    figure = go.Figure()
    chosen = views(entries)
    for index, view in enumerate(chosen):
        shown = [(e, value) for e in entries if (value := view.value(e)) is not None]
        figure.add_trace(_bar(view, shown, visible=index == 0))
    buttons = [
        {
            "label": view.name,
            "method": "update",
            "args": [{"visible": [i == k for i in range(len(chosen))]}, {"yaxis.title.text": view.axis}],
        }
        for k, view in enumerate(chosen)
    ]
    figure.update_layout(
        title=title,
        yaxis={"title": chosen[0].axis if chosen else "", "type": "linear", "rangemode": "tozero"},
        updatemenus=[_menu(buttons, 1.28), _menu(_scale_buttons(), 1.16)],
        **LAYOUT,
    )
    return figure


def _menu(buttons: list[dict[str, Any]], y: float) -> dict[str, Any]:
    return {
        "type": "buttons",
        "direction": "right",
        "x": 0,
        "y": y,
        "xanchor": "left",
        "buttons": buttons,
        "showactive": True,
    }


def _scale_buttons() -> list[dict[str, Any]]:
    linear = {"yaxis.type": "linear", "yaxis.rangemode": "tozero", "yaxis.autorange": True}
    log = {"yaxis.type": "log", "yaxis.autorange": True}
    return [
        {"label": LINEAR_LABEL, "method": "relayout", "args": [linear]},
        {"label": LOG_LABEL, "method": "relayout", "args": [log]},
    ]


def _bar(view: View, shown: Sequence[tuple[Entry, Value]], visible: bool) -> go.Bar:
    name, central = view.name, [v[0] for _, v in shown]
    suspect = [e.roofline is not None and e.roofline.suspect for e, _ in shown]
    marks = ["SUSPECT: above the measured peak" if s and name == "share of peak" else "" for s in suspect]
    if view.per:
        marks = [_source_mark(e, view.per) for e, _ in shown]
    return go.Bar(
        name=name,
        x=[e.label for e, _ in shown],
        y=central,
        visible=visible,
        customdata=marks,
        marker={"color": ["#c62828" if m.startswith("SUSPECT") else "#1f77b4" for m in marks]},
        error_y={
            "type": "data",
            "array": [v[2] - v[0] for _, v in shown],
            "arrayminus": [v[0] - v[1] for _, v in shown],
            "visible": any(v[1] != v[2] for _, v in shown),
        },
        hovertemplate="%{x}: %{y:.4g} %{customdata}<extra>" + name + "</extra>",
    )


def _source_mark(entry: Entry, per: str) -> str:
    """``(datasheet, source class: review)``: where the figure's denominator came from."""
    figure = entry.figure(per)
    if figure is None:
        return "(-, source class: -)"
    return f"({figure.provenance}, source class: {figure.source_class})"


TOKEN_CURVES = (
    ("ttft_p99_s", "ttft_s", "p99 time to first token, ms (LoadGen token mode)"),
    ("tpot_p99_s", "tpot_s", "p99 time per output token, ms (LoadGen token mode)"),
)
"""The curves of an LLM server search: (probe key, bound key in the generation section, axis title)."""


def server_search_figure(title: str, entries: Sequence[Entry]) -> go.Figure | None:
    """p99 latency (ms) against target QPS of every server search, the latency bound drawn as a line;
    invalid probes are crosses. None when no entry has a search. LLM searches: ``token_search_figures``."""
    searched = [
        (e.label, s)
        for e in entries
        if (s := e.result.server_search) and s.probes and e.result.decode is None
    ]
    if not searched:
        return None
    bounds = {s.bound_s for _, s in searched if s.bound_s}
    return _search_figure(title, searched, "p99_s", bounds, "p99 latency, ms (LoadGen, queueing included)")


def token_search_figures(title: str, entries: Sequence[Entry]) -> list[go.Figure]:
    """TTFT-vs-QPS and TPOT-vs-QPS curves (p99) of every LLM server search, each bound drawn."""
    searched = [
        (e.label, s, g)
        for e in entries
        if (s := e.result.server_search) and s.probes and (g := e.result.decode) is not None
    ]
    if not searched:
        return []
    figures = []
    for key, bound_key, axis in TOKEN_CURVES:
        bounds = {getattr(g.bounds, bound_key) for _, _, g in searched if g.bounds is not None}
        pairs = [(label, search) for label, search, _ in searched]
        figures.append(_search_figure(f"{title}: {axis.split(',')[0]}", pairs, key, bounds, axis))
    return figures


def _search_figure(
    title: str, searched: Sequence[tuple[str, ServerSearch]], key: str, bounds: set[float], axis: str
) -> go.Figure:
    figure = go.Figure()
    for label, search in searched:
        figure.add_trace(_probe_trace(label, search.probes, key))
        if failures := search.scored_failures:  # scored trials INVALID at the target: backed off
            figure.add_trace(_failure_trace(f"{label}: scored trials INVALID", failures, key))
    for bound_s in sorted(bounds):
        figure.add_hline(y=bound_s * 1e3, line_dash="dash", line_color="#c62828")
        figure.add_annotation(
            x=1, xref="paper", xanchor="right", y=bound_s * 1e3, text=f"p99 bound {bound_s * 1e3:.3g} ms"
        )
    figure.update_layout(title=title, **{**LAYOUT, "margin": {"l": 70, "r": 20, "t": 70, "b": 60}})
    figure.update_xaxes(title="target QPS (LoadGen server, Poisson arrivals)", rangemode="tozero")
    figure.update_yaxes(title=axis, rangemode="tozero")
    return figure


def _failure_trace(label: str, failures: Sequence[SearchProbe], key: str) -> go.Scatter:
    """The scored runs that came out INVALID at the target they were given, as open diamonds."""
    return go.Scatter(
        x=[f.target_qps for f in failures],
        y=[(getattr(f, key) or 0.0) * 1e3 for f in failures],
        mode="markers",
        name=label,
        marker={"symbol": "diamond-open", "size": 11},
        text=["; ".join(f.reasons) for f in failures],
        hovertemplate="%{x:.4g} QPS (scored): p99 %{y:.4g} ms, INVALID: %{text}<extra>" + label + "</extra>",
    )


def _probe_trace(label: str, probes: Sequence[SearchProbe], key: str = "p99_s") -> go.Scatter:
    ordered = sorted(probes, key=lambda p: p.target_qps)
    return go.Scatter(
        x=[p.target_qps for p in ordered],
        y=[(getattr(p, key) or 0.0) * 1e3 for p in ordered],
        mode="lines+markers",
        name=label,
        marker={"symbol": ["circle" if p.valid else "x" for p in ordered], "size": 9},
        text=["VALID" if p.valid else "INVALID: " + "; ".join(p.reasons) for p in ordered],
        hovertemplate="%{x:.4g} QPS: p99 %{y:.4g} ms, %{text}<extra>" + label + "</extra>",
    )
