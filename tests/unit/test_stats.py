"""Tests of ``accelbench.stats``: percentiles, bootstrap intervals, ratios, drift, stability."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pytest

from accelbench.stats import (
    bootstrap_ci,
    drift,
    instability_warning,
    median_ci,
    olympic_mean,
    ratio_ci,
    summarize_latencies,
)


def _normal(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).normal(loc=10.0, scale=1.0, size=n)


def test_percentiles_of_1_to_100() -> None:
    latency = summarize_latencies([float(v) for v in range(1, 101)])
    assert latency.p50_s == pytest.approx(50.5)
    assert latency.p90_s == pytest.approx(90.1)
    assert latency.p99_s == pytest.approx(99.01)
    assert latency.mean_s == pytest.approx(50.5)
    assert latency.min_s == 1.0
    assert latency.samples == 100
    low, high = latency.median_ci_s
    assert low < 50.5 < high


def test_median_ci_contains_true_median_and_narrows_with_more_samples() -> None:
    small = bootstrap_ci(_normal(100), np.median)
    large = bootstrap_ci(_normal(2000), np.median)
    assert small[0] < 10.0 < small[1]
    assert large[0] < 10.0 < large[1]
    assert large[1] - large[0] < (small[1] - small[0]) / 2


def test_same_seed_same_interval_other_seed_differs() -> None:
    values = _normal(300)
    assert summarize_latencies(values, seed=3) == summarize_latencies(values, seed=3)
    assert bootstrap_ci(values, np.median, seed=3) != bootstrap_ci(values, np.median, seed=4)


def test_confidence_level_widens_interval() -> None:
    values = _normal(300)
    narrow = bootstrap_ci(values, np.mean, confidence=0.5)
    wide = bootstrap_ci(values, np.mean, confidence=0.99)
    assert wide[0] < narrow[0] < narrow[1] < wide[1]


def test_ci_collapses_for_one_value_and_constant_samples() -> None:
    assert summarize_latencies([0.25]).median_ci_s == (0.25, 0.25)
    assert bootstrap_ci([2.0, 2.0, 2.0], np.median) == (2.0, 2.0)


def test_ten_thousand_samples_summarize_quickly() -> None:
    values = np.random.default_rng(0).lognormal(size=10_000)
    start = time.perf_counter()
    summarize_latencies(values)
    assert time.perf_counter() - start < 3.0  # ~0.3 s alone; generous for a shared 2-core VM


def test_ratio_ci_of_identical_distributions_contains_one() -> None:
    ratio, (low, high) = ratio_ci(_normal(500, seed=1), _normal(500, seed=2))
    assert low < 1.0 < high
    assert ratio == pytest.approx(1.0, abs=0.05)


def test_ratio_ci_detects_a_two_times_slowdown() -> None:
    ratio, (low, high) = ratio_ci(2 * _normal(200, seed=1), _normal(300, seed=2), seed=7)
    assert 1.8 < low < ratio < high < 2.2
    assert ratio_ci([3.0], [1.5]) == (2.0, (2.0, 2.0))


def test_drift() -> None:
    assert drift(1.0, 1.05) == pytest.approx(0.05)
    assert drift(2.0, 1.0) == pytest.approx(-0.5)
    with pytest.raises(ValueError):
        drift(0.0, 1.0)


def test_instability_warning_threshold() -> None:
    assert instability_warning([1.0, 1.01, 0.99, 1.02, 1.0]) is None
    message = instability_warning([1.0, 1.5, 0.7, 1.3, 0.9])
    assert message is not None and "interquartile" in message
    assert instability_warning([1.0]) is None


def test_olympic_mean() -> None:
    assert olympic_mean([5.0, 1.0, 3.0, 100.0]) == pytest.approx(4.0)
    assert olympic_mean([1.0, 2.0, 3.0]) == 2.0
    with pytest.raises(ValueError):
        olympic_mean([1.0, 2.0])


@pytest.mark.parametrize(
    "call",
    [
        lambda: summarize_latencies([]),
        lambda: bootstrap_ci([], np.median),
        lambda: ratio_ci([], [1.0]),
        lambda: ratio_ci([1.0], []),
        lambda: instability_warning([]),
    ],
)
def test_empty_input_raises(call: Callable[[], object]) -> None:
    with pytest.raises(ValueError, match="empty"):
        call()


def test_ratio_ci_with_a_single_or_constant_sample() -> None:
    ratio, (low, high) = ratio_ci([1.0], _normal(200))
    assert low < ratio < high and ratio == pytest.approx(0.1, rel=0.05)
    assert ratio_ci([1.0, 1.0], [2.0, 2.0]) == (0.5, (0.5, 0.5))
    with pytest.raises(ValueError, match="median of b_s is 0"):
        ratio_ci([1.0], [0.0])


@pytest.mark.parametrize("n", [12_000, 12_001])
def test_large_samples_get_the_bootstrap_interval_of_the_median_computed_exactly(n: int) -> None:
    """The exact limit agrees with 2000 drawn resamples to within their own Monte Carlo spread."""
    values = np.random.default_rng(n).lognormal(-12.0, 0.3, n)
    exact, drawn = median_ci(values), bootstrap_ci(values, np.median)
    width = drawn[1] - drawn[0]
    assert exact[0] < np.median(values) < exact[1]
    assert abs(exact[0] - drawn[0]) < 0.1 * width and abs(exact[1] - drawn[1]) < 0.1 * width
    assert summarize_latencies(values).median_ci_s == exact


def test_eighty_thousand_tied_samples_get_their_interval_quickly() -> None:
    """A null-stack cell's 84k latencies on a 100 ns grid: 7 s by resampling, milliseconds exactly."""
    values = np.round(np.random.default_rng(5).lognormal(-12.0, 0.3, 84_001), 7)
    start = time.perf_counter()
    low, high = median_ci(values)
    assert time.perf_counter() - start < 1.0
    assert low <= np.median(values) <= high and low < high
    assert {low, high} <= set(values.tolist())  # ends are sample values (odd n)
    assert median_ci(np.full(20_000, 0.5)) == (0.5, 0.5)
