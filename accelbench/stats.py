"""Statistics over timings: percentiles, bootstrap confidence intervals (also of ratios), stability checks.

Bootstrap intervals use ``scipy.stats.bootstrap`` with the percentile method (BCa's jackknife is slow on
10k samples and degenerates on the tied values that timer resolution produces), ``BOOTSTRAP_RESAMPLES``
resamples, vectorised in batches, and a seeded generator, so the same input and seed give the same
interval. From ``EXACT_MEDIAN_MIN_SAMPLES`` samples the median's interval is that bootstrap's limit
(infinitely many resamples), computed from the binomial law of a resample's middle order statistic
instead of drawn (``median_ci``). Percentiles use numpy's default linear interpolation.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from accelbench.loadgen_figures import Latency

BOOTSTRAP_RESAMPLES = 2000
_BATCH = 200
"""Resamples per vectorised batch: bounds memory to ~_BATCH x n floats (16 MB at n = 10k)."""

EXACT_MEDIAN_MIN_SAMPLES = 10_000
"""From this many samples ``median_ci`` computes the percentile bootstrap's interval exactly: 2000 resamples
of the 84k latencies of a null-stack single-stream cell took 7 s (30k: 2.2 s), the exact one milliseconds."""

INSTABILITY_REL_IQR = 0.10
"""``instability_warning`` threshold: interquartile range / median. Like pyperf's 10% (std dev / mean)
check, but robust to the rare long outliers (interrupts, page faults) that every latency sample has."""


@functools.cache
def _scipy_stats() -> Any:
    """``scipy.stats``, imported at first use (0.5-1 s, which most commands never need)."""
    from scipy import stats

    return stats


def _seed_keyword() -> str:
    """scipy >= 1.15 takes ``rng``; older versions only ``random_state`` (same meaning for a Generator)."""
    return "rng" if "rng" in inspect.signature(_scipy_stats().bootstrap).parameters else "random_state"


Samples = Sequence[float] | np.ndarray
"""One sample of values: a sequence of floats or a 1-D numpy array."""

Statistic = Callable[..., Any]
"""A reduction called as ``statistic(sample, axis=-1)``, e.g. ``np.median``; one array per sample."""


def summarize_latencies(latencies_s: Samples, seed: int = 0) -> Latency:
    """p50/p90/p99/mean/min and a 95% bootstrap CI of the median; raises ValueError on empty input."""
    values = _array(latencies_s, "latencies_s")
    p50, p90, p99 = np.percentile(values, [50, 90, 99])
    return Latency(
        p50_s=float(p50),
        p90_s=float(p90),
        p99_s=float(p99),
        mean_s=float(values.mean()),
        min_s=float(values.min()),
        median_ci_s=median_ci(values, seed=seed),
        samples=int(values.size),
    )


def median_ci(values: Samples, confidence: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap CI of the median: resampled (``bootstrap_ci``) under
    ``EXACT_MEDIAN_MIN_SAMPLES`` samples, from there its exact limit (``_exact_median_ci``)."""
    sample = _array(values, "values")
    if sample.size < EXACT_MEDIAN_MIN_SAMPLES or np.all(sample == sample[0]):
        return bootstrap_ci(sample, np.median, confidence, seed)
    return _exact_median_ci(np.sort(sample), confidence)


