"""The repeat audit of a served LLM: does the server answer content it has seen from a cache that
ignores the salt?

Its pairs go *inside* the curve, as ordinary requests of the points (issue 40 item 5). A pair is a
*seen* prompt (the text of a request an earlier point sent, with a fresh salt) and an *unseen* one (a
never-sent text of the same token count by the model's tokenizer, fresh salt: lengths drawn apart made
the unseen prompts of an honest server 3x slower in CI), sent at adjacent positions of one point in an
order drawn per pair; the pairs' positions in the point are drawn with ``secrets``. Each goes at the
point's own concurrency with the curve's ``max_tokens`` and salting, so nothing a server sees (place,
count, length cap, concurrency, timing) tells an audit request from a timed one; the only thing that
sets a seen prompt apart is its content, and a cache that recognises it and answers it fast is what
the audit catches. The pair's members are compared with each other, not with the run: at concurrency
above 1 the TTFT moves with the load, and two requests issued one after the other in the same point
meet the same load (an order effect, the first of two the faster, falls on both kinds alike).

Where the seen texts come from: the audit starts at the *second* point, and each point's seen texts
are drawn (``secrets``) from the texts the earlier points sent, each repeated once at most. Every
reply of an earlier point has ended before the point starts, so a cache has had every chance to store
it; within the first point nothing has been sent that a cache could hold. A one-point curve has no
pairs and no repeat verdict: it repeats nothing, so a cache has nothing to gain on it either. The
pairs are ``PAIRS`` over the curve, spread over the points after the first (an automatic ladder
measures three points at least, so they go into its second and third; fewer when the earlier points
sent fewer texts).

The audit requests are counted in the point's figures (tokens/s, TTFT, TPOT), as the timed requests
they are: they have the curve's shape and lengths (a seen text is a curve text, an unseen one has its
token count), an honest server spends on them what it spends on any request (its prefix cache cannot
reuse past the salt, inside the first cache page), and they held the point's slots through its span,
so leaving their tokens out would understate the point's tokens/s by their share. A server that
serves seen prompts from a cache gains on them, and that is what fails here.

The rule: an honest server, prefix cache included, takes the same time on both kinds. A server that
keys its cache on the prompt without the salt answers the seen ones at once. It fails when the seen
prompts' TTFT over their partners' is below ``FAST_RATIO`` (the median of the pairs' ratios) and the
seen one of a pair was the faster in at least ``FASTER_SHARE`` of the pairs (two conditions: one slow
outlier cannot fail an honest server on a busy machine). Each pair's ratio is taken within its point:
the ratio of medians pooled over points at different loads read as low as x0.58 for an honest server
with every seen member the faster (tiny-llama, 10 curves: ``benchmarks/served_repeat.py``), while no
honest pair's own ratio fell under x0.52 there.

Inside the curve a third condition is needed: a replayed seen reply frees its slot at once, so a cache
that serves the seen prompts of one point only (found by its concurrency, say the curve's peak) gains
on that point's figures while its hits stay under ``FASTER_SHARE`` of the cell's pairs. So a *hit* (a
seen reply whose TTFT, or whose time from issue to end per token, is under ``HIT_RATIO`` of its
partner's *and* of its point's median: the partner is the load-fair comparison, the point's median
stops one stalled partner from making a hit) is counted on its own, and ``HITS`` of them fail. The
time per token is there for small models: on tiny-llama a prefill costs about what the round trip
does, so a replay's TTFT read 0.03-0.24 of its partner's, while its whole reply, sent at once, is far
shorter than one decoded at the point's load.
"""

from __future__ import annotations

import dataclasses
import secrets
import statistics
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from accelbench.audits.verdict import FAIL, INCONCLUSIVE, PASS, Verdict
from accelbench.endpoint.client import Prompt
from accelbench.endpoint.figures import ttft_s
from accelbench.endpoint.prompts import matched_texts, salted
from accelbench.endpoint.records import RequestRecord

PAIRS = 6
"""The pairs of a curve of two points or more (fewer when its earlier points sent fewer texts)."""
AUTO_POINTS = 3
"""The points an automatic ladder measures at least (``cell.saturated`` needs three)."""
MIN_PAIRS = 3
FAST_RATIO = 0.5
FASTER_SHARE = 0.8
HIT_RATIO = 0.1
HITS = 2
SEEN, UNSEEN = "seen", "unseen"


def pairs_at(number: int, points: int) -> int:
    """The pairs that go into point ``number`` (0: the first) of a ladder of ``points`` points (0: an
    automatic ladder, counted as ``AUTO_POINTS``): none in the first, ``PAIRS`` spread over the rest,
    the earlier ones taking the remainder."""
    later = max(points or AUTO_POINTS, 1) - 1
    if number == 0 or number > later:
        return 0
    return PAIRS // later + (number <= PAIRS % later)


