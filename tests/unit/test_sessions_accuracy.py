"""The sessions' inline accuracy check (``accelbench.sessions.accuracy``): which replies are judged (the
turns' and the audit requests'), the conversation each is judged with, and the verdicts it leads to."""

from __future__ import annotations

import dataclasses

import pytest

from accelbench.endpoint.accuracy import Accuracy, judge
from accelbench.endpoint.records import RequestRecord
from accelbench.sessions import forbidden
from accelbench.sessions.accuracy import asked_tokens, judged_replies, turn_messages
from accelbench.sessions.driver import decoy_sent
from accelbench.sessions.load import Load
from accelbench.sessions.outcome import status_of
from accelbench.sessions.records import Sent, TurnRecord
from accelbench.sessions.workload import SYSTEM_PROMPT, USER, Shape, make_sessions


def _request(concurrency: int, salt: str, text: str, role: str = "turn", ok: bool = True) -> RequestRecord:
    return RequestRecord(
        concurrency=concurrency,
        index=0,
        role=role,
        salt=salt,
        issue_s=0.0,
        send_s=0.0,
        first_content_s=0.1,
        end_s=0.5,
        chunk_s=(0.1, 0.5),
        text=text,
        output_tokens=len(text.split()),
        usage_output_tokens=None,
        usage_prompt_tokens=None,
        status="ok" if ok else "http 500",
        error="" if ok else "boom",
        finish_reason="length",
    )


PASSES = {Load(2): make_sessions(5, "load-2", 2, Shape(turns=3))}
RECORDS = [
    TurnRecord(s.number, t, USER, 0.0, 100, _request(2, s.salt, f"reply {s.number}.{t}"))
    for s in PASSES[Load(2)]
    for t in range(3)
]


AUDIT_SENT = Sent(({"role": "system", "content": "s"}, {"role": "user", "content": "edited history"}), 7)


def test_replies_are_drawn_from_the_secret_seed_among_the_turns_and_the_audit_requests() -> None:
    audit = TurnRecord(0, 1, USER, 0.0, 100, _request(2, "x", "copied", role="copied"), AUDIT_SENT)
    extra = [
        audit,
        TurnRecord(1, 2, USER, 0.0, 100, _request(2, "y", "failed", ok=False)),
        TurnRecord(1, 2, USER, 0.0, 100, _request(2, "z", "failed", role="altered", ok=False), AUDIT_SENT),
        TurnRecord(1, 2, USER, 0.0, 100, _request(2, "w", "warm", role="warm")),  # the reuse probe's
    ]
    records = RECORDS + extra
    drawn = judged_replies(records, 7, 4)
    assert len(drawn) == 4 and all(r.request.ok and r.request.role in ("turn", "copied") for r in drawn)
    assert drawn == judged_replies(records, 7, 4)  # the seed decides
    # every ok turn and ok audit request, in record order; no failed request, nothing unstored
    assert judged_replies(records, 7, 99) == [*RECORDS, audit]
    draws = {tuple((r.session, r.turn) for r in judged_replies(records, seed, 2)) for seed in range(40)}
    assert len(draws) > 5  # not a fixed choice: no position is safe for a cheat
    assert any(audit in judged_replies(records, seed, 2) for seed in range(40))  # no kind is safe either


def test_an_audit_request_is_judged_on_what_it_sent() -> None:
    audit = TurnRecord(1, 2, USER, 0.0, 100, _request(2, "x", "altered", role="altered"), AUDIT_SENT)
    assert turn_messages(audit, RECORDS, PASSES) == [dict(m) for m in AUDIT_SENT.messages]
    assert asked_tokens(audit, PASSES, 64) == 7
    assert asked_tokens(RECORDS[0], PASSES, 64) == (PASSES[Load(2)][0].turns[0].max_tokens or 64)
    again = TurnRecord.from_dict(audit.to_dict())
    assert again == audit and again.sent == AUDIT_SENT
    assert "sent" not in RECORDS[0].to_dict() and TurnRecord.from_dict(RECORDS[0].to_dict()).sent is None