def _exact_median_ci(ordered: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile bootstrap's interval of the median with infinitely many resamples, from the sorted
    sample: a resample's ``k``-th smallest value is at most the sample's ``j``-th smallest exactly when at
    least ``k`` of its ``n`` draws are, a binomial(n, j / n) event. For an even ``n`` the resample's median
    is the mean of its two middle values; each end is then the mean of the two middle values' ends."""
    n = ordered.size
    middles = (n // 2, n // 2 + 1) if n % 2 == 0 else ((n + 1) // 2,)
    tail = (1.0 - confidence) / 2
    share = np.arange(1, n + 1) / n
    ends = []
    for k in middles:
        at_most = _scipy_stats().binom.sf(k - 1, n, share)  # P(resample's k-th smallest <= ordered[j - 1])
        low, high = np.searchsorted(at_most, [tail, 1.0 - tail])
        ends.append((ordered[min(low, n - 1)], ordered[min(high, n - 1)]))
    return float(np.mean([e[0] for e in ends])), float(np.mean([e[1] for e in ends]))


def bootstrap_ci(
    values: Samples,
    statistic: Statistic,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap CI of ``statistic`` over one sample; collapses to the value when n < 2."""
    sample = _array(values, "values")
    point = float(statistic(sample, axis=-1))
    if sample.size < 2 or np.all(sample == sample[0]):
        return point, point
    return _bootstrap((sample,), statistic, confidence, seed)


def ratio_ci(
    a_s: Samples, b_s: Samples, seed: int = 0, confidence: float = 0.95
) -> tuple[float, tuple[float, float]]:
    """median(a) / median(b) and its bootstrap CI, resampling the two independent samples separately.

    For latencies, a ratio above 1 means ``a`` is slower than ``b``.
    """
    a = _array(a_s, "a_s")
    b = _array(b_s, "b_s")
    if np.median(b) == 0:
        raise ValueError("ratio_ci: the median of b_s is 0")
    ratio = float(np.median(a) / np.median(b))
    return ratio, _ratio_interval(a, b, ratio, confidence, seed)


def drift(before_s: float, after_s: float) -> float:
    """Relative change from ``before_s`` to ``after_s``: (after - before) / before; 0.05 = 5% slower."""
    if before_s <= 0:
        raise ValueError(f"drift: before_s must be positive, got {before_s!r}")
    return (after_s - before_s) / before_s


def instability_warning(values: Samples, max_rel_iqr: float = INSTABILITY_REL_IQR) -> str | None:
    """A warning when IQR / median of ``values`` exceeds ``max_rel_iqr``; None when stable or n < 2."""
    sample = _array(values, "values")
    median = float(np.median(sample))
    if sample.size < 2 or median <= 0:
        return None
    q25, q75 = np.percentile(sample, [25, 75])
    rel_iqr = float(q75 - q25) / median
    if rel_iqr <= max_rel_iqr:
        return None
    return (
        f"unstable: interquartile range is {rel_iqr:.0%} of the median over {sample.size} values "
        f"(threshold {max_rel_iqr:.0%}); the machine may be noisy"
    )


def olympic_mean(values: Samples) -> float:
    """Mean after dropping one minimum and one maximum; needs at least 3 values (ValueError otherwise)."""
    if len(values) < 3:
        raise ValueError(f"olympic_mean needs at least 3 values, got {len(values)}")
    ordered = sorted(values)
    return float(np.mean(ordered[1:-1]))


def _ratio_interval(
    a: np.ndarray, b: np.ndarray, ratio: float, confidence: float, seed: int
) -> tuple[float, float]:
    """A sample of one value (or of identical values) is a constant: only the other is resampled."""
    a_fixed = a.size < 2 or bool(np.all(a == a[0]))
    b_fixed = b.size < 2 or bool(np.all(b == b[0]))
    if a_fixed and b_fixed:
        return ratio, ratio
    if a_fixed:
        a_median = float(np.median(a))
        return _bootstrap((b,), lambda s, axis=-1: a_median / np.median(s, axis=axis), confidence, seed)
    if b_fixed:
        b_median = float(np.median(b))
        return _bootstrap((a,), lambda s, axis=-1: np.median(s, axis=axis) / b_median, confidence, seed)
    return _bootstrap((a, b), _median_ratio, confidence, seed)


def _median_ratio(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.asarray(np.median(a, axis=axis) / np.median(b, axis=axis))


def _bootstrap(
    samples: tuple[np.ndarray, ...], statistic: Statistic, confidence: float, seed: int
) -> tuple[float, float]:
    result = _scipy_stats().bootstrap(
        samples,
        statistic,
        n_resamples=BOOTSTRAP_RESAMPLES,
        batch=_BATCH,
        vectorized=True,
        axis=-1,
        confidence_level=confidence,
        method="percentile",
        **{_seed_keyword(): np.random.default_rng(seed)},
    )
    interval = result.confidence_interval
    return float(interval.low), float(interval.high)


def _array(values: Samples, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float).ravel()
    if array.size == 0:
        raise ValueError(f"{name} is empty")
    return array
