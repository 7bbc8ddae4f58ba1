"""The repeat audit: inside the timed run, are samples seen before faster than never-seen ones?

The feed (``accelbench.audits.feed``) slips adjacent pairs into the scored run: a hot sample already seen
1 to about 12 times (drawn per trial) and a cold one never seen, of the same shapes, in random order. For
an honest stack the two members are exchangeable, so the cold/hot latency ratio of a pair scatters around
1; a stack that serves seen inputs from a cache (or skips work on them) makes it large. The statistic is
the median ratio over pairs with a seeded bootstrap confidence interval, over the whole run, over each
of its last 8, 16, 32, ... pairs (where a cache that waits for warm-up or for N queries is on, however
late it switches on), over the pairs whose hot sample had been seen k times or more, for every k present
(where a cache gated by a count is on), and over the pairs of the last 8, 16, ... whose hot sample was
seen again within them. A window fails when the lower end of its interval exceeds ``SPEEDUP_LIMIT``: the
seen samples are faster beyond the noise. The windows past the whole run's are many, so they are judged
at ``SUFFIX_CONFIDENCE``, with ``MIN_PAIRS`` pairs or more showing two different hot samples or more.

A cache that serves only a narrow class of repeats (a band of sighting counts, a recency band) hits few
pairs, too few to move a median. The **floor** test needs no majority: a busy machine only ever makes a
call slower, never faster than the work it does, so for an honest stack a seen sample is almost never
``FLOOR_FACTOR`` times faster than the fastest never-seen inputs of its shapes in the same trial
(``Pair.novel_floor_s``, or the fastest cold member). The audit fails when at least ``FLOOR_PAIRS``
pairs did so, showing at least ``FLOOR_GROUPS`` different hot samples (so one sample that is cheap by
its content cannot fail a stack alone).

MLPerf's TEST04 allows 10% (20% for short latencies) between its two runs; the pairs here sit next to each
other in one run, so the noise they carry is smaller, and 25% on the lower bound of the interval leaves
honest stacks a wide margin (``benchmarks/audit_margins.py`` prints it) while a cache hit, which skips
the model, is many times faster. Fewer than ``MIN_PAIRS`` completed pairs is inconclusive.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from accelbench.audits.feed import Pair
from accelbench.audits.traffic import DECISIVE
from accelbench.audits.verdict import FAIL, INCONCLUSIVE, PASS, Verdict

SPEEDUP_LIMIT = 1.25
"""Cold/hot median latency ratio whose CI lower bound, once above it, fails the audit."""
MIN_PAIRS = 8
CONFIDENCE = 0.95
"""Of the whole-run interval."""
SUFFIX_CONFIDENCE = 0.999
"""Of the other windows' intervals (the last 8, 16, ... pairs; seen k+ times; seen again): smaller
windows, and many of them (at 99%, 3 of 60 heavily loaded honest trials failed one)."""
BOOTSTRAP_RESAMPLES = 2000
FLOOR_FACTOR = 2.0
"""A probe beats the floor when its hot member ran this many times faster than the fastest cold one."""
FLOOR_PAIRS = 4
"""Pairs whose hot member beat the floor that fail the audit ..."""
FLOOR_GROUPS = 2
"""... when they showed at least this many different hot groups."""
TRAFFIC_MIN_PAIRS = 32
"""Traffic pairs a group must hold to be judged: on a machine so loaded that calls take 1 to 100 times
their work, honest medians of 8 traffic pairs read 3.6x (a heavily loaded quick offline run here)."""
MIRROR_FACTOR = DECISIVE
"""A traffic pair is decisive when one member ran this many times faster than the other."""
MIRROR_MARGIN = 4
"""The odds of a decisive win of the seen calls, against the order pairs' odds at the seen call's place
(first or second), from which a group's mirror may fail."""
REFERENCE_PRIOR = 10
"""Decisive order pairs counted each way before any is seen: a stack that leaves few (a cache of every
repeat makes two seen calls equally fast) cannot make one or two of them the whole reference."""
MIRROR_FAMILY = 0.001
"""The chance that an honest cell fails any of its mirrors, shared out over them (Bonferroni)."""
KEPT_RANGES = 3
"""Sighting-count and seen-again windows kept in the evidence: those of the highest lower bounds."""


