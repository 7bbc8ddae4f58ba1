"""Session arrival rates (issue 44 scope 1, ``accelbench.sessions.load``): the Poisson schedule drawn from
the secret seed, a rate point driven against a real (stub) server, the in-flight cap that ends a point
that falls behind, the audits on rate points, the stored point and the settings."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from accelbench.audits.verdict import FAIL, PASS
from accelbench.cli.knob_options import parsed
from accelbench.cli.serving import session_loads
from accelbench.config import suite, with_overrides
from accelbench.endpoint.client import Target
from accelbench.errors import UserError
from accelbench.session_figures import SessionPoint
from accelbench.sessions import forbidden
from accelbench.sessions.accuracy import judged_replies, turn_messages
from accelbench.sessions.cell import run_ladder
from accelbench.sessions.driver import TURN, run_point
from accelbench.sessions.figures import point
from accelbench.sessions.load import Load, Opened, Opening, arrival_times_s, opening
from accelbench.sessions.outcome import invalid_reasons, verdicts
from accelbench.sessions.records import TurnRecord
from accelbench.sessions.settings import SessionSettings, rates
from accelbench.sessions.source import source_of
from accelbench.sessions.workload import Shape, make_sessions
from tests.unit.session_stub import HONEST, PLANTED, audited_ladder, session_stub

SHAPE = Shape(turns=3, delay_s=(0.0, 0.02))


def words(messages: Sequence[Mapping[str, str]]) -> int:
    """A tokenizer-free count: the words of the conversation."""
    return sum(len(m["content"].split(" ")) for m in messages)


COUNTERS = (lambda t: len(t.split()), words)


def test_arrivals_are_a_poisson_process_drawn_from_the_seed_and_the_pass() -> None:
    first = arrival_times_s(7, "rate-2", 2.0, 50)
    assert first == arrival_times_s(7, "rate-2", 2.0, 50) and first[0] == 0.0 and len(first) == 50
    assert list(first) == sorted(first)
    assert first != arrival_times_s(8, "rate-2", 2.0, 50)  # another secret seed: another schedule
    assert first != arrival_times_s(7, "rate-4", 2.0, 50)  # another pass too
    gaps = np.concatenate([np.diff(arrival_times_s(seed, "rate-2", 2.0, 201)) for seed in range(40)])
    assert len(gaps) == 8000 and gaps.min() > 0
    assert gaps.mean() == pytest.approx(0.5, rel=0.04)  # 1 / rate
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.05)  # exponential: CV 1
    assert np.mean(gaps < 0.5 * np.log(2)) == pytest.approx(0.5, abs=0.03)  # its median: ln 2 / rate
    lag1 = np.corrcoef(gaps[:-1], gaps[1:])[0, 1]
    assert abs(lag1) < 0.05  # memoryless: no gap tells the next
    assert arrival_times_s(7, "rate-2", 2.0, 1) == (0.0,) and arrival_times_s(7, "rate-2", 2.0, 0) == ()


def test_a_load_is_keyed_by_its_requests_concurrency_and_rate() -> None:
    assert (Load(4).pass_name, str(Load(4))) == ("load-4", "4 sessions")
    assert (Load(0, 0.5).pass_name, str(Load(0, 0.5))) == ("rate-0.5", "0.5 sessions/s")
    assert Load(2) != Load(0, 2.0) and opening(3, Load(2), 2, 8) is None
    opened = opening(3, Load(0, 0.5), 4, 8)
    assert opened == Opening(0.5, arrival_times_s(3, "rate-0.5", 0.5, 4), 8)
    assert Opened(1.0, 3, (0.0, 1.0, 4.0), 2, "").achieved_rate_per_s == 0.5
    assert Opened(1.0, 1, (0.0,), 1, "").achieved_rate_per_s == 0.0


def test_a_rate_point_opens_each_session_at_its_arrival_time() -> None:
    sessions = make_sessions(5, "rate-10", 6, SHAPE)
    plan = Opening(10.0, arrival_times_s(5, "rate-10", 10.0, 6), 8)
    with session_stub(HONEST, base_s=0.02) as url:
        records, opened = run_point(Target(url, "stub", timeout_s=30.0), sessions, 6, COUNTERS, (), plan)
    assert opened is not None and opened.started == 6 and opened.behind == ""
    assert len(records) == 18 and all(r.request.ok for r in records)
    assert {Load.of(r.request) for r in records} == {Load(0, 10.0)}  # concurrency 0, target_qps the rate
    firsts = sorted((r.session, r.request.issue_s) for r in records if r.turn == 0)
    assert [issue for _, issue in firsts] == list(plan.arrivals_s)  # a first turn is due at its arrival
    late = [started - due for started, due in zip(opened.started_s, plan.arrivals_s, strict=True)]
    assert all(0 <= lag < 0.25 for lag in late), late
    for r in records:  # a later turn is due once its session's previous reply is in (and its delay)
        if r.turn:
            before = next(b for b in records if b.session == r.session and b.turn == r.turn - 1)
            assert r.request.issue_s >= before.request.end_s
    assert 1 <= opened.peak_in_flight <= 6
    figures = point(opened.started, records, energy=None, opened=opened)
    assert (figures.sessions, figures.rate_per_s, figures.peak_in_flight) == (6, 10.0, opened.peak_in_flight)
    assert figures.achieved_rate_per_s == pytest.approx(opened.achieved_rate_per_s)
    assert SessionPoint.from_dict(figures.to_dict()) == figures


def test_a_point_that_falls_behind_stops_at_the_cap_and_is_marked_not_hung() -> None:
    sessions = make_sessions(5, "rate-50", 12, SHAPE)
    plan = Opening(50.0, arrival_times_s(5, "rate-50", 50.0, 12), 2)
    audits = forbidden.plan_turns({Load(0, 50.0): [3] * 12}, (0.0, 0.0))[Load(0, 50.0)]
    started = time.perf_counter()
    with session_stub(HONEST, base_s=0.3, per_char_s=0.0) as url:
        records, opened = run_point(Target(url, "stub", timeout_s=30.0), sessions, 6, COUNTERS, audits, plan)
    elapsed_s = time.perf_counter() - started
    assert opened is not None and opened.started == 2 and opened.peak_in_flight == 2
    assert "with 2 in flight (the cap 2): 2 of 12 started" in opened.behind
    assert {r.session for r in records} <= {0, 1} and len([r for r in records if r.request.role == TURN]) == 6
    assert elapsed_s < 6.0  # the 10 sessions never started cost nothing
    for kind in (forbidden.ALTERED,):  # a pair planned on a session never started moved to a started one's
        probes = [(r.session, r.turn) for r in records if r.request.role == kind]
        controls = [(r.session, r.turn) for r in records if r.request.role == kind + forbidden.CONTROL]
        assert sorted(probes) == sorted(controls) == [(0, 1), (0, 2), (1, 1), (1, 2)]  # each free turn once
    figures = point(opened.started, [r for r in records if r.request.role == TURN], opened=opened)
    assert figures.behind == opened.behind and figures.to_dict()["behind"] == opened.behind


def test_a_closed_point_is_stored_as_before_rate_points() -> None:
    sessions = make_sessions(5, "load-2", 2, SHAPE)
    with session_stub(HONEST) as url:
        records, opened = run_point(Target(url, "stub", timeout_s=30.0), sessions, 6, COUNTERS)
    assert opened is None and {Load.of(r.request) for r in records} == {Load(2)}
    stored = point(2, records).to_dict()
    assert not {"rate_per_s", "achieved_rate_per_s", "peak_in_flight", "behind"} & set(stored)


def rate_records(mode: str, folder: Path) -> list[TurnRecord]:
    """A rate ladder with the audits slipped in (run as the cell runs it), against a planted server of
    ``mode``."""
    loads = (Load(0, 8.0), Load(0, 16.0))
    passes = {load: make_sessions(9, load.pass_name, 4, SHAPE) for load in loads}
    openings = {load: opened for load in loads if (opened := opening(9, load, 4, 8)) is not None}
    warm = make_sessions(9, "warm-up", 1, SHAPE)
    with session_stub(mode, base_s=0.05) as url:
        return audited_ladder(url, passes, warm, COUNTERS, folder, openings)


@pytest.mark.parametrize(("mode", "caught"), PLANTED)
def test_the_audits_run_on_rate_points_and_catch_the_planted_servers(
    mode: str, caught: tuple[str, ...], tmp_path: Path
) -> None:
    records = rate_records(mode, tmp_path)
    assert len([r for r in records if r.request.role == TURN]) == 24 and all(r.request.ok for r in records)
    assert all(r.request.concurrency == 0 and r.request.target_qps in (8.0, 16.0) for r in records)
    found = {v.audit: v for v in verdicts(records, 6)}
    assert found["session_salts"].outcome == PASS  # 8 sessions, 8 salts: two rate points never share one
    for name, pairs in (("altered_history", forbidden.PAIRS), ("copied_session", 2 * SHAPE.turns)):
        v = found[name]
        assert v.evidence["pairs"] == pairs and v.outcome == (FAIL if name in caught else PASS), v.reason


def test_a_judged_turn_of_a_rate_point_is_rebuilt_from_its_own_pass() -> None:
    load = Load(0, 8.0)
    passes = {
        load: make_sessions(9, load.pass_name, 2, SHAPE),
        Load(0, 16.0): make_sessions(9, "rate-16", 2, SHAPE),
    }
    with session_stub(HONEST) as url:
        records, _ = run_point(
            Target(url, "stub", timeout_s=30.0), passes[load], 6, COUNTERS, (), opening(9, load, 2, 8)
        )
    record = next(r for r in records if r.session == 1 and r.turn == 2)
    messages = turn_messages(record, records, passes)
    assert [m["content"] for m in messages[1::2]] == [t.content for t in passes[load][1].turns]
    assert judged_replies(records, 3, 99) == [r for r in records if r.request.role == TURN]


def test_the_rate_ladder_settings_and_their_errors() -> None:
    assert rates("0.25, 1,2") == (0.25, 1.0, 2.0) and rates(None) is None
    for bad in ("1,x", "0", "-1", "nan", "inf", ""):
        with pytest.raises(UserError, match="--session-rate takes") as caught:
            rates(bad)
        assert "\n" not in str(caught.value)
    with pytest.raises(UserError, match="not both"):
        session_loads(parsed({"sessions": "1,2", "session_rates": "1"}))
    given = session_loads(parsed({"sessions": None, "session_rates": "0.5,1", "session_count": 4}))
    assert (given["sessions"], given["session_rates"], given["session_count"]) == ((), (0.5, 1.0), 4)
    agentic = with_overrides(suite("agentic"), {k: v for k, v in given.items() if v is not None})
    settings = SessionSettings.from_config(agentic)  # a rate ladder replaces the suite's session ladder
    assert (settings.ladder, settings.rates, settings.rate_sessions) == ((), (0.5, 1.0), 4)
    assert settings.loads == (Load(0, 0.5), Load(0, 1.0))
    assert SessionSettings.from_dict(settings.to_dict()) == settings
    source = source_of(settings, 5, lambda t: len(t.split()))
    assert list(source.passes) == list(settings.loads) and [len(p) for p in source.passes.values()] == [4, 4]
    assert source.openings[Load(0, 0.5)].arrivals_s == arrival_times_s(5, "rate-0.5", 0.5, 4)
    salts = [s.salt for p in source.passes.values() for s in p]
    assert len(set(salts)) == 8  # every session of every rate point its own salt
    capped = SessionSettings.from_config(with_overrides(agentic, {"session_cap": 3}))  # --session-cap 3
    assert (settings.in_flight_cap, capped.in_flight_cap) == (8, 3)
    assert source_of(capped, 5, lambda t: len(t.split())).openings[Load(0, 1.0)].in_flight_cap == 3
    for overrides, message in (
        ({"sessions": (1,), "session_rates": (1.0,)}, "not both"),
        ({"session_rates": (1.0, 1.0)}, "distinct"),
        ({"session_rates": (0.0,)}, "above 0"),
        ({"session_rates": (2000.0,)}, "at most 1000"),
        ({"session_count": 3}, "--session-count sets the sessions of each --session-rate point"),
        ({"session_cap": 0}, r"session_cap must be in \[1, 4096\], got 0"),
    ):
        with pytest.raises(UserError, match=message):
            with_overrides(suite("default"), overrides)


def test_the_cells_ladder_of_rates_stores_a_point_per_rate(tmp_path: Path) -> None:
    settings = SessionSettings(rates=(8.0, 16.0), rate_sessions=4, max_tokens=6)
    source = source_of(settings, 9, lambda t: len(t.split()))
    with session_stub(HONEST) as url:
        target = Target(url, "stub", timeout_s=30.0)
        ladder, records, stopped = run_ladder(target, source, 6, COUNTERS, tmp_path / "turns.jsonl")
    assert stopped == "" and [(p.rate_per_s, p.sessions, p.turns) for p in ladder] == [
        (8.0, 4, 12),
        (16.0, 4, 12),
    ]
    assert all(p.peak_in_flight is not None and 1 <= p.peak_in_flight <= 4 and not p.behind for p in ladder)
    stored = (tmp_path / "turns.jsonl").read_text().splitlines()
    assert len(stored) == len(records) and {r.request.target_qps for r in records} == {8.0, 16.0}
    assert invalid_reasons(ladder, records, stopped) == []
