"""The ``sessions`` driver's settings (``accelbench.sessions.cell``): how the session ladder is measured."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from accelbench.endpoint.settings import DEFAULT_API_KEY_ENV
from accelbench.sessions.load import DEFAULT_IN_FLIGHT_CAP, DEFAULT_RATE_SESSIONS, Load

if TYPE_CHECKING:  # config loads this record at run time (its knobs): no import back then
    from accelbench.config import RunConfig
    from accelbench.sessions.workload import Shape

DEFAULT_TURNS = 3
DEFAULT_OUTPUT_TOKENS = 16


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """How the session ladder is measured (``accelbench.settings``; stored in the result's settings)."""

    driver: ClassVar[str] = "sessions"

    ladder: tuple[int, ...] = ()
    """Sessions at once per load point (``--sessions``); empty with ``rates``."""
    rates: tuple[float, ...] = ()
    """Session arrival rates per load point, sessions per second (``--session-rate``; an open loop:
    ``accelbench.sessions.load``); empty with ``ladder``."""
    rate_sessions: int = DEFAULT_RATE_SESSIONS
    """The sessions each rate point starts (``--session-count``)."""
    in_flight_cap: int = DEFAULT_IN_FLIGHT_CAP
    """A rate point falls behind (stops starting sessions, marked) when a session is due while this many
    are in flight."""
    turns: int = DEFAULT_TURNS
    """Turns per session (``--session-turns``)."""
    max_tokens: int = DEFAULT_OUTPUT_TOKENS
    """Tokens per reply (``--output-tokens``)."""
    api_key_env: str = DEFAULT_API_KEY_ENV
    """The environment variable holding the API key (``--api-key-env``); the key is never stored."""
    serve_url: str | None = None
    """The server of the ``llm@url`` stack (``--serve-url``), else None."""
    trace: str | None = None
    """The replayed trace file (``--session-trace``, ``accelbench.sessions.trace``), else None: the
    synthetic agentic sessions."""
    trace_sha256: str | None = None
    """The trace file's sha256 as the run read it before it started (the cell replays only that file)."""

    @classmethod
    def from_config(cls, config: RunConfig) -> SessionSettings:
        """The settings the run ``config`` asks for, its defaults resolved."""
        return cls(
            ladder=tuple(config.sessions),
            rates=tuple(getattr(config, "session_rates", ())),
            rate_sessions=getattr(config, "session_count", 0) or DEFAULT_RATE_SESSIONS,
            turns=config.session_turns or DEFAULT_TURNS,
            max_tokens=config.output_tokens or DEFAULT_OUTPUT_TOKENS,
            api_key_env=config.served.api_key_env or DEFAULT_API_KEY_ENV,
            serve_url=config.served.url,
            # an old flat spec's knobs (``cellspec.FlatKnobs``) predate the trace: none was replayed
            trace=getattr(config, "session_trace", None),
            trace_sha256=getattr(config, "session_trace_sha256", None),
        )

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
