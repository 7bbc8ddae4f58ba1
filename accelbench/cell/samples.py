"""The disjoint sample sets of a trial: the example batch, the timed pool, the calibration samples and
the audit samples, all drawn from the trial's secret seed.

Each trial (an attempt's trial slot: ``accelbench.cell.trial``) has its own seed under the cell's input
seed (``accelbench.cell.seeds``), and each role its own drawn base index, so no trial's inputs were seen
by another trial's process (nor left in a disk cache by one), no index range has a fixed meaning, and a
stack that knows every field it is handed (``ModelSpec``, ``CellContext``) cannot regenerate them. The
example batch a stack compiles for is a role of its own: it is none of the timed or audit samples. The
timed pool and the calibration samples are drawn when first used, after ``stack.prepare`` returned
(unless a batch sweep prepares the stack several times).
"""

from __future__ import annotations

import functools
import math
import secrets

from accelbench import audits, variants
from accelbench.audits import feed as feed_module
from accelbench.audits import output, repeat
from accelbench.cell import seeds
from accelbench.cellspec import CellSpec
from accelbench.scenarios.rules import Rules
from accelbench.workloads.base import Inputs, Variant, Workload

CALIBRATION_SAMPLES = 8
"""Samples of warm-up and calibration (never timed)."""


class SampleSets:
    """The trial's disjoint sample sets, each at its own drawn base index under the trial's seed."""

    def __init__(
        self, workload: Workload, spec: CellSpec, variant: Variant | None, slot: tuple[int, int]
    ) -> None:
        """``slot``: (attempt, trial slot) of the trial, which picks its seed under the cell's input seed."""
        self.workload, self.size, self.variant = workload, spec.cell.size, variant
        self.pool_size = max(spec.samples, workload.performance_sample_count)
        self._seed = seeds.sub_seed(spec.input_seed, "trial", *slot)
        self._bases = seeds.bases(self._seed)
        self.alternate_seed = seeds.sub_seed(spec.input_seed, "alternate", *slot)
        """Seed of the post-run audits' never-seen samples."""

    @functools.cached_property
    def timed(self) -> list[Inputs]:
        """The timed pool (QSL order)."""
        return [self._make("pool", i) for i in range(self.pool_size)]

    @functools.cached_property
    def calibration(self) -> list[Inputs]:
        """Warm-up and calibration samples."""
        return [self._make("calibration", i) for i in range(CALIBRATION_SAMPLES)]

    def example(self, batch: int) -> list[Inputs]:
        """The ``batch`` samples of the example batch ``ModelSpec.example``."""
        return [self._make("example", i) for i in range(batch)]

    def alternate(self, count: int) -> list[Inputs]:
        """``count`` samples of the post-run audits (``alternate_seed``)."""
        return [
            variants.make_sample(self.workload, self.size, self.alternate_seed, i, self.variant)
            for i in range(count)
        ]

    def feed(self, rules: Rules, batch: int) -> audits.AuditFeed:
        """The audit feed over the timed pool, with audit samples of its own role."""
        per_trial = math.ceil(rules.output_checks / rules.trials)
        pairs = math.ceil(_pairs(batch) / rules.trials)
        make = lambda k: self._make("audit", k)  # noqa: E731
        required = (math.ceil(repeat.MIN_PAIRS / rules.trials), math.ceil(output.MIN_CHECKS / rules.trials))
        feed_seed = secrets.randbits(63)
        return audits.AuditFeed(self.timed, make, per_trial, feed_seed, pairs, batch=batch, required=required)

    def _make(self, role: str, index: int) -> Inputs:
        seed, base = self._seed, self._bases[role]
        return variants.make_sample(self.workload, self.size, seed, base + index, self.variant)


def _pairs(batch: int) -> int:
    """Pairs of a cell at the least: ``feed.PAIRS`` at batch 1; at a larger batch, where a pair is two
    whole batches, ``repeat.MIN_PAIRS`` (the fewest that conclude), so a trial's audit inputs stay
    affordable (a batched run gets more pairs anyway when it is long: ``AuditFeed.pairs_for``)."""
    return feed_module.PAIRS if batch == 1 else repeat.MIN_PAIRS
