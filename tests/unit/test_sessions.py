"""Agentic sessions (issue 44): the seeded synthetic workload (deterministic, salted per session and pass),
the figures of a load point on hand-made turns (exact values), the stored records and the salts audit."""

from __future__ import annotations

import dataclasses
import json

import pytest

from accelbench.config import SUITES, with_overrides
from accelbench.endpoint.client import Prompt, Target, _headers
from accelbench.endpoint.figures import Bounds
from accelbench.endpoint.records import RequestRecord
from accelbench.endpoint.sse import usage_of
from accelbench.errors import UserError
from accelbench.meters.cost import HourlyRate
from accelbench.report.sessions import usd_per_session
from accelbench.session_figures import SessionFigures, SessionPoint
from accelbench.sessions.driver import session_id
from accelbench.sessions.figures import by_turn, point, session_latencies_s
from accelbench.sessions.outcome import session_salts
from accelbench.sessions.records import TurnRecord
from accelbench.sessions.workload import SYSTEM_PROMPT, TOOL, USER, Shape, make_sessions


def test_the_generator_is_deterministic_in_its_seed_and_pass() -> None:
    shape = Shape(turns=5)
    first = make_sessions(7, "load-2", 2, shape)
    assert first == make_sessions(7, "load-2", 2, shape)
    assert first != make_sessions(8, "load-2", 2, shape)
    assert make_sessions(7, "load-4", 4, shape)[:2] != first  # another pass: other salts and texts
    assert [len(s.turns) for s in first] == [5, 5] and [s.number for s in first] == [0, 1]


def test_every_session_of_every_pass_has_its_own_salt_at_the_head_of_its_history() -> None:
    shape = Shape(turns=4)
    sessions = [s for n in (1, 2, 4, 8) for s in make_sessions(3, f"load-{n}", n, shape)]
    salts = [s.salt for s in sessions]
    assert len(set(salts)) == len(salts) == 15 and all(len(s) == 32 for s in salts)
    for s in sessions:
        assert s.turns[0].content.startswith(f"[{s.salt}] ") and s.turns[0].kind == USER
        assert all(s.salt not in t.content for t in s.turns[1:])
    openings = [s.turns[0].content for s in sessions]
    assert len({o[:34] for o in openings}) == len(openings)  # beyond the system prompt nothing is shared
    assert "read_file" in SYSTEM_PROMPT


def test_turns_have_drawn_kinds_sizes_and_delays_in_their_ranges() -> None:
    shape = Shape(turns=6, tool_words=(40, 60), delay_s=(0.2, 0.4))
    turns = [t for s in make_sessions(11, "p", 20, shape) for t in s.turns]
    later = [t for s in make_sessions(11, "p", 20, shape) for t in s.turns[1:]]
    assert all(t.delay_s == 0.0 for t in turns[:: shape.turns])  # each first turn
    assert all(0.2 <= t.delay_s <= 0.4 for t in later)
    tools = [t for t in later if t.kind == TOOL]
    assert 0.3 < len(tools) / len(later) < 0.7 and all(t.content.startswith("[tool:") for t in tools)
    assert all(len(t.content.split()) >= 40 for t in tools)


def _request(issue_s: float, first_s: float, end_s: float, tokens: int, **kw: object) -> RequestRecord:
    fields = dict(
        concurrency=2,
        index=0,
        role="turn",
        salt="ab",
        issue_s=issue_s,
        send_s=issue_s,
        first_content_s=first_s,
        end_s=end_s,
        chunk_s=(first_s, end_s),
        text="x " * tokens,
        output_tokens=tokens,
        usage_output_tokens=tokens,
        usage_prompt_tokens=100,
        status="ok",
        error="",
        finish_reason="length",
    )
    return RequestRecord(**{**fields, **kw})  # type: ignore[arg-type]


def _turn(session: int, turn: int, context: int, request: RequestRecord) -> TurnRecord:
    return TurnRecord(session, turn, USER, 0.1, context, request)