def test_a_judged_turn_is_rebuilt_with_the_servers_real_replies_before_it() -> None:
    record = next(r for r in RECORDS if r.session == 1 and r.turn == 2)
    messages = turn_messages(record, RECORDS, PASSES)
    session = PASSES[Load(2)][1]
    assert messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert [m["role"] for m in messages[1:]] == ["user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in messages[2::2]] == ["reply 1.0", "reply 1.1"]
    assert [m["content"] for m in messages[1::2]] == [t.content for t in session.turns]
    first = turn_messages(RECORDS[0], RECORDS, PASSES)
    assert len(first) == 2 and first[1]["content"] == PASSES[Load(2)][0].turns[0].content
    with pytest.raises(ValueError, match="turns before 2 are missing"):
        turn_messages(record, [r for r in RECORDS if not (r.session == 1 and r.turn == 1)], PASSES)


def test_a_decoy_sessions_later_turns_store_their_new_message_and_are_rebuilt_whole() -> None:
    decoy = forbidden.DECOY_SESSION
    opening = ({"role": "system", "content": "s"}, {"role": "user", "content": "first"})
    chain = [
        TurnRecord(
            decoy, 0, USER, 0.0, 50, _request(2, "d", "answer 0", role="copied"), decoy_sent(opening, 0, 7)
        ),
        TurnRecord(
            decoy, 0, USER, 0.0, 50, _request(2, "e", "other 0", role="copied-control"), Sent(opening, 7)
        ),
    ]
    for turn in (1, 2):
        sent_here = (*opening, {"role": "user", "content": f"next {turn}"})  # only the last message is stored
        stored = decoy_sent(sent_here, turn, 7)
        assert stored == Sent(({"role": "user", "content": f"next {turn}"},), 7, continued=True)
        request = _request(2, "d", f"answer {turn}", role="copied")
        chain.append(TurnRecord(decoy, turn, USER, 0.0, 50, request, stored))
    records = RECORDS + chain
    assert turn_messages(chain[-1], records, PASSES) == [
        *opening,
        {"role": "assistant", "content": "answer 0"},  # the probe's own replies, not the control's
        {"role": "user", "content": "next 1"},
        {"role": "assistant", "content": "answer 1"},
        {"role": "user", "content": "next 2"},
    ]
    assert TurnRecord.from_dict(chain[-1].to_dict()) == chain[-1]
    assert chain[-1].to_dict()["sent"]["continued"] is True and "continued" not in chain[0].to_dict()["sent"]
    with pytest.raises(ValueError, match="turn 1 is missing"):
        turn_messages(chain[-1], [r for r in records if r is not chain[2]], PASSES)


def test_a_failed_check_is_quality_failed_and_a_padded_reply_disqualifies() -> None:
    chosen = [r.request for r in RECORDS[:4]]
    good = judge(chosen, [r.text for r in chosen])
    assert good.passed and good.mean_share == 1.0
    wrong = judge(chosen, ["something else entirely"] * 4)
    assert not wrong.passed
    turns = [dataclasses.replace(r) for r in RECORDS]
    (status, reason), _ = status_of(turns, [], "", 8, (wrong, None))
    assert status == "quality_failed" and "accuracy vs fp32 reference 0.00" in reason
    padded_reply = dataclasses.replace(chosen[0], text="reply 0.0 la la la la la la la la la la la la")
    padded = judge([padded_reply], ["reply 0.0 and then the model's own words"])
    assert padded.padded == 1
    (status, reason), _ = status_of(turns, [], "", 8, (padded, None))
    assert status == "disqualified" and reason.startswith("padding audit")
    (status, _), _ = status_of(turns, [], "", 8, (good, None))
    assert status in ("ok", "unverified")  # no forbidden-reuse pairs here: inconclusive at most
    assert isinstance(good, Accuracy)
