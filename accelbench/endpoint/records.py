"""The stored record of an endpoint cell's requests: one ``RequestRecord`` per request (``requests.jsonl``
in the cell's folder; the curve's points are ``accelbench.curve.CurvePoint``).

Times are seconds on the client's monotonic clock from the start of the point; the keys of ``to_dict``
are the stored JSON keys (a contract with the planted servers' tests and the peer-agreement script).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OK = "ok"
"""``RequestRecord.status`` of a reply that streamed to its end with HTTP 200."""


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as the client saw it."""

    concurrency: int
    """The point's concurrency (0: an open-loop request of the max-QPS search, ``target_qps`` set)."""
    index: int
    """The request's number within its point (0, 1, ...)."""
    role: str
    """``timed`` (a scored request of the curve, the repeat audit's pairs included), ``poisson`` (a
    request of the max-QPS search's open loop: ``accelbench.endpoint.qps_search``) or ``confirm`` (the
    first point run again to corroborate a probe drift: ``accelbench.endpoint.confirm``); records stored
    before the repeat audit moved into the curve have ``seen`` / ``unseen`` here."""
    salt: str
    """The prompt's salt (hex digits), unique per request of a cell."""
    issue_s: float
    """When the request became due (a closed loop: when a slot freed; an open loop: its scheduled
    arrival); client queueing counts."""
    send_s: float
    """When the client started sending it."""
    first_content_s: float | None
    """When the first non-empty text chunk arrived (None: none did): the TTFT clock stops there, as
    MLPerf's and AIPerf's do; a fake early chunk is caught by the reply it starts (``accuracy``)."""
    end_s: float
    """When the stream ended (or failed)."""
    chunk_s: tuple[float, ...]
    """When each chunk that carried text arrived."""
    text: str
    """The reply's text, the pieces joined."""
    output_tokens: int
    """The reply's tokens counted by the client with the model's tokenizer."""
    usage_output_tokens: int | None
    """``usage.completion_tokens`` as the server reported it (None: not reported)."""
    usage_prompt_tokens: int | None
    status: str
    """``ok``, or ``http <code>`` / the error's class name."""
    error: str
    """The error text (one line), empty when ``ok``."""
    finish_reason: str = ""
    """The last ``finish_reason`` the stream gave (``length``, ``stop``; empty: none)."""
    filler_first_chunk: bool = False
    """The first text chunk was whitespace or punctuation only (such replies are judged first)."""
    first_chunk_text: str = ""
    """The first text chunk (the accuracy check tells a genuine ``[`` from a filler by it)."""
    target_qps: float | None = None
    """The arrival rate of the max-QPS search's probe that sent it (None, and absent from the stored
    line: a request of the curve or an audit)."""

    usage_cached_tokens: int | None = None
    """``usage.prompt_tokens_details.cached_tokens``: the prompt tokens the server says it took from its
    prefix cache (None, and absent from the stored line: not reported)."""
    repeat: str = ""
    """``seen`` / ``unseen``: a timed request that is also a member of a repeat audit pair, placed in
    its point at a position drawn with ``secrets`` (``accelbench.endpoint.repeat``); empty, and absent
    from the stored line: none."""

    @property
    def ok(self) -> bool:
        """Whether the reply streamed to its end with HTTP 200."""
        return self.status == OK

    def to_dict(self) -> dict[str, Any]:
        """The stored form (one line of ``requests.jsonl``)."""
        document = dataclasses.asdict(self)
        document["chunk_s"] = list(self.chunk_s)
        for optional in ("target_qps", "usage_cached_tokens"):
            if document[optional] is None:
                del document[optional]
        if not self.repeat:
            del document["repeat"]
        return document

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RequestRecord:
        """Inverse of ``to_dict``."""
        names = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in data.items() if k in names}
        fields["chunk_s"] = tuple(fields.get("chunk_s", ()))
        return cls(**fields)