TURNS = [
    _turn(0, 0, 100, _request(0.0, 1.0, 3.0, 5, salt="s0", usage_cached_tokens=0)),
    _turn(0, 1, 200, _request(3.5, 4.0, 6.0, 5, salt="s0", usage_cached_tokens=96)),
    _turn(1, 0, 120, _request(0.0, 2.0, 4.0, 9, salt="s1")),
    _turn(1, 1, 260, _request(4.5, 5.5, 8.0, 6, salt="s1", status="http 500", error="boom")),
]


def test_a_points_figures_on_hand_made_turns() -> None:
    p = point(2, TURNS)
    assert (p.sessions, p.turns, p.failed_turns, p.duration_s) == (2, 4, 1, 8.0)
    assert p.ttft_p50_s == pytest.approx(1.0) and p.ttft_p90_s == pytest.approx(1.8)  # 1.0, 0.5, 2.0
    assert p.tpot_p50_s == pytest.approx(0.5)  # 2/4, 2/4, 2/8
    assert session_latencies_s(TURNS) == [6.0, 8.0] and p.session_latency_p50_s == 7.0
    assert p.e2e_interactivity_tokens_per_s == pytest.approx(19 / (3.0 + 2.5 + 4.0))  # ok turns only
    assert p.output_tokens == 19 and p.output_tokens_per_s == pytest.approx(19 / 8)
    assert p.input_tokens == 680 and p.input_tokens_per_s == pytest.approx(680 / 8)
    assert p.tokens_per_s_per_user == pytest.approx(2.0) and p.cached_tokens == 96
    first, second = by_turn(TURNS)
    assert (first.turn, first.turns, first.context_tokens_p50, first.ttft_p50_s) == (0, 2, 110.0, 1.5)
    assert (second.turn, second.turns, second.context_tokens_p50) == (1, 1, 200.0)  # the failed one left out
    assert point(2, TURNS[2:3]).cached_tokens is None  # the server reported none
    assert p.audit_input_tokens == 0 and point(2, TURNS[:2], audits=TURNS[2:]).audit_input_tokens == 380
    assert point(2, TURNS[:2], audits=TURNS[2:]).input_tokens == 300  # the audits' tokens counted apart
    assert p.goodput_turns_per_s == pytest.approx(3 / 8) and p.good_sessions == 1  # unbounded: ok turns
    slo = point(2, TURNS, Bounds(1.2, 0.6))  # TTFT 1.0, 0.5, 2.0; TPOT 0.5, 0.5, 0.25
    assert slo.goodput_turns_per_s == pytest.approx(2 / 8) and slo.good_sessions == 1  # session 1: 2.0 s
    tight = point(2, TURNS, Bounds(1.2, 0.4))
    assert tight.goodput_turns_per_s == 0.0 and tight.good_sessions == 0


def test_a_points_rates_and_energy_count_the_audit_requests_its_slots_held() -> None:
    """The server answered the audit requests in the point's window: its rates and energy per token count
    their tokens; the sessions' figures and the energy and cost per session are the turns'."""
    mixed = point(2, TURNS[:2], audits=TURNS[2:])  # turns 0.0-6.0 s, audits 0.0-8.0 s (one failed)
    assert mixed.duration_s == 8.0 and (mixed.output_tokens, mixed.audit_output_tokens) == (10, 9)
    assert mixed.output_tokens_per_s == pytest.approx(19 / 8) and mixed.input_tokens_per_s == (300 + 380) / 8
    assert mixed.ttft_p50_s == pytest.approx(0.75) and mixed.session_latency_p50_s == 6.0  # the turns'
    metered = dataclasses.replace(mixed, energy_j=19.0)
    assert metered.joules_per_output_token == pytest.approx(1.0)  # 19 J over 10 + 9 tokens
    assert metered.joules_per_session == pytest.approx(19.0 * 10 / 19 / 2)  # the sessions' share, per session
    rate = HourlyRate(3600.0, "test")  # a dollar a second
    assert usd_per_session(rate, mixed) == pytest.approx(8.0 * 10 / 19 / 2)
    before = dataclasses.replace(metered, audit_output_tokens=None)  # stored before it was counted
    assert before.sessions_share == 1.0 and before.joules_per_output_token == pytest.approx(19.0 / 10)
    assert "audit_output_tokens" not in before.to_dict()
    assert SessionPoint.from_dict(json.loads(json.dumps(mixed.to_dict()))) == mixed