@dataclass(frozen=True, slots=True)
class Window:
    """The pairs of one part of the run: median cold/hot ratio, its bootstrap CI, share hot faster."""

    name: str
    pairs: int
    confidence: float
    ratio: float
    ratio_low: float
    ratio_high: float
    hot_faster_share: float
    limit: float = SPEEDUP_LIMIT
    """The ratio its lower bound must not exceed."""


def repeat_verdict(pairs: Sequence[Pair], seed: int = 0) -> Verdict:
    """Pass, fail or inconclusive from the completed pairs of every trial: the probes' verdict, unless
    they pass or cannot conclude and the timed traffic's pairs fail (``traffic_failure``)."""
    verdict = _probe_verdict([p for p in pairs if not p.traffic], seed)
    evidence = dict(verdict.evidence)
    reason = traffic_failure([p for p in pairs if p.traffic], seed, evidence)
    if verdict.outcome == FAIL or not reason:
        return dataclasses.replace(verdict, evidence=evidence)
    return Verdict("repeat", FAIL, reason, evidence)


def traffic_failure(traffic: Sequence[Pair], seed: int, evidence: dict[str, Any]) -> str:
    """Why the timed traffic's pairs fail (a window's interval above the limit, or a lopsided mirror),
    or ""; their windows and mirrors go into ``evidence``."""
    order = [p for p in traffic if p.order]
    groups = traffic_groups([p for p in traffic if not p.order])
    windows = [
        _window(name, inside, seed, SUFFIX_CONFIDENCE) for name, inside, first in groups if first is None
    ]
    mirrors = [mirror(name, inside, order, first) for name, inside, first in groups if first is not None]
    limit = MIRROR_FAMILY / max(1, 2 * len(mirrors))
    evidence["traffic_pairs"] = sum(not p.order for p in traffic)
    evidence["order_pairs"] = {"decisive": len(order), "first_faster": sum(p.cold_s > p.hot_s for p in order)}
    evidence["traffic_windows"] = [dataclasses.asdict(w) for w in sorted(windows, key=lambda w: -w.ratio_low)]
    evidence["traffic_mirrors"] = [dataclasses.asdict(m) for m in sorted(mirrors, key=lambda m: m.p_value)]
    evidence["mirror_limit"] = limit
    failed = [w for w in windows if w.ratio_low > w.limit or w.ratio_high < 1 / w.limit]
    if failed:
        w = max(failed, key=lambda w: max(w.ratio_low, 1 / w.ratio_high))
        faster = w.ratio_low > w.limit
        figure, low, high = (
            (w.ratio, w.ratio_low, w.ratio_high)
            if faster
            else (1 / w.ratio, 1 / w.ratio_high, 1 / w.ratio_low)
        )
        return (
            f"timed samples seen before ran {figure:.2f}x {'faster' if faster else 'slower'} than first "
            f"sightings next to them ({w.name}, {w.pairs} pairs, {w.confidence:.1%} CI {low:.2f}-{high:.2f}"
            f" > limit {w.limit:g}): {_RECOGNISED}"
        )
    lopsided = [m for m in mirrors if m.lopsided(limit)]
    if lopsided:
        m = min(lopsided, key=lambda m: min(m.p_value, m.p_reverse))
        faster = m.p_value <= m.p_reverse
        wins, losses = (m.wins, m.losses) if faster else (m.losses, m.wins)
        return (
            f"timed samples seen before ran over {MIRROR_FACTOR:g}x {'faster' if faster else 'slower'} than "
            f"the first sighting next to them in {wins} of {m.pairs} pairs, the reverse in {losses} "
            f"({m.name}; odds {m.odds_ratio:.3g}x those of the {m.reference_wins + m.reference_losses} "
            f"decisive order pairs, p = {min(m.p_value, m.p_reverse):.1g}, limit: {MIRROR_MARGIN}x the "
            f"odds at p < {limit:.1g}): {_RECOGNISED}"
        )
    return ""


_RECOGNISED = "the stack tells repeated inputs from new ones (outputs cached or work skipped on repeats)"


