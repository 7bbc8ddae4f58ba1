"""The served-LLM curve table: a row per stored point, figures formatted, decode table left alone."""

from __future__ import annotations

import dataclasses

import pytest
from rich.console import Console

from accelbench.audit_section import AuditSection
from accelbench.curve import CurvePoint, EndpointFigures, QpsProbe, QpsSearch
from accelbench.endpoint.body import EndpointBody
from accelbench.hardware.chips import bundled_chips
from accelbench.hardware.match import ChipMatch
from accelbench.head import Head
from accelbench.report.endpoint import curve_table, curve_tables
from accelbench.report.generation import generation_table
from accelbench.results import Cell, Result

NO_AUDIT = AuditSection({})
"""An audit section of no audit: the report reads none of it here."""


def _point(values: dict[str, float]) -> CurvePoint:
    """A curve point with ``values`` and every other figure 0."""
    zeros = {f.name: 0 for f in dataclasses.fields(CurvePoint)}
    zeros |= {"energy_j": None, "energy_provenance": ""}
    return CurvePoint.from_dict({**zeros, **values})


def _result(points: list[dict[str, float]]) -> Result:
    cell = Cell("smollm2-135m", "llm@url", "single-stream", "cpu", "standard", "canonical")
    curve = tuple(_point(p) for p in points)
    section = EndpointFigures("llm@url", "smollm2-135m", 1, "chat", curve, 0.0, 2.0, 0.2, 8, "", "", 1.0)
    return Result("r1", cell, Head("ok"), EndpointBody(section, NO_AUDIT), driver="endpoint")


def test_one_row_per_point_and_none_in_the_decode_table() -> None:
    point = {"concurrency": 8, "requests": 16, "output_tokens_per_s": 16.06, "tokens_per_s_per_user": 2.55}
    point |= {
        "ttft_p50_s": 7.117,
        "ttft_p90_s": 8.5,
        "tpot_p50_s": 0.392,
        "tpot_p90_s": 0.45,
        "error_rate": 0.0,
    }
    result = _result([{**point, "concurrency": 1}, point])
    table = curve_table([result])
    assert table is not None and table.row_count == 2
    console = Console(width=250, record=True)
    console.print(table)
    text = console.export_text()
    assert "16.1" in text and "7117 / 8500" in text and "392 / 450" in text and "0%" in text
    assert generation_table([result]) is None
    assert curve_table([]) is None


def test_the_html_step_chart_draws_the_measured_points_only() -> None:
    from accelbench.report.html_endpoint import curve_figures

    low = {"concurrency": 1, "output_tokens_per_s": 7.4, "tokens_per_s_per_user": 8.0, "ttft_p90_s": 0.8}
    high = {"concurrency": 8, "output_tokens_per_s": 16.1, "tokens_per_s_per_user": 2.55, "tpot_p90_s": 0.45}
    pareto, latency = curve_figures("smollm2-135m", [_result([low, high])])
    (trace,) = pareto.data
    assert list(trace.x) == [2.55, 8.0] and list(trace.y) == [16.1, 7.4] and trace.line.shape == "hv"
    p90s = [t for t in latency.data if "p90" in t.name]
    assert [list(t.y) for t in p90s] == [[800.0, 0.0], [0.0, 450.0]]
    medians = [t for t in latency.data if "p50" in t.name]  # with their intervals (none stored here)
    assert len(medians) == 2 and all(list(t.error_y.array) == [0.0, 0.0] for t in medians)
    assert curve_figures("x", []) == []
    assert not pareto.layout.updatemenus  # no server ran on the measuring machine: no per-chip button
    here, remote = _result([low, high]), _result([low])
    here = dataclasses.replace(here, run_id="r2")
    h100 = bundled_chips().require("NVIDIA H100 SXM")  # 700 W TDP (review), $33.6k (estimate)
    half = ChipMatch(h100, 0.5, "gpu name", "NVIDIA H100 80GB HBM3")
    pareto, _ = curve_figures("smollm2-135m", [here, remote], {("r2", here.cell.key): half})
    (menu,) = pareto.layout.updatemenus
    system, per_chip, per_watt, per_kusd = (button.args[0] for button in menu.buttons)
    assert [b.label for b in menu.buttons] == ["system", "per chip", "per TDP W", "per k$"]
    assert system["y"] == [[16.1, 7.4], [7.4]] and per_chip["y"] == [[32.2, 14.8], []]
    assert per_chip["visible"] == [True, False] and system["visible"] == [True, True]
    assert per_watt["y"][0] == pytest.approx([16.1 / 350, 7.4 / 350]) and per_watt["y"][1] == []
    assert per_kusd["y"][0] == pytest.approx([16.1 / 16.8, 7.4 / 16.8])
    titles = [button.args[1]["yaxis.title.text"] for button in menu.buttons]
    assert "source class: review" in titles[2] and "source class: estimate" in titles[3]


