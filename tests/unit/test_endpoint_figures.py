"""The SSE parser and the curve's figures: exact values on hand-made records, and properties on
drawn ones (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accelbench.curve import CurvePoint
from accelbench.endpoint import audits
from accelbench.endpoint.accuracy import FLAGGED_MORE, Accuracy, judge, judged, judged_count, shared_share
from accelbench.endpoint.figures import Bounds, itl_s, point, tpot_s, ttft_s, usage_disagrees
from accelbench.endpoint.records import RequestRecord
from accelbench.endpoint.repeat import repeat_verdict
from accelbench.endpoint.sse import SseError, chunk_text, finish_reason, parse_line, usage_of, visible

CONTRACT = [
    "concurrency",
    "requests",
    "output_tokens_per_s",
    "tokens_per_s_per_user",
    "ttft_p50_s",
    "ttft_p90_s",
    "ttft_p99_s",
    "tpot_p50_s",
    "tpot_p90_s",
    "tpot_p99_s",
    "itl_p50_s",
    "itl_p90_s",
    "itl_p99_s",
    "e2e_p50_s",
    "e2e_p90_s",
    "e2e_p99_s",
    "requests_per_s",
    "goodput_requests_per_s",
    "error_rate",
]


def _record(
    issue: float, chunks: list[float], tokens: int, status: str = "ok", **kw: object
) -> RequestRecord:
    fields: dict[str, object] = {
        "concurrency": 2, "index": 0, "role": "timed", "salt": "ab", "issue_s": issue, "send_s": issue,
        "first_content_s": chunks[0] if chunks else None, "end_s": (chunks or [issue])[-1] + 0.01,
        "chunk_s": tuple(chunks), "text": "x", "output_tokens": tokens, "usage_output_tokens": tokens,
        "usage_prompt_tokens": 9, "status": status, "error": "" if status == "ok" else "boom",
    }  # fmt: skip
    return RequestRecord(**{**fields, **kw})  # type: ignore[arg-type]


def test_sse_lines() -> None:
    assert parse_line(b": comment\n") is None and parse_line(b"\n") is None and parse_line("event: x") is None
    done = parse_line(b"data: [DONE]\r\n")
    assert done is not None and done.done
    event = parse_line(b'data: {"choices": [{"delta": {"content": "Hi"}, "finish_reason": null}]}\n')
    assert event is not None and event.chunk is not None and chunk_text(event.chunk) == "Hi"
    assert chunk_text({"choices": [{"text": " there"}]}) == " there"
    assert chunk_text({"choices": []}) == "" and chunk_text({"usage": {}}) == ""
    assert finish_reason({"choices": [{"finish_reason": "length"}]}) == "length"
    assert usage_of({"usage": {"completion_tokens": 5, "prompt_tokens": 3, "x": "y"}}) == {
        "completion_tokens": 5,
        "prompt_tokens": 3,
    }
    with pytest.raises(SseError, match="not JSON"):
        parse_line(b"data: {oops\n")


@pytest.mark.parametrize(
    ("text", "shown"),
    [(" ", False), ("\n\t", False), (" ,.", False), ("...!", False), (" a", True), ("7", True), ("€", True)],
)
def test_visible_content(text: str, shown: bool) -> None:
    assert visible(text) is shown


def test_exact_figures_of_two_requests() -> None:
    first = _record(0.0, [0.5, 0.6, 0.7, 0.8], tokens=4)  # TTFT 0.5, TPOT 0.1
    second = _record(0.1, [1.1, 1.4], tokens=2, index=1)  # TTFT 1.0, TPOT 0.3
    failed = _record(0.2, [], tokens=0, status="http 500", index=2)
    found = point(2, [first, second, failed], Bounds(ttft_s=0.6, tpot_s=0.2))
    assert (
        ttft_s(first) == 0.5 and tpot_s(first) == pytest.approx(0.1) and tpot_s(second) == pytest.approx(0.3)
    )
    assert itl_s(first) == pytest.approx([0.1, 0.1, 0.1])
    assert found.requests == 3 and found.error_rate == pytest.approx(1 / 3)
    assert found.duration_s == pytest.approx(1.41) and found.output_tokens == 6
    assert found.output_tokens_per_s == pytest.approx(6 / 1.41)
    assert found.requests_per_s == pytest.approx(2 / 1.41)
    assert found.goodput_requests_per_s == pytest.approx(1 / 1.41)  # only the first is within bounds
    assert found.ttft_p50_s == pytest.approx(0.75)
    assert found.tpot_p90_s == pytest.approx(0.1 + 0.9 * 0.2)
    assert found.tokens_per_s_per_user == pytest.approx(1 / 0.28)
    assert set(CONTRACT) <= set(found.to_dict())
    assert CurvePoint.from_dict(found.to_dict()) == found


def test_usage_disagreement_allows_eos_and_retokenizing() -> None:
    assert not usage_disagrees(_record(0, [1], 20, usage_output_tokens=21))  # EOS
    assert not usage_disagrees(_record(0, [1], 20, usage_output_tokens=19))  # a merge
    assert usage_disagrees(_record(0, [1], 20, usage_output_tokens=40))  # over-reported
    assert usage_disagrees(_record(0, [1], 20, usage_output_tokens=10))  # padded text
    assert not usage_disagrees(_record(0, [1], 20, usage_output_tokens=None))
    # with EOS ignored a chat model runs into the next turn of its template; the server strips the
    # special tokens (ChatML's <|im_end|>, <|im_start|>) from the text and counts them: 2-3 per header
    ran_on = "The answer is 4.\nsystem\nYou are"
    assert not usage_disagrees(_record(0, [1], 13, usage_output_tokens=16, text=ran_on))
    assert usage_disagrees(_record(0, [1], 13, usage_output_tokens=16))  # no header in the text
    assert usage_disagrees(_record(0, [1], 13, usage_output_tokens=19, text=ran_on))  # beyond one header


def test_audits_catch_repeated_salts_filler_and_padding() -> None:
    honest = [_record(0, [1, 2], 8, salt=f"{i:x}", index=i) for i in range(8)]
    judged = Accuracy(1.0, (1.0,) * 4, (1, 8), True)
    assert [v.outcome for v in audits.verdicts(honest, 8, judged)] == ["pass"] * 4
    repeated = [*honest, _record(0, [1, 2], 8, salt="0")]
    assert audits.salts(repeated).outcome == "fail"
    filler = [_record(0, [1, 2], 8, salt=f"{i:x}", filler_first_chunk=i < 3) for i in range(8)]
    assert audits.first_chunk(filler, judged).outcome == "fail"  # 3 of 8, none judged: the share decides
    genuine = Accuracy(1.0, (1.0,) * 4, (1, 8), True, fillers=2, fake_fillers=0)
    assert audits.first_chunk(filler, genuine).outcome == "pass"  # the model itself begins with "["
    fake = Accuracy(1.0, (1.0,) * 4, (1, 8), True, fillers=2, fake_fillers=1)
    assert audits.first_chunk(filler[3:], fake).outcome == "fail"
    padded = [*honest[:6], *(_record(0, [1, 2], 13, salt=f"p{i}", usage_output_tokens=8) for i in range(2))]
    verdict = audits.token_count(padded, max_tokens=8)  # 13 > 8 x 1.25 + 2 on 2 of 8 replies
    assert verdict.outcome == "fail" and verdict.evidence["padded"] == 2
    assert audits.token_count([*honest[:7], padded[-1]], max_tokens=8).outcome == "fail"  # 1 of 8 padded
    retokenized = [*honest[:7], _record(0, [1, 2], 11, salt="r", usage_output_tokens=8)]
    assert audits.token_count(retokenized, max_tokens=8).outcome == "pass"  # 3 of 67 tokens
    inflated = [_record(0, [1, 2], 8, salt=f"{i:x}", usage_output_tokens=10) for i in range(8)]
    assert audits.token_count(inflated, max_tokens=8).outcome == "fail"
    # a few replies over-reported inside honest totals: 3 of 20 at 8 -> 12 tokens is 7.5% off in all
    few = [_record(0, [1, 2], 8, salt=f"{i:x}", usage_output_tokens=12 if i < 3 else 8) for i in range(20)]
    verdict = audits.token_count(few, max_tokens=8)
    assert verdict.outcome == "fail" and verdict.evidence == {
        "usage_off": 0.075,
        "padded": 0,
        "disagreeing": 3,
        "over": 3,
    }
    assert audits.token_count(few[2:], max_tokens=8).outcome == "pass"  # 1 of 18


times = st.floats(min_value=0.0, max_value=100.0, allow_nan=False)


@st.composite
def records(draw: st.DrawFn) -> RequestRecord:
    issue = draw(times)
    gaps = draw(st.lists(st.floats(min_value=0.0, max_value=5.0), min_size=0, max_size=6))
    chunks = [issue + sum(gaps[: i + 1]) for i in range(len(gaps))]
    tokens = draw(st.integers(min_value=len(chunks) and 1, max_value=12)) if chunks else 0
    status = draw(st.sampled_from(["ok", "ok", "ok", "http 500"]))
    return _record(issue, chunks, tokens, status)


@settings(max_examples=150, deadline=None)
@given(st.lists(records(), min_size=1, max_size=12), st.floats(0.01, 10), st.floats(0.01, 10))
def test_figure_properties(drawn: list[RequestRecord], ttft_bound: float, tpot_bound: float) -> None:
    found = point(3, drawn, Bounds(ttft_bound, tpot_bound))
    assert 0.0 <= found.error_rate <= 1.0
    assert found.goodput_requests_per_s <= found.requests_per_s + 1e-9
    for name in ("ttft", "tpot", "itl", "e2e"):
        p50, p90, p99 = (getattr(found, f"{name}_p{q}_s") for q in (50, 90, 99))
        assert 0.0 <= p50 <= p90 + 1e-12 and p90 <= p99 + 1e-12
    assert found.output_tokens == sum(r.output_tokens for r in drawn if r.ok)
    if found.duration_s > 0:
        assert found.output_tokens_per_s * found.duration_s == pytest.approx(found.output_tokens)
    ok = [r for r in drawn if r.ok]
    if ok:  # a reply's first content never comes after its end
        assert found.ttft_p99_s <= max(r.end_s - r.issue_s for r in ok) + 1e-9


def _pair(seen_ttft: float, unseen_ttft: float, i: int) -> list[RequestRecord]:
    return [
        _record(0.0, [seen_ttft, seen_ttft + 0.1], 2, role="seen", salt=f"s{i}", index=2 * i),
        _record(0.0, [unseen_ttft, unseen_ttft + 0.1], 2, role="unseen", salt=f"u{i}", index=2 * i + 1),
    ]


@pytest.mark.parametrize(
    ("ttfts", "outcome"),
    [
        ([(0.50, 0.52), (0.61, 0.55), (0.48, 0.50), (0.55, 0.57), (0.52, 0.49), (0.50, 0.51)], "pass"),
        ([(0.02, 0.50), (0.01, 0.61), (0.02, 0.48), (0.03, 0.55), (0.02, 0.52), (0.02, 0.50)], "fail"),
        # noise: half of the seen ones twice as fast, the rest slower: not a cache
        ([(0.2, 0.5), (0.2, 0.5), (0.2, 0.5), (0.9, 0.5), (0.9, 0.5), (0.9, 0.5)], "pass"),
        ([(0.2, 0.5), (0.2, 0.5)], "inconclusive"),
    ],
)
def test_repeat_verdict(ttfts: list[tuple[float, float]], outcome: str) -> None:
    records = [r for i, (a, b) in enumerate(ttfts) for r in _pair(a, b, i)]
    verdict = repeat_verdict(records)
    assert verdict.audit == "repeat" and verdict.outcome == outcome, verdict.reason
    # the pairs go in an order drawn per pair: the verdict reads each pair by its roles
    flipped = [r for i, (a, b) in enumerate(ttfts) for r in _pair(a, b, i)[:: 1 - 2 * (i % 2)]]
    assert [r.role for r in flipped[:4]] == ["seen", "unseen", "unseen", "seen"]
    assert repeat_verdict(flipped) == verdict


def _point(concurrency: int, tokens_per_s: float, error_rate: float = 0.0) -> CurvePoint:
    values = dict.fromkeys(CONTRACT, 0.0) | {"concurrency": concurrency, "requests": 4}
    return CurvePoint(**{**values, "output_tokens_per_s": tokens_per_s, "error_rate": error_rate})  # type: ignore[arg-type]


def test_the_automatic_ladder_doubles_until_two_points_gain_under_ten_percent() -> None:
    from accelbench.endpoint.cell import concurrencies

    rates = {1: 7.4, 2: 7.7, 4: 11.4, 8: 16.1, 16: 14.5, 32: 17.0, 64: 99.0}
    curve: list[CurvePoint] = []
    for c in concurrencies((), curve):
        curve.append(_point(c, rates[c]))
    assert [p.concurrency for p in curve] == [1, 2, 4, 8, 16, 32]  # 16 and 32 under 1.1 x 16.1
    assert list(concurrencies((3, 5), [])) == [3, 5]


def test_failed_requests_and_a_stopped_ladder_are_invalid_reasons() -> None:
    from accelbench.endpoint.outcome import invalid_reasons

    records = [
        _record(0, [1, 2], 4, concurrency=4),
        _record(0, [], 0, status="ClientConnectorError", concurrency=4),
    ]
    reasons = invalid_reasons([_point(1, 5.0), _point(4, 3.0, 0.5)], records, "every request failed at 8")
    assert reasons == [
        "concurrency 4: 1 of 4 requests failed (ClientConnectorError: boom)",
        "ladder stopped: every request failed at 8",
    ]


def test_accuracy_shares_and_the_judged_replies_drawn_from_the_secret_seed() -> None:
    assert shared_share(" The cat sat", "The cat ran") == 8 / 11
    assert shared_share("anything", "") == 1.0 and shared_share("", "abc") == 0.0
    records = [
        _record(0, [1, 2], 4, salt=f"{c}-{i}", concurrency=c, filler_first_chunk=(c, i) == (8, 5))
        for c in (1, 2, 4, 8, 16)
        for i in range(8)
    ]
    records.append(_record(0, [], 0, status="http 500", salt="16-8", concurrency=16))
    prompts = {r.salt: None for r in records}
    chosen = [r.salt for r in judged(records, prompts, 7, 16)]  # type: ignore[arg-type]
    assert len(chosen) in (16, 17) and "8-5" in chosen and "16-8" not in chosen  # the filler start added
    assert chosen == [r.salt for r in judged(records, prompts, 7, 16)]  # type: ignore[arg-type]
    others = [[r.salt for r in judged(records, prompts, seed, 16)] for seed in range(8, 20)]  # type: ignore[arg-type]
    assert all(o != chosen for o in others)
    # across every point, not the first requests of a few: over 13 seeds every reply is drawn at least
    # once, and every place in a point (a server counting requests since the point began) as often
    drawn = [salt for o in [chosen, *others] for salt in o if salt != "8-5"]
    assert {r.salt for r in records if r.ok} - {"8-5"} <= set(drawn)
    per_place = [sum(s.endswith(f"-{i}") for s in drawn) for i in range(8)]
    assert min(per_place) >= 10, per_place  # 13 x 16 / 40 x 5 = 26 each in expectation; the old 4-a-point: 0
    assert judged_count(134_515_008) == 16 and judged_count(8_030_000_000) == 8
    padded_text = [_record(0, [1], 16, salt=f"p{i}", text="Paris" + " the" * 12) for i in range(12)]
    flagged = judged([*records, *padded_text], prompts | {r.salt: None for r in padded_text}, 7, 0)  # type: ignore[arg-type]
    # with none drawn, FLAGGED_MORE of the 13 flagged ones (12 padded, a filler start) are judged
    assert len(flagged) == FLAGGED_MORE and all(r.salt[0] == "p" or r.salt == "8-5" for r in flagged)


def test_a_judged_reply_padded_with_filler_fails_and_an_honest_loop_does_not() -> None:
    reference = " The capital of France is Paris. It is known for the Eiffel Tower and"
    honest = _record(0, [1], 16, text=reference)
    pad = _record(0, [1], 16, text=" The capital of" + " the" * 12)
    loop = " I am sorry. I am sorry. I am sorry. I am sorry. I am"
    looping = _record(0, [1], 16, text=loop)
    past_eos = _record(0, [1], 16, text=" Paris." + " the" * 12)
    found = judge([honest, pad, looping, past_eos], [reference, reference, loop, " Paris."])
    assert found.padded == 2 and found.flagged == 3  # the loop is flagged, and judged the model's own
    # past the reference's EOS: judged against the reference run on past it in each way a server may
    the_model_runs_on = {0: (" Paris. I am", " Paris." + " the" * 12, " Paris. It")}
    assert judge([past_eos], [" Paris."], the_model_runs_on).padded == 0  # one way made that loop
    assert judge([past_eos], [" Paris."], {0: (" Paris. I am", " Paris. It is")}).padded == 1
    assert judge([honest, looping], [reference, loop]).padded == 0
    # the model's loop that the reference breaks out of after 4 pieces (a near tie on other kernels)
    broke_out = " I am sorry. I am sorry. I am sorry. I am sorry. But I can help."
    assert judge([looping], [broke_out]).padded == 0
    ends_in_the = _record(0, [1], 16, text=" Paris is the" + " the" * 11)  # the pad starts a piece early
    assert judge([ends_in_the], [" Paris is the capital of France."]).padded == 1
    verdict = audits.padding(found)
    assert (
        verdict.outcome == "fail" and verdict.evidence["padded"] == 2 and "repeated filler" in verdict.reason
    )
    assert audits.padding(judge([honest], [reference], False)).outcome == "pass"


def test_a_fake_first_chunk_is_caught_by_the_reply_it_starts() -> None:
    reference = " The capital of France is Paris."
    inserted = _record(0, [1], 8, text="[" + reference, first_chunk_text="[", filler_first_chunk=True)
    word = _record(0, [1], 8, text=" Sure" + reference, first_chunk_text=" Sure")  # not a filler: fake
    genuine = _record(0, [1], 8, text="[x] ok", first_chunk_text="[", filler_first_chunk=True)
    near_tie = _record(0, [1], 8, text=" The city of Paris.", first_chunk_text=" The")
    found = judge([inserted, word, genuine, near_tie], [reference, reference, "[x] ok", reference], False)
    assert found.fillers == 2 and found.fake_fillers == 2
    assert audits.first_chunk([inserted, word], found).outcome == "fail"


def test_the_per_reply_floor_fails_a_few_garbage_replies_the_mean_would_hide() -> None:
    reference = " The capital of France is Paris."
    good = [_record(0, [1], 8, text=reference) for _ in range(14)]
    garbage = [_record(0, [1], 8, text=" zq xv") for _ in range(2)]
    one = judge([*good, garbage[0]], [reference] * 15, False)
    assert one.passed and one.below_floor == 1  # one in 15: a near tie on other kernels may do that
    two = judge([*good[1:], *garbage], [reference] * 15, False)  # 2 of 15: more than one in eight
    assert two.mean_share > 0.85 and two.below_floor == 2 and two.floor_failed and not two.passed


class _Template:
    def apply_chat_template(self, messages: list[dict[str, str]], **_: object) -> str:
        return messages[-1]["content"]


def test_the_search_probes_prompts_are_found_again_for_the_draw() -> None:
    from accelbench.endpoint.cell import probe_prompts
    from accelbench.endpoint.driver import POISSON
    from accelbench.endpoint.prompts import salted, seeded_texts

    sent = []
    for number, (qps, n) in enumerate([(1.0, 16), (2.0, 16), (1.41, 20)]):
        prompts = salted(_Template(), 5, seeded_texts(5, (4, 8), n, POISSON, number), POISSON, number)
        sent += [
            _record(0, [1], 8, salt=p.salt, index=i, concurrency=0, target_qps=qps, role=POISSON)
            for i, p in enumerate(prompts)
        ]
    found = probe_prompts(_Template(), 5, (4, 8), sent)
    assert set(found) == {r.salt for r in sent} and len(found) == 52
    assert probe_prompts(_Template(), 6, (4, 8), sent).keys().isdisjoint(found)  # another seed: none
    assert judged(sent, found, 5, 16)[0].role == POISSON  # the search's replies are drawn too
