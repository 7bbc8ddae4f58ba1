"""``accelbench run --serve SERVERS``: each chosen stack with its served variants (docs/serving.md).

A served deployment is the stack ``<stack>@<server>`` (``onnxruntime@ray-serve``). ``--serve`` keeps
the in-process stacks and adds, for each, every ``<stack>@<server>`` that is registered, so the
serving overhead (served over in-process) is measured in one run. Stacks with no served variant stay
in-process only; a server no chosen stack has is a UserError naming the served stacks there are.
``--serve-cluster`` without a Ray Serve stack among them is a UserError too. For the LLM workloads, a
server of ``accelbench.endpoint.servers`` (``transformers``, ``transformers-cb``) adds the endpoint
stack ``llm@<server>``, and ``--serve-url`` adds ``llm@url`` (an OpenAI-compatible endpoint's curve).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from accelbench import registry
from accelbench.errors import UserError

ServeOption = Annotated[
    str | None,
    typer.Option(help="Also serve each stack: ray-serve,triton,torchserve (-nobatch: batching off)."),
]
ServeUrlOption = Annotated[
    str | None, typer.Option("--serve-url", help="Also send each stack's requests to this running v2 server.")
]
ServeHardwareOption = Annotated[
    str | None,
    typer.Option(
        "--serve-hardware",
        help="The --serve-url server's chips: CHIP [x N] (a chips-table key) or a file from `accelbench hw "
        "--json` run on the server (declared, for per-chip figures).",
    ),
]
ApiKeyEnvOption = Annotated[
    str | None,
    typer.Option("--api-key-env", help="Served LLMs: env variable with the API key (ACCELBENCH_API_KEY)."),
]
ServeClusterOption = Annotated[
    str | None,
    typer.Option(
        "--serve-cluster", help="Deploy the Ray Serve stacks on this Ray cluster: HOST:PORT or auto."
    ),
]


def with_served(stacks: Sequence[str], servers: Sequence[str], llm: bool = False) -> tuple[str, ...]:
    """``stacks`` followed by the registered ``<stack>@<server>`` of every one of ``servers`` (and, when
    the run has an LLM workload, the endpoint stack ``llm@<server>`` of each that has one)."""
    known, generating = registry.table("stack"), registry.table("endpoint stack")
    served = [f"{stack}@{server}" for server in servers for stack in stacks if "@" not in stack]
    found = [name for name in served if name in known]
    found += [f"llm@{server}" for server in servers if llm and f"llm@{server}" in generating]
    given = [*found, *(name for name in stacks if "@" in name)]
    missing = [s for s in servers if not any(name.endswith(f"@{s}") for name in given)]
    if missing:
        there = ", ".join(sorted(name for name in {*known, *generating} if "@" in name)) or "none"
        chosen = ", ".join(stacks)
        raise UserError(f"no served variant of {chosen} on {', '.join(missing)}; served stacks: {there}")
    return tuple(dict.fromkeys([*stacks, *found]))


def generative(workloads: Sequence[str]) -> bool:
    """Whether one of ``workloads`` is an LLM workload: one that declares the ``tokens`` driver, as the
    runner plans it (``accelbench.runner.PLANS``), a plugin's too; an unknown name is the runner's error."""
    known = registry.table("workload")
    return any(registry.driver_of(known[name]) == "tokens" for name in workloads if name in known)


def served_settings(
    serve_url: str | None,
    serve_cluster: str | None,
    api_key_env: str | None,
    serve_hardware: str | None = None,
) -> dict[str, Any]:
    """The run settings of ``--serve-url``, ``--serve-cluster`` and the served-LLM options that are not a
    driver's knob (``accelbench.cli.knob_options`` makes those), by name;
    ``--serve-hardware`` resolved now (``accelbench.hardware.declared``), so the run stores what it named."""
    declared: dict[str, Any] = {"serve_hardware": None, "serve_hardware_source": None}
    if serve_hardware is not None:
        from accelbench.hardware.declared import resolve_declaration

        chips, source = resolve_declaration(serve_hardware)
        declared = {"serve_hardware": chips, "serve_hardware_source": source}
    return {
        **declared,
        "serve_url": serve_url,
        "serve_cluster": serve_cluster,
        "api_key_env": api_key_env,
    }


def session_loads(knobs: Mapping[str, Any]) -> dict[str, Any]:
    """The knob options given (``accelbench.cli.knob_options.parsed``) with ``--session-rate`` replacing
    a suite's or a TOML file's ``sessions`` (its load points are one or the other); both given: UserError."""
    if knobs.get("session_rates") is None:
        return dict(knobs)
    if knobs.get("sessions") is not None:
        raise UserError(
            "give --sessions (sessions at once) or --session-rate (arrivals per second), not both"
        )
    return {**knobs, "sessions": ()}


def with_trace(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``overrides`` with the session trace read and checked now, before anything starts
    (``accelbench.sessions.trace``): its absolute path and its sha256 (stored with every result); a
    sha256 the settings already state must be the file's. Unchanged without a trace."""
    given = overrides.get("session_trace")
    if not given:
        return dict(overrides)
    from accelbench.sessions.trace import read_trace

    path = Path(given).expanduser()
    trace = read_trace(path)
    stated = overrides.get("session_trace_sha256")
    if stated and stated != trace.sha256:
        raise UserError(f"session trace {path} has sha256 {trace.sha256}, not the {str(stated)[:64]} stated")
    return {**overrides, "session_trace": str(path.resolve()), "session_trace_sha256": trace.sha256}


def served_overrides(
    overrides: Mapping[str, Any], suite_stacks: Sequence[str], servers: Sequence[str], llm: bool = False
) -> dict[str, Any]:
    """``overrides`` with ``stacks`` (the given ones, else the suite's) extended by their served variants
    on ``servers``, plus ``<stack>@url`` when ``serve_url`` is set; unchanged when neither is asked."""
    wanted = [*servers, *(["url"] if overrides.get("serve_url") else [])]
    chosen = overrides.get("stacks") or suite_stacks
    stacks = with_served(chosen, wanted, llm) if wanted else tuple(chosen)
    if overrides.get("serve_cluster") and not any("@ray-serve" in name for name in stacks):
        raise UserError(
            "--serve-cluster deploys the Ray Serve stacks: add --serve ray-serve (or ray-serve-nobatch)"
        )
    return {**overrides, "stacks": stacks} if wanted else dict(overrides)
