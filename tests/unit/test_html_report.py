"""The HTML report's pure parts: markup and tables as HTML, the default pair, the waterfall, the page."""

from __future__ import annotations

import math

import pytest
from rich.table import Table

from accelbench.normalize.explain import explain
from accelbench.normalize.ranges import Range
from accelbench.normalize.subjects import Subject
from accelbench.report import html_charts
from accelbench.report.html import render_page
from accelbench.report.html_explain import MLPERF_PAIR, default_pair
from accelbench.report.html_sections import RunData, Section
from accelbench.report.html_tables import markup_html, table_html
from accelbench.results import Cell, LoadgenVerdict, Result
from accelbench.store import RunRecord


def test_markup_becomes_escaped_spans() -> None:
    html = markup_html("[green]ok[/] <b> & [bold red]FAIL[/] [1, 2]")
    assert html.startswith('<span class="green">ok</span> &lt;b&gt; &amp; ')
    assert '<span class="red bold">FAIL</span>' in html
    assert markup_html("unbalanced [/]") == "unbalanced [/]"  # bad markup is kept as text


def test_table_keeps_headers_rows_and_justification() -> None:
    table = Table(title="t")
    table.add_column("name")
    table.add_column("ms", justify="right")
    table.add_row("a", "[yellow]1.5[/]")
    html = table_html(table)
    assert "<caption>t</caption>" in html
    assert '<th class="num">ms</th>' in html
    assert '<tr><td>a</td><td class="num"><span class="yellow">1.5</span></td></tr>' in html


def _result(stack: str, qps: float, precision: str = "fp32", status: str = "ok") -> Result:
    cell = Cell("resnet50", stack, "single-stream", size="tiny")
    verdict = LoadgenVerdict("single-stream", True, (), qps, 10, "quick", False, "logs")
    return Result("r1", cell, status, loadgen=verdict, effective_precision=precision)


def _run(*results: Result) -> RunData:
    record = RunRecord("r1", "2026-01-01", "fp", {}, {}, "complete")
    return RunData(record, results, None, {})


def test_default_pair_is_slowest_then_fastest_measured_stack() -> None:
    run = _run(_result("null", 1e6, "none"), _result("a", 10), _result("b", 30), _result("c", 20))
    slow, fast = default_pair([run])
    assert slow.endswith("/a/cpu/single-stream") and fast.endswith("/b/cpu/single-stream")
    assert slow.startswith("local:r1/")


def test_default_pair_falls_back_to_the_mlperf_example() -> None:
    assert default_pair([_run(_result("a", 10), _result("b", 5, status="crashed"))]) == MLPERF_PAIR


def _subject(name: str, seconds: float, count: float) -> Subject:
    return Subject(name, name, "throughput", "w", seconds, "query", None, count, "test")


def test_waterfall_bars_multiply_to_the_ratio() -> None:
    explanation = explain(_subject("a", 1.0, 1), _subject("b", 0.1, 4))
    figure = html_charts.waterfall_figure("t", explanation.ratio, explanation.main)
    bars = figure.data[0]
    ends = [base + length for base, length in zip(bars.base, bars.y, strict=True)]
    assert ends[-2] == pytest.approx(10.0)  # the last factor ends at the measured ratio
    assert ends[-1] == pytest.approx(10.0) and bars.base[-1] == 1.0
    assert math.prod(e / b for b, e in zip(bars.base[:-1], ends[:-1], strict=True)) == pytest.approx(10.0)


def test_leaderboard_offers_only_views_with_data() -> None:
    entry = html_charts.Entry("a", _result("a", 10), {"roofline": {"share_of_peak": 0.25}})
    figure = html_charts.leaderboard_figure("t", [entry])
    labels = [b.label for b in figure.layout.updatemenus[0].buttons]
    assert labels == ["raw throughput", "share of peak"]
    assert figure.data[1].y == (25.0,)


def test_page_declares_its_charts_and_embeds_plotly() -> None:
    chart = html_charts.heatmap_figure("h", ["s"], ["canonical"], {("s", "canonical"): (1.0, "1.00x")})
    page, charts = render_page("t <x>", [Section("one", "One", ("<p>x</p>", chart)), Section("two", "Two")])
    assert charts == 1 and 'data-charts="1"' in page
    assert page.count('class="plotly-graph-div"') == 1 and "<title>t &lt;x&gt;</title>" in page
    assert '<a href="#one">One</a>' in page and "<script src=" not in page


def test_waterfall_ranges_cover_the_central_values() -> None:
    ratio = Range.point(2.0)
    explanation = explain(_subject("a", 1.0, 1), _subject("b", 0.5, 1))
    figure = html_charts.waterfall_figure("t", ratio, explanation.main)
    errors = figure.data[1].error_y
    assert all(v >= 0 for v in errors.array) and all(v >= 0 for v in errors.arrayminus)
