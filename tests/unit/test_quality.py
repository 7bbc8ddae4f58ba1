"""Tests of the quality gate: thresholds per precision, ties, and outputs that cannot be compared."""

from __future__ import annotations

import numpy as np
import pytest

from accelbench.meters.quality import (
    THRESHOLDS,
    TIE_TOLERANCE,
    compare,
    failure,
    sample_budget,
    sanity_quality,
    threshold_for,
)
from accelbench.workloads.base import SanityVerdict


def logits(count: int, classes: int = 10, seed: int = 0) -> list[np.ndarray]:
    """``count`` random logit vectors ``[1, classes]`` with clear (non-tie) winners."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        row = rng.normal(size=(1, classes)).astype(np.float32)
        row[0, rng.integers(classes)] += 5.0
        out.append(row)
    return out


def flip_top1(row: np.ndarray) -> np.ndarray:
    """A copy of ``row`` whose argmax is the reference's runner-up."""
    flipped = row.copy()
    second = int(np.argsort(row[0])[-2])
    flipped[0, second] = row.max() + 1.0
    return flipped


def test_identical_logits_pass_at_fp32() -> None:
    refs = logits(20)
    quality = compare("top1", refs, [r.copy() for r in refs], "fp32")
    assert quality.passed and quality.value == 1.0
    assert quality.threshold == THRESHOLDS["top1"]["fp32"]
    assert quality.samples_checked == 20
    assert "max_norm_abs_err=0" in quality.detail and "20/20" in quality.detail


def test_one_wrong_answer_in_ten_fails_every_precision() -> None:
    refs = logits(10)
    outs = [r.copy() for r in refs]
    outs[3] = flip_top1(refs[3])
    for precision in ("fp32", "bf16", "int8", "fp8"):
        quality = compare("top1", refs, outs, precision)
        assert quality.value == pytest.approx(0.9) and not quality.passed, precision
        assert quality.wrong == 1 and quality.worst_sample_error is not None
        assert quality.worst_sample_error > quality.sample_budget == sample_budget(precision)
        assert "1 of 10 samples over" in quality.detail and failure(quality).startswith("top1: 1 of 10")


def test_a_flip_within_the_budget_fails_fp32_but_passes_bf16() -> None:
    refs = logits(10)
    outs = [r.copy() for r in refs]
    near = refs[3].copy()
    near[0, int(np.argsort(near[0])[-2])] = near.max() + 0.01  # a runner-up raised just past the winner
    ref = refs[3].copy()
    ref[0, int(np.argsort(ref[0])[-2])] = ref.max() - 0.01
    refs[3], outs[3] = ref, near
    at_fp32 = compare("top1", refs, outs, "fp32")
    at_bf16 = compare("top1", refs, outs, "bf16")
    assert at_fp32.value == pytest.approx(0.9) and not at_fp32.passed
    assert at_bf16.value == pytest.approx(0.9) and at_bf16.passed and at_bf16.wrong == 0
    assert at_bf16.threshold == 0.9 and "9/10" in at_bf16.detail


def test_two_flips_in_ten_fail_bf16() -> None:
    refs = logits(10)
    outs = [flip_top1(r) if i in (0, 5) else r.copy() for i, r in enumerate(refs)]
    quality = compare("top1", refs, outs, "bf16")
    assert quality.value == pytest.approx(0.8) and not quality.passed


def test_reference_tie_counts_either_class_as_agreement() -> None:
    ref = np.array([[10.0, 10.0 - 0.1 * TIE_TOLERANCE * 10.0, 1.0]], dtype=np.float32)
    out = np.array([[9.999, 10.0, 1.0]], dtype=np.float32)
    quality = compare("top1", [ref], [out], "fp32")
    assert quality.passed and quality.value == 1.0
    assert "1 reference ties" in quality.detail


