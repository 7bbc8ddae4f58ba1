"""The ``sessions`` driver's settings (``accelbench.sessions.cell``): how the session ladder is measured."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from accelbench.endpoint.settings import DEFAULT_API_KEY_ENV, OUTPUT_TOKENS, concurrencies
from accelbench.errors import UserError
from accelbench.knobs import Knobs, knob, shared
from accelbench.sessions.load import DEFAULT_IN_FLIGHT_CAP, DEFAULT_RATE_SESSIONS, Load
from accelbench.settings import knob_values

if TYPE_CHECKING:  # config loads this record at run time (its knobs): no import back then
    from accelbench.config import RunConfig
    from accelbench.sessions.workload import Shape

DEFAULT_TURNS = 3
DEFAULT_OUTPUT_TOKENS = 16


def rates(text: str | None, option: str = "--session-rate") -> tuple[float, ...] | None:
    """``--session-rate 0.5,1,2`` as numbers; UserError for anything else."""
    if text is None:
        return None
    try:
        found = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UserError(
            f"{option} takes comma-separated numbers (sessions per second), got {text[:80]!r}"
        ) from None
    if not found or any(not math.isfinite(r) or r <= 0 for r in found):
        raise UserError(f"{option} takes rates above 0 (sessions per second), got {text[:80]!r}")
    return found


def _cap_problem(cap: int) -> str | None:
    return None if 1 <= cap <= 4096 else f"session_cap must be in [1, 4096], got {cap}"


def _ladder(text: str) -> tuple[int, ...] | None:
    """``--sessions 1,2,4`` as numbers."""
    return concurrencies(text, "--sessions")


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """How the session ladder is measured (``accelbench.settings``; stored in the result's settings)."""

    driver: ClassVar[str] = "sessions"

    ladder: tuple[int, ...] = knob(
        (),
        flag="--sessions",
        help="Served LLMs: agentic multi-turn sessions instead of the curve, this many at once per load "
        "point, e.g. 1,2,4 (docs/sessions.md).",
        parse=_ladder,
    )
    """Sessions at once per load point; empty with ``rates`` (and without either: the endpoint's curve)."""
    rates: tuple[float, ...] = knob(
        (),
        flag="--session-rate",
        setting="session_rates",
        help="Served LLMs: agentic sessions arriving at these rates instead, sessions per second, a "
        "Poisson process, one load point each, e.g. 0.25,0.5,1 (not with --sessions; docs/sessions.md).",
        parse=rates,
    )
    """Session arrival rates per load point, sessions per second (an open loop:
    ``accelbench.sessions.load``); empty with ``ladder``."""
    rate_sessions: int = knob(
        DEFAULT_RATE_SESSIONS,
        flag="--session-count",
        help="Served LLMs with --session-rate: sessions each rate point starts (16; a point stops starting "
        "them, marked behind, when one is due with --session-cap in flight).",
        unset=0,
    )
    """The sessions each rate point starts."""
    in_flight_cap: int = knob(
        DEFAULT_IN_FLIGHT_CAP,
        flag="--session-cap",
        help="Served LLMs with --session-rate: sessions in flight at most; a point stops starting them, "
        "marked behind, when one is due with this many in flight (8).",
        check=_cap_problem,
    )
    """A rate point falls behind (stops starting sessions, marked) when a session is due while this many
    are in flight (stored with each rate point's result)."""
    turns: int = knob(
        DEFAULT_TURNS,
        flag="--session-turns",
        help="Served LLMs with --sessions: turns per session (3).",
        unset=0,
    )
    """Turns per session of the synthetic workload."""
    max_tokens: int = shared(OUTPUT_TOKENS, DEFAULT_OUTPUT_TOKENS)
    """Tokens per reply (``--output-tokens``)."""
    api_key_env: str = DEFAULT_API_KEY_ENV
    """The environment variable holding the API key (``--api-key-env``); the key is never stored."""
    serve_url: str | None = None
    """The server of the ``llm@url`` stack (``--serve-url``), else None."""
    trace: str | None = knob(
        None,
        flag="--session-trace",
        help="Served LLMs with --sessions: replay the sessions of this JSONL trace (Mooncake/AIPerf rows: "
        "session_id, input_length or text_input, output_length, timestamp or delay; docs/sessions.md).",
    )
    """The replayed trace file (its absolute path, ``accelbench.sessions.trace``), else None: the
    synthetic agentic sessions."""
    trace_sha256: str | None = knob(
        None, flag="", setting="session_trace_sha256", help="The trace file's sha256 (the run reads it)."
    )
    """The trace file's sha256 as the run read it before it started (the cell replays only that file)."""

    @classmethod
    def from_config(cls, config: RunConfig) -> SessionSettings:
        """The settings the run ``config`` asks for, its defaults resolved."""
        return cls(
            **knob_values(cls, config),
            api_key_env=config.served.api_key_env or DEFAULT_API_KEY_ENV,
            serve_url=config.served.url,
        )

    @classmethod
    def knobs_problem(cls, knobs: Knobs) -> str | None:
        """Why the sessions' knobs do not go together (``accelbench.settings.knobs_problem``), or None."""
        ladder, rates, count = knobs["sessions"], knobs["session_rates"], knobs["session_count"]
        turns, trace, digest = knobs["session_turns"], knobs["session_trace"], knobs["session_trace_sha256"]
        if any(s < 1 or s > 4096 for s in ladder) or not 0 <= turns <= 1000:
            return (
                f"sessions must be in [1, 4096] and session_turns in [0, 1000], got {list(ladder)} "
                f"and {turns}"
            )
        if ladder and rates:
            return "give --sessions (sessions at once) or --session-rate (arrivals per second), not both"
        if any(not 0 < r <= 1000 for r in rates) or len(set(rates)) < len(rates) or not 0 <= count <= 4096:
            return (
                "session rates must be distinct, each above 0 and at most 1000 sessions/s, and "
                f"session_count in [0, 4096], got {list(rates)} and {count}"
            )
        if count and not rates:
            return "--session-count sets the sessions of each --session-rate point (give it)"
        if trace is not None and (not (ladder or rates) or turns):
            return (
                "session_trace replays sessions at the loads of --sessions or --session-rate (give one) and "
                "sets their turns (--session-turns is the synthetic workload's)"
            )
        if digest is not None and not re.fullmatch(r"[0-9a-f]{64}", digest):
            return f"session_trace_sha256 must be 64 hex digits, got {digest[:80]!r}"
        return None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionSettings:
        """Inverse of ``to_dict``."""
        return cls(**{**data, "ladder": tuple(data.get("ladder", ())), "rates": tuple(data.get("rates", ()))})

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        return asdict(self)

    @property
    def loads(self) -> tuple[Load, ...]:
        """The load points, in order: ``ladder``'s sessions at once, or ``rates``' arrival rates."""
        return tuple(Load(n) for n in self.ladder) + tuple(Load(0, r) for r in self.rates)

    @property
    def shape(self) -> Shape:
        """The synthetic sessions' drawn sizes (``accelbench.sessions.workload``) with these turns."""
        from accelbench.sessions.workload import Shape

        return Shape(turns=self.turns)
