"""The ``endpoint`` driver's settings (``accelbench.endpoint.cell``): how a served LLM's curve is measured.

Built once in the parent from the run's ``RunConfig`` with every default resolved (``from_config``). The
prompt lengths are the workload's, read in the cell, so they are not part of the record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from accelbench.errors import UserError
from accelbench.knobs import Knob, knob, shared
from accelbench.scenarios.rules import get_rules
from accelbench.settings import KnobsAlone, knob_values

if TYPE_CHECKING:  # config loads this record at run time (its knobs): no import back then
    from accelbench.config import RunConfig

DEFAULT_OUTPUT_TOKENS = 128
DEFAULT_API_KEY_ENV = "ACCELBENCH_API_KEY"
DEFAULT_API = "chat"
ENDPOINT_APIS = ("chat", "completions")
"""The OpenAI APIs an endpoint cell can send its requests to (``accelbench.endpoint.client.PATHS``)."""
ARRIVALS = ("concurrency", "poisson")
"""How an endpoint cell loads its server: the fixed-concurrency curve, or the curve and then the max-QPS
search under Poisson arrivals (``accelbench.endpoint.qps_search``)."""
MAX_CONCURRENCY = 4096


def concurrencies(text: str | None, option: str = "--concurrency") -> tuple[int, ...] | None:
    """``--concurrency 1,2,4`` (or ``option``'s list) as numbers; UserError for anything else."""
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UserError(f"{option} takes comma-separated whole numbers, got {text[:80]!r}") from None


def _ladder_problem(ladder: tuple[int, ...]) -> str | None:
    if any(c < 1 or c > MAX_CONCURRENCY for c in ladder):
        return f"concurrency values must be in [1, {MAX_CONCURRENCY}], got {list(ladder)}"
    return None


def _requests_problem(requests: int) -> str | None:
    return "endpoint_requests must be >= 0" if requests < 0 else None


def _output_tokens_problem(tokens: int) -> str | None:
    return "output_tokens must be >= 0" if tokens < 0 else None


OUTPUT_TOKENS = Knob(
    flag="--output-tokens",
    help=f"Served LLMs: tokens per reply (default {DEFAULT_OUTPUT_TOKENS}; a session turn's 16).",
    check=_output_tokens_problem,
    unset=0,
)
"""``--output-tokens``: read by the endpoint driver (a request's reply) and the sessions driver (a turn's
reply), each with its own default (``accelbench.knobs.shared``); the run's 0 stands for it."""


def _choice_problem(name: str, known: tuple[str, ...]) -> Callable[[str], str | None]:
    def problem(value: str) -> str | None:
        return (
            None if value in ("", *known) else f"{name} must be one of {', '.join(known)}, got {value[:80]!r}"
        )

    return problem


@dataclass(frozen=True, slots=True)
class EndpointSettings(KnobsAlone):
    """How the curve is measured (``accelbench.settings``; stored in the result's settings)."""

    driver: ClassVar[str] = "endpoint"

    ladder: tuple[int, ...] = knob(
        (),
        flag="--concurrency",
        help="Served LLMs (llm@...): the curve's concurrencies, e.g. 1,2,4,8 (default: automatic).",
        parse=concurrencies,
        check=_ladder_problem,
    )
    """The concurrencies asked (empty: chosen automatically)."""
    requests: int = knob(
        0,
        flag="--endpoint-requests",
        help="Served LLMs: requests per point at least (default max(10, 2c)).",
        check=_requests_problem,
    )
    """Requests per point at least (0: max(10, 2 x concurrency)); never fewer than the concurrency."""
    max_tokens: int = shared(OUTPUT_TOKENS, DEFAULT_OUTPUT_TOKENS)
    """Tokens per reply (``--output-tokens``)."""
    api: str = knob(
        DEFAULT_API,
        flag="--endpoint-api",
        help="Served LLMs: chat (/v1/chat/completions, default) or completions (/v1/completions).",
        check=_choice_problem("endpoint_api", ENDPOINT_APIS),
        unset="",
    )
    """``chat`` (``/v1/chat/completions``, messages) or ``completions`` (``/v1/completions``, the chat
    template's text); the run's empty value: ``chat``."""
    api_key_env: str = DEFAULT_API_KEY_ENV
    """The environment variable holding the API key (``--api-key-env``); the key is never stored."""
    arrivals: str = knob(
        "",
        flag="--arrivals",
        help="Served LLMs: concurrency (the curve, default) or poisson (the curve, then the max QPS "
        "under the TTFT/TPOT bounds with Poisson arrivals).",
        check=_choice_problem("arrivals", ARRIVALS),
    )
    """``poisson``: search the max QPS under Poisson arrivals after the curve (``concurrency`` or empty:
    the curve only)."""
    serve_url: str | None = None
    """The server of the ``llm@url`` stack (``--serve-url``), else None."""
    point_max_s: float = 0.0
    """How long a point may go on after its first requests while its medians are wider than 10% (the
    run's rules: ``Rules.endpoint_point_max_s``; 0: its first requests only)."""

    @classmethod
    def from_config(cls, config: RunConfig) -> EndpointSettings:
        """The settings the run ``config`` asks for, its defaults resolved."""
        return cls(
            **knob_values(cls, config),
            api_key_env=config.served.api_key_env or DEFAULT_API_KEY_ENV,
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