def test_with_a_price_per_hour_each_point_says_its_dollars_per_million_output_tokens() -> None:
    from accelbench.meters.cost import user_rate
    from accelbench.report.endpoint import cost_document

    result = _result(
        [{"concurrency": 1, "output_tokens_per_s": 10.0}, {"concurrency": 8, "output_tokens_per_s": 0}]
    )
    rate = user_rate(3.6)  # 0.001 $/s: a million tokens at 10 tok/s take 1e5 s
    table = curve_table([result], rate)
    assert table is not None and table.columns[-1].header == "$/M output tok"
    console = Console(width=300, record=True)
    console.print(table)
    text = console.export_text()
    assert "100.00" in text and "user-given 3.6 $/h" in text
    document = cost_document([result], rate)["served_llm_cost"]
    assert document["usd_per_hour"] == 3.6 and document["basis"] == "user-given 3.6 $/h"
    assert [p["usd_per_million_output_tokens"] for p in document["points"]] == [100.0, None]  # 0 tok/s: none
    assert curve_table([result]) is not None and curve_table([result]).columns[-1].header == "J/tok (in+out)"  # type: ignore[union-attr]


def test_each_point_says_its_joules_per_output_token_and_per_token_with_the_meter() -> None:
    estimated = {"concurrency": 1, "output_tokens": 200, "input_tokens": 300, "energy_j": 50.0}
    measured = {"concurrency": 2, "output_tokens": 400, "input_tokens": 600, "energy_j": 40.0}
    result = _result(
        [{**estimated, "energy_provenance": "estimated"}, {**measured, "energy_provenance": "measured"}]
    )
    note = "cpu-estimate: the run's process tree (server and client); E = W x ..."
    section = dataclasses.replace(result.curve, energy_note=note)  # type: ignore[arg-type]
    remote = _result([{"concurrency": 1, "output_tokens": 100}])
    remote_section = dataclasses.replace(remote.curve, energy_note="energy not measured: remote")  # type: ignore[arg-type]
    table = curve_table(
        [
            dataclasses.replace(result, body=EndpointBody(section, NO_AUDIT)),
            dataclasses.replace(remote, body=EndpointBody(remote_section, NO_AUDIT)),
        ]
    )
    assert table is not None and [c.header for c in table.columns[-2:]] == ["J/output tok", "J/tok (in+out)"]
    console = Console(width=300, record=True)
    console.print(table)
    text = console.export_text()
    assert "0.25 est" in text and "0.1 est" in text  # 50 J over 200 output tokens, over 500 tokens
    assert "0.1 " in text and "0.04" in text and "cpu-estimate: the run's process tree" in text
    assert "energy not measured: remote" in text and "E = W" not in text  # the formula stays in the JSON
    point = section.curve[0]
    assert point.joules_per_output_token == 0.25 and point.joules_per_token == 0.1
    assert CurvePoint.from_dict(point.to_dict()) == point
    bare = _point({"concurrency": 1, "output_tokens": 5})
    assert bare.joules_per_output_token is None and "energy_j" not in bare.to_dict()
    assert "input_tokens" not in bare.to_dict() and "energy_note" not in remote.curve.to_dict()  # type: ignore[union-attr]


