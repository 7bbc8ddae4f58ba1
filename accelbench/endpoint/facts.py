"""An endpoint stack's facts, asked of the stack in a SUT process of its own.

An endpoint stack (``accelbench.endpoint.stack``, or a plugin of the ``accelbench.endpoint_stacks``
group) declares which server it measures (``llm@url`` or a kind of ``accelbench.endpoint.servers``),
its precision and its versions. Its code never runs in the cell process, which holds the cell's input
seed, the salts and which requests the audits send: the cell starts a SUT process
(``accelbench.sut.endpoint_host``), reads these facts back as data and stops it.
The server itself is one of accelbench's own kinds, started by the cell; a stack naming any other is
unavailable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelbench.cellspec import CellSpec
from accelbench.endpoint.servers import SERVERS
from accelbench.endpoint.stack import URL
from accelbench.errors import Unavailable
from accelbench.sut import endpoint_host
from accelbench.sut.environment import sut_environment
from accelbench.sut.remote import SutProcess


@dataclass(frozen=True, slots=True)
class EndpointFacts:
    """What an endpoint stack declares, as the cell reads it from the stack's SUT process."""

    name: str
    """``llm@<server>``, as the stack names itself."""
    server: str
    """``url`` (the ``--serve-url`` server) or a kind of ``accelbench.endpoint.servers.SERVERS``."""
    precision: str
    unavailable_reason: str | None
    versions: Mapping[str, str] = field(default_factory=dict)


def endpoint_facts(spec: CellSpec) -> EndpointFacts:
    """The facts of the cell's endpoint stack, asked in a SUT process started and stopped here."""
    sut = SutProcess(spec.refs.stack, Path(spec.folders.cell_dir) / "sut-describe", sut_environment())
    try:
        header = sut.request({"op": endpoint_host.OP, "device": spec.cell.device}).header
    finally:
        sut.stop()
    return facts_of(header)


def available_facts(spec: CellSpec) -> EndpointFacts:
    """``endpoint_facts`` of a stack that can run the cell; Unavailable with its one-line reason else."""
    facts = endpoint_facts(spec)
    if facts.unavailable_reason:
        raise Unavailable(facts.unavailable_reason)
    return facts


def facts_of(header: Mapping[str, Any]) -> EndpointFacts:
    """The facts of a reply; a server accelbench does not start is the stack's unavailable reason."""
    server, reason = str(header.get("server", "")), header.get("unavailable_reason")
    if not reason and server != URL and server not in SERVERS:
        known = ", ".join((URL, *SERVERS))
        reason = f"the stack names server {server[:80]!r}; accelbench starts only: {known}"
    versions = header.get("versions") if isinstance(header.get("versions"), dict) else {}
    return EndpointFacts(
        name=str(header.get("name", ""))[:200],
        server=server,
        precision=str(header.get("precision", ""))[:80],
        unavailable_reason=str(reason)[:500] if reason else None,
        versions={str(k): str(v)[:200] for k, v in dict(versions).items()}
        if isinstance(versions, dict)
        else {},
    )