@dataclass(frozen=True, slots=True)
class Pair:
    """A seen prompt and an unseen one of its token count, and which of them goes first."""

    seen: Prompt
    unseen: Prompt
    seen_first: bool

    def ordered(self) -> tuple[tuple[Prompt, str], tuple[Prompt, str]]:
        """The two prompts with their parts, in the order they are sent."""
        seen, unseen = (self.seen, SEEN), (self.unseen, UNSEEN)
        return (seen, unseen) if self.seen_first else (unseen, seen)


def make_pairs(
    tokenizer: Any, input_seed: int, seen_texts: Sequence[str], count: Callable[[str], int], number: int
) -> list[Pair]:
    """A pair for each of ``seen_texts`` (sent by an earlier point), for point ``number``: fresh salts
    for both members, the unseen text of the seen one's token count, the order drawn with ``secrets``."""
    unseen_texts = matched_texts(input_seed, seen_texts, count, "repeat-unseen", number)
    seen = salted(tokenizer, input_seed, seen_texts, "repeat-seen", number)
    unseen = salted(tokenizer, input_seed, unseen_texts, "repeat-unseen", number)
    return [Pair(a, b, secrets.randbelow(2) == 1) for a, b in zip(seen, unseen, strict=True)]


def placed(timed: Sequence[Prompt], pairs: Sequence[Pair]) -> tuple[list[Prompt], list[str]]:
    """The point's prompts: ``timed`` in their order with each pair at two adjacent positions, the
    pairs' places drawn with ``secrets`` (every arrangement alike); and each prompt's part in a pair
    (``SEEN``, ``UNSEEN``, "" for a plain timed request)."""
    units = len(timed) + len(pairs)
    starts = set(secrets.SystemRandom().sample(range(units), len(pairs)))
    plain, audit = iter(timed), iter(pairs)
    prompts: list[Prompt] = []
    parts: list[str] = []
    for unit in range(units):
        sent = next(audit).ordered() if unit in starts else ((next(plain), ""),)
        prompts += [prompt for prompt, _ in sent]
        parts += [part for _, part in sent]
    return prompts, parts


class Placing:
    """The repeat audit's pairs over a ladder: ``point`` for each point, in the order they are sent;
    ``prompts``: every pair's prompt by salt (the accuracy check may judge their replies too)."""

    def __init__(self, tokenizer: Any, input_seed: int, count: Callable[[str], int], points: int) -> None:
        self.tokenizer, self.input_seed, self.count, self.points = tokenizer, input_seed, count, points
        self.prompts: dict[str, Prompt] = {}
        self._sent: list[str] = []
        """The texts earlier points sent that no pair has repeated yet."""

    def point(
        self, number: int, texts: Sequence[str], prompts: Sequence[Prompt]
    ) -> tuple[list[Prompt], list[str]]:
        """Point ``number``'s prompts (its ``prompts``, made from ``texts``, with its pairs placed among
        them) and each one's part in a pair (``placed``)."""
        wanted = min(pairs_at(number, self.points), len(self._sent))
        seen = secrets.SystemRandom().sample(self._sent, wanted)
        for text in seen:
            self._sent.remove(text)
        pairs = make_pairs(self.tokenizer, self.input_seed, seen, self.count, number)
        self.prompts |= {p.salt: p for pair in pairs for p in (pair.seen, pair.unseen)}
        self._sent += list(texts)
        return placed(prompts, pairs)


def tagged(records: Sequence[RequestRecord], parts: Sequence[str]) -> list[RequestRecord]:
    """The point's records (in prompt order) with each one's part in a pair (the point's extra requests,
    after its first ones, are in none: ``accelbench.endpoint.extension``)."""
    if len(records) < len(parts):
        raise ValueError(f"{len(records)} records for a point of {len(parts)} prompts")
    first = [
        dataclasses.replace(r, repeat=part) if part else r
        for r, part in zip(records[: len(parts)], parts, strict=True)
    ]
    return first + list(records[len(parts) :])


def member(record: RequestRecord) -> str:
    """``SEEN`` / ``UNSEEN``: the record's part in a pair ("" none; records stored before the audit
    moved into the curve carry it as their role)."""
    return record.repeat or (record.role if record.role in (SEEN, UNSEEN) else "")


def repeat_pairs(records: Sequence[RequestRecord]) -> list[tuple[RequestRecord, RequestRecord]]:
    """The pairs among ``records`` (a point's records in index order, points one after another), the
    seen member first: two members of one point at adjacent indices, one of each kind."""
    pairs: list[tuple[RequestRecord, RequestRecord]] = []
    pending: RequestRecord | None = None
    for record in records:
        if not member(record):
            continue
        if pending is not None and _partners(pending, record):
            pairs.append((pending, record) if member(pending) == SEEN else (record, pending))
            pending = None
        else:
            pending = record
    return pairs