def traffic_groups(traffic: Sequence[Pair]) -> list[tuple[str, list[Pair], bool | None]]:
    """The named groups of the timed traffic's pairs (``accelbench.audits.traffic``) judged, each with
    whether its seen calls came first (None: both ways; the windows judge those, the mirrors the
    others): all of them; those whose seen call came first (a stack cannot dodge them: it does not know
    that its next call is a first sighting) and the last 8, 16, ... of those (a cache that switched on
    late); those whose seen call came second; and, in batches, those whose seen call had ``k`` seen rows,
    for every ``k`` (a stack that saves work only on batches of some mix of seen and never-seen rows,
    computing the others whole), both ways and each way. Each holds ``TRAFFIC_MIN_PAIRS`` pairs or more,
    of two different seen samples or more."""
    ordered = sorted(traffic, key=lambda p: (p.trial, p.position))
    first = [p for p in ordered if p.hot_first]
    named: list[tuple[str, list[Pair], bool | None]] = [
        ("timed traffic", ordered, None),
        ("timed traffic, seen call first", first, None),
        ("timed traffic, seen call first", first, True),
        ("timed traffic, seen call second", [p for p in ordered if not p.hot_first], False),
    ]
    size = TRAFFIC_MIN_PAIRS
    while size < len(first):
        name = f"timed traffic, seen call first, last {size} pairs"
        named += [(name, first[-size:], None), (name, first[-size:], True)]
        size *= 2
    counts = sorted({p.hot_sightings for p in ordered})
    if len(counts) > 1:
        for count in counts:
            inside = [p for p in ordered if p.hot_sightings == count]
            named.append((f"timed traffic, seen call of {count} seen rows", inside, None))
            for hot_first, place in ((True, "first"), (False, "second")):
                name = f"timed traffic, seen call {place}, of {count} seen rows"
                named.append((name, [p for p in inside if p.hot_first == hot_first], hot_first))
    return [
        (name, inside, first)
        for name, inside, first in named
        if len(inside) >= TRAFFIC_MIN_PAIRS and _varied(inside)
    ]


@dataclass(frozen=True, slots=True)
class Mirror:
    """In a group of traffic pairs whose seen calls all came first (or all second): how often the seen
    call ran ``MIRROR_FACTOR`` times faster than its never-seen neighbour (``wins``) and the reverse
    (``losses``), against the decisive order pairs over the same span of the run: how often the call at
    the seen call's place (first or second) was the faster one (``reference_wins``) or the slower one.
    For an honest stack both are the same coin, however lopsided the machine makes it; ``p_value`` is
    the chance of so many wins or more if they were (Fisher's exact test), ``p_reverse`` of so many
    losses."""

    name: str
    pairs: int
    wins: int
    losses: int
    reference_wins: int
    reference_losses: int
    p_value: float
    p_reverse: float

    @property
    def odds_ratio(self) -> float:
        """The odds of a win (each count + 0.5) against the order pairs' (each + ``REFERENCE_PRIOR``)."""
        won = (self.wins + 0.5) / (self.losses + 0.5)
        prior = REFERENCE_PRIOR
        return won / ((self.reference_wins + prior) / (self.reference_losses + prior))

    def lopsided(self, limit: float) -> bool:
        """Many more decisive wins than the order pairs allow, or losses, beyond chance at ``limit``:
        the stack's work depends on whether it saw the input before (cheaper, or dearer where it
        computes a probe-like call whole)."""
        margin = MIRROR_MARGIN
        won = self.wins >= MIN_PAIRS and self.odds_ratio >= margin and self.p_value < limit
        lost = self.losses >= MIN_PAIRS and self.odds_ratio <= 1 / margin and self.p_reverse < limit
        return won or lost


def mirror(name: str, pairs: Sequence[Pair], order: Sequence[Pair], hot_first: bool) -> Mirror:
    """The mirror of ``pairs`` (seen call first if ``hot_first``, else second) against the decisive order
    pairs ``order`` from the group's first pair on: a cache that serves a fraction of the repeats moves
    no median but wins every pair it hits, and the order pairs keep the machine's own order effect out."""
    wins = sum(bool(p.cold_s > MIRROR_FACTOR * p.hot_s) for p in pairs)  # ints: 2**n must not overflow
    losses = sum(bool(p.hot_s > MIRROR_FACTOR * p.cold_s) for p in pairs)
    start = min(((p.trial, p.position) for p in pairs), default=(0, 0))
    span = [p for p in order if (p.trial, p.position) >= start]
    first_faster = sum(bool(p.cold_s > p.hot_s) for p in span)  # an order pair's hot_s came first
    placed = first_faster if hot_first else len(span) - first_faster
    reference_losses = len(span) - placed
    p_value, p_reverse = _fisher(wins, losses, placed, reference_losses)
    return Mirror(
        name=name,
        pairs=len(pairs),
        wins=wins,
        losses=losses,
        reference_wins=placed,
        reference_losses=reference_losses,
        p_value=p_value,
        p_reverse=p_reverse,
    )


