"""The served repeat audit's pairs inside the curve (``accelbench.endpoint.repeat``, issue 40 item 5):
how many go where, at which positions, with which texts, and how the verdict reads them at load."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from accelbench.endpoint.cell import ladder
from accelbench.endpoint.client import Prompt, Target
from accelbench.endpoint.figures import Bounds
from accelbench.endpoint.prompts import salted, seeded_texts
from accelbench.endpoint.records import RequestRecord
from accelbench.endpoint.repeat import (
    HITS,
    PAIRS,
    SEEN,
    UNSEEN,
    Placing,
    make_pairs,
    outcome,
    pairs_at,
    placed,
    repeat_pairs,
    repeat_verdict,
)
from accelbench.endpoint.settings import EndpointSettings
from tests.unit.endpoint_stub import stub


class _Template:
    def apply_chat_template(self, messages: Sequence[dict[str, str]], **_: Any) -> str:
        return messages[-1]["content"]


def _words(text: str) -> int:
    return len(text.split())


def _text(prompt: Prompt) -> str:
    """The user text after the salt (``[salt] text``)."""
    return prompt.text.split("] ", 1)[1]


def test_six_pairs_are_spread_over_the_points_after_the_first() -> None:
    assert [pairs_at(n, 4) for n in range(4)] == [0, 2, 2, 2]  # the llm suite's 1,2,4,8
    assert [pairs_at(n, 2) for n in range(2)] == [0, 6]
    assert [pairs_at(n, 5) for n in range(5)] == [0, 2, 2, 1, 1]
    assert [pairs_at(n, 0) for n in range(6)] == [0, 3, 3, 0, 0, 0]  # automatic: three points at least
    assert pairs_at(0, 1) == 0  # a one-point curve repeats nothing
    assert sum(pairs_at(n, 9) for n in range(9)) == PAIRS


def _timed(n: int) -> list[Prompt]:
    return [Prompt(f"t{i}", (), f"timed {i}") for i in range(n)]


def test_pairs_go_at_adjacent_positions_drawn_anew_each_time_the_timed_order_kept() -> None:
    timed = _timed(8)
    pairs = make_pairs(_Template(), 7, ["one two three", "four five", "six"], _words, 1)
    held: set[int] = set()
    for _ in range(300):
        prompts, parts = placed(timed, pairs)
        assert len(prompts) == len(parts) == 14
        assert [p for p, part in zip(prompts, parts, strict=True) if not part] == timed
        members = [i for i, part in enumerate(parts) if part]
        assert len(members) == 6
        for a, b in zip(members[::2], members[1::2], strict=True):
            assert b == a + 1 and {parts[a], parts[b]} == {SEEN, UNSEEN}
        held |= set(members)
    assert held == set(range(14))  # no place of the point is free of audit requests, first and last too
    orders = {pair.seen_first for pair in make_pairs(_Template(), 7, ["a b"] * 40, _words, 1)}
    assert orders == {True, False}


def test_a_ladders_pairs_repeat_earlier_points_texts_once_each_with_matched_unseen_ones() -> None:
    placing = Placing(_Template(), 11, _words, 3)
    sent: list[str] = []
    repeated: list[str] = []
    for number, concurrency in enumerate((1, 2, 4)):
        texts = seeded_texts(11, (4, 12), 4, "point", concurrency)
        timed = salted(_Template(), 11, texts, "point", concurrency)
        prompts, parts = placing.point(number, texts, timed)
        seen = [_text(p) for p, part in zip(prompts, parts, strict=True) if part == SEEN]
        unseen = [_text(p) for p, part in zip(prompts, parts, strict=True) if part == UNSEEN]
        assert len(seen) == len(unseen) == pairs_at(number, 3)  # 0, then 3 and 3
        assert set(seen) <= set(sent)  # sent by an earlier point, never by this one
        pair_words = [(_words(a), _words(b)) for a, b in zip(seen, unseen, strict=True)]
        assert all(a == b for a, b in pair_words)  # ... and each unseen text as long
        assert not set(unseen) & set(sent) and not set(unseen) & set(texts)
        repeated += seen
        sent += texts
    assert len(repeated) == len(set(repeated)) == 6  # each earlier text repeated once at most
    salts = [p.salt for p in placing.prompts.values()]
    assert len(salts) == 12 and all(len(s) == 32 for s in salts)


def _member(
    concurrency: int, index: int, part: str, ttft_s: float, salt: str, tokens: int = 2, end_s: float = 0.0
) -> RequestRecord:
    end_s = end_s or ttft_s + 0.1
    return RequestRecord(
        concurrency=concurrency,
        index=index,
        role="timed",
        salt=salt,
        issue_s=0.0,
        send_s=0.0,
        first_content_s=ttft_s,
        end_s=end_s,
        chunk_s=(ttft_s, end_s),
        text=salt,
        output_tokens=tokens,
        usage_output_tokens=tokens,
        usage_prompt_tokens=9,
        status="ok",
        error="",
        repeat=part,
    )


def _point(concurrency: int, ttfts: Sequence[tuple[str, float]]) -> list[RequestRecord]:
    """A point's records in index order: (part, TTFT) each."""
    return [_member(concurrency, i, part, t, f"{concurrency}-{i}") for i, (part, t) in enumerate(ttfts)]


