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

Which of two adjacent calls came first is not exchangeable, though: on a real machine interference starts
abruptly and fades (a preemption, a neighbour's burst, caches refilled after it), so the first of two
adjacent calls is decisively faster more often than the second (95 against 57 of 3067 pairs in a quick
server cell here; CI once failed an honest cell on 28 against 7 in its seen-first pairs). So the feed
also keeps *order pairs*: adjacent calls of the same seen rows, neither in a traffic pair, disjoint, each
candidate taken with probability ``ORDER_SHARE`` from the feed's secret seed, of which only the decisive
ones (``DECISIVE`` times apart) are kept; they measure the machine's order effect, against which the
seen-first and seen-second pairs are judged (``accelbench.audits.repeat.mirror``). The draw matters: a
stack sees every call's novelty and could work out fixed pairs, then serve the first call of each from
its cache and compute the second, so that "first faster" became the machine's effect and its seen-first
wins the norm; alternating served and computed calls gives as many of the drawn pairs either way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accelbench.audits.probes import Pair

Shapes = tuple[tuple[int, ...], ...]

DECISIVE = 1.5
"""Two calls' latencies are decisively different when one ran this many times faster than the other."""
ORDER_SHARE = 0.5
"""The chance that a candidate order pair is taken (drawn from the feed's secret seed)."""


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
    whose counts of never-seen rows differ, and one (``traffic=True, order=True``) of every decisive
    order pair."""

    def __init__(self, batch: int, rng: np.random.Generator | None = None) -> None:
        """``rng``: draws which candidate order pairs are taken (the feed's, from its secret seed)."""
        self.batch = batch
        self.rng = rng if rng is not None else np.random.default_rng()
        self.pairs: list[Pair] = []
        self._trial = -1
        self._open: _Batch | None = None
        self._last: _Batch | None = None
        self._last_paired = False
        """The last batch is in a traffic pair or an order pair already."""
        self._candidate: tuple[_Batch, _Batch] | None = None
        """An order pair ending at the last batch, kept unless the next batch makes a traffic pair of it."""

    def row(
        self, trial: int, position: int, index: int, novel: bool, latency_s: float, shapes: Shapes
    ) -> None:
        """A timed row was observed (``novel``: its sample's first sighting in the trial)."""
        if trial != self._trial:
            self._trial, self._open, self._last, self._candidate = trial, None, None, None
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
        last, last_paired, candidate = self._last, self._last_paired, self._candidate
        self._last, self._last_paired, self._candidate = current, False, None
        adjacent = (
            last is not None
            and last.start + self.batch == current.start
            and bool(current.shapes)
            and last.shapes == current.shapes
        )
        if not adjacent or last is None or last.novel == current.novel:
            if candidate is not None and self.rng.random() < ORDER_SHARE:  # no traffic pair with this one
                self._order(trial, *candidate)
                last_paired = True
            if adjacent and last is not None and not last_paired:
                self._candidate = (last, current)
            return
        self._last_paired = True
        hot, cold = (last, current) if last.novel < current.novel else (current, last)
        self.pairs.append(self._pair(trial, last.start, hot, cold, hot_first=hot is last))

    def _order(self, trial: int, first: _Batch, second: _Batch) -> None:
        """Keep an order pair if it is decisive (``hot_s``: the first call's latency)."""
        if max(first.latency_s, second.latency_s) > DECISIVE * min(first.latency_s, second.latency_s):
            self.pairs.append(self._pair(trial, first.start, first, second, hot_first=True, order=True))

    def _pair(
        self, trial: int, position: int, hot: _Batch, cold: _Batch, *, hot_first: bool, order: bool = False
    ) -> Pair:
        """The ``Pair`` (``traffic=True``) of two adjacent timed batches at ``position``: ``hot``'s latency
        and seen rows against ``cold``'s latency."""
        return Pair(
            trial=trial,
            position=position,
            hot_s=hot.latency_s,
            cold_s=cold.latency_s,
            hot_sightings=self.batch - hot.novel,
            hot_group=hot.first_index,
            traffic=True,
            hot_first=hot_first,
            order=order,
        )
