"""The seeded synthetic agentic workload: sessions of turns, made offline from the cell's secret seed.

Every session opens with the same system message (an agent's instructions and its tool schema): the
*declared* shared prefix, the only text two sessions share. The first user message starts with the
session's salt (32 hex digits keyed by the input seed, the pass and the session number), so everything
after the system message is unique to its session and its pass. Later turns are a user follow-up or a
tool result (``TOOL_SHARE`` of them) of drawn sizes; each waits its drawn think delay before it is sent.
The context grows by the turn's message and the server's real reply to the turn before it.

Tool results travel as ``user`` messages that name the tool (``[tool:grep] ...``): a ``tool`` role needs the
assistant's ``tool_calls`` before it, which a model that does not call tools never makes, and strict
servers reject it. ``make_sessions`` is deterministic in its arguments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from accelbench.cell.seeds import sub_seed
from accelbench.generation.prompts import seeded_message

MAX_TURNS = 1000
"""The most turns a session has (``--session-turns``' bound, a replayed trace's too)."""
USER = "user"
TOOL = "tool"
TOOLS = ("read_file", "grep", "run_tests", "list_dir")
TOOL_SCHEMA = [
    {"name": "read_file", "description": "Read a file of the repository.", "parameters": {"path": "string"}},
    {
        "name": "grep",
        "description": "Search the repository for a pattern.",
        "parameters": {"pattern": "string"},
    },
    {"name": "run_tests", "description": "Run the test suite and return its log.", "parameters": {}},
    {"name": "list_dir", "description": "List a folder of the repository.", "parameters": {"path": "string"}},
]
SYSTEM_PROMPT = (
    "You are a coding agent working in a software repository. Think step by step, ask for a tool when you "
    "need one by naming it, and answer briefly. Tools: " + json.dumps(TOOL_SCHEMA, sort_keys=True)
)
"""The declared shared prefix: the same system message opens every session."""


@dataclass(frozen=True, slots=True)
class Shape:
    """The drawn sizes of the synthetic sessions (words are about a token or more each)."""

    turns: int = 3
    user_words: tuple[int, int] = (6, 20)
    """A user message's words, drawn log-uniform in this range."""
    tool_words: tuple[int, int] = (16, 64)
    """A tool result's words, drawn log-uniform in this range."""
    tool_share: float = 0.5
    """The chance that a turn after the first is a tool result."""
    delay_s: tuple[float, float] = (0.0, 0.2)
    """A turn's think delay before it is sent, uniform in this range (the first turn: none)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a session: what it adds to the conversation and the delay before it is sent."""

    kind: str
    """``user`` or ``tool``."""
    content: str
    """The message appended to the conversation (a tool result already names its tool)."""
    delay_s: float
    max_tokens: int = 0
    """The reply's tokens (0: the run's ``--output-tokens``; a replayed trace's row sets its own)."""


@dataclass(frozen=True, slots=True)
class Session:
    """A session's script: its salt and its turns (the replies come from the server at run time)."""

    number: int
    salt: str
    turns: tuple[Turn, ...]
    system: str = SYSTEM_PROMPT
    """The system message it opens with: the declared shared prefix (a replayed file's own, or
    ``SYSTEM_PROMPT``)."""


def describe(shape: Shape) -> str:
    """The stated sizes of ``shape``."""
    return (
        f"{shape.turns} turns; user messages {shape.user_words[0]}-{shape.user_words[1]} words, tool results "
        f"{shape.tool_words[0]}-{shape.tool_words[1]} words (log-uniform), {shape.tool_share:.0%} of later "
        f"turns tool results; think delays {shape.delay_s[0]:g}-{shape.delay_s[1]:g} s (uniform)"
    )


def session_salt(input_seed: int, pass_name: str, number: int) -> str:
    """The salt of session ``number`` of the pass ``pass_name``: 32 hex digits from the input seed."""
    high = sub_seed(input_seed, "session-salt", pass_name, number, 0)
    low = sub_seed(input_seed, "session-salt", pass_name, number, 1)
    return f"{high:016x}{low:016x}"


def make_sessions(input_seed: int, pass_name: str, count: int, shape: Shape) -> list[Session]:
    """``count`` sessions of the pass ``pass_name`` (a load point, the warm-up, ...), each drawn from a
    stream of its own under the input seed."""
    return [_session(input_seed, pass_name, number, shape) for number in range(count)]


def _session(input_seed: int, pass_name: str, number: int, shape: Shape) -> Session:
    rng = np.random.default_rng(sub_seed(input_seed, "session", pass_name, number))
    salt = session_salt(input_seed, pass_name, number)
    turns = [Turn(USER, f"[{salt}] {seeded_message(rng, _words(rng, shape.user_words))}", 0.0)]
    for _ in range(shape.turns - 1):
        delay_s = float(rng.uniform(*shape.delay_s))
        if rng.uniform() < shape.tool_share:
            tool = str(rng.choice(TOOLS))
            turns.append(
                Turn(TOOL, f"[tool:{tool}] {seeded_message(rng, _words(rng, shape.tool_words))}", delay_s)
            )
        else:
            turns.append(Turn(USER, seeded_message(rng, _words(rng, shape.user_words)), delay_s))
    return Session(number, salt, tuple(turns))


def _words(rng: np.random.Generator, bounds: tuple[int, int]) -> int:
    low, high = bounds
    return int(np.clip(np.exp(rng.uniform(np.log(low), np.log(high + 1))), low, high))
