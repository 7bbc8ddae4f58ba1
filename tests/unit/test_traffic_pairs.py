"""The timed traffic's own pairs (``accelbench.audits.traffic``): a stack that serves the traffic's
repeats and computes every probe honestly passes every probe window, and fails the traffic's.

The cheats are the planted ones of ``tests/e2e/planted_traffic.py``, run on the fake clock of
``test_audit_feed``: a long run (offline on a fast model issues several times its pool), where most calls
repeat a timed sample.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

from accelbench.audits.feed import AuditFeed, Pair
from accelbench.audits.repeat import mirror, repeat_verdict
from accelbench.audits.traffic import TrafficPairs
from accelbench.audits.verdict import FAIL, PASS
from tests.e2e.planted_traffic import MixedBatchCacheStack, _TrafficCache
from tests.unit.test_audit_feed import POOL, Clock, drive, honest, make_feed, preempted, reference, sample

Inputs = tuple[np.ndarray, ...]
LONG = 1500
"""Samples of a long run: about six times the pool of 256."""


def probes_only(feed: AuditFeed) -> str:
    return repeat_verdict([p for p in feed.pairs if not p.traffic]).outcome


@pytest.mark.parametrize("seed", range(3))
def test_a_cache_of_the_traffic_that_computes_whatever_looks_like_a_probe_fails(seed: int) -> None:
    clock = Clock()
    feed = make_feed(clock, seed=seed)
    drive(feed, _TrafficCache(honest(clock), POOL), clock, LONG, expected=LONG)
    assert probes_only(feed) == PASS  # the hole: every probe window passes
    verdict = repeat_verdict(feed.pairs)
    assert verdict.outcome == FAIL, verdict.reason
    assert verdict.reason.startswith("timed samples seen before ran"), verdict.reason
    assert verdict.evidence["traffic_pairs"] > 100
    assert all(w["ratio_low"] < 1.25 for w in verdict.evidence["traffic_windows"])  # no median moves
    worst = verdict.evidence["traffic_mirrors"][0]  # but the served repeats win their pairs outright
    assert worst["wins"] >= 20 and worst["losses"] == 0 and worst["p_value"] < 1e-6, worst


@pytest.mark.parametrize("seed", range(10))
def test_an_honest_stack_passes_the_traffic_windows_under_heavy_load(seed: int) -> None:
    clock = Clock()
    feed = make_feed(clock, seed=seed)
    drive(feed, preempted(clock, seed), clock, LONG, expected=LONG)
    verdict = repeat_verdict(feed.pairs)
    assert verdict.outcome == PASS, (seed, verdict.reason)
    assert verdict.evidence["traffic_pairs"] > 100
    assert all(w["ratio_low"] < 1.25 for w in verdict.evidence["traffic_windows"])
    assert not any(m["wins"] >= 4 * max(1, m["losses"]) for m in verdict.evidence["traffic_mirrors"])


def drive_batched(feed: AuditFeed, infer: Callable[[Inputs], np.ndarray], clock: Clock, issued: int) -> None:
    """One offline trial of ``issued`` samples (a multiple of the feed's batch) cut into batches."""
    feed.start_trial(issued, issued)
    rng = np.random.default_rng(9)
    for _ in range(issued // feed.batch):
        indices = [int(rng.integers(POOL)) for _ in range(feed.batch)]
        rows = [feed.sample(index) for index in indices]
        begin = clock()
        output = infer((np.concatenate([row[0] for row in rows]),))
        for k, index in enumerate(indices):
            feed.observe(index, clock() - begin, output[k : k + 1])
    feed.end_trial()


def per_row(clock: Clock, seed: int = 5) -> Callable[[Inputs], np.ndarray]:
    """A model whose call costs 0.2 ms plus 0.1 ms per row, with jitter."""
    jitter = np.random.default_rng(seed)

    def infer(inputs: Inputs) -> np.ndarray:
        clock.now_s += 1e-4 * (2 + len(inputs[0])) * (1 + 0.3 * jitter.random())
        return reference(inputs)

    return infer


def batched_feed(clock: Clock, seed: int, batch: int = 8) -> AuditFeed:
    pool = [sample(i) for i in range(POOL)]
    return AuditFeed(pool, lambda k: sample(k, 10_000), 32, seed, clock=clock, batch=batch)


@pytest.mark.parametrize("seed", range(3))
def test_a_cache_of_the_mixed_batches_fails_and_honest_batches_pass(seed: int) -> None:
    """A timed batch late in a run mixes seen and never-seen rows; a probe's batch never does."""
    clock = Clock()
    feed = batched_feed(clock, seed)
    drive_batched(feed, MixedBatchCacheStack().wrap(per_row(clock)), clock, 8 * 300)
    assert probes_only(feed) == PASS  # the hole
    verdict = repeat_verdict(feed.pairs)
    assert verdict.outcome == FAIL and "timed samples seen before" in verdict.reason, verdict.reason
    clock = Clock()
    feed = batched_feed(clock, seed)
    drive_batched(feed, per_row(clock, seed), clock, 8 * 300)
    assert repeat_verdict(feed.pairs).outcome == PASS


def test_traffic_pairs_are_adjacent_whole_batches_with_different_seen_rows() -> None:
    pairs = TrafficPairs(batch=2)
    shapes = ((1, 8),)
    rows = [(0, 0, True, 1.0), (1, 1, True, 1.0), (2, 0, False, 0.5), (3, 2, True, 0.5)]
    rows += [(6, 3, True, 2.0), (7, 4, True, 2.0), (8, 3, False, 0.1), (9, 4, False, 0.1)]
    for position, index, novel, latency_s in rows:
        pairs.row(0, position, index, novel, latency_s, shapes)
    (first, second) = pairs.pairs  # positions 4-5 were a probe: 2-3 and 6-7 are not adjacent
    assert (first.position, first.hot_s, first.cold_s, first.hot_first) == (0, 0.5, 1.0, False)
    assert (second.position, second.hot_s, second.cold_s, second.hot_first) == (6, 0.1, 2.0, False)
    assert first.traffic and first.hot_sightings == 1 and second.hot_sightings == 2


def test_the_mirror_counts_many_decisive_pairs_of_numpy_latencies() -> None:
    """Latencies may be numpy floats (2**n of a numpy count overflowed past 63 decisive pairs), and an
    official offline run may hold tens of thousands of decisive pairs (exact sums took a minute)."""
    won = [Pair(0, k, np.float64(1e-5), np.float64(1e-3), 1, hot_group=k, traffic=True) for k in range(200)]
    even = [Pair(0, k, np.float64(1e-3), np.float64(3e-3), 0, traffic=True, order=True) for k in range(50)]
    even += [dataclasses.replace(p, hot_s=p.cold_s, cold_s=p.hot_s) for p in even]
    found = mirror("all", won, even, hot_first=True)
    assert (found.name, found.pairs, found.wins, found.losses) == ("all", 200, 200, 0)
    assert (found.reference_wins, found.reference_losses) == (50, 50)
    assert found.p_value < 1e-25 and found.p_reverse == pytest.approx(1.0) and found.lopsided(1e-6)
    half = won[:100] + [dataclasses.replace(p, hot_s=p.cold_s, cold_s=p.hot_s) for p in won[100:]]
    assert 0.3 < mirror("all", half, even, hot_first=True).p_value < 0.7
    many = mirror("all", won * 100, even * 100, hot_first=False)
    assert many.wins == 20_000 and many.p_value < 1e-300 and many.p_reverse == pytest.approx(1.0)


def fading(clock: Clock, seed: int, onset: float = 0.25) -> Callable[[Inputs], np.ndarray]:
    """An honest stack on a machine where interference starts abruptly (``onset`` of the calls: 1-4
    times the work) and fades by 15% a call: the first of two adjacent calls is decisively faster more
    often than the second (95 against 57 decisive pairs in a quick server cell here)."""
    compute, rng = honest(clock, seed), np.random.default_rng(seed + 31)
    extra = [0.0]

    def infer(inputs: Inputs) -> np.ndarray:
        extra[0] = extra[0] * 0.85 + (1e-3 * float(rng.uniform(1, 4)) if rng.random() < onset else 0.0)
        clock.now_s += extra[0]
        return compute(inputs)

    return infer


def test_the_order_of_two_calls_is_judged_against_the_machines_own_order_effect() -> None:
    """Against a fair coin (a reference of 10 decisive pairs each way, ``REFERENCE_PRIOR``), the
    seen-first pairs of such honest runs are lopsided (the seen call came first, and first calls win);
    against the order pairs of each run, none fails. A cache of the traffic still fails."""
    first: list[Pair] = []
    failed = []
    for seed in range(20):
        clock = Clock()
        feed = make_feed(clock, seed=seed)
        drive(feed, fading(clock, seed), clock, 3 * LONG, expected=3 * LONG)
        first += [p for p in feed.pairs if p.traffic and not p.order and p.hot_first]
        assert sum(p.order for p in feed.pairs) > 50
        verdict = repeat_verdict(feed.pairs)
        if verdict.outcome != PASS:
            failed.append((seed, verdict.reason))
    coin = mirror("first", first, [], hot_first=True)
    assert coin.wins > 100 and coin.losses < coin.wins / 4 and coin.p_value < 1e-9, coin
    assert not failed, failed
    clock = Clock()
    feed = make_feed(clock, seed=3)
    drive(feed, _TrafficCache(fading(clock, 3), POOL), clock, 3 * LONG, expected=3 * LONG)
    verdict = repeat_verdict(feed.pairs)
    assert verdict.outcome == FAIL and verdict.reason.startswith("timed samples seen before"), verdict.reason


class Always:
    """An rng whose every draw takes the candidate."""

    def random(self) -> float:
        return 0.0


def test_order_pairs_are_disjoint_decisive_same_novelty_calls_outside_traffic_pairs() -> None:
    pairs = TrafficPairs(batch=1, rng=Always())  # type: ignore[arg-type]
    shapes = ((1, 8),)
    # novelty:  N    N    S    S    S    S    N    S    S    S
    latency = [1.0, 2.0, 1.0, 3.0, 1.0, 1.2, 1.0, 1.0, 1.0, 5.0]
    novel = [True, True, False, False, False, False, True, False, False, False]
    for position, (seconds, new) in enumerate(zip(latency, novel, strict=True)):
        pairs.row(0, position, position, new, seconds, shapes)
    traffic = [(p.position, p.hot_first) for p in pairs.pairs if not p.order]
    order = [(p.position, p.hot_s, p.cold_s) for p in pairs.pairs if p.order]
    assert traffic == [(1, False), (5, True), (6, False)]
    # (0, 1): 1 is in a traffic pair, dropped; (2, 3): 2 is; (3, 4): kept, decisive; (4, 5) shares 4;
    # (7, 8): 7 is in a traffic pair; (8, 9): 9 closes no later call, a candidate still at the end
    assert order == [(3, 3.0, 1.0)]
    assert all(p.traffic and p.hot_first for p in pairs.pairs if p.order)


def pair_reading_cache(clock: Clock) -> Callable[[Inputs], np.ndarray]:
    """Works out the order pairs as the audit would take them all (a shadow ``TrafficPairs`` that takes
    every candidate, fed the novelty each call shows), serves the first call of each from its cache and
    computes the second: with every candidate taken, "first faster" would be the machine's effect, and
    the cache's seen-first wins the norm."""
    compute = honest(clock)
    seen: dict[bytes, np.ndarray] = {}
    shadow = TrafficPairs(batch=1, rng=Always())  # type: ignore[arg-type]
    calls = [0]

    def infer(inputs: Inputs) -> np.ndarray:
        key = inputs[0].tobytes()
        novel = key not in seen
        second = shadow._candidate is None and not shadow._last_paired  # the call before was a first
        begin = clock.now_s
        if novel or second:
            seen[key] = compute(inputs)
        else:
            clock.now_s += 1e-5
        shadow.row(0, calls[0], calls[0], novel, clock.now_s - begin, ((1, 8),))
        calls[0] += 1
        return seen[key]

    return infer


def test_drawn_order_pairs_fall_either_way_under_a_cache_that_reads_the_pairs() -> None:
    """Its shadow's own pairs all read "first faster" (1881 of 1881 here); the probes slipped into the
    run already shift the audit's pairs off the shadow's (59% read so with every candidate taken), and
    the draw leaves the rest to chance."""
    clock = Clock()
    feed = make_feed(clock, seed=4)
    drive(feed, pair_reading_cache(clock), clock, 3 * LONG, expected=3 * LONG)
    order = [p for p in feed.pairs if p.order]
    share = sum(p.cold_s > p.hot_s for p in order) / len(order)
    assert len(order) > 200 and 0.35 < share < 0.65, share
    assert repeat_verdict(feed.pairs).outcome == FAIL
