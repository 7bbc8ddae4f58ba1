"""A replayed session trace (``--session-trace FILE``): sessions read from a Mooncake/AIPerf-style JSONL
file instead of the synthetic generator (``accelbench.sessions.workload``). docs/sessions.md names the
fields. A file may instead be a multi-turn message file, one line a session (AIPerf ``multi_turn`` or
OpenAI ``messages``: ``accelbench.sessions.trace_formats``, told by the file's first line), whose turns
become rows here and are held to every rule below.

One line per request: ``session_id`` (a string or a whole number; a row without one is a session of
one turn), the turn's ``input_length`` (its new message's tokens) or ``text_input`` (the message
itself), ``output_length`` (the reply's tokens; absent: the run's ``--output-tokens``), and
``timestamp`` (ms since the trace's start) or ``delay`` (ms after the session's previous reply);
``hash_ids`` (Mooncake's prefix blocks of ``BLOCK_TOKENS`` tokens). A session's turns are its rows in
file order. The leading blocks a session's first row shares with another session's first row are a
prefix the trace declares shared (a tool list, a long system prompt): they are replayed as such, each
block id one seeded text of ``BLOCK_TOKENS`` tokens per pass, appended to the session's system message
(before its salt: the declared shared prefix, ``Trace.shared_blocks``), the row's new message that much
shorter; any other ``hash_ids`` are checked only. Rows carry each turn's *new* message, as AIPerf's
multi-turn Mooncake rows do: the history is the conversation so far, with the server's real replies.
Cumulative rows (each repeating the history) are refused, never silently doubled (the trap of
ai-dynamo/dynamo#14254): a row whose ``text_input`` starts with the row before's, or whose ``hash_ids``
start with the row before's, or (rows without ``hash_ids``) a trace where every later turn is at least
as long as the turn before with its reply.

What reaches the server is accelbench's own: a token count becomes seeded words of that many tokens by
the model's own tokenizer (``accelbench.endpoint.prompts.text_of_tokens``, keyed by the secret input
seed, the pass and the session), every session of every pass opens with its own salt, and the trace's
ids and timings stay in the client (a delay is a wait before the turn is sent). ``read_trace`` is the
only reader: a guarded read (``accelbench.files``), every rule checked before a run starts, one
``UserError`` line naming the file, the row and the rule otherwise.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from accelbench.cell.seeds import sub_seed
from accelbench.endpoint.prompts import text_of_tokens
from accelbench.errors import UserError
from accelbench.files import read_bytes
from accelbench.inputs import MAX_NAME_CHARS, parse_json
from accelbench.sessions.trace_formats import MESSAGES, ROWS, format_of, rows_of
from accelbench.sessions.workload import MAX_TURNS, SYSTEM_PROMPT, USER, Session, Turn, session_salt

MAX_TRACE_BYTES = 16 * 2**20
"""The largest trace file read."""
MAX_ROWS = 10_000
MAX_SESSIONS = 4096
MAX_INPUT_TOKENS = 32_768
"""A turn's ``input_length`` at most."""
MAX_TEXT_CHARS = 131_072
"""A turn's ``text_input`` at most."""
MAX_OUTPUT_TOKENS = 4096
"""A turn's ``output_length`` at most."""
MAX_SESSION_TOKENS = 131_072
"""A session's inputs and outputs summed at most (``text_input`` counted as a token per 4 characters)."""
MAX_DELAY_S = 60.0
"""A turn's wait at most (AIPerf caps a replay's inter-turn delay there too; longer is refused here)."""
MAX_TIMESTAMP_MS = 7 * 86400 * 1000.0
BLOCK_TOKENS = 512
"""The tokens of one ``hash_ids`` block (Mooncake's, and AIPerf's default ``--isl-block-size``)."""

FIELDS = ("session_id", "input_length", "text_input", "output_length", "timestamp", "delay", "hash_ids")
"""Every field a row may have."""


@dataclass(frozen=True, slots=True)
class TraceTurn:
    """One row of the trace: what its turn adds, the reply it asks for and its wait."""

    input_tokens: int
    """The new message's tokens (0 when ``text`` is given)."""
    text: str
    """The new message itself (empty when ``input_tokens`` is given)."""
    max_tokens: int
    """The reply's tokens (0: the run's ``--output-tokens``)."""
    delay_s: float
    """The wait after the session's previous reply (0 for a session's first turn)."""
    kind: str = USER
    """``user`` or ``tool`` (a messages file's tool result)."""
    hash_ids: tuple[int, ...] = ()
    """The row's prefix blocks (Mooncake's ``hash_ids``; (): none)."""


