"""The reuse probe: the TTFT drop a reused prefix gives, measured by the client (issue 44 scope 3), and
the first step of the forbidden-reuse audit (scope 4).

After the ladder, turns drawn at random from the last load point (the draw keyed by the secret input
seed, so a server cannot tell which) are sent again one at a time, each in two forms in a drawn order:
- ``warm``: the turn's exact history (its session's own: reuse the rules allow);
- ``cold``: the same history as a fresh session: the session's salt replaced by a new one, so everything
  after the declared shared prefix (the system message) is new to the server.
The two have the same length but for the salt's tokenization (a few tokens); their TTFT ratio is
the drop reuse gives. An honest
server with a prefix cache shows ``warm`` faster than ``cold``; one without a cache shows no drop. A server
that reused across sessions (a cache blind to the salt) would show no drop either while it reports
``cached_tokens`` on ``cold``: the audit that judges this (and the one-token-altered history) is to come.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence

import numpy as np

from accelbench.cell.seeds import sub_seed
from accelbench.endpoint.client import Target
from accelbench.endpoint.figures import ttft_s
from accelbench.session_figures import ReuseFigures
from accelbench.sessions.driver import TURN, Counters, send_turns
from accelbench.sessions.records import TurnRecord
from accelbench.sessions.workload import Session, session_salt

PAIRS = 3
WARM = "warm"
COLD = "cold"


def drawn(records: Sequence[TurnRecord], input_seed: int, pairs: int = PAIRS) -> list[TurnRecord]:
    """Up to ``pairs`` ok turns after the first of their session, drawn from the secret seed."""
    later = [r for r in records if r.turn > 0 and r.request.ok and r.request.role == TURN]
    rng = np.random.default_rng(sub_seed(input_seed, "reuse-draw"))
    order = rng.permutation(len(later))[:pairs]
    return [later[int(i)] for i in sorted(order)]


def history(session: Session, turn: int) -> Session:
    """The session cut at ``turn``: its turns up to it."""
    return dataclasses.replace(session, turns=session.turns[: turn + 1])


def fresh(session: Session, salt: str) -> Session:
    """The same session under a new salt (a fresh session to the server)."""
    first = session.turns[0]
    renamed = dataclasses.replace(first, content=first.content.replace(session.salt, salt, 1))
    return dataclasses.replace(session, salt=salt, turns=(renamed, *session.turns[1:]))


def probe(
    target: Target,
    input_seed: int,
    sessions: Sequence[Session],
    records: Sequence[TurnRecord],
    max_tokens: int,
    counters: Counters,
) -> list[TurnRecord]:
    """The warm and cold sends of the drawn turns (``records``: the last load point's, of ``sessions``)."""
    rng = np.random.default_rng(sub_seed(input_seed, "reuse-order"))
    sent: list[TurnRecord] = []
    for number, chosen in enumerate(drawn(records, input_seed)):
        session = history(sessions[chosen.session], chosen.turn)
        replies = [r.request.text for r in records if r.session == chosen.session and r.turn < chosen.turn]
        cold = fresh(session, session_salt(input_seed, "reuse-cold", number))
        forms = [(WARM, session), (COLD, cold)]
        for role, form in forms if rng.uniform() < 0.5 else forms[::-1]:
            sent.append(asyncio.run(send_turns(target, form, replies, max_tokens, counters, role)))
    return sent


def figures(sent: Sequence[TurnRecord]) -> ReuseFigures:
    """The pairs' TTFTs and the server's cached tokens, by form."""
    warm = [r for r in sent if r.request.role == WARM and r.request.ok]
    cold = [r for r in sent if r.request.role == COLD and r.request.ok]
    warm_s = [t for r in warm if (t := ttft_s(r.request)) is not None]
    cold_s = [t for r in cold if (t := ttft_s(r.request)) is not None]
    warm_p50 = float(np.median(warm_s)) if warm_s else 0.0
    cold_p50 = float(np.median(cold_s)) if cold_s else 0.0
    cached = [r.request.usage_cached_tokens for r in sent if r.request.usage_cached_tokens is not None]
    return ReuseFigures(
        pairs=min(len(warm), len(cold)),
        context_tokens_p50=float(np.median([r.context_tokens for r in warm])) if warm else 0.0,
        warm_ttft_p50_s=warm_p50,
        cold_ttft_p50_s=cold_p50,
        ttft_drop=1.0 - warm_p50 / cold_p50 if cold_p50 > 0 else 0.0,
        warm_cached_tokens=_sum(warm) if cached else None,
        cold_cached_tokens=_sum(cold) if cached else None,
    )


def _sum(records: Sequence[TurnRecord]) -> int:
    return sum(r.request.usage_cached_tokens or 0 for r in records)
