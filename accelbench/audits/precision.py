"""The precision audit: a stack's error must fit the precision it declares.

The error is the largest normalised error max|out - ref| / max|ref| against the fp32 eager reference,
over the outputs checked during the timed run and on the alternate-seed inputs. Each declared precision
has a budget (``BUDGETS``); an error above the declared budget is consistent with a coarser class, and
the cell is disqualified: "computes below its declared precision (error consistent with bf16)".

Budgets are set between the classes as measured on the standard-size models here
(``benchmarks/precision_budgets.py``: 16 samples, 2 threads, each stack in its own process):

=========  ===========================================================  =============
workload   honest largest error                                         budget
=========  ===========================================================  =============
resnet50   fp32: inductor 3.9e-6, jax-xla 3.7e-6, tensorflow 3.6e-6,    fp32 5e-5
           iree 3.5e-6, tvm 3.4e-6, litert 3.3e-6, openvino 2.5e-6,
           onnxruntime 1.4e-6, eager 0
resnet50   fp16 autocast 2.4e-3; bf16 autocast 1.5e-2, openvino-bf16    bf16/fp16 0.1
           1.7e-2
bert-base  fp32: openvino 4.2e-7, onnxruntime 4.1e-7, jax-xla 3.5e-7,    fp32 5e-5
           inductor 3.5e-7, eager 0
bert-base  bf16: openvino-bf16 3.9e-3                                   bf16/fp16 0.1
minilm-l6  fp32: openvino 1.3e-6, jax-xla 1.2e-6, onnxruntime 9.8e-7,   fp32 5e-5
           inductor 9.3e-7, eager 0
minilm-l6  fp16 autocast 1.2e-3; bf16 autocast 7.2e-3, openvino-bf16    bf16/fp16 0.1
           6.6e-3
=========  ===========================================================  =============

So the fp32 budget sits 13x above the largest honest fp32 error and 24x below the smallest 16-bit one.
TF32 (a 10-bit mantissa like fp16) gets 5e-3, twice fp16's measured error. The tiny models give smaller
errors still (honest fp32 at most 5e-6 in the e2e runs). A declared precision the audit has
no class for (int8, fp8) is not checked here: the quality gate holds it to its own bar. An unknown name
is held to the fp32 budget, as the quality gate does, so a stack never earns slack by naming an odd one.

The verdict is the worst sample's error against the declared budget; the class the error is consistent
with is named from the worst sample when a class holds it, else from the median sample: a model with
seeded weights amplifies rounding on a few inputs (bf16 autocast on the tiny ResNet-50, 4 runs:
worst 0.050-0.120, median 0.018-0.021), and a stack that computes in bf16 is still named so. A
median within fp32 with a worst sample beyond every class is garbage on some inputs, not lowered
precision: the quality gate names it.
A failure is *lowered precision* (a cheat: ``lowered``) only when the class is coarser than the declared
one: an honest bf16 stack amplified past the bf16 budget is not called a cheat by this audit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from accelbench.audits.verdict import FAIL, PASS, Verdict

FP32_BUDGET = 5e-5
TF32_BUDGET = 5e-3
HALF_BUDGET = 1e-1
BUDGETS: dict[str, float] = {
    "fp64": FP32_BUDGET,
    "fp32": FP32_BUDGET,
    "tf32": TF32_BUDGET,
    "bf16": HALF_BUDGET,
    "fp16": HALF_BUDGET,
}
"""Largest normalised error allowed to each declared precision."""
CLASSES = (("fp32", FP32_BUDGET), ("tf32 or fp16", 1e-3), ("bf16 or fp16", HALF_BUDGET))
"""The classes an error can be consistent with, finest first. fp16 and tf32 share a 10-bit mantissa and
their errors overlap bf16's on some models (fp16 2.4e-3 on ResNet-50, bf16 3.9e-3 on BERT), so the
label is a hedge; the verdict itself is always against the declared budget."""
UNCHECKED = ("int8", "fp8", "none")
"""Declared precisions this audit does not judge (the quality gate does)."""


COARSEST = "coarser than bf16"
"""The class of an error no floating-point class explains."""


def consistent_with(error: float, median_error: float | None = None) -> str:
    """The finest class whose budget holds ``error``; when none does, the finest that holds
    ``median_error`` if that is coarser than fp32 (rounding amplified on a few samples); else
    ``COARSEST`` (an fp32 median: garbage on some samples, not a lowered precision)."""
    worst = _finest(error)
    if worst != COARSEST or median_error is None:
        return worst
    typical = _finest(median_error)
    return COARSEST if typical == CLASSES[0][0] else typical


def _finest(error: float) -> str:
    for name, budget in CLASSES:
        if error <= budget:
            return name
    return COARSEST


def lowered(evidence: Mapping[str, Any]) -> bool:
    """The failed audit's error fits a floating-point class coarser than the declared precision's."""
    budgets = dict(CLASSES)
    consistent, declared_budget = evidence.get("consistent_with"), evidence.get("budget")
    if not isinstance(consistent, str) or consistent not in budgets:
        return False
    return not isinstance(declared_budget, int | float) or budgets[consistent] > declared_budget


def budget_for(declared: str) -> float | None:
    """The largest error allowed to ``declared`` (None: not judged here)."""
    return None if declared in UNCHECKED else BUDGETS.get(declared, FP32_BUDGET)


def judge(declared: str, error: float) -> str:
    """The audit's one rule: pass when the worst per-sample ``error`` fits the budget of ``declared`` (or
    ``declared`` is not judged here), else fail (``accelbench.bundle.rejudge`` calls it on stored
    evidence)."""
    budget = budget_for(declared)
    return PASS if budget is None or error <= budget else FAIL


def precision_verdict(declared: str, errors: Sequence[float]) -> Verdict:
    """Pass when the worst of the per-sample ``errors`` fits the budget of ``declared`` (``judge``); fail
    naming the class it fits."""
    error = max(errors, default=0.0)
    median_error = float(np.median(errors)) if errors else 0.0
    evidence = {
        "declared": declared,
        "max_norm_abs_err": error,
        "median_norm_abs_err": median_error,
        "samples": len(errors),
        "consistent_with": consistent_with(error, median_error),
    }
    budget = budget_for(declared)
    evidence["budget"] = budget
    outcome = judge(declared, error)
    if budget is None:
        reason = f"not checked: {declared} has no error class here (the quality gate judges it)"
    elif outcome == PASS:
        reason = f"error {error:.2g} within the {declared} budget {budget:g}"
    else:
        reason = (
            f"computes below its declared precision (error consistent with {evidence['consistent_with']}): "
            f"max normalised error {error:.2g} > {declared} budget {budget:g} over {len(errors)} samples "
            f"(median {median_error:.2g})"
        )
    return Verdict("precision", outcome, reason, evidence)


def max_normalised_error(references: Sequence[np.ndarray], outputs: Sequence[np.ndarray]) -> float:
    """max over samples of max|out - ref| / max|ref| (inf when shapes differ or values are not finite)."""
    return max(normalised_errors(references, outputs), default=0.0)


def normalised_errors(references: Sequence[np.ndarray], outputs: Sequence[np.ndarray]) -> list[float]:
    """Each sample's max|out - ref| / max|ref| (inf where shapes differ or values are not finite)."""
    return [_normalised_error(ref, out) for ref, out in zip(references, outputs, strict=True)]


def _normalised_error(ref: np.ndarray, out: np.ndarray) -> float:
    ref64, out64 = np.asarray(ref, np.float64), np.asarray(out, np.float64)
    if ref64.shape != out64.shape or not np.isfinite(out64).all():
        return float("inf")
    scale = float(np.abs(ref64).max(initial=0.0))
    error = float(np.abs(out64 - ref64).max(initial=0.0))
    return error / scale if scale else (0.0 if error == 0.0 else float("inf"))