def _partners(a: RequestRecord, b: RequestRecord) -> bool:
    same_point = a.concurrency == b.concurrency and abs(a.index - b.index) == 1
    return same_point and {member(a), member(b)} == {SEEN, UNSEEN}


def outcome(pairs: int, ratio: float, faster_share: float, hits: int = 0) -> str:
    """The served repeat rule, from its stored evidence: fewer than ``MIN_PAIRS`` answered pairs is
    inconclusive; seen prompts under ``FAST_RATIO`` of the unseen TTFT in ``FASTER_SHARE`` of the pairs
    fail, and so do ``HITS`` hits or more. The run and ``verify`` both judge with it."""
    if pairs < MIN_PAIRS:
        return INCONCLUSIVE
    faster = ratio < FAST_RATIO and faster_share >= FASTER_SHARE
    return FAIL if faster or hits >= HITS else PASS


def repeat_verdict(records: Sequence[RequestRecord]) -> Verdict:
    """Seen against unseen TTFT, each pair within its point (see the module text)."""
    pairs = repeat_pairs(records)
    timed = [(ttft_s(a), ttft_s(b), a.concurrency) for a, b in pairs if a.ok and b.ok]
    both = [(a, b, c) for a, b, c in timed if a is not None and b is not None]
    if len(both) < MIN_PAIRS:
        reason = f"only {len(both)} seen/unseen pairs answered (of {len(pairs)} sent)"
        return Verdict("repeat", INCONCLUSIVE, reason)
    ratio = statistics.median(a / b if b > 0 else 1.0 for a, b, _ in both)
    faster = sum(a < b for a, b, _ in both) / len(both)
    lowest = pair_lows(records)
    hits = sum(low < HIT_RATIO for low in lowest)
    evidence = {"ratio": round(ratio, 4), "faster_share": round(faster, 4), "pairs": len(both)}
    evidence |= {"bar": FAST_RATIO, "hits": hits, "lowest": round(min(lowest), 4)}
    evidence["identical_pairs"] = sum(a.text == b.text for a, b in pairs)
    reason = (
        f"seen prompts' TTFT over their unseen partners' x{ratio:.2f} (median of the pairs, "
        f"bar x{FAST_RATIO}); seen faster in {faster:.0%} of {len(both)} pairs in "
        f"{len({c for _, _, c in both})} point(s); {hits} hit(s) under x{HIT_RATIO} of partner and "
        f"point (bar {HITS})"
    )
    return Verdict("repeat", outcome(len(both), ratio, faster, hits), reason, evidence)


def per_token_s(record: RequestRecord) -> float:
    """Issue to end over the reply's tokens (one at least): a replayed reply sent at once is short of it
    whatever its first token waited."""
    return (record.end_s - record.issue_s) / max(record.output_tokens, 1)


def pair_lows(records: Sequence[RequestRecord]) -> list[float]:
    """Each answered pair's lower hit ratio: its seen member's TTFT, and its time per token, each over
    the lower of its partner's and its point's median (``HIT_RATIO`` and under is a hit)."""
    times = (ttft_s, per_token_s)
    medians = [point_medians(records, time_of) for time_of in times]
    lows = []
    for seen, unseen in repeat_pairs(records):
        if not (seen.ok and unseen.ok) or ttft_s(seen) is None or ttft_s(unseen) is None:
            continue
        ratios = [
            low_ratio(time_of(seen), time_of(unseen), m[seen.concurrency])
            for time_of, m in zip(times, medians, strict=True)
        ]
        lows.append(min(ratios))
    return lows


def low_ratio(seen_s: float | None, partner_s: float | None, median_s: float) -> float:
    """A probe's time over the lower of its partner's and its point's median (1.0 with no bar)."""
    bar_s = min(partner_s or 0.0, median_s)
    return (seen_s or 0.0) / bar_s if bar_s > 0 else 1.0


def point_medians(
    records: Sequence[RequestRecord],
    time_of: Callable[[RequestRecord], float | None],
    point_of: Callable[[RequestRecord], Hashable] = lambda r: r.concurrency,
) -> dict[Any, float]:
    """The median of ``time_of`` over each point's answered requests (``point_of``: by concurrency),
    pairs included."""
    by_point: dict[Hashable, list[float]] = {}
    for record in records:
        value = time_of(record) if record.ok else None
        if value is not None:
            by_point.setdefault(point_of(record), []).append(value)
    return {point: statistics.median(values) for point, values in by_point.items()}
