"""The multi-turn message files a session trace may be (``--session-trace``; ``accelbench.sessions.trace``
reads them): each line a whole session, turned here into the trace's rows (one a turn) so that every rule
of the row format holds for them too.

A file is one format, told by its first line's keys (never line by line: a line of another format is
refused, naming it):
- ``rows``: Mooncake/AIPerf rows, one a turn (``accelbench.sessions.trace.FIELDS``);
- ``multi_turn``: AIPerf's ``multi_turn`` custom dataset (AIPerf 0.13.0's ``MultiTurn`` and
  ``SingleTurn`` models), a line ``{"session_id", "turns": [...]}`` (an optional ``"type": "multi_turn"``),
  each turn ``text`` (or ``texts``, a list of strings sent as one message, joined by a new line),
  ``delay`` or ``timestamp`` (ms), ``output_length``, ``role`` (``user``, or ``system`` for a leading
  turn: the session's system message, as AIPerf hoists it); lines sharing a ``session_id`` are one
  session, in file order, as AIPerf groups them. Images, audio, video and ``extra`` fields are refused
  (accelbench sends text only);
- ``messages``: an OpenAI chat conversation a line, ``{"messages": [{"role", "content"}, ...]}`` with
  the tools it offered, ``"tools": [{"type": "function", "function": {"name", ...}}, ...]``, where it
  has them (as a coding agent's log keeps them): each ``user`` message is a turn, each ``tool`` message a
  tool-result turn (sent as a user message naming its tool, ``[tool:NAME] ...``, as the synthetic
  sessions' are; the name is the message's ``name``, else that of the call its ``tool_call_id`` answers),
  the file's ``assistant`` messages are dropped (the server's real replies take their place, and they
  call no tool), a leading ``system`` message is the session's system message. No waits (each turn is
  sent once the reply before it is in) and no reply lengths (``--output-tokens``).

A system message is the declared shared prefix: every session of a file opens with the same one (a
session without one gets the file's), and a file whose sessions state two different ones is refused. A
line's ``tools`` are part of it: their definitions, as JSON, close the system message under
``TOOLS_HEADING`` (as the synthetic sessions' tool schema does), so every session sends them, the audits'
forms and controls keep them, and the client counts them. They are not sent as the request's ``tools``
field: the replies replace the log's, so no tool call the server makes would be answered. A file
without a system message or tools replays with accelbench's (``accelbench.sessions.workload.SYSTEM_PROMPT``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from accelbench.errors import UserError
from accelbench.sessions.workload import TOOL, USER

ROWS = "rows"
MULTI_TURN = "multi_turn"
MESSAGES = "messages"
TURN_FIELDS = ("text", "texts", "delay", "timestamp", "output_length", "role")
"""What a ``multi_turn`` turn may hold."""
MEDIA = ("image", "images", "image_uuids", "audio", "audios", "video", "videos", "extra")
"""``multi_turn`` fields accelbench does not send (text only)."""
MESSAGE_FIELDS = ("role", "content", "name", "tool_call_id")
"""What a ``user``, ``tool`` or ``system`` message may hold (an ``assistant`` one is dropped whole)."""

Row = tuple[int, dict[str, Any]]

TOOLS_HEADING = "\n\n# Tools\n"
"""What stands between a ``messages`` line's system message and its tools' definitions."""


ROW_MARKS = ("input_length", "text_input", "output_length", "timestamp", "delay", "hash_ids")
"""A row's own fields: a first line with one of them makes a row file."""


def format_of(first: Any) -> str:
    """The file's format, from its first line's object (a row's field makes it a row file, whatever else
    it holds; then ``turns``, then ``messages``)."""
    if not isinstance(first, dict) or any(mark in first for mark in ROW_MARKS):
        return ROWS
    if "turns" in first:
        return MULTI_TURN
    return MESSAGES if "messages" in first else ROWS


