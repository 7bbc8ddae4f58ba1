"""The audits of forbidden KV reuse (issue 44 scope 4): requests slipped into the load that an honest
server must answer cold, timed against cold controls of the same token count.

``altered`` (``altered_history``): ``PAIRS`` pairs at places drawn with ``secrets`` over every load
point's turns after the first of their session (the source turn). Each pair is sent from its own task
once the source turn has been answered, after a think delay drawn from the workload's range, in two of
the point's slots (``accelbench.sessions.slots``: a point of N sessions has no more than N requests in
flight): the probe and its control *at once* (both in flight together, so a batching server prefills
them in the same step and the load around them is the same for both), the one that reaches the server
first drawn per pair, as many controls first as probes first (sent one after the other, the second of a
pair was up to 10x faster as the load drained, and a coin per pair put the probe second in 5 of 6
pairs of an honest run). The probe is the source turn's history in its own session (its salt, its
``X-Session-ID``: an agent resending an edited history), with one word of the first user message (the
first after the salt, so the change sits before any cache page a server could have kept) replaced by
another word of the same token count. An honest server, prefix cache included, reuses at most the
system prompt and the salt and computes the rest; a server that replays the stored reply of a history
that changed by one token answers at once. Its control: the history as a fresh session with a new salt
and the words of every user and tool message shuffled (the first word kept), redrawn until the client's
token count is the source's (stored with each record; the largest gap is in the evidence).

``copied`` (``copied_session``): a *decoy* pair a load point (``decoys``). The probe is a session of the
pass before (the warm-up pass's at the first point; one whose every turn was answered, drawn with
``secrets``) replayed whole under a new salt of the same token count, a session like any other of the
point: a fresh session id, its first request one user message, each later turn with its own replies;
the control is that session with a new salt and each message's words shuffled (the first word kept, the
message's token count kept). Both start with the point's sessions, in the slots' queue in an order drawn
with ``secrets`` (a rate point: at the arrival of one of its sessions, drawn), and their turns pair by
turn index. An honest server cannot reuse past the system prompt in either (a session's own history
within it); a cache blind to the salt answers the probe from the earlier pass's entries. Stop 54's
copied probe was the source turn's history sent as a fresh session: a shape no timed turn has, so a
salt-blind cache that spared that shape passed the audit while it replayed a replayed text trace's
later passes (the same texts under new salts: ``tests/unit/session_stub.py``'s ``salt-blind-shy``). A
decoy has the shape and the relation to earlier content of exactly the requests such a cache would
replay.

A kind fails like the served repeat audit (``accelbench.endpoint.repeat``): the probes' median TTFT
below ``FAST_RATIO`` of the controls' AND the probe the faster in ``FASTER_SHARE`` of the pairs (one
slow outlier cannot fail an honest server); or ``HITS`` *hits* or more, a hit being a probe whose TTFT,
or whose time from issue to end per token, is under ``HIT_RATIO`` of its control's and of its point's
median (the served repeat's hit). The hits close what pooling leaves open: a cache that replays some
sessions only (those that start late in a point's queue, one point of the ladder, a share drawn at
random) keeps the pooled share of faster probes under the bar while each decoy it replays is a run of
hits (stop 55 measured a cache sparing late starters pooled at about 58% faster pairs). Honest hits,
measured on the 32 runs of stop 55's false-alarm count (480 pairs): none; the lowest honest pair read
x0.47 of the lower of its control and its point's median, against the hit bar x0.1. Fewer than 3
answered pairs is inconclusive. An altered
probe's replies equal to the source turn's are counted as evidence, not judged: a greedy model may
answer a one-word change with the same words.
"""

from __future__ import annotations