def test_the_stored_records_round_trip_and_load_as_a_sessions_section() -> None:
    for record in TURNS:
        line = json.loads(json.dumps(record.to_dict()))
        assert TurnRecord.from_dict(line) == record
    assert "usage_cached_tokens" not in TURNS[2].to_dict() and TURNS[1].to_dict()["usage_cached_tokens"] == 96
    figures = SessionFigures(
        endpoint="llm@url",
        model="m",
        params=1,
        workload="synthetic-agentic",
        turns_per_session=2,
        max_tokens=8,
        shared_prefix_tokens=150,
        sessions_ladder=(point(2, TURNS),),
        turns_file="t.jsonl",
        duration_s=9.0,
    )
    assert SessionFigures.from_dict(json.loads(json.dumps(figures.to_dict()))) == figures
    sloped = dataclasses.replace(figures, turn_slo_ttft_s=1.2, turn_slo_tpot_s=0.6)
    assert SessionFigures.from_dict(json.loads(json.dumps(sloped.to_dict()))) == sloped
    before = figures.to_dict()  # a section stored before goodput: no SLO, no goodput keys
    assert "turn_slo_ttft_s" not in before and "turn_slo_ttft_s" in sloped.to_dict()
    for stored in before["sessions_ladder"]:
        del stored["goodput_turns_per_s"], stored["good_sessions"]
    loaded = SessionFigures.from_dict(json.loads(json.dumps(before)))
    assert loaded.sessions_ladder[0].goodput_turns_per_s is None


def test_a_sessions_turn_carries_its_session_id_header_and_a_single_request_none() -> None:
    (session,) = make_sessions(5, "load-1", 1, Shape(turns=1))
    target = Target("http://127.0.0.1:1", "m")
    turn = Prompt(session.salt, ({"role": "user", "content": "hi"},), "", session_id(session))
    assert _headers(target, turn)["X-Session-ID"] == session.salt[:16]
    assert "X-Session-ID" not in _headers(target, Prompt("ab", (), ""))


def test_usage_of_reads_the_servers_cached_tokens() -> None:
    usage = {"prompt_tokens": 300, "completion_tokens": 8, "prompt_tokens_details": {"cached_tokens": 256}}
    assert usage_of({"usage": usage}) == {"prompt_tokens": 300, "completion_tokens": 8, "cached_tokens": 256}
    assert usage_of({"usage": {"prompt_tokens": 3, "prompt_tokens_details": None}}) == {"prompt_tokens": 3}


def test_the_salts_audit_fails_a_salt_shared_by_two_sessions_or_mixed_in_one() -> None:
    assert session_salts(TURNS).outcome == "pass"
    shared = [TURNS[0], _turn(1, 0, 1, _request(0, 1, 2, 3, salt="s0"))]
    assert session_salts(shared).outcome == "fail" and session_salts(shared).evidence["repeated"] == 1
    mixed = [TURNS[0], _turn(0, 1, 1, _request(0, 1, 2, 3, salt="other"))]
    assert session_salts(mixed).outcome == "fail" and session_salts(mixed).evidence["mixed"] == 1


def test_a_session_ladder_out_of_range_is_a_user_error() -> None:
    assert with_overrides(SUITES["llm"], {"sessions": (1, 2), "session_turns": 3}).knobs["sessions"] == (1, 2)
    for bad in ({"sessions": (0,)}, {"session_turns": -1}):
        with pytest.raises(UserError, match="sessions must be in"):
            with_overrides(SUITES["llm"], bad)
