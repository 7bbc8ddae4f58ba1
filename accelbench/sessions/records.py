"""The stored record of a sessions cell's turns: one ``TurnRecord`` per turn (``turns.jsonl`` in the
cell's folder; the ``generation`` section is ``accelbench.session_figures``). Times are seconds on the
client's monotonic clock from the start of the load point; tokens are the client's counts.

A forbidden-reuse audit's request (``accelbench.sessions.forbidden``: a decoy session's turn, a probe or
control of an altered pair) carries what it sent (``Sent``): its conversation was drawn with ``secrets``
during the run and cannot be rebuilt from the workload, and the inline accuracy check judges its reply
as a turn's (``accelbench.sessions.accuracy``). A decoy session's later turns store only the message they
added (``Sent.continued``): their history is the decoy's earlier request and its reply, stored already,
so a long decoy session's lines grow with its turns, not with their square.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.endpoint.records import RequestRecord


@dataclass(frozen=True, slots=True)
class Sent:
    """What an audit request sent: its conversation and the reply length it asked for."""

    messages: tuple[Mapping[str, str], ...]
    """The conversation sent, or with ``continued`` only what the request added to it."""
    max_tokens: int
    continued: bool = False
    """``messages`` follow the conversation of its session's request of the same role one turn before,
    and that request's reply (a decoy session's turn after its first)."""

    def to_dict(self) -> dict[str, Any]:
        """The stored form (the ``sent`` key of a ``turns.jsonl`` line; ``continued`` only when true)."""
        continued = {"continued": True} if self.continued else {}
        return {"messages": [dict(m) for m in self.messages], "max_tokens": self.max_tokens, **continued}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Sent:
        """Inverse of ``to_dict``."""
        messages = tuple({"role": str(m["role"]), "content": str(m["content"])} for m in data["messages"])
        continued = data.get("continued", False) is True
        return cls(messages=messages, max_tokens=int(data["max_tokens"]), continued=continued)


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
    sent: Sent | None = None
    """What an audit request sent (None, and absent from the stored line: a timed turn, or a record
    stored before audit replies were judged)."""

    def to_dict(self) -> dict[str, Any]:
        """The stored form (one line of ``turns.jsonl``): the turn's keys and the request's."""
        own = ("request", "sent")
        head = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in own}
        sent = {} if self.sent is None else {"sent": self.sent.to_dict()}
        return {**head, **self.request.to_dict(), **sent}

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
            sent=Sent.from_dict(data["sent"]) if "sent" in data else None,
        )
