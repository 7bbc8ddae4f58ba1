"""The typed outcome of a cell driver: the common head every driver fills, and the driver's own body.

A driver (``accelbench.registry.DRIVERS``) returns an ``Outcome``: a ``Head`` (status, reason, quality,
precision, compile time, noise, energy, memory, warnings, versions, settings) and a ``Body`` owned by the
driver's module (``registry.BODIES``: ``LoadgenBody`` in ``accelbench.cell.inference``, ``TokensBody`` in
``accelbench.cell.tokens_body``, ``TrainingBody`` in ``accelbench.training.measure``, ``EndpointBody`` in
``accelbench.endpoint.outcome``, ``SessionsBody`` in ``accelbench.sessions.outcome``). ``to_dict`` is the
outcome document the cell process writes: exactly the keys ``accelbench.results.Result`` stores. The
parent reads it back typed (``from_dict``: the head, and the body of the driver it named), and builds the
``Result`` from the head's and the body's fields (``fields``) and the run facts
(``accelbench.cell.pipeline.result_of``): a body's field names are ``Result``'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, Self

from accelbench.registry import BODIES, load
from accelbench.results import DeviceMemory, Energy, NoiseProbe, Quality, json_plain, record_of


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
class Head:
    """What every driver reports of a cell, whatever it measured."""

    status: str
    reason: str = ""
    quality: Quality | None = None
    sanity: Quality | None = None
    effective_precision: str = ""
    compile_s: float | None = None
    peak_rss_bytes: int | None = None
    noise: NoiseProbe | None = None
    energy: Energy | None = None
    device_memory: DeviceMemory | None = None
    warnings: tuple[str, ...] = ()
    versions: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The head's keys of the stored document."""
        document = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name in ("quality", "sanity", "noise", "energy", "device_memory"):
            record = document[name]
            document[name] = None if record is None else json_plain(dataclasses.asdict(record))
        document["warnings"] = list(self.warnings)
        document["versions"] = dict(self.versions)
        document["settings"] = json_plain(self.settings)
        return document

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> Head:
        """The head of an outcome document (other keys are the body's, ignored here)."""
        return cls(
            status=document["status"],
            reason=document.get("reason", ""),
            quality=record_of(Quality, document.get("quality")),
            sanity=record_of(Quality, document.get("sanity")),
            effective_precision=document.get("effective_precision", ""),
            compile_s=document.get("compile_s"),
            peak_rss_bytes=document.get("peak_rss_bytes"),
            noise=record_of(NoiseProbe, document.get("noise")),
            energy=record_of(Energy, document.get("energy")),
            device_memory=record_of(DeviceMemory, document.get("device_memory")),
            warnings=tuple(document.get("warnings", ())),
            versions=dict(document.get("versions", {})),
            settings=dict(document.get("settings", {})),
        )


HEAD_KEYS = frozenset(f.name for f in dataclasses.fields(Head))
"""The head's keys of an outcome document: one holding no other key has no body."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """A driver's outcome of one cell: the common head and the driver's body (None when it failed)."""

    head: Head
    body: Body | None = None

    def to_dict(self) -> dict[str, Any]:
        """The outcome document the cell process writes (``Result``'s stored keys, without run facts)."""
        return {**self.head.to_dict(), **(self.body.to_dict() if self.body is not None else {})}

    def fields(self) -> dict[str, Any]:
        """The head's and the body's fields by name: ``accelbench.results.Result``'s keywords for them."""
        parts = (self.head,) if self.body is None else (self.head, self.body)
        return {f.name: getattr(part, f.name) for part in parts for f in dataclasses.fields(part)}

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
