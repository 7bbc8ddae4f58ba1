"""Audits after the timed trials, in the spirit of MLPerf's compliance tests (TEST01, TEST04).

Three checks, each bounded by a query count and ``AUDIT_BUDGET_S``, all on samples drawn from another
seed (``alternate_seed``), i.e. inputs the stack has never seen during calibration or timing:

* ``caching``: calls come in triples: a unique sample (timed), then one fixed sample twice, the first
  untimed, the second timed. A stack that caches outputs by input, or skips work when an input equals
  the previous one, is timed on a hit in the last call of every triple, and on a miss in the first.
  Flagged when both hold: the fastest unique call is more than ``CACHING_SPEEDUP_LIMIT`` times the
  fastest repeated call, and at least ``CACHING_REPEAT_SHARE`` of the repeated calls beat the fastest
  unique call. A cache hit beats every real computation, every time; for an honest stack the two kinds
  of call are exchangeable, so about 1/(n+1) of the repeated calls beat all n unique ones. The second
  condition is what keeps a loaded machine from flagging honest stacks: on this 2-core VM under a load
  average of 8-12, one honest tiny-BERT audit saw its fastest unique call 14x slower than its fastest
  repeated one, because every unique call happened to be preempted, while most repeated calls were too;
  onnxruntime, whose repeated calls are ~2% faster (hot caches), saw shares up to 0.75 at speedups
  1.02-1.04. The planted cheating stacks score speedups of 40-1300x with a share of 1.0.
* ``alternate_seed``: the outputs of the unique calls go through the quality gate against the fp32
  reference; failing it is flagged (a stack that memorised the benchmark's inputs fails here).
* ``precision``: when the stack claims fp32, its largest normalised error max|out - ref| / max|ref|
  against the fp32 reference must stay within ``FP32_ERROR_BUDGET``; bf16 or fp16 arithmetic leaves
  errors 10-100x larger and is flagged as silent precision lowering.

The section is stored as the result's ``audit`` mapping (``audit_section``); ``audit_warnings`` words
the flagged ones for the result's warnings.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from accelbench.meters.quality import compare
from accelbench.workloads.base import Inputs

log = logging.getLogger(__name__)

CACHING_SPEEDUP_LIMIT = 2.0
"""Fastest unique call / fastest repeated call above which caching may be flagged."""
CACHING_REPEAT_SHARE = 0.9
"""Share of repeated calls faster than every unique call from which caching may be flagged."""
FP32_ERROR_BUDGET = 5e-5
"""Largest max|out - ref| / max|ref| allowed to a stack that claims fp32. Measured on the tiny workloads
here: honest fp32 stacks 0 (eager) to 2.4e-6 (onnxruntime, inductor); bf16 autocast 1.8e-4 (tiny BERT,
errors average out in the pooling) to 3.3e-2 (tiny ResNet). The e2e stack tests hold fp32 to 1e-5."""
LOW_PRECISION_ERROR = 2e-2
"""Above this normalised error the arithmetic looks coarser than bf16 (for the record only)."""
MIN_TRIPLES = 4
MAX_TRIPLES = 12
AUDIT_BUDGET_S = 3.0
"""No new triple starts after this many seconds (at least ``MIN_TRIPLES`` run)."""
ALTERNATE_SEED_OFFSET = 0x5EED
"""The audit's samples come from seed ``run seed + ALTERNATE_SEED_OFFSET``."""

Infer = Callable[[Inputs], np.ndarray]


def samples_needed() -> int:
    """How many fresh samples ``audit_section`` may use: every unique call plus the repeated one."""
    return MAX_TRIPLES + 1


