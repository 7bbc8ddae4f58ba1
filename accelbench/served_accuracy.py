"""The stored record of a served LLM's accuracy check (``accelbench.endpoint.accuracy`` for a curve,
``accelbench.sessions.accuracy`` for a session ladder): the judged replies' shares of the fp32
reference's text. A record of its own, below both stored sections that hold it (``accelbench.curve``,
``accelbench.session_figures``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class EndpointAccuracy:
    """The accuracy check's stored figures: the judged replies' shares of the reference's text, the points
    (concurrencies, or sessions at once) they came from, the bar and whether the mean reached it."""

    mean_share: float
    shares: tuple[float, ...]
    concurrencies: tuple[int, ...]
    bar: float
    passed: bool
    reference: str
    fillers: int = 0
    """Judged replies whose first chunk was whitespace/punctuation only."""
    fake_fillers: int = 0
    """... of which the reference reply does not begin with that chunk (a filler, not the model's)."""

    def to_dict(self) -> dict[str, Any]:
        """The stored form (the section's ``accuracy``)."""
        document = dataclasses.asdict(self)
        document["shares"], document["concurrencies"] = list(self.shares), list(self.concurrencies)
        return document

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EndpointAccuracy:
        """Inverse of ``to_dict``."""
        values = dict(data)
        values["shares"] = tuple(values["shares"])
        values["concurrencies"] = tuple(values["concurrencies"])
        return cls(**values)


def put_accuracy(document: dict[str, Any], accuracy: EndpointAccuracy | None) -> None:
    """Write ``accuracy`` into a stored section (a curve's or a session ladder's) under ``accuracy``, or
    leave the key out when no reply was judged (as sections stored before the check)."""
    if accuracy is None:
        document.pop("accuracy", None)
    else:
        document["accuracy"] = accuracy.to_dict()


def read_accuracy(document: Mapping[str, Any]) -> EndpointAccuracy | None:
    """The ``accuracy`` of a stored section (None: absent, or stored as null)."""
    stored = document.get("accuracy")
    return None if stored is None else EndpointAccuracy.from_dict(stored)
