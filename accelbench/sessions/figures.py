"""The figures of a load point of sessions from its turn records (pure arithmetic).

TTFT and TPOT per turn are the endpoint curve's (``accelbench.endpoint.figures``: issue to the first
non-empty chunk; (last chunk - first content) / (tokens - 1)). A turn's time is its issue to its end (its
think delay before the issue is not the server's). ``e2e_interactivity`` is MLPerf Endpoints': the ok
turns' output tokens over their summed turn times. A session's latency is its first issue to its last end,
think delays included (the job time a user waits). The span of the point is its first request's issue to
its last request's end, the audit requests it sent included; the system rates are every token the server
took and gave in it (the turns' and the audit requests') over the span: the audits' requests hold slots of
the point's N (``accelbench.sessions.slots``) and the server answers them like any: the turns' tokens
alone read the server's rate at 0.45 of AIPerf's at 4 sessions x 4 turns (stop 63, 6 pinned rounds of
stop 61 read again), with the audits' 0.84. Latencies, TTFT, TPOT, interactivity and goodput are the
turns'. Tokens are the client's counts. Goodput (MLPerf Endpoints' and AIPerf's, per turn): the ok turns
whose TTFT and TPOT are within the per-turn SLO, per second of the span; a good session is one whose
every turn is. A rate point's figures are the same, of the sessions it
started, with its offered and achieved arrival rates beside them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from accelbench.endpoint.energy import PointEnergy
from accelbench.endpoint.figures import Bounds, tpot_s, ttft_s
from accelbench.endpoint.records import RequestRecord
from accelbench.session_figures import SessionPoint, TurnFigures
from accelbench.sessions.load import Opened
from accelbench.sessions.records import TurnRecord

UNBOUNDED = Bounds(math.inf, math.inf)


def _pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else 0.0


def session_latencies_s(records: Sequence[TurnRecord]) -> list[float]:
    """Each session's first issue to its last end, in session order."""
    sessions = sorted({r.session for r in records})
    spans = []
    for number in sessions:
        mine = [r.request for r in records if r.session == number]
        spans.append(max(r.end_s for r in mine) - min(r.issue_s for r in mine))
    return spans


def by_turn(records: Sequence[TurnRecord]) -> tuple[TurnFigures, ...]:
    """The ok turns grouped by turn number: how many, their median context, TTFT and TPOT."""
    figures = []
    for number in sorted({r.turn for r in records}):
        ok = [r for r in records if r.turn == number and r.request.ok]
        ttfts = [t for r in ok if (t := ttft_s(r.request)) is not None]
        tpots = [t for r in ok if (t := tpot_s(r.request)) is not None]
        figures.append(
            TurnFigures(
                turn=number,
                turns=len(ok),
                context_tokens_p50=_pct([r.context_tokens for r in ok], 50),
                ttft_p50_s=_pct(ttfts, 50),
                tpot_p50_s=_pct(tpots, 50),
            )
        )
    return tuple(figures)


def cached_tokens(records: Sequence[TurnRecord]) -> int | None:
    """The server's reported prefix-cache tokens over the ok turns (None: it reported none)."""
    reported = [r.request.usage_cached_tokens for r in records if r.request.ok]
    counts = [c for c in reported if c is not None]
    return sum(counts) if counts else None


def point(
    sessions: int,
    records: Sequence[TurnRecord],
    slo: Bounds = UNBOUNDED,
    energy: PointEnergy | None = None,
    opened: Opened | None = None,
    audits: Sequence[TurnRecord] = (),
) -> SessionPoint:
    """The ``SessionPoint`` of the load of ``sessions`` sessions whose turns are ``records``, its goodput
    under the per-turn ``slo``, its window having consumed ``energy`` (``opened``: a rate point's
    arrivals, ``accelbench.sessions.load``; its ``sessions`` are the sessions it started; ``audits``:
    the audit requests sent while it ran: in its span and rates, counted apart in its tokens)."""
    requests = [r.request for r in (*records, *audits)]
    ok = [r for r in records if r.request.ok]
    span_s = (max(q.end_s for q in requests) - min(q.issue_s for q in requests)) if requests else 0.0
    per_s = 1.0 / span_s if span_s > 0 else 0.0
    ttfts = [t for r in ok if (t := ttft_s(r.request)) is not None]
    tpots = [t for r in ok if (t := tpot_s(r.request)) is not None]
    latencies = session_latencies_s(records)
    output = sum(r.request.output_tokens for r in ok)
    turn_time_s = sum(r.request.end_s - r.request.issue_s for r in ok)
    context = sum(r.context_tokens for r in records)
    audit_context = sum(r.context_tokens for r in audits)
    audit_output = sum(r.request.output_tokens for r in audits if r.request.ok)
    tpot_p50 = _pct(tpots, 50)
    return SessionPoint(
        sessions=sessions,
        turns=len(records),
        failed_turns=len(records) - len(ok),
        duration_s=span_s,
        ttft_p50_s=_pct(ttfts, 50),
        ttft_p90_s=_pct(ttfts, 90),
        tpot_p50_s=tpot_p50,
        tpot_p90_s=_pct(tpots, 90),
        session_latency_p50_s=_pct(latencies, 50),
        session_latency_p90_s=_pct(latencies, 90),
        e2e_interactivity_tokens_per_s=output / turn_time_s if turn_time_s > 0 else 0.0,
        input_tokens_per_s=(context + audit_context) * per_s,
        output_tokens_per_s=(output + audit_output) * per_s,
        tokens_per_s_per_user=1.0 / tpot_p50 if tpot_p50 > 0 else 0.0,
        input_tokens=context,
        output_tokens=output,
        cached_tokens=cached_tokens(records),
        by_turn=by_turn(records),
        goodput_turns_per_s=sum(within(r.request, slo) for r in records) * per_s,
        good_sessions=good_sessions(records, slo),
        energy_j=energy.energy_j if energy else None,
        energy_provenance=energy.provenance if energy else "",
        rate_per_s=opened.rate_per_s if opened else None,
        achieved_rate_per_s=opened.achieved_rate_per_s if opened else None,
        peak_in_flight=opened.peak_in_flight if opened else None,
        behind=opened.behind if opened else "",
        audit_input_tokens=audit_context,
        audit_output_tokens=audit_output,
    )


def within(request: RequestRecord, slo: Bounds) -> bool:
    """An ok turn whose TTFT and TPOT (where it has one) are within ``slo``."""
    first, per_token = ttft_s(request), tpot_s(request)
    if not request.ok or first is None or first > slo.ttft_s:
        return False
    return per_token is None or per_token <= slo.tpot_s


def good_sessions(records: Sequence[TurnRecord], slo: Bounds) -> int:
    """The sessions every turn of which is ``within`` the SLO."""
    sessions = {r.session for r in records}
    return sum(all(within(r.request, slo) for r in records if r.session == s) for s in sessions)
