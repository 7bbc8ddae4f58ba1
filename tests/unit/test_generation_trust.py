"""The LLM feed (salted prompts, repeats with controls), the repeat and first-token audits, and the
``accelbench.generation_stacks`` plugin group."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from accelbench import registry
from accelbench.generation.base import Reply
from accelbench.generation.feed import CONTROL, FRESH, REPEAT, PromptFeed, SaltPlace, Sent, salted
from accelbench.generation.timing_audits import first_token_audit, pairs_of, repeat_audit

PLACE = SaltPlace(head=4, vocab_size=49152)
PROMPTS = [tuple(range(10, 10 + n)) for n in (8, 20, 33, 48)]


def serve(feed: PromptFeed, calls: int) -> list[Sent]:
    return [feed.next(call % len(PROMPTS)) for call in range(calls)]


def test_the_salt_holds_64_bits_after_the_head_and_keeps_the_rest() -> None:
    assert PLACE.salt_tokens == 5 and PLACE.salt_tokens * math.log2(49152 - 3) >= 64
    made = salted((1, 2, 3, 4, 5, 6), (90, 91, 92, 93, 94), PLACE)
    assert made == (1, 2, 3, 4, 90, 91, 92, 93, 94, 5, 6)


def test_every_prompt_but_the_repeats_is_sent_once() -> None:
    sent = serve(PromptFeed(PROMPTS, PLACE, (7, 1)), 128)
    unseen = [s.prompt for s in sent if s.role != REPEAT]
    assert len(set(unseen)) == len(unseen) == sum(s.role in (FRESH, CONTROL) for s in sent)
    first_seen = {}
    for call, s in enumerate(sent):
        if s.role == REPEAT:
            assert first_seen[s.prompt] == call - s.distance
        first_seen.setdefault(s.prompt, call)


def test_repeats_come_at_drawn_distances_each_beside_a_control_of_its_length() -> None:
    sent = serve(PromptFeed(PROMPTS, PLACE, (7, 2)), 256)
    calls = {(s.role, s.pair): call for call, s in enumerate(sent) if s.role != FRESH}
    repeats = [s for s in sent if s.role == REPEAT]
    assert len(repeats) >= 30 and len({s.distance for s in repeats}) >= 8  # 3 sources per 16 calls (some land
    # on a call already planned: skipped), 1..12 calls apart
    for s in repeats:
        control = sent[calls[(CONTROL, s.pair)]]
        assert len(control.prompt) == len(s.prompt) and control.base == s.base
        assert 1 <= abs(calls[(CONTROL, s.pair)] - calls[(REPEAT, s.pair)]) <= 3


def test_another_seed_sends_other_prompts() -> None:
    a = {s.prompt for s in serve(PromptFeed(PROMPTS, PLACE, (7, 1)), 64)}
    b = {s.prompt for s in serve(PromptFeed(PROMPTS, PLACE, (8, 1)), 64)}
    assert not a & b


def reply(ttft_s: float, latency_s: float, tokens: int = 16) -> Reply:
    return Reply(tuple(range(5, 5 + tokens)), ttft_s, latency_s, 5)


def paired(repeat: list[Reply], control: list[Reply]) -> tuple[list[Reply], list[Sent]]:
    replies, sent = [], []
    for pair, (r, c) in enumerate(zip(repeat, control, strict=True)):
        replies += [r, c]
        sent += [Sent((1, 2), 0, REPEAT, pair, 3), Sent((1, 3), 0, CONTROL, pair)]
    return replies, sent


def test_the_repeat_audit_passes_equal_times_and_fails_a_cache() -> None:
    honest = paired([reply(0.010, 0.160)] * 8, [reply(0.011, 0.170)] * 8)
    verdict = repeat_audit(*honest)
    assert verdict.outcome == "pass" and verdict.evidence["pairs"] == 8
    cached = repeat_audit(*paired([reply(0.0001, 0.0002)] * 8, [reply(0.010, 0.160)] * 8))
    assert cached.outcome == "fail" and "median TTFT ratio 0.01" in cached.reason


def test_the_repeat_audit_catches_a_cache_that_serves_a_third_of_the_repeats() -> None:
    repeat = [reply(0.0001, 0.0002)] * 3 + [reply(0.010, 0.160)] * 6
    verdict = repeat_audit(*paired(repeat, [reply(0.010, 0.160)] * 9))
    assert verdict.outcome == "fail" and "3 repeats below 0.1" in verdict.reason


def test_a_repeat_read_late_is_no_hit_by_its_tpot() -> None:
    """Read late (the harness woke after the whole reply had come), a reply's decode sits in its TTFT and
    its TPOT reads near 0: no hit by that TPOT; a cache's TTFT near 0 still is."""
    late = Reply(tuple(range(5, 21)), 0.170, 0.1701, 5, 0.0002, True)
    honest = repeat_audit(*paired([late] * 4 + [reply(0.010, 0.160)] * 5, [reply(0.010, 0.160)] * 9))
    assert honest.outcome == "pass" and honest.evidence["hits"] == 0
    unread = Reply(late.tokens, late.first_token_s, late.latency_s, 5)
    assert (
        repeat_audit(*paired([unread] * 4 + [reply(0.010, 0.160)] * 5, [reply(0.010, 0.160)] * 9)).outcome
        == "fail"
    )
    cached = Reply(late.tokens, 0.0001, 0.0002, 5, 0.0001, True)
    verdict = repeat_audit(*paired([cached] * 3 + [reply(0.010, 0.160)] * 6, [reply(0.010, 0.160)] * 9))
    assert verdict.outcome == "fail" and "3 repeats below 0.1" in verdict.reason


