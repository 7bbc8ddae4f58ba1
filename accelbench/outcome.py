"""The typed outcome of a cell driver: the common head every driver fills, and the driver's own body.

A driver (``accelbench.registry.DRIVERS``) returns an ``Outcome``: a ``Head`` (``accelbench.head``:
status, reason, quality, precision, compile time, noise, energy, memory, warnings, versions, settings)
and a ``Body`` (``accelbench.results.Body``) owned by the driver (``registry.BODIES``: ``LoadgenBody`` in
``accelbench.cell.loadgen_body``, ``TokensBody`` in ``accelbench.cell.tokens_body``, ``TrainingBody`` in
``accelbench.training.body``, ``EndpointBody`` in ``accelbench.endpoint.body``, ``SessionsBody`` in
``accelbench.sessions.body``: modules of records alone, so reading a stored result imports no driver).
``to_dict`` is the outcome document the cell process writes: keys that ``accelbench.stored`` stores.
The parent reads it back typed (``from_dict``: the head, and the body of the driver it named,
``body_of``), and builds the ``Result`` of the head, the body as it is and the run facts
(``accelbench.cell.pipeline.result_of``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.head import HEAD_KEYS, Head
from accelbench.registry import BODIES, load
from accelbench.results import RUN_FACTS, Body


def body_of(driver: str, document: Mapping[str, Any]) -> Body | None:
    """The body of ``driver`` (``registry.BODIES``) in an outcome or stored document; None when the
    document holds no section beside the head and the run facts (a cell that measured nothing, or a
    status its parent imposed). ValueError on sections of no driver's or not the driver's (nothing stored
    is dropped on reading); KeyError, TypeError or ValueError on a document the driver's records cannot
    read."""
    sections = set(document) - HEAD_KEYS - set(RUN_FACTS)
    held = sorted(key for key in sections if document[key] not in (None, []))
    if not held:
        return None
    if driver not in BODIES:
        who = f"driver {driver!r}" if driver else "no driver"
        named = ", ".join(held)
        raise ValueError(f"sections ({named}) in a result of {who}: no body of that name reads them")
    kind: type[Body] = load(BODIES[driver])
    body = kind.from_dict(document)
    lost = sorted(set(held) - set(body.to_dict()))
    if lost:
        raise ValueError(f"a {driver!r} result with sections its body does not hold: {', '.join(lost)}")
    return body


@dataclass(frozen=True, slots=True)
class Outcome:
    """A driver's outcome of one cell: the common head and the driver's body (None when it failed)."""

    head: Head
    body: Body | None = None

    def to_dict(self) -> dict[str, Any]:
        """The outcome document the cell process writes (``Result``'s stored keys, without run facts)."""
        return {**self.head.to_dict(), **(self.body.to_dict() if self.body is not None else {})}

    @classmethod
    def from_dict(cls, driver: str, document: Mapping[str, Any]) -> Outcome:
        """The outcome in a cell process's document, read by the body of ``driver`` (``registry.BODIES``); a
        document of a head alone (a cell that measured nothing, or a status its parent imposed) has no body.
        KeyError, TypeError or ValueError on a document the driver's records cannot read."""
        return cls(Head.from_dict(document), body_of(driver, document))

    @classmethod
    def failed(cls, status: str, reason: str) -> Outcome:
        """The outcome of a cell that measured nothing (``unavailable``, ``crashed``, ...)."""
        return cls(Head(status, reason))
