"""The forbidden-reuse audits (issue 44 scopes 3-4): the pairs' forms keep the token count and change
what they say they change; the rule on its evidence; and the real session driver against planted
servers: an honest server with a prefix cache passes, a salt-blind reply cache and a replayer of stored
replies are each caught by their audit."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from accelbench.audits.verdict import FAIL, INCONCLUSIVE, PASS
from accelbench.endpoint.accuracy import judge
from accelbench.sessions import forbidden
from accelbench.sessions.accuracy import asked_tokens, judged_replies, turn_messages
from accelbench.sessions.driver import TURN
from accelbench.sessions.forbidden import ALTERED, COPIED, Audit
from accelbench.sessions.load import Load
from accelbench.sessions.outcome import verdicts
from accelbench.sessions.records import TurnRecord
from accelbench.sessions.workload import SYSTEM_PROMPT, Session, Shape, make_sessions
from tests.unit.session_stub import CHEAP, HONEST, PLANTED, audited_ladder, reply_of, session_stub

SHAPE = Shape(turns=3, delay_s=(0.0, 0.02))
LADDER = (1, 2, 4)


def words(messages: Sequence[Mapping[str, str]]) -> int:
    """A tokenizer-free count: the words of the conversation (a salt is one word)."""
    return sum(len(m["content"].split(" ")) for m in messages)


def history() -> tuple[str, list[dict[str, str]]]:
    (session,) = make_sessions(5, "load-1", 1, SHAPE)
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": session.turns[0].content},
    ]
    messages += [
        {"role": "assistant", "content": "read the file"},
        {"role": "user", "content": session.turns[1].content},
    ]
    return session.salt, messages


def test_a_pair_is_a_probe_and_a_cold_control_of_the_same_count() -> None:
    kind = ALTERED  # the copied audit's forms are decoy sessions (the decoy test below)
    salt, messages = history()
    sent = forbidden.forms(Audit(kind, 0, 1, 0.0, True), salt, messages, words, "sid")
    assert [f.role for f in sent] == [kind + "-control", kind]
    control, probe = sent
    assert words(probe.messages) == words(control.messages) == words(messages)
    assert control.salt != salt and control.session_id == control.salt[:16] != "sid"
    assert sorted(control.messages[3]["content"].split()) == sorted(messages[3]["content"].split())
    assert control.messages[3]["content"] != messages[3]["content"]  # shuffled: new to the server
    assert control.messages[2] == messages[2] and control.messages[0] == messages[0]
    # its own session, one word of the first user message changed
    assert probe.salt == salt and probe.session_id == "sid" and probe.messages[2:] == tuple(messages[2:])
    before, after = messages[1]["content"].split(" "), probe.messages[1]["content"].split(" ")
    assert sum(a != b for a, b in zip(before, after, strict=True)) == 1 and before[1] != after[1]


def test_the_plan_draws_distinct_source_turns_after_the_first() -> None:
    planned = forbidden.plan(LADDER, 3, (0.0, 0.5))
    pairs = [(load, a) for load, audits in planned.items() for a in audits]
    assert len(pairs) == forbidden.PAIRS  # the altered pairs: the copied audit is the decoys'
    for kind in (ALTERED,):
        mine = [(load, a.session, a.turn) for load, a in pairs if a.kind == kind]
        assert len(set(mine)) == len(mine) == forbidden.PAIRS
        firsts = [a.control_first for _, a in pairs if a.kind == kind]
        assert sum(firsts) == forbidden.PAIRS // 2  # balanced: an order effect cannot pick the probes
    assert all(a.session < load and 1 <= a.turn < 3 and 0 <= a.delay_s <= 0.5 for load, a in pairs)
    draws = {
        tuple(sorted((load, a.session, a.turn) for load, a in pairs))
        for _ in range(5)
        if (
            pairs := [
                (load, a) for load, audits in forbidden.plan(LADDER, 3, (0.0, 0.5)).items() for a in audits
            ]
        )
    }
    assert len(draws) > 1  # drawn with secrets: not the same places run after run
    assert len(forbidden.plan((1,), 2, (0.0, 0.0))[1]) == 1  # one turn after the first: one pair


def test_a_decoy_pair_replays_its_source_whole_and_a_shuffled_control_of_the_same_counts() -> None:
    (source,) = make_sessions(5, "load-1", 1, Shape(turns=3))
    probe, control = forbidden.decoys(source, words, 2)
    assert probe.number == control.number == forbidden.DECOY_SESSION + 2
    assert len({source.salt, probe.salt, control.salt}) == 3
    assert [t.content for t in probe.turns] == [
        t.content.replace(source.salt, probe.salt) for t in source.turns
    ]  # the whole session again, a new salt: the shape and content of a replayed pass's session
    assert probe.turns[0].content.startswith(f"[{probe.salt}] ")
    for mine, theirs in zip(control.turns, source.turns, strict=True):
        assert sorted(mine.content.split(" ")[1:]) == sorted(theirs.content.split(" ")[1:])
        assert words([{"role": "user", "content": mine.content}]) == words(
            [{"role": "user", "content": theirs.content}]
        )
    assert control.turns[0].content.startswith(f"[{control.salt}] ")


@pytest.mark.parametrize(
    ("pairs", "ratio", "share", "expected"),
    [
        (2, 0.1, 1.0, INCONCLUSIVE),
        (4, 0.1, 1.0, FAIL),
        (4, 0.6, 1.0, PASS),
        (4, 0.1, 0.75, PASS),
        (6, 0.25, 0.83, PASS),
        (6, 0.24, 0.83, FAIL),
    ],
)
def test_the_rule_needs_both_a_low_ratio_and_a_high_share(
    pairs: int, ratio: float, share: float, expected: str
) -> None:
    assert forbidden.outcome(pairs, ratio, share) == expected


PASSES = {Load(n): make_sessions(9, Load(n).pass_name, n, SHAPE) for n in LADDER}


def ladder_records(mode: str, folder: Path) -> list[TurnRecord]:
    """The session ladder with the audits slipped in, run as the cell runs it (the warm-up session, the
    altered pairs, a decoy pair a point), against a planted server of ``mode``."""
    warm = make_sessions(9, "warm-up", 1, SHAPE)
    with session_stub(mode, base_s=0.05) as url:
        return audited_ladder(url, PASSES, warm, (lambda t: len(t.split()), words), folder)


@pytest.mark.parametrize(("mode", "caught"), PLANTED)
def test_planted_servers_are_caught_and_the_honest_cache_passes(
    mode: str, caught: tuple[str, ...], tmp_path: Path
) -> None:
    records = ladder_records(mode, tmp_path)
    turns = [r for r in records if r.request.role == TURN]
    assert len(turns) == SHAPE.turns * sum(LADDER) and all(r.request.ok for r in records)
    decoy_turns = SHAPE.turns * len(LADDER)  # a decoy pair a point, each replaying a whole session
    assert sorted(r.request.role for r in records if r.request.role != TURN) == sorted(
        [ALTERED, ALTERED + "-control"] * forbidden.PAIRS + [COPIED, COPIED + "-control"] * decoy_turns
    )
    found = {v.audit: v for v in verdicts(records, 6)}
    for name, pairs in (("altered_history", forbidden.PAIRS), ("copied_session", decoy_turns)):
        v = found[name]
        assert v.evidence["pairs"] == pairs and v.evidence["token_gap"] == 0, v.reason
        assert v.outcome == (FAIL if name in caught else PASS), v.reason
        if name in caught:  # at once, from the reply cache
            assert float(v.evidence["ratio"]) < 0.3
        else:
            assert float(v.evidence["ratio"]) > forbidden.FAST_RATIO
    if "altered_history" in caught:  # with the source turn's reply
        assert found["altered_history"].evidence["source_replies"] == forbidden.PAIRS
    assert found["session_salts"].outcome == PASS


def judged_on_stub(
    chosen: Sequence[TurnRecord], records: Sequence[TurnRecord], passes: Mapping[Load, Sequence[Session]]
) -> bool:
    """Whether the inline check passes ``chosen`` against the stub's own replies (its "reference": the
    reply an honest stub gives the conversation each request sent)."""
    asked = [asked_tokens(r, passes, 6) for r in chosen]
    texts = [
        "".join(reply_of(json.dumps(turn_messages(r, records, passes)))[:n])
        for r, n in zip(chosen, asked, strict=True)
    ]
    return judge([r.request for r in chosen], texts).passed


def test_audit_requests_answered_with_filler_are_judged_as_turns_are(tmp_path: Path) -> None:
    """A server that tells an altered pair's requests from the sessions' turns (a fresh session with a
    history; a history that does not extend its session's last) and answers them at once with filler
    passes every timing audit (probe and control alike fast) and, while only the turns were judged, the
    inline check too: it gained the audits' tokens and slots. Drawn among every request whose tokens
    count, its filler replies fail the check under most seeds (12 bad of 51: 81% a draw of 16)."""
    honest, cheap = ladder_records(HONEST, tmp_path / "honest"), ladder_records(CHEAP, tmp_path / "cheap")
    found = {v.audit: v for v in verdicts(cheap, 6)}
    assert found["altered_history"].outcome == PASS and found["copied_session"].outcome == PASS
    filler = [r for r in cheap if r.request.text.strip() and set(r.request.text.split()) == {"ok"}]
    assert sorted({r.request.role for r in filler}) == [ALTERED, ALTERED + "-control"], filler
    assert len(filler) == 2 * forbidden.PAIRS
    seeds = range(20)
    assert all(judged_on_stub(judged_replies(honest, seed, 16), honest, PASSES) for seed in seeds)
    turns_only = [r for r in cheap if r.request.role == TURN]
    assert all(judged_on_stub(judged_replies(turns_only, seed, 16), cheap, PASSES) for seed in seeds)
    failed = sum(not judged_on_stub(judged_replies(cheap, seed, 16), cheap, PASSES) for seed in seeds)
    assert failed >= 8, failed  # binomial(20, 0.81): under 8 once in about 10^5 runs


def replayed(record: TurnRecord) -> TurnRecord:
    """``record`` as a reply cache answers it: the whole reply 1 ms after the issue."""
    request = record.request
    at_s = request.issue_s + 1e-3
    chunks = tuple(at_s for _ in request.chunk_s)
    request = dataclasses.replace(request, first_content_s=at_s, end_s=at_s, chunk_s=chunks)
    return dataclasses.replace(record, request=request)


def test_a_cache_that_replays_one_point_only_is_caught_by_its_hits(tmp_path: Path) -> None:
    """A salt-blind cache that replays at the ladder's last point only (or any share of the decoys: one
    started late in the slots' queue, a share drawn at random) keeps the pooled ratio of the decoy turns
    near 1: the pooled rule alone passes it, while its decoy's turns are hits."""
    records = ladder_records(HONEST, tmp_path)
    last = Load(LADDER[-1])
    cheated = [replayed(r) if r.request.role == COPIED and Load.of(r.request) == last else r for r in records]
    honest = {v.audit: v for v in verdicts(records, 6)}["copied_session"]
    found = {v.audit: v for v in verdicts(cheated, 6)}["copied_session"]
    share, pairs = float(found.evidence["faster_share"]), int(found.evidence["pairs"])
    assert pairs == SHAPE.turns * len(LADDER), found.reason
    # the two honest points' decoys hold the median: the pooled ratio stays near 1 (the faster share
    # is a coin per honest pair, so it may reach the bar by chance; the ratio does not)
    pooled = forbidden.outcome(pairs, float(found.evidence["ratio"]), share)
    assert pooled == PASS and found.outcome == FAIL and found.evidence["hits"] == SHAPE.turns, found.reason
    assert honest.outcome == PASS and honest.evidence["hits"] == 0, honest.reason
    assert "3 hit(s)" in found.reason
    # a probe answered with no content (ok, no first token) makes no pair, and no hit
    silent = [
        dataclasses.replace(r, request=dataclasses.replace(r.request, first_content_s=None, chunk_s=()))
        if r.request.role == COPIED and Load.of(r.request) == last
        else r
        for r in records
    ]
    quiet = {v.audit: v for v in verdicts(silent, 6)}["copied_session"]
    assert quiet.evidence["hits"] == 0 and quiet.evidence["pairs"] == pairs - SHAPE.turns, quiet.reason


@pytest.mark.parametrize(("hits", "expected"), [(0, PASS), (1, PASS), (2, FAIL), (5, FAIL)])
def test_two_hits_fail_whatever_the_pooled_figures(hits: int, expected: str) -> None:
    assert forbidden.outcome(9, 0.9, 0.3, hits) == expected
    assert forbidden.outcome(2, 0.9, 0.3, hits) == INCONCLUSIVE


def test_verify_judges_a_stored_entry_again_by_this_codes_rule() -> None:
    from accelbench.audit_section import AuditEntry
    from accelbench.bundle.rejudge import verdict

    doctored = {"verdict": "pass", "reason": "", "pairs": 4, "ratio": 0.05, "faster_share": 1.0, "bar": 0.01}
    assert verdict("copied_session", AuditEntry.from_dict(doctored)).outcome == FAIL
    assert verdict("altered_history", AuditEntry.from_dict({**doctored, "ratio": 0.9})).outcome == PASS
    assert verdict("altered_history", AuditEntry("pass")).outcome == INCONCLUSIVE
    hit = {**doctored, "ratio": 0.9, "faster_share": 0.3, "hits": 3}  # a partial replay's hits
    assert verdict("copied_session", AuditEntry.from_dict(hit)).outcome == FAIL


def test_the_servers_cache_is_a_label_and_compare_names_a_difference() -> None:
    from accelbench.bundle.compare import _cache_difference
    from accelbench.endpoint.servers import prefix_cache

    on, off = prefix_cache("transformers-cb"), prefix_cache("transformers")
    assert on.startswith("on:") and off.startswith("off:") and prefix_cache("url").startswith("undeclared")
    assert prefix_cache("vllm") == "undeclared"
    assert _cache_difference(on, off) == (f"server prefix cache {on} vs {off}",)
    assert _cache_difference(on, "") == (f"server prefix cache {on} vs not recorded",)
    assert _cache_difference(on, on) == ()
