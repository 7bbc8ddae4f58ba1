"""The quality gate's one rule at every precision: each judged sample against its precision's budget,
wrong answers on 1% of the judged samples or more fail (``accelbench.meters.quality``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accelbench.audit_section import AuditEntry
from accelbench.bundle import rejudge
from accelbench.head import Quality
from accelbench.meters.quality import (
    SAMPLE_BUDGETS,
    WRONG_SHARE,
    compare,
    detection_probability,
    passes,
    sample_budget,
    sample_errors,
    wrong_to_fail,
)
from tests.e2e.planted_precision import garbage_like, noisy_like

PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "int8", "fp8")


def embeddings(count: int, seed: int, width: int = 32) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((1, width)).astype(np.float32) for _ in range(count)]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(1, 150),
    precision=st.sampled_from(PRECISIONS),
    share_of_budget=st.floats(0.0, 0.9),
)
def test_honest_errors_under_the_budget_pass(
    seed: int, count: int, precision: str, share_of_budget: float
) -> None:
    refs = embeddings(count, seed)
    rng = np.random.default_rng(seed + 1)
    outs = [noisy_like(r, rng, share_of_budget * sample_budget(precision)) for r in refs]
    quality = compare("cosine", refs, outs, precision)
    assert quality.wrong == 0 and quality.passed, quality.detail
    assert quality.worst_sample_error == pytest.approx(max(sample_errors(refs, outs)))


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(1, 250),
    precision=st.sampled_from(PRECISIONS),
    data=st.data(),
)
def test_wrong_answers_on_one_percent_fail_every_precision(
    seed: int, count: int, precision: str, data: st.DataObject
) -> None:
    refs = embeddings(count, seed)
    rng = np.random.default_rng(seed + 1)
    wrong = data.draw(st.integers(1, count), label="wrong")
    outs = [garbage_like(r, rng) if i < wrong else r.copy() for i, r in enumerate(refs)]
    quality = compare("cosine", refs, outs, precision)
    assert quality.wrong == wrong  # a random answer is 0.8-2x the reference's norm away: over every budget
    rule_passes = passes(1.0, 0.0, quality.wrong, quality.samples_checked)  # the per-sample rule alone
    assert rule_passes == (wrong < WRONG_SHARE * count) == (wrong < wrong_to_fail(count))
    assert not quality.passed  # one sample near no reference also fails the min-cosine bar
    if count < 100:
        assert not rule_passes


def test_close_ish_noise_passes_the_old_int8_bar_but_not_the_budget() -> None:
    """Twice the int8 budget on one sample in ten: the old top-1 bar (0.8) passed it."""
    rng = np.random.default_rng(5)
    refs = [r * 3 for r in embeddings(40, 3, width=10)]
    outs = [noisy_like(r, rng, 2 * sample_budget("int8")) if i % 10 == 0 else r for i, r in enumerate(refs)]
    quality = compare("top1", refs, outs, "int8")
    assert quality.value >= 0.8 and not quality.passed and quality.wrong == 4


@pytest.mark.parametrize(("share", "judged"), [(0.1, 44), (0.02, 44), (0.02, 108)])
def test_detection_probability_is_what_the_gate_does(share: float, judged: int) -> None:
    """2000 simulated cells: wrong answers drawn on ``share`` of ``judged`` samples; the gate's failure
    rate matches ``detection_probability`` (the checks judged apart from the alternate-seed samples
    when there are 96 + 12: two draws, each under 100)."""
    rng = np.random.default_rng(11)
    parts = (96, 12) if judged == 108 else (judged,)
    caught = 0
    for _ in range(2000):
        caught += any(
            not passes(1.0, 0.0, int(rng.binomial(part, share)), part) for part in parts
        )  # the metric at its bar: the per-sample rule alone decides
    expected = 1 - np.prod([1 - detection_probability(part, share) for part in parts])
    assert caught / 2000 == pytest.approx(expected, abs=0.03)


def test_detection_probabilities_quoted_in_the_docs() -> None:
    assert detection_probability(44, 0.1) == pytest.approx(0.990, abs=5e-4)
    assert detection_probability(32, 0.1) == pytest.approx(0.966, abs=5e-4)
    assert detection_probability(44, 0.02) == pytest.approx(0.589, abs=5e-4)
    assert detection_probability(108, 0.02) < detection_probability(99, 0.02)  # 2 wrong needed from 100


def test_budgets_nest_and_unknown_precisions_get_fp32() -> None:
    assert SAMPLE_BUDGETS["fp32"] < SAMPLE_BUDGETS["tf32"] < SAMPLE_BUDGETS["bf16"] < SAMPLE_BUDGETS["int8"]
    assert sample_budget("fp7") == sample_budget("fp32") == sample_budget("fp32", "no-such-workload", "tiny")
    for precision in PRECISIONS:
        for workload in ("resnet50", "bert-base", "minilm-l6"):
            for size in ("tiny", "standard"):
                assert 0 < sample_budget(precision, workload, size) <= sample_budget(precision)


def test_rejudge_calls_the_same_rule_on_stored_counts() -> None:
    counts = {"metric": "top1", "value": 1.0, "samples_checked": 32, "wrong": 0, "worst_sample_error": 0.1}
    stored = Quality(**counts, threshold=0.99, passed=True)
    assert rejudge.quality_failures(stored, None, "int8", "resnet50", "tiny") == []
    assert rejudge.quality_failures(replace(stored, wrong=1), None, "int8", "resnet50", "tiny") == ["top1"]
    # a record whose worst error is over this code's budget has a wrong sample, whatever it says
    assert rejudge.quality_failures(replace(stored, worst_sample_error=0.9), None, "int8") == ["top1"]
    assert rejudge.quality_failures(replace(stored, worst_sample_error=0.1), None, "fp32") == ["top1"]
    # a record stored before schema 8 has no per-sample counts: its metric alone
    old = Quality("top1", 0.85, threshold=0.9, passed=False, samples_checked=32)
    assert rejudge.quality_failures(old, None, "int8") == []
    assert rejudge.quality_failures(old, None, "fp32") == ["top1"]
    entry = {**counts, "wrong": 2, "verdict": "pass"}
    judged = rejudge.verdict("alternate_seed", AuditEntry.from_dict(entry), "int8", "resnet50", "tiny")
    assert judged.outcome == "fail"
    assert (
        rejudge.verdict("alternate_seed", AuditEntry.from_dict({**entry, "wrong": 0}), "int8").outcome
        == "pass"
    )
