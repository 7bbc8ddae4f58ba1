"""The ``sessions`` driver's settings (``accelbench.sessions.cell``): how the session ladder is measured."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from accelbench.config import RunConfig
from accelbench.endpoint.settings import DEFAULT_API_KEY_ENV

if TYPE_CHECKING:
    from accelbench.sessions.workload import Shape

DEFAULT_TURNS = 3
DEFAULT_OUTPUT_TOKENS = 16


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """How the session ladder is measured (``accelbench.settings``; stored in the result's settings)."""

    driver: ClassVar[str] = "sessions"

    ladder: tuple[int, ...] = ()
    """Sessions at once per load point (``--sessions``)."""
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
            turns=config.session_turns or DEFAULT_TURNS,
            max_tokens=config.output_tokens or DEFAULT_OUTPUT_TOKENS,
            api_key_env=config.api_key_env or DEFAULT_API_KEY_ENV,
            serve_url=config.serve_url,
            # an old flat spec's knobs (``cellspec.FlatKnobs``) predate the trace: none was replayed
            trace=getattr(config, "session_trace", None),
            trace_sha256=getattr(config, "session_trace_sha256", None),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionSettings:
        """Inverse of ``to_dict``."""
        return cls(**{**data, "ladder": tuple(data.get("ladder", ()))})

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        return asdict(self)

    @property
    def shape(self) -> Shape:
        """The synthetic sessions' drawn sizes (``accelbench.sessions.workload``) with these turns."""
        from accelbench.sessions.workload import Shape

        return Shape(turns=self.turns)
