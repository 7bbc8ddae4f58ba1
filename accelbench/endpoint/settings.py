"""The ``endpoint`` driver's settings (``accelbench.endpoint.cell``): how a served LLM's curve is measured.

Built once in the parent from the run's ``RunConfig`` with every default resolved (``from_config``). The
prompt lengths are the workload's, read in the cell, so they are not part of the record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from accelbench.scenarios.rules import get_rules

if TYPE_CHECKING:  # config loads this record at run time (its knobs): no import back then
    from accelbench.config import RunConfig

DEFAULT_OUTPUT_TOKENS = 128
DEFAULT_API_KEY_ENV = "ACCELBENCH_API_KEY"
DEFAULT_API = "chat"


@dataclass(frozen=True, slots=True)
class EndpointSettings:
    """How the curve is measured (``accelbench.settings``; stored in the result's settings)."""

    driver: ClassVar[str] = "endpoint"

    ladder: tuple[int, ...] = ()
    """The concurrencies asked (``--concurrency``; empty: chosen automatically)."""
    requests: int = 0
    """Requests per point at least (0: max(10, 2 x concurrency)); never fewer than the concurrency."""
    max_tokens: int = DEFAULT_OUTPUT_TOKENS
    """Tokens per reply (``--output-tokens``)."""
    api: str = DEFAULT_API
    """``chat`` or ``completions`` (``--endpoint-api``)."""
    api_key_env: str = DEFAULT_API_KEY_ENV
    """The environment variable holding the API key (``--api-key-env``); the key is never stored."""
    arrivals: str = ""
    """``poisson``: search the max QPS under Poisson arrivals after the curve (empty: the curve only)."""
    serve_url: str | None = None
    """The server of the ``llm@url`` stack (``--serve-url``), else None."""
    point_max_s: float = 0.0
    """How long a point may go on after its first requests while its medians are wider than 10% (the
    run's rules: ``Rules.endpoint_point_max_s``; 0: its first requests only)."""

    @classmethod
    def from_config(cls, config: RunConfig) -> EndpointSettings:
        """The settings the run ``config`` asks for, its defaults resolved."""
        return cls(
            ladder=tuple(config.concurrency),
            requests=config.endpoint_requests,
            max_tokens=config.output_tokens or DEFAULT_OUTPUT_TOKENS,
            api=config.endpoint_api or DEFAULT_API,
            api_key_env=config.served.api_key_env or DEFAULT_API_KEY_ENV,
            arrivals=config.arrivals,
            serve_url=config.served.url,
            point_max_s=_point_max_s(getattr(config, "rules", None)),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EndpointSettings:
        """Inverse of ``to_dict``."""
        return cls(**{**data, "ladder": tuple(data.get("ladder", ()))})

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        return asdict(self)

    def requests_at(self, concurrency: int) -> int:
        """The requests of the point at ``concurrency``."""
        return max(self.requests or max(10, 2 * concurrency), concurrency)


def _point_max_s(rules: str | None) -> float:
    """The point cap of the run's rules (an old flat spec's knobs (``cellspec.FlatKnobs``) name none and
    predate the cap: 0, its first requests only)."""
    return 0.0 if rules is None else get_rules(rules).endpoint_point_max_s
