"""The repeat probes' audit inputs (``accelbench.audits.feed``): hot groups, shown and counted, and cold
groups, never seen until their pair.

A *group* is ``batch`` samples, shown in one stack call (one sample at batch 1). ``HOT_SAMPLES`` hot
groups are made first and primed a drawn number of times (``priming``); each pair shows a hot group beside
a new cold group of the same shapes, and the cold group joins the hot ones once its pair completed
(``recycle``), seen once. The groups keep every group's sightings, where it was last seen and its class of
shapes; which hot group a pair shows (``hot_for``) is drawn so the pairs probe every count of sightings.
Nothing here is timed: the feed decides where the groups go and keeps the latencies.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from accelbench.audits.probes import HOT_SAMPLES, PRIMING_SIGHTINGS, priming_counts
from accelbench.workloads.base import Inputs

SHAPE_TRIES = 256
"""Candidates tried per cold sample to find one with the shapes of a hot sample."""


class HotGroups:
    """The hot and cold groups of one feed (a trial's process), drawn from its generator."""

    def __init__(
        self, make_audit_sample: Callable[[int], Inputs], batch: int, rng: np.random.Generator
    ) -> None:
        """``make_audit_sample(k)``: audit input k, never timed; ``rng``: the feed's generator (the
        priming counts are its first draw)."""
        self.make_audit_sample = make_audit_sample
        self.batch = batch
        self.rng = rng
        self.hot = [make_audit_sample(j) for j in range(HOT_SAMPLES * batch)]
        """Hot group ``g`` is ``hot[g * batch : (g + 1) * batch]``."""
        self.cold: list[Inputs] = []
        """Cold group ``c`` is ``cold[c * batch : (c + 1) * batch]``."""
        self.cold_hot: list[int] = []
        """For each cold group, the hot group whose shapes it has."""
        self.sightings = [0] * HOT_SAMPLES
        """Sightings of every hot group so far (a cold group joins them once its pair completed)."""
        self.last_seen = [(-1, -1)] * HOT_SAMPLES
        """(trial, position) of every hot group's last sighting."""
        self.last_hot = -1
        self.shape_class = list(range(HOT_SAMPLES))
        """For each hot group, the first hot group whose shapes it has."""
        self.priming = priming_counts(rng)
        """Sightings each of the first hot groups gets before its pairs."""
        self.next_audit_index = len(self.hot)

    def sample(self, kind: str, number: int) -> Inputs:
        """Sample ``number`` of the hot (``kind`` "hot") or cold samples."""
        return self.hot[number] if kind == "hot" else self.cold[number]

    def shapes_of(self, group: int) -> tuple[tuple[int, ...], ...]:
        """The input shapes of hot group ``group``'s first sample."""
        return shapes(self.hot[group * self.batch])

    def priming_left(self) -> int:
        """Sightings the first hot groups still need to reach their priming counts."""
        primed = self.sightings[:HOT_SAMPLES]
        return sum(max(0, target - seen) for target, seen in zip(self.priming, primed, strict=True))

    def least_primed(self) -> int:
        """The hot group furthest below its priming count."""
        primed = self.sightings[:HOT_SAMPLES]
        return int(np.argmax([t - s for t, s in zip(self.priming, primed, strict=True)]))

    def seen(self, group: int, at: tuple[int, int]) -> tuple[int, int]:
        """Count a sighting of hot group ``group`` at ``at`` (trial, position); the previous one's place."""
        self.sightings[group] += 1
        previous, self.last_seen[group] = self.last_seen[group], at
        return previous

    def hot_for(self, cold: int) -> int:
        """The hot group of a pair with cold group ``cold``: among the seen groups of its shapes, the one
        whose sightings are nearest a count drawn from 1 to ``PRIMING_SIGHTINGS + 2`` (ties at random),
        so the pairs probe every count; never the previous pair's hot group when another was seen (so
        the high counts are reached by two groups, not one); the cold group's own hot group when none was
        seen yet."""
        shape_class = self.shape_class[self.cold_hot[cold]]
        seen = [g for g, n in enumerate(self.sightings) if n >= 1 and self.shape_class[g] == shape_class]
        seen = [g for g in seen if g != self.last_hot] or seen
        if not seen:
            return self.cold_hot[cold]
        wanted = int(self.rng.integers(1, PRIMING_SIGHTINGS + 3))
        distance = [abs(self.sightings[g] - wanted) + self.rng.random() / 2 for g in seen]
        self.last_hot = seen[int(np.argmin(distance))]
        return self.last_hot

    def recycle(self, cold: int, seen_at: tuple[int, int]) -> None:
        """Cold group ``cold``, seen once in its pair (``seen_at``: trial, position), becomes a hot group."""
        size = self.batch
        self.hot.extend(self.cold[cold * size : (cold + 1) * size])
        self.sightings.append(1)
        self.last_seen.append(seen_at)
        self.shape_class.append(self.shape_class[self.cold_hot[cold]])

    def new_cold_group(self, group: int) -> int | None:
        """Number of a new group of never-seen samples, each with the shapes of its place in hot group
        ``group`` (None if one was not found in ``SHAPE_TRIES`` candidates)."""
        found = []
        for k in range(self.batch):
            wanted = shapes(self.hot[group * self.batch + k])
            for _ in range(SHAPE_TRIES):
                candidate = self.make_audit_sample(self.next_audit_index)
                self.next_audit_index += 1
                if shapes(candidate) == wanted:
                    found.append(candidate)
                    break
            else:
                return None
        self.cold.extend(found)
        self.cold_hot.append(group)
        return len(self.cold_hot) - 1


def shapes(sample: Inputs) -> tuple[tuple[int, ...], ...]:
    """The shapes of a sample's arrays."""
    return tuple(np.shape(array) for array in sample)