import dataclasses
import random
import re
import secrets
import statistics
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from accelbench.audits.verdict import FAIL, INCONCLUSIVE, PASS, Verdict
from accelbench.endpoint.figures import ttft_s
from accelbench.endpoint.repeat import HIT_RATIO, HITS, low_ratio, per_token_s, point_medians
from accelbench.sessions.load import Load
from accelbench.sessions.records import TurnRecord
from accelbench.sessions.workload import Session

ALTERED = "altered"
COPIED = "copied"
KINDS = (ALTERED, COPIED)
CONTROL = "-control"
PAIRS = 6
FAST_RATIO = 0.25
FASTER_SHARE = 0.8
SALT_TRIES = 64
VERDICT_NAMES = {ALTERED: "altered_history", COPIED: "copied_session"}
DECOY_SESSION = 1_000_000
"""The first decoy's session number in the records (the timed sessions' are 0 .. N-1)."""
DECOYS = 1
"""Decoy pairs a load point (each adds two sessions to the point's slots' queue)."""

Messages = Sequence[Mapping[str, str]]
K = TypeVar("K", bound=Hashable)
"""A load point's key (``accelbench.sessions.load.Load``; a bare count in the tests)."""


@dataclass(frozen=True, slots=True)
class Audit:
    """One pair slipped into a load point: its kind, its source turn, when and in which order."""

    kind: str
    session: int
    turn: int
    delay_s: float
    control_first: bool


@dataclass(frozen=True, slots=True)
class Form:
    """One request of a pair: its role, salt, session id and conversation."""

    role: str
    salt: str
    session_id: str
    messages: tuple[Mapping[str, str], ...]


def plan(ladder: Sequence[int], turns: int, delay_s: tuple[float, float]) -> dict[int, list[Audit]]:
    """The altered pairs of each point of ``ladder``, every session ``turns`` turns long (``plan_turns``)."""
    return plan_turns({load: [turns] * load for load in ladder}, delay_s)


def plan_turns(turns: Mapping[K, Sequence[int]], delay_s: tuple[float, float]) -> dict[K, list[Audit]]:
    """The altered pairs of each load point (``turns``: each point's sessions' turn counts, by its load):
    ``PAIRS`` at distinct source turns drawn with ``secrets`` over every point's turns after
    the first of their session (fewer when there are fewer such turns)."""
    draw = random.SystemRandom()
    slots = [
        (load, s, t) for load, counts in turns.items() for s, n in enumerate(counts) for t in range(1, n)
    ]
    planned: dict[K, list[Audit]] = {load: [] for load in turns}
    chosen = draw.sample(slots, min(PAIRS, len(slots)))  # the copied audit is the decoys' (``decoys``)
    firsts = [i % 2 == 1 for i in range(len(chosen))]  # as many controls first as probes first
    draw.shuffle(firsts)
    for (load, s, t), control_first in zip(chosen, firsts, strict=True):
        planned[load].append(Audit(ALTERED, s, t, draw.uniform(*delay_s), control_first))
    return planned


def forms(
    audit: Audit, salt: str, history: Messages, count: Callable[[Messages], int], session_id: str
) -> list[Form]:
    """The probe and the control of the altered ``audit`` in their sending order (``history``: the
    source turn's conversation as sent, ``salt`` and ``session_id`` its session's; the copied audit's
    are sessions: ``decoys``)."""
    base = count(history)
    probe = Form(ALTERED, salt, session_id, altered(history, salt, count, base))
    new = matched_salt(history, salt, count, base)
    control = Form(
        ALTERED + CONTROL, new, new[:16], matched_shuffle(resalted(history, salt, new), count, base)
    )
    return [control, probe] if audit.control_first else [probe, control]


