"""The disjoint sample sets of a cell: the timed pool, the calibration samples, the audit samples.

Indices in that order: the timed pool first (at least the workload's ``performance_sample_count``),
then ``CALIBRATION_SAMPLES`` for warm-up and calibration (never timed), then the audit feed's samples
(``accelbench.audits.feed``), which no timed or calibration sample uses.
"""

from __future__ import annotations

import math
import secrets

from accelbench import audits, variants
from accelbench.audits import feed as feed_module
from accelbench.audits import output, repeat
from accelbench.cellspec import CellSpec
from accelbench.scenarios.rules import Rules
from accelbench.workloads.base import Inputs, Variant, Workload

CALIBRATION_SAMPLES = 8
"""Samples of warm-up and calibration, drawn after the timed pool (never timed)."""


class SampleSets:
    """The cell's disjoint sample sets: timed pool, calibration, audit (indices in that order)."""

    def __init__(self, workload: Workload, spec: CellSpec, variant: Variant | None) -> None:
        self.workload, self.spec, self.variant = workload, spec, variant
        self.pool_size = max(spec.samples, workload.performance_sample_count)
        self.timed = [self._make(i) for i in range(self.pool_size)]
        self.calibration = [self._make(self.pool_size + i) for i in range(CALIBRATION_SAMPLES)]

    def feed(self, rules: Rules, batch: int, first: int = 0) -> audits.AuditFeed:
        """The audit feed over the timed pool, with audit samples from ``first`` past the calibration
        ones (each trial of a cell its own range)."""
        first_audit = self.pool_size + CALIBRATION_SAMPLES + first
        per_trial = math.ceil(rules.output_checks / rules.trials)
        pairs = math.ceil(_pairs(batch) / rules.trials)
        seed = secrets.randbits(63)
        make = lambda k: self._make(first_audit + k)  # noqa: E731
        required = (math.ceil(repeat.MIN_PAIRS / rules.trials), math.ceil(output.MIN_CHECKS / rules.trials))
        return audits.AuditFeed(self.timed, make, per_trial, seed, pairs, batch=batch, required=required)

    def _make(self, index: int) -> Inputs:
        return variants.make_sample(self.workload, self.spec.cell.size, self.spec.seed, index, self.variant)


def _pairs(batch: int) -> int:
    """Pairs of a cell at the least: ``feed.PAIRS`` at batch 1; at a larger batch, where a pair is two
    whole batches, ``repeat.MIN_PAIRS`` (the fewest that conclude), so a trial's audit inputs stay
    affordable (a batched run gets more pairs anyway when it is long: ``AuditFeed.pairs_for``)."""
    return feed_module.PAIRS if batch == 1 else repeat.MIN_PAIRS
