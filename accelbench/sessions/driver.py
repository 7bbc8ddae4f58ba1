"""The session driver: a load of concurrent sessions, each turn sent with the conversation so far.

One asyncio loop per load point, one aiohttp session with a new connection per request (the endpoint
client, ``accelbench.endpoint.client.send``). Each session waits its turn's think delay, appends the turn's
message, sends the whole conversation on the chat API (with the session's ``X-Session-ID`` header, MLPerf
Endpoints' routing hint), and appends the server's *real* reply as the
assistant's message before its next turn. A turn's issue time is when its delay ended (so TTFT holds no
think time); a failed turn ends its session (the turns after it cannot be sent honestly: their history
would lack a reply). Nothing here raises for a failed request: the failure is the record's status.

A closed-loop point of N sessions holds at most N requests in flight: a turn takes one of its slots, a
forbidden-reuse audit pair two (``accelbench.sessions.slots``), so the pairs take the sessions' places
instead of adding load beside the timed turns.

A rate point (``accelbench.sessions.load``: an open loop) starts each session at its drawn arrival time
instead (its first turn's issue is that time, so a late client counts against nobody but the point),
stops starting sessions once one is due while the cap's sessions are in flight, and stores its requests
with ``concurrency`` 0 and ``target_qps`` its rate, as the endpoint curve's open loop does.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, TypeVar

from accelbench.endpoint.client import Prompt, Slot, Target, send, sized
from accelbench.endpoint.records import RequestRecord
from accelbench.sessions.forbidden import CONTROL, COPIED, Audit, Form, forms
from accelbench.sessions.load import Opened, Opening
from accelbench.sessions.records import Sent, TurnRecord
from accelbench.sessions.slots import PAIR_SLOTS, Slots
from accelbench.sessions.workload import MAX_TURNS, Session

TURN = "turn"
"""The role of a timed turn's request."""
DECOY_ROLES = (COPIED, COPIED + CONTROL)
"""The roles of a decoy pair's requests: the probe session's and the control session's."""

Messages = Sequence[Mapping[str, str]]
T = TypeVar("T")
Counters = tuple[Callable[[str], int], Callable[[Messages], int]]
"""The client's token counts: a reply's text, and a conversation as the chat template renders it."""


def run_load(
    target: Target,
    sessions: Sequence[Session],
    max_tokens: int,
    count_tokens: Callable[[str], int],
    count_context: Callable[[Messages], int],
    audits: Sequence[Audit] = (),
) -> list[TurnRecord]:
    """Run every session at once, with the forbidden-reuse ``audits`` slipped in
    (``accelbench.sessions.forbidden``); the records ordered by session, then turn (a pair after the
    turn it copies)."""
    return run_point(target, sessions, max_tokens, (count_tokens, count_context), audits)[0]


def run_point(
    target: Target,
    sessions: Sequence[Session],
    max_tokens: int,
    counters: Counters,
    audits: Sequence[Audit] = (),
    opening: Opening | None = None,
    decoys: Sequence[tuple[Session, Session]] = (),
) -> tuple[list[TurnRecord], Opened | None]:
    """A load point: every session at once (a closed loop), or with ``opening`` each at its arrival
    time, no more started once the point falls behind (``accelbench.sessions.load``), with the copied
    audit's ``decoys`` (probe and control sessions, ``forbidden.decoys``) among them; the records ordered
    by session, then turn (a pair after the turn it copies, the decoys last), and what the rate point did
    (None: closed)."""
    load = asyncio.run(_load(target, sessions, max_tokens, counters, (audits, decoys), opening))
    records = sorted(load.records, key=lambda r: (r.session, r.turn, r.request.role != TURN))
    return records, load.opened()


