"""The precision audit, the quality gate (its bar and its per-sample budget) and a workload's sanity check
judge with one rule in the run and in ``verify``: pinned at each rule's boundary (the value at the bar,
the error at the budget, the next float past it) through the run's function and through ``rejudge``, so
an edit of one side alone fails here."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from accelbench.audit_section import AuditEntry
from accelbench.audits import precision
from accelbench.audits.post_run import post_run_audits
from accelbench.audits.verdict import FAIL, PASS
from accelbench.bundle import rejudge
from accelbench.head import Quality
from accelbench.meters import quality
from accelbench.workloads.base import SanityVerdict, sanity_passes

BAR = quality.threshold_for("top1", "bf16")
BUDGET = quality.sample_budget("bf16")
ABOVE_BUDGET = math.nextafter(BUDGET, math.inf)


def _stored(evidence: Mapping[str, Any], outcome: str) -> AuditEntry:
    """An audit entry as a result document stores it (through JSON)."""
    return AuditEntry.from_dict(json.loads(json.dumps({**evidence, "verdict": outcome})))


@pytest.mark.parametrize(
    ("declared", "error", "outcome"),
    [
        ("fp32", precision.FP32_BUDGET, PASS),
        ("fp32", math.nextafter(precision.FP32_BUDGET, math.inf), FAIL),
        ("tf32", precision.TF32_BUDGET, PASS),
        ("tf32", math.nextafter(precision.TF32_BUDGET, math.inf), FAIL),
        ("bf16", precision.HALF_BUDGET, PASS),
        ("bf16", math.nextafter(precision.HALF_BUDGET, math.inf), FAIL),
        ("odd", math.nextafter(precision.FP32_BUDGET, math.inf), FAIL),  # an unknown name: fp32's budget
        ("int8", 1.0, PASS),  # not judged here
    ],
)
def test_the_precision_rule_at_its_budget_in_the_run_and_in_verify(
    declared: str, error: float, outcome: str
) -> None:
    assert precision.judge(declared, error) == outcome
    run = precision.precision_verdict(declared, [0.0, error])
    assert run.outcome == outcome
    assert rejudge.verdict("precision", _stored(run.evidence, run.outcome)).outcome == outcome


def _samples(agree: int, disagree: int, worst: float) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """References and outputs of ``top1`` samples: ``agree`` of them agree, the first one with the relative
    L2 error ``worst``; ``disagree`` of them flip the top class with a small error (about 0.05)."""
    references = [np.array([1.0, 0.0])] * agree + [np.array([1.0, 0.95])] * disagree
    outputs = [np.array([1.0, worst])] + [np.array([1.0, 0.0])] * (agree - 1)
    outputs += [np.array([0.95, 1.0])] * disagree
    return references, outputs


GATE_CASES = [
    pytest.param(9, 1, 0.0, True, id="value at the bar"),
    pytest.param(8, 2, 0.0, False, id="value under the bar"),
    pytest.param(10, 0, BUDGET, True, id="worst sample at the budget"),
    pytest.param(10, 0, ABOVE_BUDGET, False, id="worst sample just over the budget"),
]


@pytest.mark.parametrize(("agree", "disagree", "worst", "passed"), GATE_CASES)
def test_the_quality_gate_at_its_bar_and_budget_in_the_run_and_in_verify(
    agree: int, disagree: int, worst: float, passed: bool
) -> None:
    references, outputs = _samples(agree, disagree, worst)
    run = quality.compare("top1", references, outputs, "bf16")
    assert run.passed is passed
    assert rejudge.quality_failures(run, None, "bf16") == ([] if passed else ["top1"])


@pytest.mark.parametrize(("agree", "disagree", "worst", "passed"), GATE_CASES)
def test_the_alternate_seed_audit_at_its_bar_and_budget_in_the_run_and_in_verify(
    agree: int, disagree: int, worst: float, passed: bool
) -> None:
    references, outputs = _samples(agree, disagree, worst)
    fresh = [(np.array([index]),) for index in range(len(outputs) + 1)]  # the last: the repeated one
    by_index = {index: (ref, out) for index, (ref, out) in enumerate(zip(references, outputs, strict=True))}
    run = post_run_audits(
        infer=lambda sample: by_index.get(int(sample[0][0]), by_index[0])[1],
        reference=lambda sample: by_index.get(int(sample[0][0]), by_index[0])[0],
        fresh=fresh,
        metric="top1",
        precision="bf16",
        alternate_seed=7,
        clock=lambda: 0.0,
    ).alternate_seed
    outcome = PASS if passed else FAIL
    assert run.outcome == outcome
    assert rejudge.verdict("alternate_seed", _stored(run.evidence, run.outcome), "bf16").outcome == outcome


@pytest.mark.parametrize(
    ("value", "wrong", "worst", "failed"),
    [
        (BAR, 0, BUDGET, False),
        (math.nextafter(BAR, 0.0), 0, BUDGET, True),
        (BAR, 0, ABOVE_BUDGET, True),
        (BAR, 0, None, True),  # no worst sample stored: nothing vouches for it
        (BAR, None, None, False),  # a record stored before schema 8: its metric alone
        (math.nextafter(BAR, 0.0), None, None, True),
    ],
)
def test_verify_judges_a_stored_gate_record_at_the_boundaries(
    value: float, wrong: int | None, worst: float | None, failed: bool
) -> None:
    record = Quality("top1", value, BAR, True, samples_checked=10, wrong=wrong, worst_sample_error=worst)
    assert rejudge.quality_failures(record, None, "bf16") == (["top1"] if failed else [])


def test_the_gates_shared_rules_at_their_boundaries() -> None:
    assert quality.meets_bar(BAR, BAR) and not quality.meets_bar(math.nextafter(BAR, 0.0), BAR)
    assert not quality.is_wrong(BUDGET, BUDGET) and quality.is_wrong(ABOVE_BUDGET, BUDGET)


@pytest.mark.parametrize(
    ("value", "threshold", "passed"),
    [
        (1.0, 1.0, True),  # MiniLM's sentence ranking: every triple ranked correctly
        (7 / 8, 1.0, False),
        (0.5, 0.5, True),
        (math.nextafter(0.5, 0.0), 0.5, False),
        (math.nan, 0.5, False),
    ],
)
def test_the_sanity_rule_at_its_threshold_in_the_run_and_in_verify(
    value: float, threshold: float, passed: bool
) -> None:
    assert sanity_passes(value, threshold) is passed
    verdict = SanityVerdict.judged("sentence-ranking", value, threshold, "detail")
    assert verdict.passed is passed
    stored = quality.sanity_quality(verdict, samples_checked=8)
    assert stored.passed is passed
    assert rejudge.quality_failures(None, stored, "fp32") == ([] if passed else ["sentence-ranking"])
