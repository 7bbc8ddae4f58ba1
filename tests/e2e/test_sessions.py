"""Agentic sessions end to end (issue 44): ``accelbench run --sessions 1,2`` on ``transformers serve``
with continuous batching, started by the cell (``llm@transformers-cb``), on the tiny Llama (which holds
SmolLM2's tokenizer and chat template): 3 turns per session, 8 tokens per reply. The history of every
turn is rebuilt from the stored replies and the seeded workload, and must be what the server saw."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from accelbench.endpoint.figures import tpot_s, ttft_s
from accelbench.endpoint.servers import TransformersCbServer
from accelbench.generation.models import load_model, missing_packages
from accelbench.sessions import forbidden
from accelbench.sessions.accuracy import turn_messages
from accelbench.sessions.driver import context_counter
from accelbench.sessions.load import Load
from accelbench.sessions.records import TurnRecord
from accelbench.sessions.workload import SYSTEM_PROMPT, Shape, make_sessions
from tests.e2e.cli import BUSY, accelbench, measured_ok, run_document

PLAIN = ("turn", "warm", "cold")
"""The roles of a session's own turns and of the reuse probe's requests: no audit's."""

REASON = TransformersCbServer().unavailable_reason() or (missing_packages() and "llm extra missing")
pytestmark = pytest.mark.skipif(bool(REASON), reason=str(REASON))
ARGS = ("--workloads", "tiny-llama", "--stacks", "llm@transformers-cb", "--sessions", "1,2")
ARGS += ("--session-turns", "3", "--output-tokens", "8", "--no-probe")


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], list[TurnRecord]]:
    """The run's store, its one result and its turn records."""
    store = tmp_path_factory.mktemp("store")
    (result,) = run_document(store, *ARGS)["results"]
    path = store / "runs" / result["run_id"] / result["generation"]["turns_file"]
    return store, result, [TurnRecord.from_dict(json.loads(line)) for line in path.read_text().splitlines()]


def test_the_ladder_has_a_point_per_load_with_every_figure(ran: tuple[Path, dict[str, Any], Any]) -> None:
    _, result, records = ran
    assert measured_ok(result), (result["status"], result["reason"])  # unstable on a busy machine
    guard = result["noise"]  # the noise guard watched the ladder: other load, steal, the probe's drift
    assert guard["before_s"] > 0 and guard["after_s"] > 0 and guard["other_load_cores"] >= 0
    ladder = result["generation"]["sessions_ladder"]
    assert [(p["sessions"], p["turns"], p["failed_turns"]) for p in ladder] == [(1, 3, 0), (2, 6, 0)]
    for p in ladder:
        assert 0 < p["ttft_p50_s"] <= p["ttft_p90_s"] and 0 < p["tpot_p50_s"] <= p["tpot_p90_s"]
        assert p["session_latency_p50_s"] > 0 and p["input_tokens_per_s"] > p["output_tokens_per_s"] > 0
        assert [t["turn"] for t in p["by_turn"]] == [0, 1, 2]
        assert p["by_turn"][0]["context_tokens_p50"] < p["by_turn"][2]["context_tokens_p50"]  # it grows
        mine = [
            r.request for r in records if r.request.concurrency == p["sessions"] and r.request.role == "turn"
        ]
        tokens = sum(r.output_tokens for r in mine)
        slo = (result["generation"]["turn_slo_ttft_s"], result["generation"]["turn_slo_tpot_s"])
        good = [r for r in mine if r.ok and ttft_s(r) <= slo[0] and (tpot_s(r) or 0.0) <= slo[1]]  # type: ignore[operator]
        assert p["goodput_turns_per_s"] == pytest.approx(len(good) / p["duration_s"])
        assert 0 <= p["good_sessions"] <= p["sessions"]
        audits = [  # the point's audit requests: counted apart from its sessions' input
            r for r in records if r.request.concurrency == p["sessions"] and r.request.role not in PLAIN
        ]
        assert p["audit_input_tokens"] == sum(r.context_tokens for r in audits) > 0
        # the server's rates: the turns' and the audit requests' tokens over the span of both
        audit_output = sum(r.request.output_tokens for r in audits if r.request.ok)
        sent = mine + [r.request for r in audits]
        assert p["audit_output_tokens"] == audit_output > 0
        assert p["duration_s"] == pytest.approx(max(r.end_s for r in sent) - min(r.issue_s for r in sent))
        assert p["output_tokens_per_s"] == pytest.approx((tokens + audit_output) / p["duration_s"])
        assert p["energy_j"] > 0 and p["energy_provenance"] in (
            "measured",
            "estimated",
        )  # a server started here
        assert p["output_tokens"] == tokens and p["e2e_interactivity_tokens_per_s"] == pytest.approx(
            tokens / sum(r.end_s - r.issue_s for r in mine)
        )
    assert result["audit"]["session_salts"]["verdict"] == "pass"
    decoy_turns = len(ladder) * forbidden.DECOYS * 3  # a decoy pair a point, 3 turns each
    for name, kind, pairs in (
        ("altered_history", "altered", forbidden.PAIRS),
        ("copied_session", "copied", decoy_turns),
    ):  # scope 4's audits
        audit = result["audit"][name]
        assert audit["verdict"] == "pass" and audit["pairs"] == pairs, audit
        roles = [r.request.role for r in records]
        assert roles.count(kind) == roles.count(kind + "-control") == pairs
    reuse = result["generation"]["reuse"]  # the probe: drawn turns of the last load sent warm and cold
    assert reuse["pairs"] == 3 and reuse["warm_ttft_p50_s"] > 0 and reuse["cold_ttft_p50_s"] > 0
    probes = [r for r in records if r.request.role in ("warm", "cold")]
    assert sorted(r.request.role for r in probes) == ["cold"] * 3 + ["warm"] * 3
    warm = sorted(r.context_tokens for r in probes if r.request.role == "warm")
    cold = sorted(r.context_tokens for r in probes if r.request.role == "cold")
    assert all(abs(w - c) <= 0.05 * w for w, c in zip(warm, cold, strict=True))  # the same history, new salt
    assert result["settings"]["sessions"] == [1, 2] and result["settings"]["turns_per_session"] == 3
    # the inline check: 16 drawn among the 9 turns and the 24 audit requests (their replies count too)
    checked = result["generation"]["accuracy"]
    assert len(checked["shares"]) == 16 and checked["passed"] and checked["mean_share"] >= 0.6, checked
    sent = [r for r in records if r.request.role not in PLAIN]  # each audit request stored what it sent
    assert all(r.sent is not None and r.sent.max_tokens == 8 for r in sent) and len(sent) == 24
    continued = [
        r for r in sent if r.sent is not None and r.sent.continued
    ]  # a decoy's turns after its first
    assert continued and all(r.request.role.startswith("copied") and r.turn > 0 for r in continued)
    assert all(r.sent is None for r in records if r.request.role in PLAIN)
    assert result["audit"]["padding"]["verdict"] == "pass"
    guarded = [
        w for w in result["warnings"] if w.startswith(BUSY) or w.endswith("to corroborate it (a warning)")
    ]
    assert len(guarded) == len(result["warnings"]), result["warnings"]  # the noise guard's notes only


