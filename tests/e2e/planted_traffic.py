"""Planted cheaters that serve the timed traffic's repeats and compute every probe honestly.

The repeat audit's probes are a hot sample (or batch) beside a never-seen one; both cheats here learn
what a probe looks like and save work only on calls that do not look like one. The gain is the share of
the timed traffic that repeats: offline issues several times the timed pool (1024 samples) on a fast
model, so most of its calls are repeats.

* ``planted-mixed-batch-cache`` (offline, batches): a probe's batches are whole, either all seen (a hot
  group) or all never seen (a cold group); a timed batch late in a run mixes seen and never-seen rows. It
  computes only the never-seen rows of a mixed batch and serves the others from a row cache; a batch
  whose rows are all seen, or all new, is computed whole.
* ``planted-traffic-cache`` (batch 1): serves a seen input from its cache unless the previous call was
  a never-seen input (the cold member of a pair whose hot member comes second), the same input as the
  previous call (the immediate repeats after the run), or an input it marked as a probe: every input
  first seen late in the run, when few calls are new (a cold member, later a hot one), the call before
  such an input (a hot member that came first), and an input seen far more often than a pool sample (a
  primed hot one).
"""

from __future__ import annotations

from typing import Any, ClassVar

from accelbench.stacks.base import CellContext, ModelSpec, Session
from tests.e2e.planted import Infer, _eager, _Planted

TRAFFIC_CHEATS = {
    "planted-mixed-batch-cache": "tests.e2e.planted_traffic:MixedBatchCacheStack",
    "planted-traffic-cache": "tests.e2e.planted_traffic:TrafficCacheStack",
}


def _row_key(inputs: tuple[Any, ...], row: int) -> bytes:
    return b"".join(array[row].tobytes() for array in inputs)


class _CacheStack(_Planted):
    """The real model, eager, behind the ``infer`` that ``wrap`` makes of it (labelled fp32)."""

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        return Session(infer=self.wrap(_eager(model)), effective_precision="fp32", compile_s=0.0)

    def wrap(self, run: Infer) -> Infer:
        raise NotImplementedError


class MixedBatchCacheStack(_CacheStack):
    """Computes only the never-seen rows of a batch that mixes seen and never-seen rows."""

    name = "planted-mixed-batch-cache"
    batch: ClassVar[int] = 8

    def default_batch(self, device: str) -> int:
        return self.batch

    def wrap(self, run: Infer) -> Infer:
        import numpy as np

        cache: dict[bytes, Any] = {}

        def infer(inputs: tuple[Any, ...]) -> Any:
            rows = int(inputs[0].shape[0])
            keys = [_row_key(inputs, row) for row in range(rows)]
            fresh = [row for row, key in enumerate(keys) if key not in cache]
            if 0 < len(fresh) < rows:  # timed traffic: a probe's batch is all seen or all new
                computed = run(tuple(array[fresh] for array in inputs))
                for k, row in enumerate(fresh):
                    cache[keys[row]] = computed[k : k + 1].copy()
                return np.concatenate([cache[key] for key in keys])
            output = run(inputs)
            for row, key in enumerate(keys):
                cache[key] = output[row : row + 1].copy()
            return output

        return infer


class _TrafficCache:
    """The batch-1 cache of ``TrafficCacheStack``."""

    LATE_NOVELTY = 0.5
    """A never-seen input is "late" (likely a cold member) when fewer than this share of the last
    ``WINDOW`` calls were new."""
    WINDOW = 64

    def __init__(self, run: Infer, pool: int = 1024) -> None:
        """``pool``: the timed pool's size (``Workload.performance_sample_count``): a pool sample is seen
        about calls / pool times; an input seen far more often is a hot one."""
        self.run, self.pool = run, pool
        self.cache: dict[bytes, Any] = {}
        self.sightings: dict[bytes, int] = {}
        self.probes: set[bytes] = set()
        self.recent: list[bool] = []
        """Whether each of the last ``WINDOW`` calls was a never-seen input."""
        self.previous: tuple[bytes, bool] = (b"", False)
        self.calls = 0

    def __call__(self, inputs: tuple[Any, ...]) -> Any:
        key = b"".join(array.tobytes() for array in inputs)
        before, before_new = self.previous
        new = key not in self.cache
        self.calls += 1
        self.sightings[key] = self.sightings.get(key, 0) + 1
        if new:
            novelty = sum(self.recent) / max(1, len(self.recent))
            late = len(self.recent) == self.WINDOW and novelty < self.LATE_NOVELTY
            if late:
                self.probes.add(key)  # a cold member (it will be a hot one)
                self.probes.add(before)  # the hot member of a pair whose cold member came second
        if self.sightings[key] > 2 + 2 * self.calls / self.pool:
            self.probes.add(key)  # primed: seen far more often than a pool sample
        serve = not new and not before_new and key != before and key not in self.probes
        if not serve:
            self.cache[key] = self.run(inputs)
        self.recent = [*self.recent[-self.WINDOW + 1 :], new]
        self.previous = (key, new)
        return self.cache[key]


class TrafficCacheStack(_CacheStack):
    """Serves the timed traffic's repeats from a cache, computing anything that looks like a probe."""

    name = "planted-traffic-cache"

    def wrap(self, run: Infer) -> Infer:
        return _TrafficCache(run)