def test_clear_margin_is_not_a_tie() -> None:
    ref = np.array([[10.0, 9.9, 1.0]], dtype=np.float32)
    out = np.array([[9.9, 10.0, 1.0]], dtype=np.float32)
    quality = compare("top1", [ref], [out], "fp32")
    assert not quality.passed and quality.value == 0.0
    assert "0 reference ties" in quality.detail


def test_tie_does_not_excuse_a_third_class() -> None:
    ref = np.array([[10.0, 10.0, 1.0]], dtype=np.float32)
    out = np.array([[1.0, 1.0, 10.0]], dtype=np.float32)
    assert compare("top1", [ref], [out], "fp32").value == 0.0


def test_cosine_is_the_minimum_over_samples() -> None:
    rng = np.random.default_rng(1)
    refs = [rng.normal(size=(1, 64)) for _ in range(5)]
    outs = [r.copy() for r in refs]
    outs[2] = refs[2] + 0.05 * rng.normal(size=(1, 64))
    expected = float(refs[2].ravel() @ outs[2].ravel()) / (np.linalg.norm(refs[2]) * np.linalg.norm(outs[2]))
    quality = compare("cosine", refs, outs, "fp32")
    assert quality.value == pytest.approx(expected)
    assert expected < THRESHOLDS["cosine"]["fp32"] and not quality.passed
    assert "at sample 2" in quality.detail


def test_cosine_bar_depends_on_precision() -> None:
    ref = np.ones((1, 100))
    out = ref.copy()
    out[0, :5] = 0.5
    fp32, bf16 = compare("cosine", [ref], [out], "fp32"), compare("cosine", [ref], [out], "bf16")
    assert 0.99 < fp32.value < 0.9999
    assert not fp32.passed and bf16.passed


def test_detail_reports_max_normalised_error() -> None:
    ref = np.array([[1.0, -4.0, 2.0]])
    out = np.array([[1.0, -4.0, 2.2]])
    assert "max_norm_abs_err=0.05" in compare("cosine", [ref], [out], "fp32").detail


@pytest.mark.parametrize("metric", ["top1", "cosine"])
def test_nan_output_fails(metric: str) -> None:
    refs = logits(3)
    outs = [r.copy() for r in refs]
    outs[1][0, 2] = np.nan
    quality = compare(metric, refs, outs, "fp32")
    assert not quality.passed and quality.value == 0.0
    assert "NaN" in quality.detail and "sample 1" in quality.detail


def test_shape_mismatch_fails_with_detail() -> None:
    refs = logits(2)
    outs = [refs[0].copy(), refs[1].ravel()]
    quality = compare("top1", refs, outs, "fp32")
    assert not quality.passed and "shape" in quality.detail


def test_count_mismatch_and_no_samples_fail() -> None:
    refs = logits(3)
    short = compare("cosine", refs, refs[:2], "fp32")
    assert not short.passed and "2 outputs for 3 references" in short.detail
    empty = compare("cosine", [], [], "fp32")
    assert not empty.passed and "no samples" in empty.detail


def test_unknown_precision_gets_the_fp32_bar() -> None:
    refs = logits(4)
    quality = compare("top1", refs, refs, "fp6")
    assert quality.threshold == threshold_for("top1", "fp32") and quality.passed
    assert "unknown precision" in quality.detail


def test_unknown_metric_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown quality metric"):
        compare("accuracy", logits(1), logits(1), "fp32")


def test_looser_precisions_never_have_stricter_bars() -> None:
    for bars in THRESHOLDS.values():
        assert bars["fp32"] >= bars["tf32"] >= bars["bf16"] >= bars["int8"]
        assert bars["fp16"] == bars["bf16"]


def test_sanity_quality_copies_the_verdict() -> None:
    verdict = SanityVerdict("sentence-ranking", False, 0.75, 1.0, "6/8 triples ranked correctly")
    quality = sanity_quality(verdict, samples_checked=24)
    assert quality.metric == "sentence-ranking" and quality.value == 0.75 and quality.threshold == 1.0
    assert not quality.passed and quality.samples_checked == 24 and quality.detail == verdict.detail