def decoys(source: Session, count: Callable[[Messages], int], index: int) -> tuple[Session, Session]:
    """The copied audit's two decoy sessions of ``source`` (a session of an earlier pass the server
    answered), each numbered ``DECOY_SESSION + index``: the probe replays ``source`` whole under a new salt
    (of the same token count); the control has a new salt and the words of every message shuffled (the
    first word kept), each message of its source's token count (``count`` of it alone)."""
    head = [
        {"role": "system", "content": source.system},
        {"role": "user", "content": source.turns[0].content},
    ]
    tokens = count(head)
    new = matched_salt(head, source.salt, count, tokens)
    probe = [dataclasses.replace(t, content=t.content.replace(source.salt, new)) for t in source.turns]
    other = matched_salt(head, source.salt, count, tokens)
    control = []
    for turn in source.turns:
        message = ({"role": "user", "content": turn.content.replace(source.salt, other)},)
        shuffled_turn = matched_shuffle(message, count, count(message))
        control.append(dataclasses.replace(turn, content=shuffled_turn[0]["content"]))
    number = DECOY_SESSION + index
    return (
        Session(number, new, tuple(probe), source.system),
        Session(number, other, tuple(control), source.system),
    )


def resalted(history: Messages, salt: str, new: str) -> tuple[Mapping[str, str], ...]:
    """``history`` with the session's salt replaced by ``new`` (once: in the first user message)."""
    return tuple({**m, "content": m["content"].replace(salt, new)} for m in history)


def matched_salt(history: Messages, salt: str, count: Callable[[Messages], int], tokens: int) -> str:
    """A new salt (``secrets``) whose history counts ``tokens``, the last drawn when none does."""
    new = secrets.token_hex(16)
    for _ in range(SALT_TRIES):
        if count(resalted(history, salt, new)) == tokens:
            return new
        new = secrets.token_hex(16)
    return new


def altered(
    history: Messages, salt: str, count: Callable[[Messages], int], tokens: int
) -> tuple[Mapping[str, str], ...]:
    """``history`` with the first word after the salt replaced by another word of the conversation's
    user messages, the first that keeps the token count (any other word when none does)."""
    first = next(i for i, m in enumerate(history) if salt in m["content"])
    head, _, rest = history[first]["content"].partition("] ")
    words = rest.split(" ")
    pool = [w for m in history if m["role"] == "user" for w in m["content"].split(" ") if w != words[0]]
    pool = [w for w in dict.fromkeys(pool) if re.fullmatch(r"[A-Za-z]+", w)] or ["changed"]
    out = list(history)
    for word in pool:
        out[first] = {**history[first], "content": f"{head}] {' '.join([word, *words[1:]])}"}
        if count(out) == tokens:
            break
    return tuple(out)


def matched_shuffle(
    history: Messages, count: Callable[[Messages], int], tokens: int
) -> tuple[Mapping[str, str], ...]:
    """``shuffled(history)`` that counts ``tokens`` (a word moved next to punctuation can merge or
    split a token), the last drawn when none does in ``SALT_TRIES``."""
    for _ in range(SALT_TRIES):
        out = shuffled(history)
        if count(out) == tokens:
            break
    return out


def shuffled(history: Messages) -> tuple[Mapping[str, str], ...]:
    """``history`` with the words of every user and tool message after the first shuffled (``secrets``)."""
    draw = random.SystemRandom()
    out = []
    for m in history:
        if m["role"] == "user":
            first, *rest = m["content"].split(" ")
            draw.shuffle(rest)
            m = {**m, "content": " ".join([first, *rest])}
        out.append(m)
    return tuple(out)


