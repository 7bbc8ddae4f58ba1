"""The max-QPS search's open loop and search (``--arrivals poisson``): a seeded Poisson schedule, issues
that a slow server does not delay, probes judged against the bounds on a real loopback stub server
(one request at a time: a server with a capacity), and the search's bracketing, bisecting and budget
against a modelled server."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from accelbench.curve import CurvePoint, EndpointFigures, QpsProbe
from accelbench.endpoint import qps_search
from accelbench.endpoint.client import Prompt, Target
from accelbench.endpoint.driver import POISSON, arrival_times_s, run_arrivals
from accelbench.endpoint.figures import Bounds
from accelbench.endpoint.qps_search import Probing, run_probe, search_max_qps, start_problem
from accelbench.endpoint.records import RequestRecord
from tests.unit.endpoint_stub import stub


class _Template:
    """The chat template's text: the user message alone (what ``salted`` needs of a tokenizer)."""

    def apply_chat_template(self, messages: Sequence[dict[str, str]], **_: Any) -> str:
        return messages[-1]["content"]


def _words(text: str) -> int:
    return len(text.split())


def _prompts(n: int) -> list[Prompt]:
    return [Prompt(f"{i:032x}", ({"role": "user", "content": f"[{i:032x}] hi"},), "text") for i in range(n)]


def _probing(url: str, bounds: Bounds, kept: list[RequestRecord], key: str | None = None) -> Probing:
    target = Target(url, "tiny-llama", api_key=key)
    return Probing(target, _Template(), 1234, (4, 8), 6, _words, bounds, kept.extend)


def test_the_schedule_is_a_seeded_poisson_process_of_the_rate() -> None:
    times_s = arrival_times_s(50.0, 20_000, seed=7)
    gaps_s = np.diff([0.0, *times_s])
    assert times_s == arrival_times_s(50.0, 20_000, seed=7)
    assert times_s[:5] != arrival_times_s(50.0, 5, seed=8)
    assert all(g > 0 for g in gaps_s)
    assert gaps_s.mean() == pytest.approx(1 / 50, rel=0.03)
    assert gaps_s.std() / gaps_s.mean() == pytest.approx(1.0, rel=0.05)  # exponential: CV 1
    with pytest.raises(ValueError, match="positive"):
        arrival_times_s(0.0, 3, seed=7)


def test_a_slow_server_does_not_delay_the_issues() -> None:
    schedule_s = [0.02 * i for i in range(1, 9)]  # 8 arrivals in 0.16 s, each reply held 0.5 s
    with stub(delay_s=0.5) as url:
        records = run_arrivals(Target(url, "tiny-llama"), _prompts(8), schedule_s, 6, _words, 50.0)
    assert all(r.ok and r.role == POISSON and r.target_qps == 50.0 for r in records)
    assert [r.issue_s for r in records] == schedule_s  # the scheduled time, not when a slot freed
    assert all(0 <= r.send_s - r.issue_s < 0.25 for r in records)  # the loop's own lag only
    assert records[-1].send_s < records[0].end_s  # the last was sent before the first reply ended
    assert all(r.first_content_s - r.issue_s >= 0.5 for r in records)  # type: ignore[operator]
    assert "target_qps" in records[0].to_dict()
    assert RequestRecord.from_dict(records[0].to_dict()) == records[0]
    assert "target_qps" not in dataclasses.replace(records[0], target_qps=None).to_dict()


