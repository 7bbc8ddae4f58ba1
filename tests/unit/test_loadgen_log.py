"""Parsing of real LoadGen 6.0.17 logs kept as golden files in tests/golden/loadgen/."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelbench.scenarios.loadgen_log import Summary, parse_detail, parse_detail_values, parse_summary

GOLDEN = Path(__file__).parents[1] / "golden" / "loadgen"


def _summary(name: str) -> Summary:
    return parse_summary((GOLDEN / f"{name}_summary.txt").read_text())


def _detail(name: str) -> str:
    return (GOLDEN / f"{name}_detail.txt").read_text()


def test_single_stream_valid() -> None:
    s = _summary("single_stream")
    assert (s.scenario, s.mode, s.sut_name, s.valid) == ("single-stream", "PerformanceOnly", "PySUT", True)
    assert s.invalid_reasons == ()
    assert s.min_duration_met and s.min_queries_met and s.early_stopping_met
    assert s.perf_constraints_met is None
    assert s.target_percentile == pytest.approx(0.9)
    assert s.target_latency_s == pytest.approx(1127132e-9)
    assert s.qps_with_loadgen_overhead == pytest.approx(873.27)
    assert s.qps_without_loadgen_overhead == pytest.approx(876.55)
    assert s.qps == pytest.approx(873.27)
    assert s.min_latency_s == pytest.approx(1043508e-9)
    assert s.max_latency_s == pytest.approx(10099791e-9)
    assert s.mean_latency_s == pytest.approx(1140831e-9)
    assert s.latency_percentiles_s[50.0] == pytest.approx(1112470e-9)
    assert s.latency_percentiles_s[99.9] == pytest.approx(10099791e-9)
    assert sorted(s.latency_percentiles_s) == [50.0, 90.0, 95.0, 97.0, 99.0, 99.9]
    assert s.queries == 875
    assert (s.samples_per_query, s.min_query_count, s.performance_sample_count) == (1, 64, 16)
    assert s.min_duration_s == pytest.approx(1.0)
    assert s.target_qps == pytest.approx(1847.7)
    assert s.latency_bound_s is None
    assert (s.warnings, s.errors) == (0, 0)
    assert s.early_stopping[0] == "Processed at least 64 queries (875)."
    assert s.extra["max_async_queries"] == "1"


def test_offline_valid() -> None:
    s = _summary("offline")
    assert (s.scenario, s.valid) == ("offline", True)
    assert s.samples_per_s == pytest.approx(905.564)
    assert s.qps == pytest.approx(905.564)
    assert s.samples_per_query == 1524
    assert s.min_query_count == 1  # LoadGen turns the offline minimum into samples per query
    assert s.max_latency_s == pytest.approx(1.682928969)
    assert s.target_latency_s is None
    assert s.queries is None
    assert s.early_stopping == ()


def test_multi_stream_invalid_by_early_stopping() -> None:
    s = _summary("multi_stream")
    assert (s.scenario, s.valid) == ("multi-stream", False)
    assert s.min_duration_met and s.min_queries_met and not s.early_stopping_met
    assert s.invalid_reasons == (
        "early stopping not satisfied",
        "early stopping: Only processed 115 queries."
        " Need to process at least 662 queries for early stopping.",
    )
    assert s.target_percentile == pytest.approx(0.99)
    assert s.target_latency_s == pytest.approx(12487255e-9)
    assert s.mean_latency_s == pytest.approx(8796652e-9)  # per query of 8 samples
    assert s.samples_per_query == 8
    assert s.queries == 115
    assert s.qps == pytest.approx(8 / 8796652e-9)


def test_server_valid() -> None:
    s = _summary("server")
    assert (s.scenario, s.valid, s.perf_constraints_met) == ("server", True, True)
    assert s.completed_samples_per_s == pytest.approx(457.90)
    assert s.scheduled_samples_per_s == pytest.approx(458.09)
    assert s.qps == pytest.approx(457.90)
    assert s.latency_bound_s == pytest.approx(0.1)
    assert s.latency_percentiles_s[99.0] == pytest.approx(14896508e-9)
    assert s.min_duration_s == pytest.approx(3.0)
    assert s.min_query_count == 500
    assert s.early_stopping == ("Run successful.",)
    assert s.queries is None


def test_server_over_latency_bound() -> None:
    s = _summary("server_over_bound")
    assert not s.valid
    assert s.perf_constraints_met is False
    assert s.latency_bound_s == pytest.approx(0.0005)
    assert s.invalid_reasons[:3] == (
        "performance constraints not satisfied",
        "early stopping not satisfied",
        "Reduce target QPS to improve latency.",
    )
    assert s.invalid_reasons[3].startswith("early stopping: Run unsuccessful. Processed 500 queries.")
    assert s.invalid_reasons[3].endswith("if every additional query were under latency.")
    assert s.queries == 500


def test_single_stream_that_ran_out_of_queries() -> None:
    s = _summary("single_stream_ran_out")
    assert not s.valid and not s.min_duration_met and s.early_stopping_met
    assert s.invalid_reasons == (
        "min duration not satisfied",
        "Decrease the expected latency so the loadgen pre-generates more queries.",
    )
    assert s.errors == 1
    assert s.queries == 81
    assert s.early_stopping[-1] == (
        "Not enough queries processed for 99.0th percentile early stopping estimate "
        "(would need to process at least 662 total queries)."
    )


def test_offline_too_short() -> None:
    s = _summary("offline_too_short")
    assert not s.valid
    assert s.invalid_reasons == (
        "min duration not satisfied",
        "Increase expected QPS so the loadgen pre-generates a larger (coalesced) query.",
    )


def test_detail_errors_and_warnings() -> None:
    (message,) = parse_detail(_detail("single_stream_ran_out"))
    assert message.startswith("error_runtime: Ending early: Ran out of generated queries")
    for name in ("single_stream", "offline", "multi_stream", "server", "server_over_bound"):
        assert parse_detail(_detail(name)) == []


def test_detail_values() -> None:
    values = parse_detail_values(_detail("server"))
    assert values["result_query_count"] == 1377
    assert values["result_validity"] == "VALID"
    assert values["effective_scenario"] == "Server"
    assert parse_detail_values(_detail("offline"))["result_query_count"] == 1


def test_detail_skips_a_truncated_record() -> None:
    text = _detail("single_stream_ran_out")
    assert parse_detail(text + ':::MLLOG {"key": "error_runtime", "val') == parse_detail(text)


@pytest.mark.parametrize("text", ["", "hello\nworld", "Result is : VALID\n", "{}"])
def test_garbage_is_not_a_summary(text: str) -> None:
    with pytest.raises(ValueError, match="not a LoadGen summary"):
        parse_summary(text)


def test_summary_missing_a_field() -> None:
    text = (GOLDEN / "single_stream_summary.txt").read_text().replace("Mean latency (ns)", "Average")
    with pytest.raises(ValueError, match="Mean latency"):
        parse_summary(text)


def test_summary_bad_number() -> None:
    text = (GOLDEN / "offline_summary.txt").read_text().replace("905.564", "lots")
    with pytest.raises(ValueError, match="not a number"):
        parse_summary(text)


def test_garbage_is_not_a_detail_log() -> None:
    with pytest.raises(ValueError, match="not a LoadGen detail log"):
        parse_detail("error: something\n")
    with pytest.raises(ValueError, match="not a LoadGen detail log"):
        parse_detail_values((GOLDEN / "offline_summary.txt").read_text())