def test_the_repeat_audit_is_inconclusive_on_few_pairs() -> None:
    verdict = repeat_audit(*paired([reply(0.01, 0.1)] * 4, [reply(0.01, 0.1)] * 4))
    assert verdict.outcome == "inconclusive"
    replies, sent = paired([reply(0.01, 0.1)] * 6, [reply(0.01, 0.1)] * 6)
    assert len(pairs_of(replies[:-1], sent[:-1])) == 5  # a pair whose control never ran is left out


def test_the_first_token_audit_flags_tokens_reported_before_the_prefill() -> None:
    honest = [reply(0.010, 0.010 + 15 * 0.008)] * 40
    assert first_token_audit(honest).outcome == "pass"
    early = honest[:36] + [reply(0.00002, 0.15)] * 4
    verdict = first_token_audit(early)
    assert verdict.outcome == "fail" and verdict.reason.startswith("4/40 replies")
    assert first_token_audit(honest[:36] + [reply(0.00002, 0.15)] * 2).outcome == "pass"
    assert first_token_audit(honest[:10]).outcome == "inconclusive"


def test_the_first_token_audit_takes_the_fastest_wire_round_trip_off() -> None:
    """Over the wire a token reported before any work arrives a round trip late (0.3 ms here, against a
    TPOT of 1.2 ms: 0.27, above the floor); the run's fastest round trip comes off every TTFT, not each
    reply's own (a harness that woke late reads a round trip as long as the whole TTFT)."""

    def wired(first_token_s: float, wire_s: float, tpot_s: float = 0.0012) -> Reply:
        return Reply(tuple(range(16)), first_token_s, first_token_s + 15 * tpot_s, 0, wire_s)

    early = [wired(0.00032, 0.0003)] * 36 + [wired(0.00035, 0.00031)] * 4
    assert (
        first_token_audit([Reply(r.tokens, r.first_token_s, r.latency_s, 0) for r in early]).outcome == "pass"
    )
    verdict = first_token_audit(early)
    assert verdict.outcome == "fail" and verdict.evidence["wire_s"] == pytest.approx(0.0003)
    late_wakes = [wired(0.0023, 0.0003)] * 30 + [wired(0.0026, 0.0025)] * 10  # honest, woken late 10 times
    assert first_token_audit(late_wakes).outcome == "pass"


def test_a_plugin_generating_stack_is_found_through_its_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = tmp_path / "my_llm-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-llm\nVersion: 1.0\n")
    lines = "my-llm = tests.e2e.planted_llm:ReplyCacheStack\ntorch-eager = elsewhere:Fake\n"
    (info / "entry_points.txt").write_text(f"[accelbench.generation_stacks]\n{lines}")
    monkeypatch.syspath_prepend(str(tmp_path))  # entry points are read from sys.path on each call
    generating = registry.table("generating stack")
    assert generating["my-llm"] == "tests.e2e.planted_llm:ReplyCacheStack"
    assert generating["torch-eager"] == registry.GENERATING_STACKS["torch-eager"]  # no override
    assert "my-llm" in registry.all_stack_names()
    registry.resolve_any_stack(("my-llm",))


def test_with_a_maker_every_prompt_is_drawn_afresh_at_the_picked_length() -> None:
    def maker(rng: object, length: int) -> tuple[int, ...]:
        return tuple(int(t) for t in rng.integers(3, 49152, size=length))  # type: ignore[attr-defined]

    sent = serve(PromptFeed(PROMPTS, PLACE, (7, 3), maker), 64)
    for s in sent:
        assert len(s.prompt) == len(PROMPTS[s.base]) + PLACE.salt_tokens
        assert s.prompt[: PLACE.head] != PROMPTS[s.base][: PLACE.head]  # not the workload's prompt


def test_a_stalled_control_alone_does_not_fail_an_honest_stack() -> None:
    repeat = [reply(0.010, 0.160)] * 8
    control = [reply(0.060, 0.9)] * 3 + [reply(0.010, 0.160)] * 5  # three controls stalled
    replies, sent = paired(repeat, control)
    fresh = [reply(0.010, 0.160)] * 8  # never-seen prompts of the same length elsewhere in the run
    verdict = repeat_audit(replies + fresh, sent + [Sent((9, n), 0, FRESH) for n in range(8)])
    assert verdict.outcome == "pass" and verdict.evidence["hits"] == 0, verdict.reason


def test_tpot_is_compared_with_never_seen_replies_of_a_like_length() -> None:
    long_reply, short_reply = reply(0.010, 0.010 + 15 * 0.001), reply(0.010, 0.010 + 2 * 0.004, tokens=3)
    replies, sent = paired([long_reply] * 6, [short_reply] * 6)  # short replies: fixed costs per token
    fresh = [long_reply] * 5 + [short_reply] * 8
    verdict = repeat_audit(replies + fresh, sent + [Sent((9, n), 0, FRESH) for n in range(13)])
    assert verdict.outcome == "pass" and verdict.evidence["tpot_median"] == 1.0, verdict.reason
