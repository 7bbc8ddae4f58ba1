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
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from accelbench.audits.feed import Pair
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
MIRROR_FACTOR = 1.5
"""A traffic pair is decisive when one member ran this many times faster than the other."""
MIRROR_MARGIN = 4
"""Decisive wins of the seen calls, against losses, from which the traffic's mirror may fail."""
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
    groups = traffic_groups(traffic)
    windows = [_window(name, inside, seed, SUFFIX_CONFIDENCE) for name, inside in groups]
    mirrors = [mirror(name, inside) for name, inside in groups]
    evidence["traffic_pairs"] = len(traffic)
    evidence["traffic_windows"] = [dataclasses.asdict(w) for w in sorted(windows, key=lambda w: -w.ratio_low)]
    evidence["traffic_mirrors"] = [dataclasses.asdict(m) for m in sorted(mirrors, key=lambda m: m.p_value)]
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
    lopsided = [m for m in mirrors if m.lopsided]
    if lopsided:
        m = min(lopsided, key=lambda m: min(m.p_value, m.p_reverse))
        faster = m.p_value <= m.p_reverse
        wins, losses = (m.wins, m.losses) if faster else (m.losses, m.wins)
        return (
            f"timed samples seen before ran over {MIRROR_FACTOR:g}x {'faster' if faster else 'slower'} than "
            f"the first sighting next to them in {wins} of {m.pairs} pairs, the reverse in {losses} "
            f"({m.name}; p = {min(m.p_value, m.p_reverse):.1g}, limit: {MIRROR_MARGIN}x the reverse at "
            f"p < {1 - SUFFIX_CONFIDENCE:g}): {_RECOGNISED}"
        )
    return ""


_RECOGNISED = "the stack tells repeated inputs from new ones (outputs cached or work skipped on repeats)"


def traffic_groups(traffic: Sequence[Pair]) -> list[tuple[str, list[Pair]]]:
    """The named groups of the timed traffic's pairs (``accelbench.audits.traffic``) judged: all of them;
    those whose seen call came first (a stack cannot dodge them: it does not know that its next call is a
    first sighting) and the last 8, 16, ... of those (a cache that switched on late); and, in batches,
    those whose seen call had ``k`` seen rows, for every ``k`` (a stack that saves work only on batches of
    some mix of seen and never-seen rows, computing the others whole). Each holds ``TRAFFIC_MIN_PAIRS``
    pairs or more, of two different seen samples or more."""
    ordered = sorted(traffic, key=lambda p: (p.trial, p.position))
    first = [p for p in ordered if p.hot_first]
    named = [("timed traffic", ordered), ("timed traffic, seen call first", first)]
    size = TRAFFIC_MIN_PAIRS
    while size < len(first):
        named.append((f"timed traffic, seen call first, last {size} pairs", first[-size:]))
        size *= 2
    counts = sorted({p.hot_sightings for p in ordered})
    if len(counts) > 1:
        for count in counts:
            inside = [p for p in ordered if p.hot_sightings == count]
            named.append((f"timed traffic, seen call of {count} seen rows", inside))
    return [(name, inside) for name, inside in named if len(inside) >= TRAFFIC_MIN_PAIRS and _varied(inside)]


@dataclass(frozen=True, slots=True)
class Mirror:
    """In a group of traffic pairs: how often the seen call ran ``MIRROR_FACTOR`` times faster than its
    never-seen neighbour (``wins``), how often the reverse (``losses``), and the chance of so many wins
    or more if both were equally likely (``p_value``)."""

    name: str
    pairs: int
    wins: int
    losses: int
    p_value: float
    p_reverse: float
    """The chance of so many losses or more."""

    @property
    def lopsided(self) -> bool:
        """Many more decisive wins than losses, or the reverse, beyond chance: the stack's work depends on
        whether it saw the input before (cheaper, or dearer where it computes a probe-like call whole)."""
        limit = 1 - SUFFIX_CONFIDENCE
        won = self.wins >= MIN_PAIRS and self.wins >= MIRROR_MARGIN * self.losses and self.p_value < limit
        lost = (
            self.losses >= MIN_PAIRS and self.losses >= MIRROR_MARGIN * self.wins and self.p_reverse < limit
        )
        return won or lost


def mirror(name: str, pairs: Sequence[Pair]) -> Mirror:
    """The mirror of ``pairs``: for an honest stack the two members of a traffic pair are exchangeable, so
    a decisive difference is as likely either way (whatever the load does to single calls); a cache that
    serves a fraction of the repeats moves no median but wins every pair it hits."""
    wins = sum(bool(p.cold_s > MIRROR_FACTOR * p.hot_s) for p in pairs)  # ints: 2**n must not overflow
    losses = sum(bool(p.hot_s > MIRROR_FACTOR * p.cold_s) for p in pairs)
    return Mirror(name, len(pairs), wins, losses, _tail(wins, losses), _tail(losses, wins))


def _tail(wins: int, losses: int) -> float:
    """The chance of ``wins`` or more of ``wins + losses`` fair coin tosses (in logs: exact big-integer
    sums took a minute at 20000 decisive pairs, which an official offline run can hold)."""
    tosses = wins + losses
    if tosses == 0:
        return 1.0
    whole = math.lgamma(tosses + 1) - tosses * math.log(2)
    logs = [whole - math.lgamma(k + 1) - math.lgamma(tosses - k + 1) for k in range(wins, tosses + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * math.fsum(math.exp(log - top) for log in logs))


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
        "factor": FLOOR_FACTOR, "pairs": len(below), "groups": groups,
        "fail_pairs": FLOOR_PAIRS, "fail_groups": FLOOR_GROUPS,
    }  # fmt: skip
    if not failed and len(below) >= FLOOR_PAIRS and groups >= FLOOR_GROUPS:
        counts = sorted({p.hot_sightings for p in below})
        reason = (
            f"samples seen before ran over {FLOOR_FACTOR:g}x faster than the fastest never-seen sample "
            f"of their shapes in {len(below)} pairs of {groups} hot samples (limit {FLOOR_PAIRS - 1} pairs; "
            f"seen {', '.join(map(str, counts))} times before): outputs cached or work skipped on repeated "
            "inputs"
        )
        return Verdict("repeat", FAIL, reason, evidence)
    if failed:
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
        name, int(log_ratio.size), confidence, ratio, float(np.exp(low)), float(np.exp(high)), share
    )
