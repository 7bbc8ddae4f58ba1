"""A replayed session trace (issue 44, ``--session-trace``): the rows read and checked (every bad file a
one-line UserError before a run starts), the sessions replayed under their own salts with texts of the
rows' token counts, per-turn reply lengths reaching the server, the forbidden-reuse audits still slipped
in (a salt-blind cache caught on replayed sessions), and the settings carrying the file's sha256."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from accelbench.audits.verdict import FAIL, PASS
from accelbench.cli.serving import with_trace
from accelbench.config import RunConfig, suite, with_overrides
from accelbench.endpoint.client import Target, sized
from accelbench.errors import Unavailable, UserError
from accelbench.sessions import forbidden
from accelbench.sessions.driver import TURN
from accelbench.sessions.load import Load
from accelbench.sessions.outcome import verdicts
from accelbench.sessions.settings import SessionSettings
from accelbench.sessions.source import source_of
from accelbench.sessions.trace import (
    BLOCK_TOKENS,
    MAX_DELAY_S,
    MAX_ROWS,
    MAX_TRACE_BYTES,
    parse_trace,
    read_trace,
    replay,
)
from accelbench.sessions.workload import SYSTEM_PROMPT
from tests.unit.session_stub import HONEST, SALT_BLIND, SHY, audited_ladder, session_stub
from tests.unit.test_forbidden_reuse import words

SAMPLE = Path(__file__).parents[1] / "data" / "agentic_trace.jsonl"


def count(text: str) -> int:
    """A tokenizer-free count: a word is a token."""
    return len(text.split())


def test_the_sample_trace_reads_as_its_sessions_in_order_of_first_appearance() -> None:
    trace = read_trace(SAMPLE)
    assert trace.sha256 == hashlib.sha256(SAMPLE.read_bytes()).hexdigest() and trace.rows == 6
    a, b, seven = trace.sessions
    assert [(t.input_tokens, t.max_tokens, t.delay_s) for t in a] == [
        (24, 8, 0.0),
        (40, 6, 0.05),
        (12, 8, 0.1),
    ]
    assert [t.text.split()[0] for t in b] == ["The", "[tool:run_tests]"] and not any(
        t.input_tokens for t in b
    )
    assert [t.delay_s for t in b] == [0.0, pytest.approx(0.12)]  # timestamps: the gap to the row before
    assert [(t.input_tokens, t.max_tokens) for t in seven] == [(30, 4)]
    assert (trace.most_turns, trace.most_tokens(16), trace.delay_range_s()) == (3, 8, (0.05, 0.12))
    one = parse_trace('{"input_length": 5}\n{"input_length": 9, "output_length": 2}\n', "t")
    assert [len(s) for s in one.sessions] == [1, 1]  # rows without a session_id: a session each
    assert one.most_tokens(16) == 16  # a row without output_length: the run's --output-tokens


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty"),
        ("\n  \n", "is empty"),
        ('{"input_length": 5', "line 1: invalid JSON"),
        ("[1, 2]", "a row must be a JSON object"),
        ('{"input_length": 5, "messages": []}', "unknown field 'messages'"),
        ('{"output_length": 5}', "give input_length (tokens) or text_input"),
        ('{"input_length": 5, "text_input": "hi"}', "give input_length (tokens) or text_input"),
        ('{"input_length": 0}', "input_length must be a whole number from 1"),
        ('{"input_length": 5.5}', "input_length must be a whole number"),
        ('{"input_length": true}', "input_length must be a whole number"),
        ('{"input_length": 40000}', "input_length must be a whole number from 1 to 32768"),
        ('{"input_length": 5, "output_length": 5000}', "output_length must be a whole number from 1 to 4096"),
        ('{"text_input": " "}', "text_input must be text"),
        ('{"input_length": 5, "delay": -1}', "delay must be a number of ms"),
        ('{"input_length": 5, "delay": NaN}', "delay must be a number of ms"),
        (
            f'{{"input_length": 5, "delay": {MAX_DELAY_S * 1000 + 1}}}',
            "delay must be a number of ms from 0 to",
        ),
        ('{"input_length": 5, "timestamp": 1, "delay": 1}', "timestamp or delay, not both"),
        ('{"input_length": 5, "session_id": [1]}', "session_id must be a string or whole number"),
        ('{"input_length": 5, "hash_ids": [1, -2]}', "hash_ids must be a list of whole numbers"),
        (
            '{"session_id": 1, "timestamp": 500, "input_length": 5}\n'
            '{"session_id": 1, "timestamp": 100, "input_length": 5}',
            "line 2: timestamp before its session's previous row's",
        ),
        (
            '{"session_id": 1, "timestamp": 0, "input_length": 5}\n'
            '{"session_id": 1, "timestamp": 61000, "input_length": 5}',
            "61 s after its session's previous row, more than the limit of 60 s",
        ),
        (
            '{"session_id": 1, "text_input": "fix the test"}\n'
            '{"session_id": 1, "text_input": "fix the test and run it"}',
            "line 2: text_input starts with the row before's: rows look cumulative",
        ),
        (
            '{"session_id": 1, "input_length": 300, "hash_ids": [1, 2]}\n'
            '{"session_id": 1, "input_length": 500, "hash_ids": [1, 2, 3]}',
            "line 2: hash_ids start with the row before's: rows look cumulative",
        ),
        (
            '{"session_id": 1, "input_length": 300, "output_length": 20}\n'
            '{"session_id": 1, "input_length": 330, "output_length": 20}\n'
            '{"session_id": 1, "input_length": 360, "output_length": 20}',
            "every later turn is at least as long as the turn before with its reply",
        ),
        (
            '{"input_length": 32000, "output_length": 4000, "session_id": 1}\n' * 33,
            "tokens, more than the limit",
        ),
    ],
)
def test_a_malformed_or_oversized_trace_is_a_one_line_user_error(text: str, message: str) -> None:
    with pytest.raises(UserError) as caught:
        parse_trace(text, "session trace t.jsonl")
    assert message in str(caught.value) and "\n" not in str(caught.value), str(caught.value)


def test_growing_new_messages_with_hash_ids_that_do_not_repeat_are_not_cumulative() -> None:
    rows = [(300, [1, 2]), (330, [3]), (360, [4, 5])]
    text = "\n".join(
        json.dumps({"session_id": 1, "input_length": n, "output_length": 20, "hash_ids": h}) for n, h in rows
    )
    assert [t.input_tokens for t in parse_trace(text, "t").sessions[0]] == [300, 330, 360]


def test_blocks_sessions_share_are_replayed_as_the_declared_shared_prefix() -> None:
    """Mooncake's hash_ids: the whole leading blocks two sessions' first rows share become one seeded
    text per block id and pass after the system message (before the salt), the new message that many
    tokens shorter; blocks no other session holds, a partial block and later rows' blocks are not shared."""
    rows = [
        {"session_id": "a", "input_length": 2 * BLOCK_TOKENS + 40, "hash_ids": [7, 8, 9]},
        {"session_id": "b", "input_length": 2 * BLOCK_TOKENS + 10, "hash_ids": [7, 8, 11]},
        {"session_id": "c", "input_length": BLOCK_TOKENS + 5, "hash_ids": [7, 12]},
        {"session_id": "d", "input_length": BLOCK_TOKENS - 1, "hash_ids": [7]},
        {"session_id": "e", "input_length": 30, "hash_ids": [20]},
        {"session_id": "a", "input_length": 25, "hash_ids": [8]},
    ]
    trace = parse_trace("\n".join(json.dumps(r) for r in rows), "t")
    assert trace.shared_blocks() == ((7, 8), (7, 8), (7,), (), ())
    a, b, c, d, e = replay(trace, 5, "load-1", 5, count, 6)
    assert a.system == b.system and a.system.startswith(SYSTEM_PROMPT) and a.system != SYSTEM_PROMPT
    assert count(a.system) == count(SYSTEM_PROMPT) + 2 * BLOCK_TOKENS  # a word is a token here
    assert c.system == "\n\n".join(a.system.split("\n\n")[:2]) and d.system == e.system == SYSTEM_PROMPT
    assert [count(s.turns[0].content) - 1 for s in (a, b, c, d, e)] == [40, 10, 5, BLOCK_TOKENS - 1, 30]
    assert count(a.turns[1].content) == 25 and a.turns[0].content.startswith(f"[{a.salt}] ")
    again = replay(trace, 5, "load-1", 5, count, 6)
    assert [s.system for s in again] == [s.system for s in (a, b, c, d, e)]  # deterministic
    assert replay(trace, 5, "load-2", 1, count, 6)[0].system != a.system  # a new pass, new block texts
    assert replay(trace, 6, "load-1", 1, count, 6)[0].system != a.system  # and a new input seed