def _fisher(wins: int, losses: int, reference_wins: int, reference_losses: int) -> tuple[float, float]:
    """Fisher's exact test of the table (wins, losses / reference's, each + ``REFERENCE_PRIOR``): the
    chance of ``wins`` or more, and of ``losses`` or more, with the margins fixed."""
    from scipy.stats import fisher_exact

    prior = REFERENCE_PRIOR
    table = [[wins, losses], [reference_wins + prior, reference_losses + prior]]
    greater = float(fisher_exact(table, alternative="greater").pvalue)
    less = float(fisher_exact(table, alternative="less").pvalue)
    return greater, less


def probe_outcome(
    pairs: int, windows: Sequence[tuple[float, float]], floor_pairs: int, floor_groups: int
) -> str:
    """The probes' rule, from its stored evidence: fewer than ``MIN_PAIRS`` pairs is inconclusive; a
    window (``(ratio_low, limit)``) whose interval lies above its limit fails, as do ``FLOOR_PAIRS`` pairs
    of ``FLOOR_GROUPS`` hot samples under the floor. The run and ``verify`` both judge with it."""
    if pairs < MIN_PAIRS:
        return INCONCLUSIVE
    if any(low > limit for low, limit in windows):
        return FAIL
    return FAIL if floor_pairs >= FLOOR_PAIRS and floor_groups >= FLOOR_GROUPS else PASS


def _probe_verdict(pairs: Sequence[Pair], seed: int) -> Verdict:
    """The verdict of the probes' pairs alone."""
    evidence: dict[str, Any] = {"pairs": len(pairs), "limit": SPEEDUP_LIMIT, "confidence": CONFIDENCE}
    if len(pairs) < MIN_PAIRS:
        reason = f"only {len(pairs)} seen/never-seen pairs completed (need {MIN_PAIRS})"
        return Verdict("repeat", INCONCLUSIVE, reason, evidence)
    ordered = sorted(pairs, key=lambda p: (p.trial, p.position))
    windows = [_window("whole run", ordered, seed, CONFIDENCE)]
    size = MIN_PAIRS
    while size < len(ordered):
        windows.append(_window(f"last {size} pairs", ordered[-size:], seed, SUFFIX_CONFIDENCE))
        size *= 2
    ranges = sighting_windows(ordered, seed) + renewed_windows(ordered, seed)
    seen = min(pair.hot_sightings for pair in pairs)
    evidence["windows"] = [dataclasses.asdict(w) for w in windows]
    kept = sorted(ranges, key=lambda w: -w.ratio_low)[:KEPT_RANGES]
    evidence["sighting_windows"] = [dataclasses.asdict(w) for w in kept]
    evidence["min_hot_sightings"] = seen
    failed = [w for w in [*windows, *ranges] if w.ratio_low > w.limit]
    below = floor_beaters(ordered)
    groups = len({(p.trial, p.hot_group) for p in below})
    evidence["floor"] = {
        "factor": FLOOR_FACTOR,
        "pairs": len(below),
        "groups": groups,
        "fail_pairs": FLOOR_PAIRS,
        "fail_groups": FLOOR_GROUPS,
    }
    outcome = probe_outcome(
        len(pairs), [(w.ratio_low, w.limit) for w in [*windows, *ranges]], len(below), groups
    )
    if not failed and outcome == FAIL:
        counts = sorted({p.hot_sightings for p in below})
        reason = (
            f"samples seen before ran over {FLOOR_FACTOR:g}x faster than the fastest never-seen sample "
            f"of their shapes in {len(below)} pairs of {groups} hot samples (limit {FLOOR_PAIRS - 1} pairs; "
            f"seen {', '.join(map(str, counts))} times before): outputs cached or work skipped on repeated "
            "inputs"
        )
        return Verdict("repeat", FAIL, reason, evidence)
    if outcome == FAIL:
        w = failed[0]
        reason = (
            f"samples seen before ran {w.ratio:.2f}x faster than never-seen ones ({w.name}, "
            f"{w.pairs} pairs, {w.confidence:.0%} CI {w.ratio_low:.2f}-{w.ratio_high:.2f} > limit "
            f"{w.limit:g}): outputs cached or work skipped on repeated inputs"
        )
        return Verdict("repeat", FAIL, reason, evidence)
    whole = windows[0]
    reason = (
        f"seen/never-seen ratio {whole.ratio:.2f} (CI {whole.ratio_low:.2f}-{whole.ratio_high:.2f}) "
        f"over {len(pairs)} pairs, limit {SPEEDUP_LIMIT:g}"
    )
    return Verdict("repeat", PASS, reason, evidence)


