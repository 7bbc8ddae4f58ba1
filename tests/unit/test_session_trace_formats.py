"""Multi-turn message files for ``--session-trace`` (issue 44 scope 2(b), ``accelbench.sessions
.trace_formats``): AIPerf's ``multi_turn`` lines and OpenAI ``messages`` conversations read as sessions,
the format told per file, the system message as the declared shared prefix, every bad file a one-line
UserError naming its line and rule, and what reaches the server (salted, the file's replies dropped)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accelbench.cli.serving import with_trace
from accelbench.endpoint.client import Target
from accelbench.errors import UserError
from accelbench.sessions.driver import TURN, run_load
from accelbench.sessions.trace import parse_trace, read_trace, replay
from accelbench.sessions.trace_formats import MESSAGES, MULTI_TURN, ROWS, TOOLS_HEADING, format_of
from accelbench.sessions.workload import SYSTEM_PROMPT, TOOL, USER
from tests.unit.session_stub import HONEST, session_stub
from tests.unit.test_forbidden_reuse import words

DATA = Path(__file__).parents[1] / "data"
SYSTEM = "You are a careful coding agent. Answer in one sentence."


def count(text: str) -> int:
    """A tokenizer-free count: a word is a token."""
    return len(text.split())


def test_the_format_is_told_by_the_first_lines_keys() -> None:
    assert format_of({"session_id": 1, "turns": []}) == MULTI_TURN
    assert format_of({"messages": []}) == MESSAGES
    assert format_of({"input_length": 3, "messages": []}) == ROWS  # a row's field makes a row file
    assert format_of({"session_id": 1}) == ROWS and format_of([1]) == ROWS


def test_an_aiperf_multi_turn_file_reads_as_its_sessions() -> None:
    trace = read_trace(DATA / "agentic_multi_turn.jsonl")
    assert (trace.format, trace.system, trace.rows) == (MULTI_TURN, SYSTEM, 5)
    fix, rename = trace.sessions  # lines sharing a session_id are one session, in file order
    assert [t.text for t in fix] == [
        "The build fails on the second run. What should I check first?",
        "[tool:run_tests] 3 passed, 1 failed:\ntest_cleanup left tmp/run-2 in place.",
        "Which file holds the cleanup step?",
    ]
    assert [(t.max_tokens, t.delay_s) for t in fix] == [(8, 0.0), (6, 0.12), (0, 0.05)]
    assert [t.delay_s for t in rename] == [0.0, 0.08] and all(t.input_tokens == 0 for t in rename)


def test_an_openai_messages_file_drops_the_assistant_messages_and_keeps_tool_results() -> None:
    trace = read_trace(DATA / "agentic_messages.jsonl")
    assert (trace.format, trace.system, trace.rows) == (MESSAGES, SYSTEM, 5)
    first, second = trace.sessions
    assert [(t.kind, t.text) for t in first] == [
        (USER, "The build fails on the second run. What should I check first?"),
        (TOOL, "[tool:run_tests] 3 passed, 1 failed: test_cleanup left tmp/run-2 in place."),
        (USER, "Which file holds that fixture?"),
    ]
    assert [t.text for t in second] == [
        "Rename the helper parse_row to read_row everywhere.",
        "Now update the docs that mention it.",
    ]
    assert all(t.delay_s == 0.0 and t.max_tokens == 0 for s in trace.sessions for t in s)


def test_a_messages_turn_may_start_with_the_turn_befores_words() -> None:
    """In a messages line the assistant's reply stands between two user messages: "Fix it", a reply,
    "Fix it again" is a conversation (refused as cumulative rows in a row or multi_turn file)."""
    again = {"role": "user", "content": "Fix the failing test please. And run it again."}
    trace = parse_trace(_messages(USER_HI, {"role": "assistant", "content": "Done."}, again), "t.jsonl")
    assert [t.text for t in trace.sessions[0]] == [USER_HI["content"], again["content"]]
    with pytest.raises(UserError, match="text_input starts with the row before's"):
        parse_trace(
            _turns({"text": USER_HI["content"]}, {"text": again["content"]}, session_id="s"), "t.jsonl"
        )


def test_what_reaches_the_server_is_salted_with_the_files_system_message_and_real_replies() -> None:
    trace = read_trace(DATA / "agentic_messages.jsonl")
    sessions = replay(trace, 3, "load-3", 3, count, 6)
    assert [s.system for s in sessions] == [SYSTEM] * 3  # the file's, also for the session without one
    assert [t.content for t in sessions[2].turns[1:]] == [t.text for t in trace.sessions[0][1:]]  # cycled
    assert sessions[0].turns[0].content == f"[{sessions[0].salt}] {trace.sessions[0][0].text}"
    assert sessions[2].turns[0].content == f"[{sessions[2].salt}] {trace.sessions[0][0].text}"
    assert len({s.salt for s in sessions}) == 3 and sessions[0].turns[1].kind == TOOL
    with session_stub(HONEST) as url:
        records = run_load(Target(url, "stub", timeout_s=30.0), sessions, 6, count, words)
    turns = [r for r in records if r.request.role == TURN]
    assert len(turns) == 3 + 2 + 3 and all(r.request.ok for r in turns)
    assert "Check the cleanup step" not in json.dumps([r.request.text for r in turns])  # the file's replies
    plain = replay(read_trace(DATA / "agentic_trace.jsonl"), 3, "load-1", 1, count, 6)
    assert plain[0].system == SYSTEM_PROMPT  # a row file has none of its own: accelbench's


def _turns(*turns: dict[str, object], **line: object) -> str:
    return json.dumps({"turns": list(turns), **line})


def _messages(*messages: dict[str, object]) -> str:
    return json.dumps({"messages": list(messages)})


USER_HI = {"role": "user", "content": "Fix the failing test please."}
GREP = {"type": "function", "function": {"name": "grep", "parameters": {"type": "object"}}}


def _tooled(tools: object, *messages: dict[str, object]) -> str:
    return json.dumps({"messages": list(messages), "tools": tools})


def test_a_messages_lines_tools_close_the_shared_system_message() -> None:
    """An agent's log keeps the tools it offered: their definitions close the declared shared prefix (the
    same in every session), and a tool result without a name takes the one its call id named."""
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c7", "function": {"name": "grep"}}]}
    result = {"role": "tool", "tool_call_id": "c7", "content": "tests/test_rows.py:3"}
    system = {"role": "system", "content": SYSTEM}
    text = _tooled([GREP], system, USER_HI, call, result) + "\n" + _tooled([GREP], system, USER_HI)
    trace = parse_trace(text, "t.jsonl")
    assert trace.system == SYSTEM + TOOLS_HEADING + json.dumps([GREP], sort_keys=True)
    first, second = trace.sessions
    assert [(t.kind, t.text) for t in first] == [
        (USER, USER_HI["content"]),
        (TOOL, "[tool:grep] tests/test_rows.py:3"),
    ]
    assert [t.text for t in second] == [USER_HI["content"]]
    untooled = parse_trace(_messages(system, USER_HI), "t.jsonl")
    assert untooled.system == SYSTEM  # a file without tools: its system message as it is


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            _turns({"text": "a"}) + "\n" + '{"input_length": 5}',
            "line 2: unknown field 'input_length'; a multi_turn line",
        ),
        (
            _turns({"text": "a"}) + "\n" + _messages(USER_HI),
            "line 2: unknown field 'messages'; a multi_turn line",
        ),
        (_messages(USER_HI) + "\n" + _turns({"text": "a"}), "line 2: unknown field 'turns'; a messages line"),
        ('{"turns": []}', "line 1: not a multi_turn line (turns must be a non-empty list)"),
        (_turns({"text": "a"}, type="single_turn"), "type must be multi_turn"),
        (
            _turns({"text": "a", "image": "x.png"}),
            "line 1 turn 1: 'image' is not replayed (accelbench sends text only)",
        ),
        (_turns({"text": "a", "extra": {}}), "'extra' is not replayed"),
        (_turns({"text": "a", "weight": 1}), "unknown field 'weight'; a turn has"),
        (_turns({"text": "a", "texts": ["b"]}), "give text or texts, one of them"),
        (_turns({"delay": 5}), "give text or texts, one of them"),
        (_turns({"texts": [{"name": "f", "contents": ["x"]}]}), "texts must be a non-empty list of strings"),
        (_turns({"text": 5}), "text must be a string"),
        (
            _turns({"text": "a"}, {"role": "assistant", "text": "b"}),
            "turn 2: role 'assistant': a turn is a user message",
        ),
        (_turns({"text": "a"}, {"role": "system", "text": "b"}), "turn 2: role 'system'"),
        (_turns({"role": "system", "text": "s"}), "no user turn"),
        (
            _turns({"role": "system", "text": "s", "delay": 1}, {"text": "a"}),
            "a system turn holds its text only",
        ),
        (_turns({"text": "a", "delay": -5}), "line 1 turn 1: delay must be a number of ms"),
        (
            _turns({"text": "a", "output_length": 0}),
            "line 1 turn 1: output_length must be a whole number from 1",
        ),
        (
            _turns({"text": "a"}, {"text": "b", "timestamp": 1, "delay": 1}),
            "turn 2: give timestamp or delay, not both",
        ),
        (_turns({"text": " "}), "text_input must be text of 1 to"),
        (
            _turns({"role": "system", "text": "s1"}, {"text": "a"})
            + "\n"
            + _turns({"role": "system", "text": "s2"}, {"text": "b"}),
            "line 2: a system message (or tools) other than line 1's; a file declares one shared prefix",
        ),
        (
            _turns({"text": "fix the test"}, {"text": "fix the test and run it"}, session_id="s"),
            "text_input starts with the row before's: rows look cumulative",
        ),
        (
            _turns({"text": "Fix the build."})
            + "\n"
            + _turns({"text": "Fix the build."}, {"text": "Run it again."}),
            "line 2: its turns start with line 1's whole conversation: cumulative lines",
        ),
        ('{"messages": [], "id": 3}', "unknown field 'id'; a messages line has messages, tools"),
        (_tooled([], USER_HI), "tools must be a non-empty list of tool definitions"),
        (_tooled([{"type": "function"}], USER_HI), "tool 1 is not a function definition"),
        (
            _tooled([GREP], USER_HI)
            + "\n"
            + _tooled([{"type": "function", "function": {"name": "ls"}}], USER_HI),
            "line 2: a system message (or tools) other than line 1's",
        ),
        ('{"messages": []}', "not a messages line (messages must be a non-empty list)"),
        (_messages({"role": "developer", "content": "x"}), "message 1: a message is an object with role"),
        (
            _messages(USER_HI, {"role": "system", "content": "late"}),
            "message 2: a system message comes first",
        ),
        (_messages({"role": "tool", "content": "x"}, USER_HI), "a tool result before any user message"),
        (_messages({"role": "system", "content": "s"}), "no user message"),
        (
            _messages({"role": "user", "content": [{"type": "image_url", "image_url": {}}]}),
            "content must be text",
        ),
        (_messages({"role": "user", "content": None}), "content must be text"),
        (_messages({**USER_HI, "weight": 0}), "unknown field 'weight'; a user message has role, content"),
        (_messages({"role": "user", "content": ""}), "user/tool message 1: text_input must be text"),
        (
            _messages(USER_HI)
            + "\n"
            + _messages(
                USER_HI, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "And run it."}
            ),
            "line 2: its turns start with line 1's whole conversation",
        ),
        ("\n".join([_messages(USER_HI)] * 4097), "4097 sessions, more than the limit of 4096"),
    ],
)
def test_a_malformed_message_file_is_a_one_line_user_error(text: str, message: str) -> None:
    with pytest.raises(UserError) as caught:
        parse_trace(text, "session trace t.jsonl")
    assert message in str(caught.value) and "\n" not in str(caught.value), str(caught.value)


def test_a_bad_message_file_stops_the_run_before_anything_starts(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(_messages(USER_HI) + "\n" + _turns({"text": "a"}) + "\n")
    with pytest.raises(UserError, match=r"bad\.jsonl line 2: unknown field .turns."):
        with_trace({"session_trace": str(bad), "sessions": (1,)})
    good = with_trace({"session_trace": str(DATA / "agentic_messages.jsonl"), "session_rates": (1.0,)})
    assert good["session_trace_sha256"] == read_trace(DATA / "agentic_messages.jsonl").sha256
