"""Traffic pairs: the timed traffic's own repeats against its own first sightings, side by side.

The repeat probes (``accelbench.audits.feed``) are audit inputs slipped into the run, and a stack can
learn what they look like: a probe's batch is a whole hot group or a whole cold one, a cold member late in
a run is one of the few never-seen inputs, a hot sample is seen more often than a pool sample. A stack
that serves the timed traffic's repeats from a cache and computes anything that looks like a probe passes
every probe, and gains exactly on the traffic (offline issues several times the timed pool on a fast
model, so most of its calls repeat). So the traffic itself is compared: two adjacent timed calls (whole
batches of timed samples, same shapes) of which one holds more never-seen rows than the other (a timed
sample's first sighting in the trial). The one with more seen rows is the pair's *hot* member, the other
its *cold* member, and the repeat audit judges their ratio as it judges the probes' (``repeat``).

For an honest stack the two members are exchangeable: which of two timed samples LoadGen issued first is
random, and whether a pool sample was seen before changes nothing in its work. A stack that saves work on
seen rows makes the ratio large, in proportion to what it saves. The pairs whose hot member came first
are judged on their own too: a stack cannot know that its next call will be a first sighting, so it
cannot compute that repeat honestly to dodge them (it can dodge the pairs whose cold member comes first,
by computing every call that follows a never-seen input).
"""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.audits.probes import Pair

Shapes = tuple[tuple[int, ...], ...]


@dataclass(slots=True)
class _Batch:
    """A timed batch being observed: its first position, rows so far, never-seen rows among them."""

    start: int
    shapes: Shapes
    first_index: int
    latency_s: float
    rows: int = 0
    novel: int = 0


class TrafficPairs:
    """Makes a ``Pair`` (``traffic=True``) of every two adjacent whole timed batches of the same shapes
    whose counts of never-seen rows differ."""

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self.pairs: list[Pair] = []
        self._trial = -1
        self._open: _Batch | None = None
        self._last: _Batch | None = None

    def row(
        self, trial: int, position: int, index: int, novel: bool, latency_s: float, shapes: Shapes
    ) -> None:
        """A timed row was observed (``novel``: its sample's first sighting in the trial)."""
        if trial != self._trial:
            self._trial, self._open, self._last = trial, None, None
        start = position - position % self.batch
        if self._open is None or self._open.start != start:
            self._open = _Batch(start, shapes, index, latency_s)
        current = self._open
        current.rows += 1
        current.novel += int(novel)
        if current.shapes != shapes:
            current.shapes = ()  # mixed shapes in one batch: never paired
        if current.rows == self.batch:
            self._open = None
            self._close(trial, current)

    def _close(self, trial: int, current: _Batch) -> None:
        last, self._last = self._last, current
        if last is None or last.start + self.batch != current.start or not current.shapes:
            return
        if last.shapes != current.shapes or last.novel == current.novel:
            return
        hot, cold = (last, current) if last.novel < current.novel else (current, last)
        self.pairs.append(
            Pair(
                trial, last.start, hot.latency_s, cold.latency_s, self.batch - hot.novel,
                hot_group=hot.first_index, traffic=True, hot_first=hot is last,
            )
        )  # fmt: skip
