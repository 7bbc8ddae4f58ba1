"""The HTML report's pure parts: markup and tables as HTML, the default pair, the waterfall, the page."""

from __future__ import annotations

import math

import pytest
from rich.table import Table

from accelbench.cell.loadgen_body import LoadgenBody
from accelbench.head import Head
from accelbench.loadgen_figures import LoadgenVerdict
from accelbench.normalize.cell_figures import CellFigures
from accelbench.normalize.explain import explain
from accelbench.normalize.factors import Figure
from accelbench.normalize.subjects import Subject
from accelbench.ranges import Range
from accelbench.report import html_charts, html_leaderboard, html_sections
from accelbench.report.headline import QUICK_NOTE
from accelbench.report.html import render_page
from accelbench.report.html_explain import MLPERF_PAIR, default_pair
from accelbench.report.html_sections import RunData, Section
from accelbench.report.html_tables import markup_html, table_html
from accelbench.results import Cell, Result
from accelbench.store import RunRecord
from tests.unit import report_cases as cases


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
    return Result(
        "r1",
        cell,
        Head(status, effective_precision=precision),
        LoadgenBody(loadgen=verdict),
        driver="loadgen",
    )


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
    entry = html_leaderboard.Entry("a", _result("a", 10), CellFigures(cases.roofline(0.25), ()))
    figure = html_leaderboard.leaderboard_figure("t", [entry])
    labels = [b.label for b in figure.layout.updatemenus[0].buttons]
    assert labels == ["raw throughput", "share of peak"]  # no latency: no single-stream headline
    assert figure.data[1].y == (25.0,)
    scales = [b.label for b in figure.layout.updatemenus[1].buttons]
    assert scales == [html_leaderboard.LINEAR_LABEL, html_leaderboard.LOG_LABEL]
    assert figure.layout.yaxis.type == "linear" and figure.layout.yaxis.rangemode == "tozero"


def test_the_headline_view_follows_the_scenario_with_its_interval() -> None:
    latency = html_leaderboard.Entry("a", cases.result("a", value=0.0125), None)
    figure = html_leaderboard.leaderboard_figure("t", [latency])
    assert figure.data[0].y == (12.5,) and figure.layout.yaxis.title.text.startswith("p90 latency, ms")
    assert figure.data[0].error_y.array[0] == pytest.approx(0.625)
    offline = html_leaderboard.Entry("b", cases.result("b", "offline", qps=80.0), None)
    views = [v.name for v in html_leaderboard.views([offline])]
    assert views[0] == "headline: samples/s" and "raw throughput" not in views  # no duplicate, no latency
    assert all("latency" not in v for v in views)


def test_a_suspect_share_is_marked_on_its_bar() -> None:
    suspect = CellFigures(cases.roofline(1.08, suspect=True), ())
    entries = [html_leaderboard.Entry("a", _result("a", 10), suspect)]
    figure = html_leaderboard.leaderboard_figure("t", entries)
    share = next(trace for trace in figure.data if trace.name == "share of peak")
    assert share.y == (108.0,) and "SUSPECT" in share.customdata[0]


def test_each_normalized_bar_names_its_provenance_and_source_class() -> None:
    """Issue 42 item 5: the per-TDP-W bar (1 / 0.7 J at TDP per query) says in its hover where the TDP
    came from: a datasheet figure read through a review."""
    tdp = Figure("tdp_w", Range.point(0.7), "J", Range.point(65.0), "W", "datasheet", "a review", "review")
    normalized = CellFigures(None, (tdp,))
    entries = [html_leaderboard.Entry("a", _result("a", 10), normalized)]
    figure = html_leaderboard.leaderboard_figure("t", entries)
    watt = next(trace for trace in figure.data if trace.name == "per TDP W")
    assert watt.y == (pytest.approx(1 / 0.7),) and watt.customdata[0] == "(datasheet, source class: review)"
    assert watt.marker.color[0] != "#c62828"  # a source is not a SUSPECT mark


def test_every_linear_bar_axis_in_the_report_starts_at_zero() -> None:
    """The chart JSON of a rendered report: bars on a linear axis include 0; a log axis says so."""
    results = [cases.result(s, scenario, qps=q) for scenario in ("single-stream", "offline", "server")
               for s, q in (("a", 40.0), ("b", 48.0))]  # fmt: skip
    runs = [cases.run(*results)]
    sections = [html_sections.leaderboard_section(runs)]
    explanation = explain(_subject("a", 1.0, 1), _subject("b", 0.1, 4))
    waterfall = html_charts.waterfall_figure("t", explanation.ratio, explanation.main)
    sections.append(Section("explain", "Explain", (waterfall,)))
    page, charts = render_page("t", sections, "rules quick: " + QUICK_NOTE)
    documents = cases.chart_documents(page)
    assert len(documents) == charts == 5  # three leaderboards, the server curve, the waterfall
    bars = [d for d in documents.values() if any(t.get("type") == "bar" for t in d["data"])]
    assert len(bars) == 4
    assert [p for d in bars for p in cases.bar_axes_not_from_zero(d)] == []
    assert page.count(QUICK_NOTE) >= 1 and '<p class="rules">rules quick' in page


def test_the_server_curve_draws_p99_against_target_qps_and_the_bound() -> None:
    entry = html_leaderboard.Entry("a", cases.result("a", "server"), None)
    figure = html_leaderboard.server_search_figure("server", [entry])
    assert figure is not None
    trace = figure.data[0]
    assert trace.x == (20.0, 40.0, 60.0) and trace.y == pytest.approx((12.0, 30.0, 90.0))
    assert trace.marker.symbol == ("circle", "circle", "x")
    assert figure.layout.shapes[0].y0 == pytest.approx(50.0)
    assert (
        html_leaderboard.server_search_figure("s", [html_leaderboard.Entry("b", _result("b", 1), None)])
        is None
    )


def test_html_tables_name_the_rule_set_and_keep_the_caption() -> None:
    section = html_sections.leaderboard_section([cases.run(cases.result("a", with_figures=False))])
    html = "".join(p for p in section.parts if isinstance(p, str))
    assert "single-stream: leaderboard (verified cells only); rules quick: " + QUICK_NOTE in html
    assert '<p class="note">† SUT timer' in html


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