def test_pairs_are_read_within_their_point_at_adjacent_indices() -> None:
    records = [
        *_point(2, [("", 0.4), (UNSEEN, 0.5), (SEEN, 0.4), (SEEN, 0.3), (UNSEEN, 0.6), ("", 0.4)]),
        *_point(4, [(SEEN, 0.9), ("", 0.8), (UNSEEN, 0.9), (UNSEEN, 0.7), (SEEN, 0.8)]),
    ]
    pairs = repeat_pairs(records)
    assert [(a.salt, b.salt) for a, b in pairs] == [("2-2", "2-1"), ("2-3", "2-4"), ("4-4", "4-3")]
    assert all(a.repeat == SEEN and b.repeat == UNSEEN for a, b in pairs)


def _honest_at_load() -> list[RequestRecord]:
    """Three points of a server that prefills one request at a time: a request's TTFT grows with its
    place in the first wave (1, 2, ... prefills of 0.1 s), the pairs in drawn orders."""
    return [
        *_point(2, [(SEEN, 0.1), (UNSEEN, 0.2), ("", 0.2), (UNSEEN, 0.2), (SEEN, 0.25), ("", 0.2)]),
        *_point(4, [(UNSEEN, 0.1), (SEEN, 0.2), (SEEN, 0.3), (UNSEEN, 0.4), ("", 0.4), ("", 0.4)]),
        *_point(8, [(SEEN, 0.1), (UNSEEN, 0.2), ("", 0.3), ("", 0.4), ("", 0.5), ("", 0.6), ("", 0.7)]),
    ]


def test_an_honest_server_at_load_passes_with_no_hit() -> None:
    verdict = repeat_verdict(_honest_at_load())
    assert verdict.outcome == "pass", verdict.reason
    assert verdict.evidence["hits"] == 0 and verdict.evidence["pairs"] == 5
    assert verdict.evidence["lowest"] == 0.5  # the first of a wave against its partner, the second


def test_a_stalled_partner_alone_makes_no_hit() -> None:
    records = _honest_at_load()
    records[3] = _member(2, 3, UNSEEN, 5.0, "stalled")  # 25x its seen partner, alone
    verdict = repeat_verdict(records)
    assert verdict.outcome == "pass" and verdict.evidence["hits"] == 0, verdict.reason