def test_the_file_limits_hold_before_anything_is_parsed(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"input_length": 1}\n' * (MAX_ROWS + 1))
    big = tmp_path / "big.jsonl"
    with open(big, "wb") as out:
        out.truncate(MAX_TRACE_BYTES + 1)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b'{"text_input": "\xff"}')
    for path, message in (
        (rows, f"more than the limit of {MAX_ROWS}"),
        (big, "more than the limit of"),
        (fifo, "is not a regular file"),
        (tmp_path, "is not a regular file"),
        (tmp_path / "none.jsonl", "cannot read session trace"),
        (binary, "is not UTF-8 text"),
    ):
        with pytest.raises(UserError, match="session trace") as caught:
            read_trace(path)
        assert message in str(caught.value), str(caught.value)


def test_replayed_sessions_cycle_the_trace_under_their_own_salts_with_texts_of_the_rows_counts() -> None:
    trace = read_trace(SAMPLE)
    sessions = replay(trace, 7, "load-4", 4, count, 16)
    assert sessions == replay(trace, 7, "load-4", 4, count, 16)  # deterministic in its arguments
    assert [len(s.turns) for s in sessions] == [3, 2, 1, 3]  # session 3 replays the trace's first again
    salts = [s.salt for s in sessions] + [s.salt for s in replay(trace, 7, "load-2", 2, count, 16)]
    assert len(set(salts)) == 6 and all(len(salt) == 32 for salt in salts)
    for session, rows in zip(sessions, [*trace.sessions, trace.sessions[0]], strict=True):
        first = session.turns[0].content
        assert first.startswith(f"[{session.salt}] ") and all(
            session.salt not in t.content for t in session.turns[1:]
        )
        texts = [first.split("] ", 1)[1], *(t.content for t in session.turns[1:])]
        for text, turn, row in zip(texts, session.turns, rows, strict=True):
            assert count(text) == row.input_tokens if row.input_tokens else text == row.text
            assert turn.max_tokens == row.max_tokens and turn.delay_s == row.delay_s
    assert sessions[0].turns != sessions[3].turns  # the same rows, other words: nothing repeats
    assert "sess-a" not in json.dumps([s.turns for s in sessions], default=str)  # the trace's ids stay here
    other = replay(trace, 8, "load-4", 4, count, 16)
    assert other[0].turns[1].content != sessions[0].turns[1].content  # the words are the secret seed's


