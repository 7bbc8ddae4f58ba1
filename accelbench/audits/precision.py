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
"""

from __future__ import annotations

from collections.abc import Sequence

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


def consistent_with(error: float) -> str:
    """The finest class whose budget holds ``error`` ("coarser than bf16" when none does)."""
    for name, budget in CLASSES:
        if error <= budget:
            return name
    return "coarser than bf16"


def precision_verdict(declared: str, error: float, samples: int) -> Verdict:
    """Pass when ``error`` fits the budget of ``declared``; fail naming the class it fits."""
    evidence = {
        "declared": declared,
        "max_norm_abs_err": error,
        "samples": samples,
        "consistent_with": consistent_with(error),
    }
    if declared in UNCHECKED:
        reason = f"not checked: {declared} has no error class here (the quality gate judges it)"
        return Verdict("precision", PASS, reason, {**evidence, "budget": None})
    budget = BUDGETS.get(declared, FP32_BUDGET)
    evidence["budget"] = budget
    if error <= budget:
        return Verdict(
            "precision", PASS, f"error {error:.2g} within the {declared} budget {budget:g}", evidence
        )
    reason = (
        f"computes below its declared precision (error consistent with {evidence['consistent_with']}): "
        f"max normalised error {error:.2g} > {declared} budget {budget:g} over {samples} samples"
    )
    return Verdict("precision", FAIL, reason, evidence)


def max_normalised_error(references: Sequence[np.ndarray], outputs: Sequence[np.ndarray]) -> float:
    """max over samples of max|out - ref| / max|ref| (inf when shapes differ or values are not finite)."""
    worst = 0.0
    for ref, out in zip(references, outputs, strict=True):
        ref64, out64 = np.asarray(ref, np.float64), np.asarray(out, np.float64)
        if ref64.shape != out64.shape or not np.isfinite(out64).all():
            return float("inf")
        scale = float(np.abs(ref64).max(initial=0.0))
        error = float(np.abs(out64 - ref64).max(initial=0.0))
        worst = max(worst, error / scale if scale else (0.0 if error == 0.0 else float("inf")))
    return worst