def test_a_cache_that_serves_only_the_peak_points_pairs_fails_by_its_hits() -> None:
    """Two of six pairs replayed at once (the c=8 point's): the median rule alone passes it."""
    records = [
        *_point(2, [(SEEN, 0.2), (UNSEEN, 0.2), (UNSEEN, 0.2), (SEEN, 0.21), ("", 0.2)]),
        *_point(4, [(UNSEEN, 0.3), (SEEN, 0.31), (SEEN, 0.3), (UNSEEN, 0.3), ("", 0.3)]),
        *_point(8, [(SEEN, 0.002), (UNSEEN, 0.5), ("", 0.5), (UNSEEN, 0.5), (SEEN, 0.001), ("", 0.5)]),
    ]
    verdict = repeat_verdict(records)
    evidence = verdict.evidence
    assert verdict.outcome == "fail" and evidence["hits"] == HITS == 2, verdict.reason
    assert outcome(evidence["pairs"], evidence["ratio"], evidence["faster_share"]) == "pass"
    assert outcome(evidence["pairs"], evidence["ratio"], evidence["faster_share"], HITS - 1) == "pass"


def test_a_reply_replayed_whole_is_a_hit_by_its_time_per_token() -> None:
    """On a small model a prefill costs about a round trip: the replay's TTFT is a quarter of its
    partner's, no TTFT hit, but its 16 tokens came at once."""
    point = [_member(4, i, "", 0.2, f"t{i}", 16, 1.7) for i in range(8)]
    point[2] = _member(4, 2, SEEN, 0.05, "s2", 16, 0.051)
    point[3] = _member(4, 3, UNSEEN, 0.2, "u3", 16, 1.7)
    point[5] = _member(4, 5, UNSEEN, 0.2, "u5", 16, 1.7)
    point[6] = _member(4, 6, SEEN, 0.05, "s6", 16, 0.052)
    point[0] = _member(4, 0, SEEN, 0.2, "s0", 16, 1.7)
    point[1] = _member(4, 1, UNSEEN, 0.2, "u1", 16, 1.7)
    verdict = repeat_verdict(point)
    assert verdict.evidence["hits"] == 2 and verdict.outcome == "fail", verdict.reason
    assert verdict.evidence["lowest"] < 0.1 < 0.05 / 0.2


def test_fewer_than_three_answered_pairs_are_inconclusive() -> None:
    verdict = repeat_verdict(_point(2, [(SEEN, 0.1), (UNSEEN, 0.1), (UNSEEN, 0.1), (SEEN, 0.1)]))
    assert verdict.outcome == "inconclusive" and "only 2 seen/unseen pairs" in verdict.reason


def _ladder_on(url: str, concurrencies: tuple[int, ...]) -> list[RequestRecord]:
    settings = EndpointSettings(ladder=concurrencies, requests=4, max_tokens=6)
    target = Target(url, "tiny-llama")
    climbed = ladder(target, _Template(), 5, settings, (4, 12), _words, Bounds(math.inf, math.inf))
    assert not climbed.stopped
    assert [p.requests for p in climbed.curve] == [4 + 2 * pairs_at(n, 3) for n in range(3)]
    assert all(r.role == "timed" for r in climbed.records)  # counted in the points' figures
    return climbed.records


def test_the_ladder_sends_the_pairs_inside_its_points_and_judges_them() -> None:
    """On the stub: a server that answers one request at a time (its TTFT grows with the queue) passes;
    a reply cache that strips the salt fails."""
    with stub("ok", delay_s=0.03, serial=True) as url:
        honest = _ladder_on(url, (1, 2, 4))
    with stub("cache") as url:
        cached = _ladder_on(url, (1, 2, 4))
    assert not any(r.repeat for r in honest if r.concurrency == 1)
    assert len(repeat_pairs(honest)) == 6 and len({r.salt for r in honest}) == len(honest)
    assert repeat_verdict(honest).outcome == "pass", repeat_verdict(honest).reason
    verdict = repeat_verdict(cached)
    # every pair's seen reply comes from the cache; how many of them land under x0.1 of their partner is
    # the machine's (4 of 6 with lint and another pytest beside, make test 2026-12-07): the bar is 2
    assert verdict.outcome == "fail" and verdict.evidence["pairs"] == 6, verdict.reason
    assert verdict.evidence["hits"] >= HITS and verdict.evidence["faster_share"] == 1.0, verdict.reason
