"""Session arrival rates and multi-turn message files end to end (issue 44 scopes 1 and 2(b)) on
``transformers serve`` with continuous batching started by the cell (``llm@transformers-cb``) and the tiny
Llama: ``--session-rate 2,4`` (an open loop, Poisson arrivals) and ``--session-trace`` of an OpenAI
messages file. Each starts a real server (~40-60 s on a shared 2-core machine: ``exhaustive``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from accelbench.endpoint.servers import TransformersCbServer
from accelbench.generation.models import load_model, missing_packages
from accelbench.sessions.driver import context_counter
from accelbench.sessions.load import arrival_times_s
from accelbench.sessions.records import TurnRecord
from tests.e2e.cli import accelbench, run_document

REASON = TransformersCbServer().unavailable_reason() or (missing_packages() and "llm extra missing")
pytestmark = pytest.mark.skipif(bool(REASON), reason=str(REASON))
BASE = ("--workloads", "tiny-llama", "--stacks", "llm@transformers-cb", "--output-tokens", "8", "--no-probe")
MESSAGES = Path(__file__).parents[1] / "data" / "agentic_messages.jsonl"


def _records(store: Path, result: dict[str, Any]) -> list[TurnRecord]:
    path = store / "runs" / result["run_id"] / result["generation"]["turns_file"]
    return [TurnRecord.from_dict(json.loads(line)) for line in path.read_text().splitlines()]


@pytest.mark.exhaustive
def test_a_rate_ladder_on_a_real_server(tmp_path: Path) -> None:
    rates = ("--session-rate", "2,4", "--session-count", "3", "--session-turns", "2")
    (result,) = run_document(tmp_path, *BASE, *rates)["results"]
    assert result["status"] == "ok", result["reason"]
    ladder = result["generation"]["sessions_ladder"]
    assert [(p["rate_per_s"], p["sessions"], p["turns"], p["failed_turns"]) for p in ladder] == [
        (2.0, 3, 6, 0),
        (4.0, 3, 6, 0),
    ]
    records = _records(tmp_path, result)
    seed = result["settings"]["input_seed"]
    for p in ladder:
        assert p["achieved_rate_per_s"] > 0 and 1 <= p["peak_in_flight"] <= 3 and "behind" not in p
        assert p["ttft_p50_s"] > 0 and p["tpot_p50_s"] > 0 and p["e2e_interactivity_tokens_per_s"] > 0
        assert p["energy_j"] > 0 and p["goodput_turns_per_s"] >= 0
        mine = [r for r in records if r.request.target_qps == p["rate_per_s"] and r.request.role == "turn"]
        assert all(r.request.concurrency == 0 and r.request.ok for r in mine) and len(mine) == 6
        firsts = sorted((r.session, r.request.issue_s) for r in mine if r.turn == 0)
        drawn = arrival_times_s(seed, f"rate-{p['rate_per_s']:g}", p["rate_per_s"], 3)
        assert [issue for _, issue in firsts] == list(drawn)  # each session due at its drawn arrival
    assert result["settings"]["session_rates"] == [2.0, 4.0] and result["settings"]["sessions"] == []
    for name in ("session_salts", "altered_history", "copied_session", "padding"):
        assert result["audit"][name]["verdict"] == "pass", result["audit"][name]
    assert result["generation"]["accuracy"]["passed"] and not result["warnings"]
    shown = accelbench("show", result["run_id"], "--store", str(tmp_path), env={"COLUMNS": "400"})
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert (
        "rate 2/s (got" in shown.stdout
        and "rate 4/s (got" in shown.stdout
        and not re.search(r"\d at once", shown.stdout)
    )
    both = accelbench("run", *BASE, "--sessions", "1", "--session-rate", "1", "--store", str(tmp_path))
    assert both.returncode == 2 and both.stderr.strip().count("\n") == 0 and "not both" in both.stderr


@pytest.mark.exhaustive
def test_a_messages_file_replayed_on_a_real_server(tmp_path: Path) -> None:
    (result,) = run_document(tmp_path, *BASE, "--sessions", "2", "--session-trace", str(MESSAGES))["results"]
    assert result["status"] == "ok", result["reason"]
    assert result["generation"]["workload"].startswith("trace agentic_messages.jsonl (messages, sha256")
    records = [r for r in _records(tmp_path, result) if r.request.role == "turn"]
    assert [(r.session, r.turn, r.kind) for r in records] == [
        (0, 0, "user"),
        (0, 1, "tool"),
        (0, 2, "user"),
        (1, 0, "user"),
        (1, 1, "user"),
    ]
    from transformers import AutoTokenizer

    count = context_counter(
        AutoTokenizer.from_pretrained(load_model("tiny-llama", tmp_path / "cache").folder)
    )
    system = json.loads(MESSAGES.read_text().splitlines()[0])["messages"][0]["content"]
    shared = count([{"role": "system", "content": system}])
    assert result["generation"]["shared_prefix_tokens"] == shared  # the file's system message, declared
    first = records[0]
    sent = [{"role": "system", "content": system}, {"role": "user", "content": f"[{first.request.salt}] "}]
    sent[1]["content"] += "The build fails on the second run. What should I check first?"
    assert first.context_tokens == count(sent) == first.request.usage_prompt_tokens
    file_replies = "Check the cleanup step of the test suite."
    assert all(file_replies not in r.request.text for r in records)
