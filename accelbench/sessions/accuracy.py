"""The inline accuracy check of a sessions cell (issue 44 scope 4): replies drawn after the run against
torch-eager fp32's greedy reply to the same conversation.

Which replies are judged is drawn after the ladder from the cell's secret input seed, across every ok
request of every load point whose tokens the point's rates count: the sessions' own turns and the
forbidden-reuse audits' requests (a decoy session's turns, an altered pair's probe and control), so a
server cannot tell which reply will be judged by its position, its session, its load or its kind. A
server that recognised an audit request and answered it with cheap text (the audits rest on their
requests being drawn with ``secrets`` and shaped like the load, yet an altered control is a fresh session
whose first request carries a history) is judged as one that did the same to a turn: each such reply
is a draw's chance of a reply below the floor. The reuse probe's requests (after the ladder, in no
point's rates) are not drawn.

A turn's conversation is rebuilt as the server received it: the system message, every earlier turn of
its session with the server's real reply, then the turn (``accelbench.sessions.driver.conversation``);
an audit request's is the one it stored (``TurnRecord.sent``: drawn with ``secrets`` during the run; a
decoy session's later turn stored only its new message, after its earlier request and that one's reply).
Through the model's chat template, the reference replies to that text, cut to the reply length the
request asked for, and the reply is judged as a curve's is (``accelbench.endpoint.accuracy.judge``: the
share of the reference's text it repeats from its start, a mean bar and a per-reply floor, padding where
it leaves the reference, or the reference continued past its EOS where it runs on).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from accelbench.cell.seeds import sub_seed
from accelbench.endpoint.accuracy import Accuracy, judge, run_on
from accelbench.generation.base import GenerationContext
from accelbench.generation.models import LlmModel
from accelbench.generation.reference import sent_reference
from accelbench.sessions.driver import TURN, conversation
from accelbench.sessions.load import Load
from accelbench.sessions.records import TurnRecord
from accelbench.sessions.workload import Session


def judged_replies(records: Sequence[TurnRecord], input_seed: int, count: int) -> list[TurnRecord]:
    """``count`` ok requests drawn from ``input_seed`` among the sessions' turns (role ``turn``) and the
    audit requests that stored what they sent, in record order."""
    pool = [r for r in records if r.request.ok and (r.request.role == TURN or r.sent is not None)]
    rng = np.random.default_rng(sub_seed(input_seed, "judged-turns"))
    drawn = {int(i) for i in rng.permutation(len(pool))[:count]}
    return [r for i, r in enumerate(pool) if i in drawn]


def turn_messages(
    record: TurnRecord, records: Sequence[TurnRecord], passes: Mapping[Load, Sequence[Session]]
) -> list[dict[str, str]]:
    """The conversation ``record``'s request sent: an audit request's as stored (a decoy's later turn: its
    request before, that one's reply, then what it stored), a turn's its session's script to that turn
    with the server's real replies to the earlier turns (``records``: the cell's)."""
    load = Load.of(record.request)
    if record.sent is not None and record.sent.continued:
        before = [
            r
            for r in records
            if Load.of(r.request) == load
            and (r.session, r.turn, r.request.role) == (record.session, record.turn - 1, record.request.role)
            and r.sent is not None
        ]
        if len(before) != 1:
            raise ValueError(
                f"{record.request.role} session {record.session} at {load}: turn {record.turn - 1} is missing"
            )
        history = turn_messages(before[0], records, passes)
        reply = {"role": "assistant", "content": before[0].request.text}
        return [*history, reply, *(dict(m) for m in record.sent.messages)]
    if record.sent is not None:
        return [dict(m) for m in record.sent.messages]
    session = _session(record, passes)
    earlier = sorted(
        (
            r
            for r in records
            if Load.of(r.request) == load
            and r.session == record.session
            and r.request.role == TURN
            and r.turn < record.turn
        ),
        key=lambda r: r.turn,
    )
    if [r.turn for r in earlier] != list(range(record.turn)):
        raise ValueError(f"session {record.session} at {load}: turns before {record.turn} are missing")
    script = dataclasses.replace(session, turns=session.turns[: record.turn + 1])
    return conversation(script, [r.request.text for r in earlier])


def asked_tokens(record: TurnRecord, passes: Mapping[Load, Sequence[Session]], max_tokens: int) -> int:
    """The reply length ``record``'s request asked for (``max_tokens``: where its turn sets none)."""
    if record.sent is not None:
        return record.sent.max_tokens
    return _session(record, passes).turns[record.turn].max_tokens or max_tokens


def _session(record: TurnRecord, passes: Mapping[Load, Sequence[Session]]) -> Session:
    """The timed session ``record``'s turn belongs to."""
    return next(s for s in passes[Load.of(record.request)] if s.number == record.session)


def check(
    model: LlmModel,
    tokenizer: Any,
    chosen: Sequence[TurnRecord],
    history: tuple[Sequence[TurnRecord], Mapping[Load, Sequence[Session]]],
    lengths: Sequence[int],
    ctx: GenerationContext,
) -> Accuracy:
    """The ``chosen`` turns (``lengths``: each one's reply length asked) against the reference's replies to
    their conversations (``history``: the cell's turns and each load's sessions)."""
    records, passes = history
    texts = [
        str(
            tokenizer.apply_chat_template(
                turn_messages(r, records, passes), tokenize=False, add_generation_prompt=True
            )
        )
        for r in chosen
    ]
    ids = [list(tokenizer(text, add_special_tokens=False)["input_ids"]) for text in texts]
    reference = sent_reference(model, ids, max(lengths), ctx, margins=False) if ids else None
    replies = [] if reference is None else list(reference.replies)
    cut = [
        tokenizer.decode(list(reply.tokens)[:length], skip_special_tokens=True)
        for reply, length in zip(replies, lengths, strict=True)
    ]
    requests = [r.request for r in chosen]
    return judge(requests, cut, run_on(model, tokenizer, (requests, cut), (ids, lengths), ctx))