async def _load(
    target: Target,
    sessions: Sequence[Session],
    max_tokens: int,
    counters: Counters,
    slipped: tuple[Sequence[Audit], Sequence[tuple[Session, Session]]],
    opening: Opening | None,
) -> _Load:
    import aiohttp

    audits, decoys = slipped
    connector = aiohttp.TCPConnector(force_close=True, limit=0)
    timeout = aiohttp.ClientTimeout(total=target.timeout_s)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="session-counts") as counting:
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as client:
            load = _Load(client, target, sessions, max_tokens, counters, opening, audits)
            load.counting = counting
            starts = [load.session(s) for s in sessions]
            starts += [load.decoy(d, r) for pair in decoys for d, r in zip(pair, DECOY_ROLES, strict=True)]
            random.SystemRandom().shuffle(starts)  # the decoys wait for their slots among the sessions
            await asyncio.gather(*starts, *(load.pair(a) for a in audits))
    return load


class _Load:
    """One load point in flight: its sessions' turns and the audit pairs waiting on them."""

    def __init__(
        self,
        client: Any,
        target: Target,
        sessions: Sequence[Session],
        max_tokens: int,
        counters: Counters,
        opening: Opening | None = None,
        audits: Sequence[Audit] = (),
    ) -> None:
        self.client, self.target, self.sessions, self.max_tokens = client, target, sessions, max_tokens
        self.count_tokens, self.count_context = counters
        self.opening = opening
        self.concurrency = 0 if opening else len(sessions)  # an open loop's requests: 0 and their rate
        self.clock0 = time.perf_counter()
        self.records: list[TurnRecord] = []
        self.answered = {(s.number, t): asyncio.Event() for s in sessions for t in range(len(s.turns))}
        self.sent_history: dict[tuple[int, int], tuple[dict[str, str], ...]] = {}
        self.in_flight, self.peak_in_flight, self.behind = 0, 0, ""
        self.started_s: list[float] = []
        self.started: set[int] = set()
        self.counting: Executor | None = None
        """Where conversations are counted and audit forms drawn (one thread: their tokenizer is used
        nowhere else meanwhile, ``sessions.cell``), so the event loop reads the chunks in flight on time;
        None: on the loop."""
        """The sessions a rate point started."""
        self.placed = {(a.kind, a.session, a.turn) for a in audits}
        """The turns a pair of each kind holds (a moved pair takes a free one)."""
        self.slots = Slots(len(sessions)) if opening is None and sessions else None
        """A closed loop's slots, which its audit pairs take too (``sessions.slots``); None: an open loop."""

    def opened(self) -> Opened | None:
        """What the rate point did (None: a closed loop)."""
        if self.opening is None:
            return None
        started = tuple(self.started_s)
        return Opened(self.opening.rate_per_s, len(started), started, self.peak_in_flight, self.behind)

    def _moved(self, audit: Audit) -> Audit | None:
        """``audit`` on a turn after the first of a session the point started, drawn with ``secrets``
        among those no pair of its kind holds (None: none is free). A point behind starts no session
        after its first unstarted one, so the started ones are known once a pair's source was refused."""
        free = [
            (number, turn)
            for number in sorted(self.started)
            for turn in range(1, len(self.sessions[number].turns))
            if (audit.kind, number, turn) not in self.placed
        ]
        if not free:
            return None
        number, turn = random.SystemRandom().choice(free)
        self.placed.add((audit.kind, number, turn))
        return dataclasses.replace(audit, session=number, turn=turn)

    async def _send(self, prompt: Prompt, length: int, slot: Slot) -> RequestRecord:
        sized_target = sized(self.target, length)
        sent = await send(self.client, sized_target, prompt, length, slot, self.count_tokens, self.clock0)
        rate = self.opening.rate_per_s if self.opening else None
        return sent if rate is None else dataclasses.replace(sent, target_qps=rate)

    async def decoy(self, session: Session, role: str) -> None:
        """A decoy session of the copied audit (``forbidden.decoys``): its turns as a session's, under
        ``role``; in a closed loop from the point's start (in the slots' queue, among the sessions), in
        an open loop from the arrival of one of the point's sessions drawn with ``secrets``."""
        due_s = 0.0
        if self.opening is not None:
            due_s = random.SystemRandom().choice(self.opening.arrivals_s)
            await asyncio.sleep(max(0.0, self.clock0 + due_s - time.perf_counter()))
        await self._turns(session, due_s, role)

    async def session(self, session: Session) -> None:
        """Its turns in order, each after its delay, with the conversation so far (a rate point's: from
        its arrival time, unless the point fell behind)."""
        try:
            due_s = await self._arrival(session)
            if due_s is None:
                return
            try:
                await self._turns(session, due_s)
            finally:
                self.in_flight -= 1
        finally:  # a session that ended early (or never started) frees the pairs waiting on its turns
            for t in range(len(session.turns)):
                self.answered[session.number, t].set()

    async def _arrival(self, session: Session) -> float | None:
        """When a rate point's session is due (its arrival; a closed loop: 0.0, its turn's delay decides);
        None when the rate point has fallen behind (a session due while the cap's sessions are in flight:
        none starts after it)."""
        if self.opening is not None:
            arrival_s = self.opening.arrivals_s[session.number]
            await asyncio.sleep(max(0.0, self.clock0 + arrival_s - time.perf_counter()))
            if self.behind or self.in_flight >= self.opening.in_flight_cap:
                self.behind = self.behind or (
                    f"session {session.number} due at {arrival_s:.2f} s with {self.in_flight} in flight "
                    f"(the cap {self.opening.in_flight_cap}): {len(self.started_s)} of "
                    f"{len(self.sessions)} started"
                )
                return None
            self.started_s.append(time.perf_counter() - self.clock0)
            self.started.add(session.number)
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        return self.opening.arrivals_s[session.number] if self.opening else 0.0

    async def _turns(self, session: Session, first_due_s: float, role: str = TURN) -> None:
        """The session's turns in order, each with the conversation so far and the server's replies (a
        timed session's answers open the pairs waiting on its turns; a decoy's, ``role``, open none)."""
        messages: list[dict[str, str]] = [{"role": "system", "content": session.system}]
        for number, turn in enumerate(session.turns):
            await asyncio.sleep(turn.delay_s)
            messages.append({"role": "user", "content": turn.content})
            prompt = Prompt(session.salt, tuple(dict(m) for m in messages), "", session_id(session))
            length = turn.max_tokens or self.max_tokens
            async with self._held(1):
                due_s = first_due_s if number == 0 and self.opening else time.perf_counter() - self.clock0
                slot = Slot(self.concurrency, _index(session, number), role, due_s)
                sent = await self._send(prompt, length, slot)
            context = await self._counted(self.count_context, messages)  # the other turns stream on
            self.records.append(
                TurnRecord(
                    session=session.number,
                    turn=number,
                    kind=turn.kind,
                    delay_s=turn.delay_s,
                    context_tokens=context,
                    request=sent,
                    sent=None if role == TURN else decoy_sent(prompt.messages, number, length),
                )
            )
            if not sent.ok:
                return
            if role == TURN:
                self.sent_history[session.number, number] = tuple(dict(m) for m in messages)
                self.answered[session.number, number].set()
            messages.append({"role": "assistant", "content": sent.text})

    async def pair(self, audit: Audit) -> None:
        """The audit's two forms of a turn once it was answered, sent at once (a rate point's pair whose
        source session never started: moved to a turn of a started one, ``_moved``)."""
        await self.answered[audit.session, audit.turn].wait()
        if self.opening is not None and audit.session not in self.started:
            moved = self._moved(audit)
            if moved is None:
                return
            audit = moved
            await self.answered[audit.session, audit.turn].wait()
        history = self.sent_history.get((audit.session, audit.turn))
        if history is None:  # the source turn failed: nothing to copy
            return
        await asyncio.sleep(audit.delay_s)
        source = self.sessions[audit.session]
        kind = source.turns[audit.turn].kind
        length = source.turns[audit.turn].max_tokens or self.max_tokens
        # drawing the forms tokenizes the history many times: off the event loop, which meanwhile reads
        # the chunks of the turns in flight (on it, their first chunks were read up to 90 ms late)
        pair_forms, contexts = await self._counted(self._forms, audit, source, history)
        prompts = [Prompt(f.salt, f.messages, "", f.session_id) for f in pair_forms]
        async with self._held(PAIR_SLOTS):  # in the sessions' places: the point's load stays N requests
            due_s = time.perf_counter() - self.clock0
            places = [Slot(self.concurrency, _index(source, audit.turn), f.role, due_s) for f in pair_forms]
            # at once, the first form the first to reach the server
            sends = (self._send(p, length, s) for p, s in zip(prompts, places, strict=True))
            both = await asyncio.gather(*sends)
        for sent, context, prompt in zip(both, contexts, prompts, strict=True):
            self.records.append(
                TurnRecord(
                    session=audit.session,
                    turn=audit.turn,
                    kind=kind,
                    delay_s=0.0,
                    context_tokens=context,
                    request=sent,
                    sent=Sent(prompt.messages, length),
                )
            )

    @contextlib.asynccontextmanager
    async def _held(self, wanted: int) -> AsyncIterator[None]:
        """``wanted`` of a closed loop's slots while the body's requests are in flight (open: none)."""
        if self.slots is None:
            yield
            return
        async with self.slots.held(wanted):
            yield

    async def _counted(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` on the counting thread (on the loop when there is none)."""
        if self.counting is None:
            return work(*args)
        return await asyncio.get_running_loop().run_in_executor(self.counting, work, *args)

    def _forms(self, audit: Audit, source: Session, history: Messages) -> tuple[list[Form], list[int]]:
        """The audit's two forms of ``source``'s turn (``forbidden.forms``) and each one's context tokens."""
        pair_forms = forms(audit, source.salt, history, self.count_context, session_id(source))
        return pair_forms, [self.count_context(form.messages) for form in pair_forms]


def decoy_sent(messages: Messages, turn: int, length: int) -> Sent:
    """What a decoy session's ``turn`` sent, as stored: its first turn's whole conversation, a later
    turn's added message alone (its history is the decoy's request before it and that one's reply)."""
    if turn == 0:
        return Sent(tuple(messages), length)
    return Sent((dict(messages[-1]),), length, continued=True)


def conversation(session: Session, replies: Sequence[str]) -> list[dict[str, str]]:
    """The messages of ``session``'s last turn: the system message, every turn before it with its reply
    (``replies``, one per earlier turn), then the last turn."""
    messages = [{"role": "system", "content": session.system}]
    for turn, reply in zip(session.turns[:-1], replies, strict=True):
        messages += [{"role": "user", "content": turn.content}, {"role": "assistant", "content": reply}]
    return [*messages, {"role": "user", "content": session.turns[-1].content}]


async def send_turns(
    target: Target, session: Session, replies: Sequence[str], max_tokens: int, counters: Counters, role: str
) -> TurnRecord:
    """Send ``session``'s last turn alone, with its history (``replies``), as a request of ``role``."""
    import aiohttp

    messages = conversation(session, replies)
    prompt = Prompt(session.salt, tuple(messages), "", session_id(session))
    connector = aiohttp.TCPConnector(force_close=True, limit=0)
    timeout = aiohttp.ClientTimeout(total=target.timeout_s)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as client:
        clock0 = time.perf_counter()
        slot = Slot(0, _index(session, len(session.turns) - 1), role, 0.0)
        length = session.turns[-1].max_tokens or max_tokens
        sent = await send(client, sized(target, length), prompt, length, slot, counters[0], clock0)
    last = session.turns[-1]
    return TurnRecord(
        session=session.number,
        turn=len(session.turns) - 1,
        kind=last.kind,
        delay_s=0.0,
        context_tokens=counters[1](messages),
        request=sent,
    )


def session_id(session: Session) -> str:
    """The ``X-Session-ID`` of a session: the head of its salt (unique per session and pass, as the salt)."""
    return session.salt[:16]


def _index(session: Session, turn: int) -> int:
    """The request's number within its point: sessions' turns numbered one session after another (by
    the longest a session of the point may have: a replayed trace's sessions differ in length)."""
    return session.number * MAX_TURNS + turn


def context_counter(tokenizer: Any) -> Callable[[Messages], int]:
    """Counts a conversation's tokens as the chat template renders it, generation prompt included."""

    def count(messages: Messages) -> int:
        ids = tokenizer.apply_chat_template(list(messages), tokenize=True, add_generation_prompt=True)
        ids = ids["input_ids"] if isinstance(ids, Mapping) else ids
        return len(ids)

    return count
