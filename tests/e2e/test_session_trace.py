"""A replayed session trace end to end (issue 44): ``accelbench run --sessions 1,4 --session-trace
tests/data/agentic_trace.jsonl`` on ``transformers serve`` with continuous batching (``llm@transformers-cb``)
and the tiny Llama (SmolLM2's tokenizer and chat template). The sessions and turns replayed are the file's
(its 3 sessions, the load of 4 replaying the first again), each turn's message of its row's token count by
the model's tokenizer, each reply of its row's length, every session under a salt of its own, the audits
slipped in, and the result names the file's sha256. A bad trace is one line and exit 2, nothing stored."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from accelbench.endpoint.cell import token_counter
from accelbench.endpoint.servers import TransformersCbServer
from accelbench.generation.models import load_model, missing_packages
from accelbench.sessions.driver import context_counter
from accelbench.sessions.records import TurnRecord
from accelbench.sessions.trace import read_trace, replay
from accelbench.sessions.workload import SYSTEM_PROMPT
from tests.e2e.cli import accelbench, measured_ok, run_document

REASON = TransformersCbServer().unavailable_reason() or (missing_packages() and "llm extra missing")
pytestmark = pytest.mark.skipif(bool(REASON), reason=str(REASON))
SAMPLE = Path(__file__).parents[1] / "data" / "agentic_trace.jsonl"
LADDER = (1, 4)
ARGS = ("--workloads", "tiny-llama", "--stacks", "llm@transformers-cb", "--sessions", "1,4")
ARGS += ("--session-trace", str(SAMPLE), "--no-probe")


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], list[TurnRecord]]:
    """The run's store, its one result and its turn records."""
    store = tmp_path_factory.mktemp("store")
    (result,) = run_document(store, *ARGS)["results"]
    path = store / "runs" / result["run_id"] / result["generation"]["turns_file"]
    return store, result, [TurnRecord.from_dict(json.loads(line)) for line in path.read_text().splitlines()]


def test_the_trace_is_replayed_turn_for_turn_with_its_counts_and_lengths(
    ran: tuple[Path, dict[str, Any], list[TurnRecord]],
) -> None:
    store, result, records = ran
    assert measured_ok(result), (result["status"], result["reason"])  # unstable on a busy machine
    digest = hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    settings = result["settings"]
    assert (settings["session_trace"], settings["session_trace_sha256"]) == (SAMPLE.name, digest)
    assert settings["turns_per_session"] == 3 and settings["max_tokens"] == 8
    stated = f"trace {SAMPLE.name} (rows, sha256 {digest[:12]}): 3 sessions"
    assert result["generation"]["workload"].startswith(stated)
    ladder = [(p["sessions"], p["turns"], p["failed_turns"]) for p in result["generation"]["sessions_ladder"]]
    assert ladder == [(1, 3, 0), (4, 9, 0)]
    trace = read_trace(SAMPLE)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(load_model("tiny-llama", store / "cache").folder)
    count_tokens, count_context = token_counter(tokenizer), context_counter(tokenizer)
    seed, checked = settings["input_seed"], 0
    for load in LADDER:
        for session in replay(trace, seed, f"load-{load}", load, count_tokens, 16):
            rows = trace.sessions[session.number % len(trace.sessions)]
            mine = [
                r
                for r in records
                if r.request.concurrency == load and r.session == session.number and r.request.role == "turn"
            ]
            assert [r.turn for r in mine] == list(range(len(rows)))  # the file's turns, in its order
            messages = [{"role": "system", "content": SYSTEM_PROMPT}]
            for turn, row, record in zip(session.turns, rows, mine, strict=True):
                messages.append({"role": "user", "content": turn.content})
                assert record.context_tokens == count_context(messages) == record.request.usage_prompt_tokens
                text = turn.content.split("] ", 1)[1] if record.turn == 0 else turn.content
                if row.input_tokens:  # a count made text by the model's tokenizer: within a word's tokens
                    assert row.input_tokens <= count_tokens(text) <= row.input_tokens + 4, text
                else:
                    assert text == row.text
                assert record.request.usage_output_tokens == row.max_tokens  # the row's reply length
                assert record.request.salt == session.salt and "sess-" not in json.dumps(messages)
                messages.append({"role": "assistant", "content": record.request.text})
                checked += 1
    assert checked == 3 + 9
    salts = {(r.request.concurrency, r.session): r.request.salt for r in records if r.request.role == "turn"}
    assert len(set(salts.values())) == len(salts) == 5  # a salt per session of every load
    assert result["audit"]["session_salts"]["verdict"] == "pass"
    for name, kind in (("altered_history", "altered"), ("copied_session", "copied")):  # still slipped in
        assert result["audit"][name]["verdict"] == "pass", result["audit"][name]
        roles = [r.request.role for r in records]
        assert roles.count(kind) == roles.count(kind + "-control") == result["audit"][name]["pairs"] >= 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty"),
        ('{"session_id": 1, "input_length": 5}\n{"input_lenght": 5}\n', "line 2: unknown field"),
        ('{"input_length": 50000}\n', "input_length must be a whole number from 1 to 32768"),
    ],
)
def test_a_bad_trace_is_one_line_exit_2_and_nothing_stored(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(text)
    store = tmp_path / "store"
    done = accelbench("run", *ARGS[:6], "--session-trace", str(bad), "--no-probe", "--store", str(store))
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0, done.stderr[-2000:]
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not (store / "runs").exists() or not any((store / "runs").iterdir())
