"""Columns follow the scenario: MLPerf's headline first, offline without latency, the rule set in titles."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import pytest
from rich.table import Table

from accelbench.report.columns import (
    FALLBACK_MARK,
    headline_text,
    leaderboard_tables,
    server_search_table,
)
from accelbench.report.export import export_results
from accelbench.report.headline import LOADGEN, QUICK_NOTE, SUT_TIMER, headline, rules_note, sort_key
from accelbench.sections import ServerSearch
from tests.unit.report_cases import SEARCH, result

SCENARIOS = ("single-stream", "multi-stream", "server", "offline")


def _headers(table: Table) -> list[str]:
    return [str(column.header) for column in table.columns]


def _column(table: Table, header: str) -> list[str]:
    return [str(c) for c in table.columns[_headers(table).index(header)].cells]


@pytest.mark.parametrize("with_figures", [True, False])
def test_every_scenario_leads_with_its_mlperf_figure(with_figures: bool) -> None:
    results = [result("a", s, qps=40.0, with_figures=with_figures) for s in SCENARIOS]
    tables = leaderboard_tables(results, "run r1")
    assert [str(t.title).split(",")[1].split(":")[0].strip() for t in tables] == list(SCENARIOS)
    single, multi, server, offline = (_headers(t)[4:] for t in tables)
    assert single[:4] == ["p90 ms", "95% CI ms", "p50 ms", "p99 ms"]
    assert multi[:4] == ["p99/query ms", "95% CI ms", "p50 ms", "p90 ms"]
    assert server[:4] == ["max QPS", "95% CI", "p99 ms", "bound ms"]
    assert offline[:2] == ["samples/s", "95% CI"]
    assert not any("ms" in header for header in offline)  # no latency headline column offline
    for headers in (single, multi, server, offline):
        assert headers[-4:] == ["batch", "SUT/LoadGen", "trials", "LoadGen"]


def test_loadgen_figures_fill_the_columns_and_the_diagnostics() -> None:
    shown = result("a", "single-stream", value=0.0125)
    table = leaderboard_tables([shown], "run r1")[0]
    assert _column(table, "p90 ms") == ["12.50"] and _column(table, "95% CI ms") == ["11.88-13.13"]
    assert _column(table, "p50 ms") == ["10.00"] and _column(table, "SUT/LoadGen") == ["0.98"]
    assert _column(table, "batch") == ["1"] and _column(table, "trials") == ["3"]
    assert table.caption is None
    offline = leaderboard_tables([result("a", "offline", qps=321.5)], "run r1")[0]
    assert _column(offline, "samples/s") == ["321.5"]


def test_one_trial_shows_no_interval_across_trials() -> None:
    one = result("a", "single-stream", value=0.0125)
    one = replace(
        one, body=replace(one.body, figures=replace(one.figures, trial_values=(0.0125,), ci=(0.0125, 0.0125)))
    )
    table = leaderboard_tables([one], "run r1")[0]
    assert _column(table, "95% CI ms") == ["- (1 trial)"] and _column(table, "trials") == ["1"]


def test_a_result_without_figures_falls_back_to_the_sut_timer_and_says_so() -> None:
    old = result("a", "single-stream", with_figures=False)
    shown = headline(old)
    assert shown is not None and shown.source == SUT_TIMER and shown.value == old.latency.p90_s  # type: ignore[union-attr]
    assert shown.ci is None and shown.batch == 1
    table = leaderboard_tables([old], "run r1")[0]
    assert _column(table, "p90 ms") == [f"22.00{FALLBACK_MARK}"] and "SUT timer" in str(table.caption)
    offline = headline(result("a", "offline", qps=33.0, with_figures=False))
    assert offline is not None and offline.source == LOADGEN and offline.value == 33.0
    assert offline.p50_s is None and offline.p99_s is None and not offline.lower_is_better


def test_titles_name_the_rule_set_and_quick_says_it_once() -> None:
    for table in leaderboard_tables([result("a"), result("b", "offline")], "run r1"):
        assert str(table.title).count(QUICK_NOTE) == 1 and "rules quick" in str(table.title)
    standard = leaderboard_tables([result("a", rules="standard")], "run r1")[0]
    assert QUICK_NOTE not in str(standard.title) and "rules standard" in str(standard.title)
    assert rules_note([]) == "rules unknown"
    assert rules_note(["quick", "official", "quick"]).count(";") == 1


def test_latency_headlines_sort_ascending_and_throughputs_descending() -> None:
    slow, fast = result("slow", value=0.03), result("fast", value=0.01)
    assert sorted([slow, fast], key=sort_key) == [fast, slow]
    few, many = result("few", "offline", qps=10.0), result("many", "offline", qps=90.0)
    assert sorted([few, many], key=sort_key) == [many, few]
    assert headline_text(fast) == "p90 10.00 ms" and headline_text(many) == "90.0 samples/s"


def test_the_server_search_table_lists_the_probes_in_run_order() -> None:
    table = server_search_table(result("a", "server"))
    assert table is not None and "bound 50.00 ms" in str(table.title) and "max QPS 40.0" in str(table.title)
    assert _column(table, "target QPS") == ["20.0", "60.0", "40.0"]
    assert _column(table, "under bound") == ["yes", "[yellow]no[/]", "yes"]
    assert "p99 > bound" in _column(table, "reasons")[1]
    assert server_search_table(result("a", "single-stream")) is None


def test_the_server_search_table_and_curve_show_the_scored_runs_that_backed_off() -> None:
    from accelbench.report import html_leaderboard

    failure = {"target_qps": 40.0, "valid": False, "p99_s": 0.07, "completed_qps": 38.0, "reasons": ["slow"]}
    served = result("a", "server")
    search = ServerSearch.from_dict({**SEARCH, "max_qps": 36.4, "scored_failures": [failure]})
    backed = replace(served, body=replace(served.body, server_search=search))
    table = server_search_table(backed)
    assert table is not None and "max QPS 36.4" in str(table.title)
    assert _column(table, "#") == ["1", "2", "3", "scored 1"]
    assert _column(table, "LoadGen")[3] == "[yellow]INVALID[/]" and _column(table, "reasons")[3] == "slow"
    figure = html_leaderboard.server_search_figure("s", [html_leaderboard.Entry("a", backed, None)])
    assert figure is not None and len(figure.data) == 2
    assert figure.data[1].x == (40.0,) and figure.data[1].y == pytest.approx((70.0,))
    assert figure.data[1].marker.symbol == "diamond-open"


def test_csv_export_follows_the_scenario(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    rows = [result("a", "single-stream", value=0.0125), result("b", "offline", qps=321.5)]
    export_results([*rows, result("c", "offline", with_figures=False)], "csv", out)
    single, offline, old = list(csv.DictReader(out.open(newline="")))
    assert single["headline_metric"] == "latency_p90_s" and float(single["headline_value"]) == 0.0125
    assert float(single["loadgen_p90_s"]) == 0.011 and float(single["p90_s"]) == 0.022
    assert (single["batch"], single["timer_ratio"], single["rules"]) == ("1", "0.98", "quick")
    assert offline["headline_metric"] == "samples_per_s" and float(offline["headline_value"]) == 321.5
    latency = ("p50_s", "p90_s", "p99_s", "loadgen_p50_s", "loadgen_p99_s", "median_ci_low_s")
    assert all(offline[name] == "" for name in latency)  # kept in the JSON export only
    assert old["headline_source"] == "LoadGen" and old["p50_s"] == "" and old["sut_s"] == ""


def test_the_status_line_counts_every_status_ok_first() -> None:
    import dataclasses

    from accelbench.report.terminal import status_line

    ok = result("a", "single-stream")
    statuses = ("oom", "crashed", "oom", "timeout")
    failed = [dataclasses.replace(ok, head=dataclasses.replace(ok.head, status=s)) for s in statuses]
    assert status_line([*failed, ok, ok]) == "6 cells: 2 ok, 1 crashed, 2 oom, 1 timeout"
    assert status_line([]) == "0 cells"