def test_every_turn_sends_the_history_with_the_servers_real_replies(
    ran: tuple[Path, dict[str, Any], list[TurnRecord]],
) -> None:
    store, result, records = ran
    from transformers import AutoTokenizer

    count = context_counter(AutoTokenizer.from_pretrained(load_model("tiny-llama", store / "cache").folder))
    seed = result["settings"]["input_seed"]
    for load in (1, 2):
        for session in make_sessions(seed, f"load-{load}", load, Shape(turns=3)):
            mine = [
                r
                for r in records
                if r.request.concurrency == load and r.session == session.number and r.request.role == "turn"
            ]
            assert [r.turn for r in mine] == [0, 1, 2]
            messages = [{"role": "system", "content": SYSTEM_PROMPT}]
            for turn, record in zip(session.turns, mine, strict=True):
                messages.append({"role": "user", "content": turn.content})
                assert record.context_tokens == count(messages) == record.request.usage_prompt_tokens
                assert record.request.salt == session.salt and turn.content.count(session.salt) <= 1
                messages.append({"role": "assistant", "content": record.request.text})
            replies = [r.request.text for r in mine]
            assert all(replies) and len(set(replies)) == 3  # the replies differ, so the check is not vacuous
            assert all(r.request.usage_output_tokens == 8 and r.request.output_tokens >= 1 for r in mine)
    passes = {Load(n): make_sessions(seed, f"load-{n}", n, Shape(turns=3)) for n in (1, 2)}
    for record in records:  # what an audit request stored it sent is what the server saw
        if record.sent is not None:
            tokens = count(turn_messages(record, records, passes))
            assert record.context_tokens == tokens == record.request.usage_prompt_tokens, record


def test_show_draws_the_session_tables(ran: tuple[Path, dict[str, Any], Any]) -> None:
    store, result, _ = ran
    shown = accelbench("show", result["run_id"], "--store", str(store))
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "Agentic sessions (multi-turn" in shown.stdout and "Agentic sessions by turn" in shown.stdout
    assert result["generation"]["prefix_cache"].startswith("on: shared 256-token pages")  # the cache's label
    assert "server prefix cache: on:" in " ".join(shown.stdout.split())
    price = ("--price-per-hour", "3.6")
    priced = accelbench("show", result["run_id"], "--store", str(store), *price, env={"COLUMNS": "400"})
    assert priced.returncode == 0, priced.stderr[-2000:]
    words = " ".join(priced.stdout.split())
    assert "$/session" in priced.stdout and "J/session" in priced.stdout and "energy: " in words
    assert "out tok/s per chip" in priced.stdout  # the server ran on this machine: its chips are known


def test_the_html_report_draws_the_ladder_and_the_turns_against_context(
    ran: tuple[Path, dict[str, Any], Any], tmp_path: Path
) -> None:
    store, result, _ = ran
    page = tmp_path / "report.html"
    made = accelbench("report", result["run_id"], "--store", str(store), "-o", str(page))
    assert made.returncode == 0, made.stderr[-2000:]
    html = page.read_text().replace("\\u002f", "/")  # plotly's JSON escapes the slash
    assert "system output tokens/s vs e2e interactivity" in html
    assert "TTFT and TPOT by turn, against the turn's context" in html
    points = result["generation"]["sessions_ladder"]
    assert html.count('"1 sessions"') + html.count('"2 sessions"') >= len(points)  # a marker per load
    assert "prefix cache on: shared 256-token pages" in html  # each trace names its cache state


def test_a_bad_sessions_list_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = accelbench("run", *ARGS[:4], "--sessions", "1,x", "--store", str(tmp_path))
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0
    assert "--sessions takes comma-separated whole numbers" in done.stderr