def test_a_reply_length_of_its_own_reaches_the_servers_generation_config() -> None:
    config = json.dumps({"max_new_tokens": 16, "eos_token_id": -1})
    target = Target("http://127.0.0.1:9", "m", extra_body={"generation_config": config})
    resized = sized(target, 4)
    assert json.loads(resized.extra_body["generation_config"]) == {"max_new_tokens": 4, "eos_token_id": -1}
    assert (
        sized(target, 16) is target
        and json.loads(target.extra_body["generation_config"])["max_new_tokens"] == 16
    )
    eos = Target("http://127.0.0.1:9", "m", extra_body={"ignore_eos": True})
    assert sized(eos, 4) is eos  # ignore_eos holds for any length: the body's max_tokens sets it


TRACE = "\n".join(
    json.dumps({"session_id": s, "input_length": n, "output_length": out, "delay": 10})
    for s, turns in (
        ("x", [(12, 3), (9, 5), (20, 2)]),
        ("y", [(15, 4), (8, 2)]),
        ("z", [(10, 6), (30, 1), (7, 3)]),
    )
    for n, out in turns
)


def _sharing_a_block(trace: str) -> str:
    """``trace`` with every session's first row opening with the shared block 0 (Mooncake's hash_ids)."""
    rows, seen = [], set()
    for line in trace.splitlines():
        row = json.loads(line)
        if row["session_id"] not in seen:
            seen.add(row["session_id"])
            row |= {"input_length": row["input_length"] + BLOCK_TOKENS, "hash_ids": [0, 1]}
        rows.append(json.dumps(row))
    return "\n".join(rows)


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize(
    ("mode", "caught"), [(HONEST, ()), (SALT_BLIND, ("copied_session",)), (SHY, ("copied_session",))]
)
def test_replayed_sessions_with_the_audits_slipped_in_against_planted_servers(
    mode: str, caught: tuple[str, ...], shared: bool, tmp_path: Path
) -> None:
    """The forbidden-reuse audits on replayed sessions: a salt-blind cache caught, an honest prefix cache
    not; so too when the sessions share a declared prefix block (``shared``), which the honest server
    reuses across sessions as the trace declares."""
    trace = parse_trace(_sharing_a_block(TRACE) if shared else TRACE, "t")
    passes = {Load(n): replay(trace, 3, Load(n).pass_name, n, count, 6) for n in (1, 2, 4)}
    systems = {s.system for p in passes.values() for s in p}
    assert all((len(system) > len(SYSTEM_PROMPT)) == shared for system in systems)
    planned = forbidden.plan_turns({n: [len(s.turns) for s in p] for n, p in passes.items()}, (0.0, 0.02))
    assert all(a.turn < len(passes[n][a.session].turns) for n, p in planned.items() for a in p)
    warm = replay(trace, 3, "warm-up", 1, count, 6)
    with session_stub(mode, base_s=0.1) as url:
        records = audited_ladder(url, passes, warm, (count, words), tmp_path)
    turns = [r for r in records if r.request.role == TURN]
    assert all(r.request.ok for r in records) and len(turns) == 3 + 5 + 11
    for r in turns:  # each turn's reply as long as its row asks (the stub holds max_tokens)
        row = trace.sessions[r.session % 3][r.turn]
        assert r.request.usage_output_tokens == min(row.max_tokens, 6)
    found = {v.audit: v for v in verdicts(records, 6)}
    assert found["session_salts"].outcome == PASS
    decoy_turns = len([r for r in records if r.request.role == forbidden.COPIED])
    for name, pairs in (("altered_history", forbidden.PAIRS), ("copied_session", decoy_turns)):
        v = found[name]
        assert v.evidence["pairs"] == pairs >= 3 and v.outcome == (FAIL if name in caught else PASS), v.reason