def verdict(kind: str, records: Sequence[TurnRecord]) -> Verdict:
    """The probes of ``kind`` against their controls (see the module text)."""
    name = VERDICT_NAMES[kind]
    pairs = _pairs(kind, records)
    timed = [(ttft_s(p.request), ttft_s(c.request), p, c) for p, c in pairs if p.request.ok and c.request.ok]
    both = [(a, b) for a, b, _, _ in timed if a is not None and b is not None]
    if len(both) < 3:
        return Verdict(name, INCONCLUSIVE, f"only {len(both)} {kind}/control pairs answered")
    probe_s = statistics.median(a for a, _ in both)
    control_s = statistics.median(b for _, b in both)
    ratio = probe_s / control_s if control_s > 0 else 1.0
    faster = sum(a < b for a, b in both) / len(both)
    gap = max(abs(p.context_tokens - c.context_tokens) for _, _, p, c in timed)
    lows = pair_lows([(p, c) for a, b, p, c in timed if a is not None and b is not None], records)
    hits = sum(low < HIT_RATIO for low in lows)
    judged = outcome(len(both), ratio, faster, hits)
    reason = (
        f"{kind} turns' median TTFT {probe_s * 1e3:.1f} ms vs cold controls {control_s * 1e3:.1f} ms "
        f"(x{ratio:.2f}, bar x{FAST_RATIO}); {kind} faster in {faster:.0%} of {len(both)} pairs; "
        f"{hits} hit(s) under x{HIT_RATIO} of control and point (bar {HITS})"
    )
    evidence = {"ratio": round(ratio, 4), "faster_share": round(faster, 4), "pairs": len(both)}
    evidence |= {"bar": FAST_RATIO, "token_gap": gap, "hits": hits, "lowest": round(min(lows), 4)}
    if kind == ALTERED:  # a decoy's source is an earlier pass's session, not a turn of its point
        replayed = _source_replies([p for _, _, p, _ in timed], records)
        reason += f"; {replayed} replies equal to the source turn's"
        evidence["source_replies"] = replayed
    return Verdict(name, judged, reason, evidence)


def _source_replies(probes: Sequence[TurnRecord], records: Sequence[TurnRecord]) -> int:
    """How many of the altered ``probes`` were answered with their source turn's reply."""
    sources = {(Load.of(r.request), r.session, r.turn): r for r in records if r.request.role == "turn"}
    return sum(
        p.request.text == s.request.text
        for p in probes
        if (s := sources.get((Load.of(p.request), p.session, p.turn))) is not None
    )


def outcome(pairs: int, ratio: float, faster_share: float, hits: int = 0) -> str:
    """The rule, from its stored evidence: fewer than 3 pairs is inconclusive; probes under
    ``FAST_RATIO`` of the controls' TTFT and the faster in ``FASTER_SHARE`` of the pairs fail, and so do
    ``HITS`` hits or more. The run and ``verify`` both judge with it."""
    if pairs < 3:
        return INCONCLUSIVE
    faster = ratio < FAST_RATIO and faster_share >= FASTER_SHARE
    return FAIL if faster or hits >= HITS else PASS


def pair_lows(pairs: Sequence[tuple[TurnRecord, TurnRecord]], records: Sequence[TurnRecord]) -> list[float]:
    """Each (probe, control) pair's lower hit ratio (both answered with content: a pair without a first
    token is no hit), the probe's TTFT and its time per token, each over the lower of its control's and
    its load point's median over every answered request."""
    requests = [r.request for r in records]
    lows = []
    for time_of in (ttft_s, per_token_s):
        medians = point_medians(requests, time_of, Load.of)
        lows.append(
            [low_ratio(time_of(p.request), time_of(c.request), medians[Load.of(p.request)]) for p, c in pairs]
        )
    return [min(by_time) for by_time in zip(*lows, strict=True)]


def verdicts(records: Sequence[TurnRecord]) -> tuple[Verdict, ...]:
    """Both kinds' verdicts."""
    return tuple(verdict(kind, records) for kind in KINDS)


def _pairs(kind: str, records: Sequence[TurnRecord]) -> list[tuple[TurnRecord, TurnRecord]]:
    """(probe, control) of ``kind``, matched by load point and source turn."""
    key = lambda r: (Load.of(r.request), r.session, r.turn)  # noqa: E731
    controls = {key(r): r for r in records if r.request.role == kind + CONTROL}
    return [(r, controls[key(r)]) for r in records if r.request.role == kind and key(r) in controls]
