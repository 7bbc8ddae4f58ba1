"""Plotly figures of the HTML report: roofline, explain waterfall, MLPerf history, heatmaps.

The leaderboard bars and the server QPS curve are ``html_leaderboard``'s. Log axes here are labelled
``(log scale)``; a linear bar axis starts at zero.

Pure functions from stored documents to ``plotly.graph_objects.Figure``; SI values become display units
(ms, GFLOP/s, per billion transistors, minutes, kWh) here. ``plotly`` is imported by the caller
(``accelbench.report.html``) first, so a missing plotly is reported once as "unavailable".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from accelbench.mlperf.history import HistoryEntry, round_version
from accelbench.normalize.explain import Decomposition
from accelbench.normalize.factors import Figure
from accelbench.ranges import Range
from accelbench.report.html_leaderboard import Entry
from accelbench.report.normalized import DISPLAY, HISTORY_PER

Value = tuple[float, float, float]
"""(central, low, high) of one bar."""
_LAYOUT = {"template": "plotly_white", "margin": {"l": 70, "r": 20, "t": 60, "b": 60}, "height": 420}


@dataclass(frozen=True, slots=True)
class Ceiling:
    """The measured roofs of one run: peak FLOP/s per dtype and memory bandwidth."""

    run_id: str
    flops_per_s: Mapping[str, float]
    bytes_per_s: float


def roofline_figure(ceilings: Sequence[Ceiling], entries: Sequence[Entry], rules: str = "") -> go.Figure:
    """Measured ceilings (min of peak FLOP/s and bandwidth x intensity) and each result as a point;
    ``rules`` (the rule-set note) joins the title."""
    figure = go.Figure()
    intensities = [10 ** (k / 10) for k in range(-30, 41)]  # 0.001 .. 10^4 flop/byte
    for ceiling in ceilings:
        for dtype, peak in ceiling.flops_per_s.items():
            attainable = [min(peak, ceiling.bytes_per_s * i) / 1e9 for i in intensities]
            figure.add_trace(
                go.Scatter(
                    x=intensities,
                    y=attainable,
                    mode="lines",
                    name=f"roof {dtype} ({ceiling.run_id})",
                    line={"dash": "solid" if dtype == "fp32" else "dash"},
                )
            )
    for entry in entries:
        roofline = entry.roofline
        if roofline is not None:
            intensity = roofline.cost.flops / roofline.cost.bytes_moved
            figure.add_trace(
                go.Scatter(
                    x=[intensity],
                    y=[roofline.position.achieved_flops_per_s / 1e9],
                    mode="markers",
                    name=entry.label,
                    marker={"size": 11},
                )
            )
    title = "Roofline: measured ceilings of this machine, each result a point" + (
        f"; {rules}" if rules else ""
    )
    figure.update_layout(title=title, **_LAYOUT)
    figure.update_xaxes(type="log", title="arithmetic intensity, FLOP per byte moved (log scale)")
    figure.update_yaxes(type="log", title="GFLOP/s (log scale)")
    return figure


def waterfall_figure(title: str, ratio: Range, decomposition: Decomposition) -> go.Figure:
    """The ratio as a product of factors on a log axis: each bar multiplies, ranges are error bars."""
    names, bases, ends, lows, highs = [], [], [], [], []
    level = 1.0
    for factor in decomposition.factors:
        names.append(factor.name)
        bases.append(level)
        ends.append(level * factor.value.central)
        lows.append(level * factor.value.low)
        highs.append(level * factor.value.high)
        level = ends[-1]
    names.append("measured ratio B / A")
    bases.append(1.0)
    ends.append(ratio.central)
    lows.append(ratio.low)
    highs.append(ratio.high)
    colors = ["#2ca02c" if e >= b else "#d62728" for b, e in zip(bases, ends, strict=True)]
    colors[-1] = "#1f77b4"
    figure = go.Figure()
    figure.add_trace(
        go.Bar(
            x=names,
            y=[e - b for b, e in zip(bases, ends, strict=True)],
            base=bases,
            marker_color=colors,
            name="factor",
            customdata=[e / b for b, e in zip(bases, ends, strict=True)],
            hovertemplate="%{x}: x%{customdata:.3g}<extra></extra>",
        )
    )
    figure.add_trace(
        go.Scatter(
            x=names,
            y=ends,
            mode="markers",
            marker={"size": 4, "color": "black"},
            name="range",
            error_y={
                "type": "data",
                "array": [h - e for e, h in zip(ends, highs, strict=True)],
                "arrayminus": [e - lo for e, lo in zip(ends, lows, strict=True)],
            },
            hovertemplate="%{x}: level %{y:.3g}<extra>range</extra>",
        )
    )
    figure.update_layout(title=title, showlegend=False, **_LAYOUT)
    figure.update_yaxes(type="log", title="cumulative factor (B / A), log scale")
    return figure


_HISTORY_PANELS = (
    ("time to train, minutes", None),
    *((f"per {p}", p) for p in ("chip", "transistor", "watt")),
)


def history_figure(rows: Sequence[tuple[HistoryEntry, Sequence[Figure]]]) -> go.Figure:
    """MLPerf ResNet-50 training: raw minutes and the per chip / transistor / TDP watt costs, log scales."""
    titles = [_panel_title(per) for _, per in _HISTORY_PANELS]
    figure = make_subplots(rows=2, cols=2, subplot_titles=titles, horizontal_spacing=0.09)
    rounds = sorted({e.round for e, _ in rows}, key=round_version)
    chips = sorted({e.chip_key for e, f in rows if e.time_s is not None})
    for position, (_, per) in enumerate(_HISTORY_PANELS):
        row, col = divmod(position, 2)
        for chip in chips:
            points = [_history_point(e, f, per) for e, f in rows if e.chip_key == chip]
            shown = [p for p in points if p is not None]
            if shown:
                figure.add_trace(_history_trace(chip, shown, position == 0), row=row + 1, col=col + 1)
    figure.update_yaxes(type="log")
    figure.update_xaxes(type="category", categoryorder="array", categoryarray=rounds)
    figure.update_layout(
        title="MLPerf Training ResNet-50: time to train and normalized cost (lower is better; log scales)",
        colorway=qualitative.Dark24,
        **{**_LAYOUT, "height": 760},
    )
    return figure


def _panel_title(per: str | None) -> str:
    if per is None:
        return "time to train, minutes"
    unit = DISPLAY[_HISTORY_UNIT[HISTORY_PER[per][0]]][0]
    return f"per {per}: {unit}" + (" at TDP" if per == "watt" else "")


_HISTORY_UNIT = {"chip": "chip*s", "transistor": "transistor*s", "tdp_w": "J"}


def _history_point(
    entry: HistoryEntry, found: Sequence[Figure], per: str | None
) -> tuple[str, Value, str] | None:
    label = f"{entry.id}<br>{entry.accelerator_count} x {entry.chip_key}"
    if per is None:
        minutes = entry.time_s / 60 if entry.time_s is not None else None
        return None if minutes is None else (entry.round, (minutes, minutes, minutes), label)
    name = HISTORY_PER[per][0]
    figure = next((f for f in found if f.per == name), None)
    if figure is None:
        return None
    scale = DISPLAY[figure.unit][1]
    value = figure.value
    return entry.round, (value.central * scale, value.low * scale, value.high * scale), label


def _history_trace(chip: str, points: Sequence[tuple[str, Value, str]], legend: bool) -> go.Scatter:
    return go.Scatter(
        x=[p[0] for p in points],
        y=[p[1][0] for p in points],
        text=[p[2] for p in points],
        mode="markers",
        name=chip,
        legendgroup=chip,
        showlegend=legend,
        error_y={
            "type": "data",
            "array": [p[1][2] - p[1][0] for p in points],
            "arrayminus": [p[1][0] - p[1][1] for p in points],
        },
        hovertemplate="%{text}<br>%{y:.4g}<extra></extra>",
    )


def heatmap_figure(
    title: str,
    rows: Sequence[str],
    columns: Sequence[str],
    cells: Mapping[tuple[str, str], tuple[float | None, str]],
) -> go.Figure:
    """A labelled heatmap: ``cells[(row, column)] = (value or None, text shown in the cell)``."""
    z = [[_finite(cells.get((r, c), (None, ""))[0]) for c in columns] for r in rows]
    text = [[cells.get((r, c), (None, ""))[1] for c in columns] for r in rows]
    figure = go.Figure(
        go.Heatmap(
            z=z,
            x=list(columns),
            y=list(rows),
            text=text,
            texttemplate="%{text}",
            colorscale="RdYlGn",
            hoverongaps=False,
            hovertemplate="%{y} / %{x}: %{text}<extra></extra>",
        )
    )
    height = max(300, 60 + 40 * len(rows))
    figure.update_layout(
        title=title, **{**_LAYOUT, "height": height, "margin": {"l": 220, "r": 20, "t": 60, "b": 80}}
    )
    return figure


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