def rows_of(
    kind: str, lines: Sequence[tuple[int, Any]], where: str, check: Callable[[Any, str], dict[str, Any]]
) -> tuple[list[Row], str]:
    """The rows of a ``multi_turn`` or ``messages`` file (``lines``: each line's number and parsed object),
    each row a turn checked by the row format's rules (``check``, naming the line and turn), with its
    line's ``session_id`` where it has one (a line without one is a session of its own), and the file's
    system message ("" for none)."""
    rows: list[Row] = []
    systems: dict[str, int] = {}
    by_line: list[list[Row]] = []
    for number, found in lines:
        here = f"{where} line {number}"
        if not isinstance(found, dict):
            raise UserError(f"{here}: a line must be a JSON object, got {type(found).__name__}")
        turns, system = _multi_turn(found, here) if kind == MULTI_TURN else _messages(found, here)
        if system:
            systems.setdefault(system, number)
        session = {"session_id": found["session_id"]} if found.get("session_id") is not None else {}
        mine: list[Row] = []
        for index, turn in enumerate(turns):
            fields = {**session, **{k: v for k, v in turn.items() if k != "kind"}}
            checked = check(
                fields, f"{here} {'turn' if kind == MULTI_TURN else 'user/tool message'} {index + 1}"
            )
            mine.append((number, {**checked, "kind": turn.get("kind", USER)}))
        by_line.append(mine)
        rows += mine
    repeated_conversation(by_line, where)
    if len(systems) > 1:
        first, second = sorted(systems.values())[:2]
        raise UserError(
            f"{where} line {second}: a system message (or tools) other than line {first}'s; a file declares "
            "one shared prefix (the system message and tools every session opens with)"
        )
    return rows, next(iter(systems), "")


def _multi_turn(line: Mapping[str, Any], where: str) -> tuple[list[dict[str, Any]], str]:
    """An AIPerf ``multi_turn`` line's turns as rows, and its leading system text ("" for none)."""
    unknown = sorted(set(line) - {"session_id", "turns", "type"})
    if unknown:
        raise UserError(
            f"{where}: unknown field {unknown[0][:40]!r}; a multi_turn line has session_id, turns"
        )
    if line.get("type", MULTI_TURN) != MULTI_TURN:
        raise UserError(
            f"{where}: type must be multi_turn in a multi_turn file, got {str(line['type'])[:40]!r}"
        )
    turns = line.get("turns")
    if not isinstance(turns, list) or not turns:
        raise UserError(f"{where}: not a multi_turn line (turns must be a non-empty list); one format a file")
    system, rows = "", list[dict[str, Any]]()
    for index, turn in enumerate(turns):
        here = f"{where} turn {index + 1}"
        if not isinstance(turn, dict):
            raise UserError(f"{here}: a turn must be a JSON object, got {type(turn).__name__}")
        media = sorted(set(turn) & set(MEDIA))
        if media:
            raise UserError(f"{here}: {media[0]!r} is not replayed (accelbench sends text only)")
        unknown = sorted(set(turn) - set(TURN_FIELDS))
        if unknown:
            raise UserError(f"{here}: unknown field {unknown[0][:40]!r}; a turn has {', '.join(TURN_FIELDS)}")
        text = _turn_text(turn, here)
        role = turn.get("role") or "user"
        if role == "system" and index == 0 and not rows:
            if set(turn) - {"role", "text", "texts"}:
                raise UserError(f"{here}: a system turn holds its text only (it is the system message)")
            system = text
            continue
        if role != "user":
            raise UserError(
                f"{here}: role {str(role)[:40]!r}: a turn is a user message (system: the first turn only)"
            )
        row = {"text_input": text} | {
            k: turn[k] for k in ("delay", "timestamp", "output_length") if k in turn
        }
        rows.append(row)
    if not rows:
        raise UserError(f"{where}: no user turn (a system turn alone is not a session)")
    return rows, system


def _turn_text(turn: Mapping[str, Any], where: str) -> str:
    """A ``multi_turn`` turn's text: ``text``, or ``texts`` (strings) joined by a new line."""
    if ("text" in turn) == ("texts" in turn):
        raise UserError(f"{where}: give text or texts, one of them")
    if "text" in turn:
        if not isinstance(turn["text"], str):
            raise UserError(f"{where}: text must be a string")
        return str(turn["text"])
    texts = turn["texts"]
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise UserError(
            f"{where}: texts must be a non-empty list of strings (named text fields are not replayed)"
        )
    return "\n".join(texts)