def sighting_windows(pairs: Sequence[Pair], seed: int = 0) -> list[Window]:
    """A window for every count k of hot sightings present: the pairs whose hot sample had been seen k
    times or more (where a cache gated by a count is on), when they hold at least ``MIN_PAIRS``
    pairs and are not the whole run's. A cache of a narrow band of counts is left to the floor test."""
    windows = []
    for low in sorted({p.hot_sightings for p in pairs}):
        inside = [p for p in pairs if p.hot_sightings >= low]
        if MIN_PAIRS <= len(inside) < len(pairs) and _varied(inside):
            name = f"hot seen {low}+ times before"
            windows.append(_window(name, inside, seed, SUFFIX_CONFIDENCE))
    return windows


def renewed_windows(ordered: Sequence[Pair], seed: int = 0) -> list[Window]:
    """From each of the last 8, 16, 32, ... pairs' first, the later pairs whose hot sample had been seen
    since then (where a cache that switched on by then, counting sightings from then on, is on)."""
    windows = []
    size = MIN_PAIRS
    while size < len(ordered):
        first = ordered[-size]
        inside = [
            p for p in ordered[-size:] if p.trial == first.trial and p.hot_last_position >= first.position
        ]
        if len(inside) >= MIN_PAIRS and _varied(inside):
            name = f"hot seen again within the last {size} pairs"
            windows.append(_window(name, inside, seed, SUFFIX_CONFIDENCE))
        size *= 2
    return windows


def floor_beaters(pairs: Sequence[Pair]) -> list[Pair]:
    """The pairs whose hot member ran ``FLOOR_FACTOR`` times faster than the floor of its trial and
    shapes: the fastest cold member, or the low latency of every never-seen input (``Pair.novel_floor_s``)
    when that is lower (under a heavy load, few of 16 cold calls run unhindered; of a hundred first
    sightings of timed samples, some do)."""
    floors: dict[tuple[int, int], float] = {}
    for pair in pairs:
        key = (pair.trial, pair.shape_class)
        floors[key] = min(floors.get(key, np.inf), pair.cold_s)
    return [
        p for p in pairs if p.hot_s * FLOOR_FACTOR < min(floors[(p.trial, p.shape_class)], p.novel_floor_s)
    ]


def _varied(pairs: Sequence[Pair]) -> bool:
    """The pairs show at least ``FLOOR_GROUPS`` different hot samples (one sample that is cheap by its
    content, probed again and again, cannot fail a stack alone)."""
    return len({(p.trial, p.hot_group) for p in pairs}) >= FLOOR_GROUPS


def _window(name: str, pairs: Sequence[Pair], seed: int, confidence: float) -> Window:
    log_ratio = np.log(np.array([max(p.cold_s, 1e-9) / max(p.hot_s, 1e-9) for p in pairs]))
    rng = np.random.default_rng(seed)
    draws = rng.choice(log_ratio, size=(BOOTSTRAP_RESAMPLES, log_ratio.size), replace=True)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(np.median(draws, axis=1), [tail, 100 - tail])
    ratio = float(np.exp(np.median(log_ratio)))
    share = float(np.mean(log_ratio > 0))
    return Window(
        name=name,
        pairs=int(log_ratio.size),
        confidence=confidence,
        ratio=ratio,
        ratio_low=float(np.exp(low)),
        ratio_high=float(np.exp(high)),
        hot_faster_share=share,
    )