def test_a_probe_within_capacity_passes_and_one_over_it_fails_on_ttft(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(qps_search, "MIN_PROBE_REQUESTS", 4)
    monkeypatch.setattr(qps_search, "MIN_PROBE_DURATION_S", 0.1)
    bounds, kept = Bounds(0.5, 0.1), list[RequestRecord]()
    with stub(delay_s=0.1, serial=True) as url:  # 10 requests/s at most
        calm, calm_records = run_probe(_probing(url, bounds, kept), 0, 4.0)
        over, over_records = run_probe(_probing(url, bounds, kept), 1, 160.0)
    assert calm.passed and calm.reason == "" and calm.requests == 4 and calm.target_qps == 4.0
    assert calm.goodput_requests_per_s == pytest.approx(calm.requests_per_s)
    assert 0.1 <= calm.ttft_p50_s <= calm.ttft_p99_s < 0.5
    assert over.requests == 16 and over.error_rate == 0 and not over.passed
    assert over.reason.startswith("p99 TTFT ") and over.reason.endswith(" > 500 ms")
    assert over.ttft_p99_s > 1.0 and over.requests_per_s < 11  # queued behind 16 x 0.1 s
    assert over.goodput_requests_per_s < over.requests_per_s
    salts = {r.salt for r in [*calm_records, *over_records]}
    assert len(salts) == 20  # fresh salts per probe


def test_a_server_that_fails_every_request_ends_the_search_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(qps_search, "MIN_PROBE_DURATION_S", 0.1)
    kept: list[RequestRecord] = []
    with stub(key="right") as url:
        found, records = search_max_qps(_probing(url, Bounds(1.0, 0.1), kept, key="wrong"), 20.0)
    assert found.max_qps == 0 and found.goodput_requests_per_s == 0 and len(found.probes) == 1
    assert found.ended.startswith("every request failed at 20 QPS: http 401")
    assert found.probes[0].error_rate == 1 and found.probes[0].reason.startswith("100% of requests failed")
    assert records == kept and len(records) == 16 and not any(r.ok for r in records)


def _modelled(capacity_qps: float) -> Any:
    """``run_probe`` against a modelled server: p99 TTFT past the bound above ``capacity_qps``."""

    def probe(probing: Probing, number: int, qps: float) -> tuple[QpsProbe, list[RequestRecord]]:
        passed = qps <= capacity_qps
        ttft_s = 0.1 if passed else 2.0
        figures = (qps, 16, qps, 10 * qps, ttft_s, ttft_s, ttft_s, 0.01, 0.01, 0.01)
        record = RequestRecord(0, 0, POISSON, "ab", 0.0, 0.0, 0.1, 0.2, (0.1,), "x", 1, 1, 1, "ok", "")
        reason = "" if passed else "p99 TTFT 2000 ms > 1000 ms"
        return QpsProbe(*figures, qps if passed else 0.0, 0.0, passed, reason), [record]

    return probe


def test_the_search_doubles_to_a_bracket_then_bisects_within_its_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(qps_search, "run_probe", _modelled(5.3))
    found, _ = search_max_qps(_probing("http://unused", Bounds(1.0, 0.1), []), 1.0, budget=8)
    targets = [p.target_qps for p in found.probes]
    assert targets[:4] == [1.0, 2.0, 4.0, 8.0]  # x2 until a failure brackets the capacity
    assert targets[4] == pytest.approx(np.sqrt(32))  # then geometric bisection
    assert found.max_qps <= 5.3 < min(p.target_qps for p in found.probes if not p.passed)
    assert min(p.target_qps for p in found.probes if not p.passed) <= 1.1 * found.max_qps
    assert found.ended == "bracketed within 10%" and len(found.probes) <= 8
    assert found.goodput_requests_per_s == found.max_qps  # the modelled goodput is the target
    short, _ = search_max_qps(_probing("http://unused", Bounds(1.0, 0.1), []), 1.0, budget=3)
    assert len(short.probes) == 3 and short.max_qps == 4.0 and short.ended == "budget of 3 probes spent"


def test_a_start_above_capacity_halves_and_a_search_without_a_pass_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(qps_search, "run_probe", _modelled(3.0))
    found, _ = search_max_qps(_probing("http://unused", Bounds(1.0, 0.1), []), 16.0, budget=3)
    assert [p.target_qps for p in found.probes] == [16.0, 8.0, 4.0]
    assert found.max_qps == 0 and found.ended == "budget of 3 probes spent; no probe met the bounds"


def test_the_search_is_stored_only_when_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(qps_search, "run_probe", _modelled(5.3))
    found, _ = search_max_qps(_probing("http://unused", Bounds(1.0, 0.1), []), 1.0, budget=4)
    section = EndpointFigures("llm@url", "m", 1, "chat", (), 0.0, 1.0, 0.1, 8, "", "", 1.0)
    assert "qps_search" not in section.to_dict()
    searched = dataclasses.replace(section, qps_search=found)
    document = searched.to_dict()
    assert document["qps_search"]["max_qps"] == 4.0 and len(document["qps_search"]["probes"]) == 4
    assert EndpointFigures.from_dict(document) == searched


def _point(concurrency: int, requests_per_s: float, ttft_p99_s: float) -> CurvePoint:
    zeros = {f.name: 0 for f in dataclasses.fields(CurvePoint)} | {"energy_j": None, "energy_provenance": ""}
    values = {"concurrency": concurrency, "requests_per_s": requests_per_s, "ttft_p99_s": ttft_p99_s}
    return CurvePoint.from_dict({**zeros, **values})


def test_the_search_starts_only_from_a_lowest_point_that_meets_the_bounds() -> None:
    bounds = Bounds(1.0, 0.1)
    assert start_problem([_point(4, 9.0, 3.0), _point(1, 2.0, 0.5)], "", bounds) == ""
    assert start_problem([_point(4, 9.0, 3.0)], "", bounds) == ""  # a probe may still pass below c=4
    slow = start_problem([_point(1, 2.0, 1.5)], "", bounds)
    assert slow.startswith("not searched: one request at a time already misses the bounds")
    assert slow.endswith("(p99 TTFT 1500 ms > 1000 ms)")
    assert start_problem([], "", bounds).startswith("not searched: no curve point")
    assert start_problem([_point(1, 0.0, 0.0)], "", bounds).startswith("not searched: no curve point")
    gone = start_problem([_point(1, 2.0, 0.5)], "every request failed at concurrency 2: http 500", bounds)
    assert gone == "not searched: the ladder stopped (every request failed at concurrency 2: http 500)"