def test_a_server_started_here_gets_its_output_tokens_per_second_per_chip() -> None:
    from accelbench.hardware.match import ChipMatch
    from accelbench.report.endpoint import per_chip_document

    here = _result(
        [{"concurrency": 1, "output_tokens_per_s": 8.0}, {"concurrency": 4, "output_tokens_per_s": 20.0}]
    )
    here = dataclasses.replace(here, cell=dataclasses.replace(here.cell, stack="llm@transformers"))
    remote = _result([{"concurrency": 1, "output_tokens_per_s": 9.0}])
    match = ChipMatch(None, 0.25, "table", "AMD EPYC", count_basis="2 vCPUs / 2 threads per core / 4 cores")
    chips = {here.cell.key: match}
    table = curve_table([here, remote], chips=chips)
    assert table is not None
    headers = [column.header for column in table.columns][-3:]
    assert headers == ["output tok/s per chip", "output tok/s per TDP W", "output tok/s per k$"]
    console = Console(width=320, record=True)
    console.print(table)
    text = console.export_text()
    assert "32 " in text and "80 " in text  # 8 and 20 tok/s over a quarter of a chip
    assert "0.25 chips counted (2 vCPUs / 2 threads per core / 4 cores)" in text
    assert "a server at --serve-url whose chips were not declared (--serve-hardware)" in text
    document = per_chip_document([here, remote], chips)["served_llm_per_chip"]
    assert [c["cell_key"] for c in document] == [here.cell.key] and document[0]["chips"] == 0.25
    assert [p["output_tokens_per_s_per_chip"] for p in document[0]["points"]] == [32.0, 80.0]
    assert (
        per_chip_document([remote], {}) == {}
        and curve_table([remote]).columns[-1].header != "output tok/s per chip"
    )  # type: ignore[union-attr]


def _searched() -> Result:
    """An endpoint result with a max-QPS search of two probes (a pass at 4 QPS, a fail at 8)."""
    figures = (0.21, 0.25, 0.3, 0.01, 0.012, 0.02, 3.0, 0.0)
    passed = QpsProbe(4.0, 16, 3.9, 120.0, *figures, True, "")
    failed = QpsProbe(8.0, 24, 6.1, 180.0, *figures, False, "p99 TTFT 1500 ms > 1000 ms")
    search = QpsSearch(1.0, 0.1, 4.0, 3.0, (passed, failed), 0.1, 6, "budget of 6 probes spent")
    result = _result([{"concurrency": 1}])
    return dataclasses.replace(
        result,
        body=dataclasses.replace(result.body, curve=dataclasses.replace(result.curve, qps_search=search)),
    )


def test_the_max_qps_search_shows_a_row_per_probe_and_the_max_qps() -> None:
    result, searched = _result([{"concurrency": 1}]), _searched()
    assert curve_tables([result])[1] is None
    curves, table = curve_tables([searched])
    assert curves is not None and table is not None and table.row_count == 2
    console = Console(width=250, record=True)
    console.print(table)
    text = console.export_text()
    assert "210 / 250 / 300" in text and "10 / 12 / 20" in text and "fail: p99 TTFT 1500 ms > 1000 ms" in text
    assert "llm@url: max QPS 4 (goodput 3 req/s) under p99 TTFT 1000 ms, p99 TPOT 100 ms" in text
    assert "2 of 6 probes; budget of 6 probes spent" in text


def test_the_html_report_has_the_max_qps_search_table() -> None:
    from accelbench.report.html_sections import leaderboard_section
    from tests.unit.report_cases import run

    page = "".join(str(part) for part in leaderboard_section([run(_searched())]).parts)
    assert "Served LLM max QPS" in page and "fail: p99 TTFT 1500 ms &gt; 1000 ms" in page
    assert "llm@url: max QPS 4 (goodput 3 req/s)" in page


def test_a_curve_keeps_its_server_s_prefix_cache_and_compare_labels_it() -> None:
    """Issue 44 scope 7: a cache-on curve is never set beside a cache-off one unlabelled."""
    from accelbench.bundle.compare import _cache_difference, prefix_cache

    on = dataclasses.replace(
        _result([{"concurrency": 1}]).curve, prefix_cache="on: shared 256-token pages (the server's default)"
    )
    stored = on.to_dict()
    assert EndpointFigures.from_dict(stored) == on and stored["prefix_cache"].startswith("on:")
    old = _result([{"concurrency": 1}])
    assert old.curve is not None and "prefix_cache" not in old.curve.to_dict()  # absent: stored before
    cached = dataclasses.replace(old, body=EndpointBody(on, NO_AUDIT))
    assert prefix_cache(cached).startswith("on:") and prefix_cache(old) == ""
    assert _cache_difference(prefix_cache(cached), prefix_cache(old)) == (
        "server prefix cache on: shared 256-token pages (the server's default) vs not recorded",
    )
    console = Console(width=250, record=True)
    console.print(curve_table([cached]))
    assert "llm@url server prefix cache: on: shared 256-token pages" in console.export_text()