@dataclass(frozen=True, slots=True)
class Trace:
    """A validated trace: its sessions in order of first appearance, and the file's sha256."""

    sessions: tuple[tuple[TraceTurn, ...], ...]
    sha256: str
    rows: int
    """The turns (a row format's rows; a multi-turn file's turns)."""
    format: str = ROWS
    """``rows``, ``multi_turn`` or ``messages`` (``accelbench.sessions.trace_formats``)."""
    system: str = ""
    """The file's system message, the declared shared prefix ("": none; accelbench's is sent)."""

    @property
    def most_turns(self) -> int:
        """The longest session's turns."""
        return max(len(s) for s in self.sessions)

    def most_tokens(self, default: int) -> int:
        """The longest reply asked for (``default``: a row's without ``output_length``)."""
        return max(t.max_tokens or default for s in self.sessions for t in s)

    def delay_range_s(self) -> tuple[float, float]:
        """The smallest and largest wait of a turn after the first ((0, 0): none)."""
        later = [t.delay_s for s in self.sessions for t in s[1:]]
        return (min(later), max(later)) if later else (0.0, 0.0)

    def shared_blocks(self) -> tuple[tuple[int, ...], ...]:
        """Per session, the leading ``hash_ids`` of its first row that another session's first row holds
        too, whole blocks of its ``input_length`` only: the prefix the trace declares shared (() where it
        shares none; a ``text_input`` row's literal text is sent as it is, its blocks unreplayed)."""
        firsts = [s[0].hash_ids[: s[0].input_tokens // BLOCK_TOKENS] for s in self.sessions]
        held: dict[int, set[int]] = {}
        for number, blocks in enumerate(firsts):
            for block in blocks:
                held.setdefault(block, set()).add(number)
        shared = []
        for blocks in firsts:
            lead = 0
            while lead < len(blocks) and len(held[blocks[lead]]) > 1:
                lead += 1
            shared.append(tuple(blocks[:lead]))
        return tuple(shared)


def read_trace(path: Path) -> Trace:
    """The trace in ``path``, validated (module text); one-line UserError otherwise."""
    data = read_bytes(Path(path), "session trace", MAX_TRACE_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(
            f"session trace {path} is not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    return parse_trace(text, f"session trace {path}", hashlib.sha256(data).hexdigest())


def parse_trace(text: str, where: str, sha256: str = "") -> Trace:
    """The trace in ``text`` (JSON lines; blank lines skipped); ``where`` names it in errors."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise UserError(f"{where} is empty: give one JSON object per line (docs/sessions.md)")
    if len(lines) > MAX_ROWS:
        raise UserError(f"{where} has {len(lines)} rows, more than the limit of {MAX_ROWS}")
    parsed = [(number, parse_json(line, f"{where} line {number}")) for number, line in lines]
    kind = format_of(parsed[0][1])
    system = ""
    if kind == ROWS:
        rows = [(number, _row(found, f"{where} line {number}")) for number, found in parsed]
    else:
        rows, system = rows_of(kind, parsed, where, _row)
        if len(rows) > MAX_ROWS:
            raise UserError(f"{where} has {len(rows)} turns, more than the limit of {MAX_ROWS}")
    grouped: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for number, row in rows:
        key = f"id:{json.dumps(row['session_id'])}" if "session_id" in row else f"row:{number}"
        grouped.setdefault(key, []).append((number, row))
    if len(grouped) > MAX_SESSIONS:
        raise UserError(f"{where} has {len(grouped)} sessions, more than the limit of {MAX_SESSIONS}")
    sessions = tuple(_session(rows, where) for rows in grouped.values())
    _refuse_cumulative(list(grouped.values()), where, texts=kind != MESSAGES)
    return Trace(sessions, sha256, len(rows), kind, system)


def _row(found: Any, where: str) -> dict[str, Any]:
    """A row's fields, each of its type and in its range."""
    if not isinstance(found, dict):
        raise UserError(f"{where}: a row must be a JSON object, got {type(found).__name__}")
    unknown = sorted(set(found) - set(FIELDS))
    if unknown:
        raise UserError(f"{where}: unknown field {unknown[0][:40]!r}; a row has {', '.join(FIELDS)}")
    if ("input_length" in found) == ("text_input" in found):
        raise UserError(f"{where}: give input_length (tokens) or text_input (the message), one of them")
    if "timestamp" in found and "delay" in found:
        raise UserError(f"{where}: give timestamp or delay, not both")
    session = found.get("session_id", "")
    if isinstance(session, bool) or not isinstance(session, str | int) or len(str(session)) > MAX_NAME_CHARS:
        raise UserError(f"{where}: session_id must be a string or whole number of at most {MAX_NAME_CHARS}")
    _whole(found, "input_length", 1, MAX_INPUT_TOKENS, where)
    _whole(found, "output_length", 1, MAX_OUTPUT_TOKENS, where)
    text = found.get("text_input", "x")
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT_CHARS:
        raise UserError(f"{where}: text_input must be text of 1 to {MAX_TEXT_CHARS} characters")
    _number(found, "timestamp", MAX_TIMESTAMP_MS, where)
    _number(found, "delay", MAX_DELAY_S * 1000, where)
    hashes = found.get("hash_ids", [])
    if not isinstance(hashes, list) or not all(
        isinstance(h, int) and not isinstance(h, bool) and h >= 0 for h in hashes
    ):
        raise UserError(f"{where}: hash_ids must be a list of whole numbers >= 0")
    return dict(found)


def _whole(row: Mapping[str, Any], name: str, low: int, high: int, where: str) -> None:
    value = row.get(name, low)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UserError(f"{where}: {name} must be a whole number from {low} to {high}, got {_shown(value)}")


def _number(row: Mapping[str, Any], name: str, high: float, where: str) -> None:
    value = row.get(name, 0)
    fits = isinstance(value, int | float) and not isinstance(value, bool)
    if not (fits and math.isfinite(value) and 0 <= value <= high):
        raise UserError(f"{where}: {name} must be a number of ms from 0 to {high:g}, got {_shown(value)}")


def _session(rows: list[tuple[int, dict[str, Any]]], where: str) -> tuple[TraceTurn, ...]:
    """A session's turns from its rows (file order), its limits checked."""
    first = rows[0][0]
    if len(rows) > MAX_TURNS:
        raise UserError(f"{where}: the session of line {first} has {len(rows)} turns, more than {MAX_TURNS}")
    turns: list[TraceTurn] = []
    total = 0
    for index, (number, row) in enumerate(rows):
        delay_ms = 0.0
        if index and "delay" in row:
            delay_ms = float(row["delay"])
        elif index and "timestamp" in row and "timestamp" in rows[index - 1][1]:
            delay_ms = float(row["timestamp"]) - float(rows[index - 1][1]["timestamp"])
            if delay_ms < 0:
                raise UserError(f"{where} line {number}: timestamp before its session's previous row's")
            if delay_ms > MAX_DELAY_S * 1000:
                raise UserError(
                    f"{where} line {number}: {delay_ms / 1000:g} s after its session's previous row, "
                    f"more than the limit of {MAX_DELAY_S:g} s"
                )
        text = str(row.get("text_input", ""))
        total += int(row.get("input_length", 0)) + len(text) // 4 + int(row.get("output_length", 0))
        turns.append(
            TraceTurn(
                input_tokens=int(row.get("input_length", 0)),
                text=text,
                max_tokens=int(row.get("output_length", 0)),
                delay_s=delay_ms / 1000,
                kind=str(row.get("kind", USER)),
                hash_ids=tuple(int(block) for block in row.get("hash_ids", ())),
            )
        )
    if total > MAX_SESSION_TOKENS:
        raise UserError(
            f"{where}: the session of line {first} holds {total} tokens, more than the limit of "
            f"{MAX_SESSION_TOKENS}"
        )
    return tuple(turns)


def _refuse_cumulative(sessions: list[list[tuple[int, dict[str, Any]]]], where: str, texts: bool) -> None:
    """UserError when the rows repeat their session's history (module text). ``texts``: a turn whose
    text starts with the turn before's is refused (rows and ``multi_turn`` lines, whose turns carry only
    the user's words); not in an OpenAI messages line, where the file's own assistant messages stand
    between the user's ("Fix it", a reply, "Fix it again" is a conversation, not a cumulative dump: a
    cumulative messages file is one line a turn, refused by ``trace_formats.repeated_conversation``)."""
    fix = "rows look cumulative (each repeating the history); give each turn's new message only"
    grown, later = 0, 0
    for rows in sessions:
        for (_, before), (number, row) in pairwise(rows):
            if (
                texts
                and "text_input" in row
                and "text_input" in before
                and row["text_input"].startswith(before["text_input"])
            ):
                raise UserError(f"{where} line {number}: text_input starts with the row before's: {fix}")
            hashes, earlier = row.get("hash_ids"), before.get("hash_ids")
            if hashes and earlier and hashes[: len(earlier)] == earlier:
                raise UserError(f"{where} line {number}: hash_ids start with the row before's: {fix}")
            if "input_length" in row and "input_length" in before and "hash_ids" not in row:
                later += 1
                grown += row["input_length"] >= before["input_length"] + before.get("output_length", 0)
    if later >= 2 and grown == later:
        raise UserError(
            f"{where}: every later turn is at least as long as the turn before with its reply: {fix} "
            "(a trace of growing new messages can say so with hash_ids)"
        )


def _shown(value: Any) -> str:
    return json.dumps(value)[:40] if not isinstance(value, str) else repr(value[:40])


def replay(
    trace: Trace,
    input_seed: int,
    pass_name: str,
    count: int,
    count_tokens: Callable[[str], int],
    max_tokens: int,
) -> list[Session]:
    """``count`` sessions of the pass ``pass_name``: session ``i`` replays the trace's session ``i mod K``
    (K: the trace's sessions, in order of first appearance) under its own salt, each turn's message its
    ``text_input`` or seeded words of its ``input_length`` by ``count_tokens`` (the words drawn from a
    stream of the session's own under the input seed), its reply ``output_length`` (else ``max_tokens``)
    long; a session whose trace session declares shared blocks (``Trace.shared_blocks``) has each
    block's text (``block_text``) after its system message, its first message that many tokens shorter.
    Deterministic in its arguments."""
    sessions: list[Session] = []
    shared = trace.shared_blocks()
    for number in range(count):
        rng = np.random.default_rng(sub_seed(input_seed, "trace-text", pass_name, number))
        salt = session_salt(input_seed, pass_name, number)
        blocks = shared[number % len(trace.sessions)]
        system = trace.system or SYSTEM_PROMPT
        if blocks:
            texts = (block_text(input_seed, pass_name, block, count_tokens) for block in blocks)
            system = "\n\n".join((system, *texts))
        turns: list[Turn] = []
        for index, row in enumerate(trace.sessions[number % len(trace.sessions)]):
            tokens = row.input_tokens - (len(blocks) * BLOCK_TOKENS if index == 0 else 0)
            text = row.text or text_of_tokens(rng, max(tokens, 1), count_tokens)
            content = f"[{salt}] {text}" if index == 0 else text
            turns.append(Turn(row.kind, content, row.delay_s, row.max_tokens or max_tokens))
        sessions.append(Session(number, salt, tuple(turns), system))
    return sessions


def block_text(input_seed: int, pass_name: str, block: int, count_tokens: Callable[[str], int]) -> str:
    """The text of a shared prefix block: ``BLOCK_TOKENS`` tokens of seeded words, one text per block id
    and pass (the secret input seed's: no server knows it before the run; a new pass, new texts)."""
    rng = np.random.default_rng(sub_seed(input_seed, "trace-block", pass_name, block))
    return text_of_tokens(rng, BLOCK_TOKENS, count_tokens)


def describe(trace: Trace, name: str) -> str:
    """What was replayed, stated: the file's name and hash, its sessions, rows and sizes."""
    turns = [t for s in trace.sessions for t in s]
    counted = [t.input_tokens for t in turns if t.input_tokens]
    sizes = f"; new messages {min(counted)}-{max(counted)} tokens" if counted else ""
    asked = [t.max_tokens for t in turns if t.max_tokens]
    sizes += f"; replies {min(asked)}-{max(asked)} tokens" if asked else ""
    sizes += " (others --output-tokens)" if asked and len(asked) < len(turns) else ""
    low, high = trace.delay_range_s()
    fewest = min(len(s) for s in trace.sessions)
    system = f"; its own system message of {len(trace.system)} characters" if trace.system else ""
    sharing = [blocks for blocks in trace.shared_blocks() if blocks]
    if sharing:
        fewest, most = min(map(len, sharing)), max(map(len, sharing))
        system += (
            f"; {len(sharing)} sessions open with shared prefix blocks ({fewest}-{most} of {BLOCK_TOKENS} "
            "tokens, sent after the system message: the declared shared prefix)"
        )
    return (
        f"trace {name} ({trace.format}, sha256 {trace.sha256[:12]}): {len(trace.sessions)} sessions, "
        f"{trace.rows} turns, {fewest}-{trace.most_turns} turns a session{sizes}; waits {low:g}-{high:g} s "
        f"after a reply{system}"
    )
