"""The typed outcome of a cell driver: the common head every driver fills, and the driver's own body.

A driver (``accelbench.registry.DRIVERS``) returns an ``Outcome``: a ``Head`` (``accelbench.head``:
status, reason, quality, precision, compile time, noise, energy, memory, warnings, versions, settings)
and a ``Body`` owned by the driver's module (``registry.BODIES``: ``LoadgenBody`` in
``accelbench.cell.inference``, ``TokensBody`` in ``accelbench.cell.tokens_body``, ``TrainingBody`` in
``accelbench.training.measure``, ``EndpointBody`` in ``accelbench.endpoint.outcome``, ``SessionsBody`` in
``accelbench.sessions.outcome``). ``to_dict`` is the outcome document the cell process writes: exactly
the keys ``accelbench.results.Result`` stores. The parent reads it back typed (``from_dict``: the head,
and the body of the driver it named), and builds the ``Result`` of the head (``Result.head``), the
body's fields (``body_fields``) and the run facts (``accelbench.cell.pipeline.result_of``): a body's
field names are ``Result``'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, Self

from accelbench.head import HEAD_KEYS, Head
from accelbench.registry import BODIES, load


class Body(Protocol):
    """A driver's own part of the outcome: its sections of the stored document (a frozen dataclass whose
    field names are ``accelbench.results.Result``'s)."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def to_dict(self) -> dict[str, Any]:
        """The body's keys of the stored document."""
        ...

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> Self:
        """The body of an outcome document (the head's keys are ignored)."""
        ...


@dataclass(frozen=True, slots=True)
class Outcome:
    """A driver's outcome of one cell: the common head and the driver's body (None when it failed)."""

    head: Head
    body: Body | None = None

    def to_dict(self) -> dict[str, Any]:
        """The outcome document the cell process writes (``Result``'s stored keys, without run facts)."""
        return {**self.head.to_dict(), **(self.body.to_dict() if self.body is not None else {})}

    def body_fields(self) -> dict[str, Any]:
        """The body's fields by name (none without a body): ``accelbench.results.Result``'s keywords for
        them (the head is ``Result.head``)."""
        if self.body is None:
            return {}
        return {f.name: getattr(self.body, f.name) for f in dataclasses.fields(self.body)}

    @classmethod
    def from_dict(cls, driver: str, document: Mapping[str, Any]) -> Outcome:
        """The outcome in a cell process's document, read by the body of ``driver`` (``registry.BODIES``); a
        document of a head alone (a cell that measured nothing, or a status its parent imposed) has no body.
        KeyError, TypeError or ValueError on a document the driver's records cannot read."""
        head = Head.from_dict(document)
        if set(document) <= HEAD_KEYS:
            return cls(head)
        body: type[Body] = load(BODIES[driver])
        return cls(head, body.from_dict(document))

    @classmethod
    def failed(cls, status: str, reason: str) -> Outcome:
        """The outcome of a cell that measured nothing (``unavailable``, ``crashed``, ...)."""
        return cls(Head(status, reason))
