"""``--batch-sweep``: the throughput/latency curve over batch sizes, and the best verified batch.

For each batch size the stack prepares a session, the outputs of every row of a batch of unseen
samples are checked against the fp32 reference (the quality gate, sample by sample), and one unscored
LoadGen run of the cell's scenario measures its throughput and its 99th-percentile latency per query.
The chosen batch is the fastest whose run was VALID and whose outputs passed; the scored trials then
run at that batch with every audit. Each point is kept with the result (``settings.batch_sweep``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from accelbench.scenarios import batching
from accelbench.scenarios.loadgen import PlainFeed, calibrate, measure
from accelbench.scenarios.rules import Rules
from accelbench.workloads.base import Inputs

Infer = Callable[[Inputs], Any]


@dataclass(frozen=True, slots=True)
class Point:
    """One batch size of the sweep."""

    batch: int
    samples_per_s: float
    p99_s: float
    """LoadGen's 99th-percentile latency per query (per sample's completion for offline)."""
    valid: bool
    correct: bool
    reason: str = ""
    """Why the point is not eligible (refused, INVALID, outputs wrong), or ""."""


def sweep(
    batches: Sequence[int],
    prepare: Callable[[int], Infer],
    correct: Callable[[Infer, int], str],
    scenario: str,
    timed: Sequence[Inputs],
    calibration: Sequence[Inputs],
    rules: Rules,
    log_root: Path,
) -> tuple[int, list[Point]]:
    """The best verified batch and every point. ``prepare(b)`` raises to refuse ``b``;
    ``correct(infer, b)`` returns "" or why the outputs fail. With no eligible point the batch is 1."""
    points: list[Point] = []
    for batch in batches:
        try:
            infer = prepare(batch)
        except Exception as err:  # a refused or failing batch is a point of the curve, not a crash
            points.append(
                Point(
                    batch=batch,
                    samples_per_s=0.0,
                    p99_s=0.0,
                    valid=False,
                    correct=False,
                    reason=f"{type(err).__name__}: {err}"[:200],
                )
            )
            continue
        wrong = correct(infer, batch)
        joined = [batching.join(list(calibration[:batch]) or [timed[0]], batch)]
        latency_s = calibrate(infer, joined, rules.calibration_budget_s)
        run = measure(
            scenario, infer, timed, rules, log_root / f"sweep-b{batch}", latency_s, PlainFeed(timed), batch
        )
        summary = run.summary
        reason = wrong or ("" if summary.valid else "LoadGen INVALID: " + "; ".join(summary.invalid_reasons))
        rate = summary.samples_per_s if scenario == "offline" else summary.qps
        p99_s = summary.latency_percentiles_s.get(99.0, 0.0)
        points.append(
            Point(
                batch=batch,
                samples_per_s=rate or 0.0,
                p99_s=p99_s,
                valid=summary.valid,
                correct=not wrong,
                reason=reason,
            )
        )
    eligible = [p for p in points if not p.reason]
    best = max(eligible, key=lambda p: p.samples_per_s).batch if eligible else 1
    return best, points


def to_document(points: Sequence[Point], chosen: int) -> dict[str, Any]:
    """The stored form: the chosen batch and the points."""
    return {"chosen": chosen, "points": [asdict(p) for p in points]}