def test_the_settings_carry_the_traces_path_and_sha256(tmp_path: Path) -> None:
    given = with_trace({"session_trace": str(SAMPLE), "sessions": (1, 2)})
    digest = hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    assert given["session_trace"] == str(SAMPLE.resolve()) and given["session_trace_sha256"] == digest
    config = with_overrides(suite("default"), {**given, "workloads": ("tiny-llama",)})
    settings = SessionSettings.from_config(config)
    assert (settings.trace, settings.trace_sha256) == (str(SAMPLE.resolve()), digest)
    assert SessionSettings.from_dict(json.loads(json.dumps(settings.to_dict()))) == settings
    assert RunConfig.from_dict(config.to_dict()) == config
    with pytest.raises(UserError, match="has sha256"):
        with_trace({"session_trace": str(SAMPLE), "session_trace_sha256": "0" * 64})
    for overrides, message in (
        ({"session_trace": str(SAMPLE)}, "replays sessions at the loads of --sessions"),
        (
            {"session_trace": str(SAMPLE), "sessions": (1,), "session_turns": 3},
            "--session-turns is the synthetic",
        ),
        ({"session_trace": "t", "sessions": (1,), "session_trace_sha256": "xyz"}, "64 hex digits"),
    ):
        with pytest.raises(UserError, match="session_trace") as caught:
            with_overrides(suite("default"), overrides)
        assert message in str(caught.value)


def test_the_agentic_suite_plans_the_session_ladder_on_transformers_cb() -> None:
    from accelbench import runner

    agentic = suite("agentic")
    assert (agentic.workloads, agentic.stacks) == (("smollm2-135m",), ("llm@transformers-cb",))
    knobs = agentic.knobs
    assert (knobs["sessions"], knobs["session_turns"], knobs["output_tokens"]) == ((1, 2, 4, 8), 3, 16)
    assert agentic.timeout_s == 1200.0  # the cell's cap: ~560 s measured on a loaded 2-core machine
    (cell,) = runner.plan(agentic)
    assert (cell.cell.workload, cell.cell.stack) == ("smollm2-135m", "llm@transformers-cb")
    assert cell.driver_ref == "accelbench.sessions.cell:measure"
    settings = SessionSettings.from_config(agentic)
    assert (settings.ladder, settings.shape.turns, settings.max_tokens, settings.trace) == (
        (1, 2, 4, 8),
        3,
        16,
        None,
    )


def test_the_cell_replays_only_the_file_the_run_read(tmp_path: Path) -> None:
    copy = tmp_path / "trace.jsonl"
    copy.write_bytes(SAMPLE.read_bytes())
    digest = hashlib.sha256(copy.read_bytes()).hexdigest()
    settings = SessionSettings(ladder=(1, 4), max_tokens=16, trace=str(copy), trace_sha256=digest)
    source = source_of(settings, 5, count)
    assert [len(source.passes[Load(n)]) for n in (1, 4)] == [1, 4] and source.trace == "trace.jsonl"
    assert (source.turns, source.max_tokens, source.delay_s) == (3, 8, (0.05, 0.12))
    assert source.passes[Load(4)] == tuple(replay(read_trace(copy), 5, "load-4", 4, count, 16))
    synthetic = source_of(SessionSettings(ladder=(2,)), 5, count)
    assert synthetic.trace is None and synthetic.workload.startswith("synthetic-agentic: 3 turns")
    copy.write_text(SAMPLE.read_text().replace('"output_length": 4', '"output_length": 5'))
    with pytest.raises(Unavailable, match="changed since the run started"):
        source_of(settings, 5, count)
    copy.unlink()
    with pytest.raises(Unavailable, match="cannot read session trace"):
        source_of(settings, 5, count)