def audit_section(
    infer: Infer,
    reference: Infer,
    fresh: Sequence[Inputs],
    metric: str,
    precision: str,
    alternate_seed: int,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """The ``audit`` section: caching, alternate-seed quality and precision checks on ``fresh`` samples.

    ``fresh`` holds ``samples_needed()`` samples the stack has never seen; ``reference`` is the fp32
    eager model. ``clock`` is injectable for tests.
    """
    start_s = clock()
    timed = time_triples(infer, fresh, clock)
    references = [reference(sample) for sample in fresh[: len(timed.outputs)]]
    quality = compare(metric, references, timed.outputs, precision)
    error = max_normalised_error(references, timed.outputs)
    return {
        "caching": caching_verdict(timed.unique_s, timed.repeated_s),
        "alternate_seed": {
            "seed": alternate_seed,
            "metric": quality.metric,
            "value": quality.value,
            "threshold": quality.threshold,
            "samples_checked": quality.samples_checked,
            "detail": quality.detail,
            "flagged": not quality.passed,
        },
        "precision": precision_verdict(precision, error),
        "elapsed_s": clock() - start_s,
    }


class TimedCalls:
    """Latencies of unique and repeated calls, and the outputs of the unique calls (in sample order)."""

    def __init__(self) -> None:
        self.unique_s: list[float] = []
        self.repeated_s: list[float] = []
        self.outputs: list[np.ndarray] = []


def time_triples(infer: Infer, fresh: Sequence[Inputs], clock: Callable[[], float]) -> TimedCalls:
    """Triples of calls: ``fresh[i]`` (timed), ``fresh[-1]`` (untimed), ``fresh[-1]`` again (timed)."""
    timed = TimedCalls()
    repeated = fresh[-1]
    start_s = clock()
    for index in range(min(MAX_TRIPLES, len(fresh) - 1)):
        if index >= MIN_TRIPLES and clock() - start_s > AUDIT_BUDGET_S:
            break
        seconds, output = _timed_call(infer, fresh[index], clock)
        timed.unique_s.append(seconds)
        timed.outputs.append(np.asarray(output).copy())
        infer(repeated)  # the miss that fills a cache, or makes the next input equal the previous one
        timed.repeated_s.append(_timed_call(infer, repeated, clock)[0])
    return timed


def _timed_call(infer: Infer, sample: Inputs, clock: Callable[[], float]) -> tuple[float, np.ndarray]:
    begin = clock()
    output = infer(sample)
    return clock() - begin, output


def caching_verdict(unique_s: Sequence[float], repeated_s: Sequence[float]) -> dict[str, Any]:
    """Fastest unique and repeated latencies, the speedup of repeated calls, and whether it is flagged."""
    unique = float(np.min(unique_s))
    repeated = float(np.min(repeated_s))
    speedup = unique / repeated if repeated > 0 else float("inf")
    share = float(np.mean(np.asarray(repeated_s) < unique))
    return {
        "unique_min_s": unique,
        "repeated_min_s": repeated,
        "speedup": speedup,
        "limit": CACHING_SPEEDUP_LIMIT,
        "repeats_faster_share": share,
        "share_limit": CACHING_REPEAT_SHARE,
        "unique_calls": len(unique_s),
        "repeated_calls": len(repeated_s),
        "flagged": speedup > CACHING_SPEEDUP_LIMIT and share >= CACHING_REPEAT_SHARE,
    }


def precision_verdict(claimed: str, error: float) -> dict[str, Any]:
    """Whether an fp32 claim holds: ``error`` (max normalised error) within ``FP32_ERROR_BUDGET``."""
    checked = claimed == "fp32"
    return {
        "claimed": claimed,
        "checked": checked,
        "max_norm_abs_err": error,
        "budget": FP32_ERROR_BUDGET if checked else None,
        "consistent_with": _consistent_with(error),
        "flagged": checked and not error <= FP32_ERROR_BUDGET,
    }


def _consistent_with(error: float) -> str:
    if error <= FP32_ERROR_BUDGET:
        return "fp32"
    if error <= LOW_PRECISION_ERROR:
        return "fp16 or bf16"
    return "coarser than bf16"


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


def audit_warnings(audit: Mapping[str, Any]) -> list[str]:
    """One warning per flagged audit."""
    notes = []
    caching = audit.get("caching") or {}
    if caching.get("flagged"):
        notes.append(
            f"audit caching: a repeated input ran {caching['speedup']:.1f}x faster than unique inputs "
            f"(limit {caching['limit']:g}x), {caching['repeats_faster_share']:.0%} of repeats beat every "
            "unique call: the stack may cache outputs or skip repeated work"
        )
    alternate = audit.get("alternate_seed") or {}
    if alternate.get("flagged"):
        notes.append(
            f"audit alternate seed: inputs from seed {alternate['seed']} fail the quality gate "
            f"({alternate['metric']} {alternate['value']:.6g} < {alternate['threshold']:g})"
        )
    precision = audit.get("precision") or {}
    if precision.get("flagged"):
        notes.append(
            f"audit precision: claims fp32 but its error {precision['max_norm_abs_err']:.2g} exceeds the "
            f"fp32 budget {precision['budget']:g} (consistent with {precision['consistent_with']})"
        )
    return notes