def _messages(line: Mapping[str, Any], where: str) -> tuple[list[dict[str, Any]], str]:
    """An OpenAI ``messages`` line's user and tool messages as rows (its assistant messages dropped),
    and its leading system message ("" for none)."""
    unknown = sorted(set(line) - {"messages", "tools"})
    if unknown:
        raise UserError(f"{where}: unknown field {unknown[0][:40]!r}; a messages line has messages, tools")
    messages = line.get("messages")
    if not isinstance(messages, list) or not messages:
        raise UserError(
            f"{where}: not a messages line (messages must be a non-empty list); one format a file"
        )
    system, rows, called = "", list[dict[str, Any]](), dict[str, str]()
    for index, message in enumerate(messages):
        here = f"{where} message {index + 1}"
        if not isinstance(message, dict) or message.get("role") not in (
            "system",
            "user",
            "assistant",
            "tool",
        ):
            raise UserError(f"{here}: a message is an object with role system, user, assistant or tool")
        role = message["role"]
        if role == "assistant":
            called |= _calls(message)
            continue  # dropped: the server's real reply takes its place
        unknown = sorted(set(message) - set(MESSAGE_FIELDS))
        if unknown:
            raise UserError(f"{here}: unknown field {unknown[0][:40]!r}; a {role} message has role, content")
        text = _content(message.get("content"), here)
        if role == "system":
            if index:
                raise UserError(f"{here}: a system message comes first (it is the declared shared prefix)")
            system = text
        elif role == "tool":
            if not rows:
                raise UserError(
                    f"{here}: a tool result before any user message (the first turn is the user's)"
                )
            name = str(message.get("name") or called.get(str(message.get("tool_call_id")), ""))
            rows.append({"text_input": f"[tool:{name}] {text}" if name else f"[tool] {text}", "kind": TOOL})
        else:
            rows.append({"text_input": text})
    if not rows:
        raise UserError(f"{where}: no user message (a conversation needs one to replay)")
    if "tools" in line:
        system += TOOLS_HEADING + _tools(line["tools"], where)
    return rows, system


def _tools(tools: Any, where: str) -> str:
    """A line's tool definitions as the JSON that closes its system message (keys sorted, one form)."""
    if not isinstance(tools, list) or not tools:
        raise UserError(f"{where}: tools must be a non-empty list of tool definitions")
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise UserError(
                f"{where}: tool {index + 1} is not a function definition "
                '({"type": "function", "function": {"name": ...}})'
            )
    return json.dumps(tools, sort_keys=True, ensure_ascii=False)


def _calls(message: Mapping[str, Any]) -> dict[str, str]:
    """The tool names an assistant message's ``tool_calls`` name, by call id (a malformed call: none)."""
    calls = message.get("tool_calls")
    found = {}
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            found[str(call.get("id"))] = function["name"]
    return found


def _content(content: Any, where: str) -> str:
    """A message's text: a string, or a list of ``{"type": "text", "text": ...}`` parts joined."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else None
    if parts and all(
        isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in parts
    ):
        return "".join(p["text"] for p in parts)
    raise UserError(f"{where}: content must be text (a string or text parts; images are not replayed)")


def repeated_conversation(sessions: Sequence[Sequence[Row]], where: str) -> None:
    """UserError when a ``messages`` or ``multi_turn`` line repeats the line before's turns as its head:
    a file of one line per turn, each the conversation so far (a cumulative dump), not one a session."""
    for before, after in pairwise(sessions):
        head = [r.get("text_input") for _, r in before]
        mine = [r.get("text_input") for _, r in after]
        if len(mine) > len(head) and mine[: len(head)] == head:
            raise UserError(
                f"{where} line {after[0][0]}: its turns start with line {before[0][0]}'s whole conversation: "
                "cumulative lines (one a turn, each the history so far); give one line a session"
            )
