"""The stored record of a sessions cell's turns: one ``TurnRecord`` per turn (``turns.jsonl`` in the
cell's folder; the ``generation`` section is ``accelbench.session_figures``). Times are seconds on the
client's monotonic clock from the start of the load point; tokens are the client's counts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.endpoint.records import RequestRecord


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn as the client saw it: where it stands in its session, its context, and its request."""

    session: int
    """The session's number within its load point."""
    turn: int
    """The turn's number within its session (0: the first)."""
    kind: str
    """``user`` or ``tool`` (``accelbench.sessions.workload``)."""
    delay_s: float
    """The think delay waited before the turn became due."""
    context_tokens: int
    """The conversation sent (system prompt, every earlier turn and reply, this turn), chat template
    included, counted by the client."""
    request: RequestRecord
    """The request (``request.concurrency``: the load's sessions; ``request.salt``: the session's)."""

    def to_dict(self) -> dict[str, Any]:
        """The stored form (one line of ``turns.jsonl``): the turn's keys and the request's."""
        head = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "request"}
        return {**head, **self.request.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnRecord:
        """Inverse of ``to_dict``."""
        return cls(
            session=int(data["session"]),
            turn=int(data["turn"]),
            kind=str(data["kind"]),
            delay_s=float(data["delay_s"]),
            context_tokens=int(data["context_tokens"]),
            request=RequestRecord.from_dict(data),
        )
