"""The figures of a fixed-concurrency point from its request records (pure arithmetic).

TTFT is from the request's issue (client queueing counts, no coordinated omission) to its first chunk
with text (the first non-empty chunk, as MLPerf and AIPerf time it); TPOT is (last chunk - first
content) / (output tokens - 1) for replies of two tokens or more; ITL is every gap between consecutive
text chunks from the first content on; e2e is issue to end. The span of the point is its first issue to
its last end. Tokens are the client's counts.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from accelbench.curve import CurvePoint
from accelbench.endpoint.energy import PointEnergy
from accelbench.endpoint.records import RequestRecord

EOS_TOKENS = 1
"""``usage`` may count one token more than the text shows (EOS has no text)."""
RETOKENIZE_SHARE = 0.05
"""Re-tokenizing the joined text may merge or split tokens the model made apart: this share of the
count (at least one token) is not a disagreement."""


@dataclass(frozen=True, slots=True)
class Bounds:
    """The goodput bounds: a reply is good when its TTFT and TPOT are within them."""

    ttft_s: float
    tpot_s: float


def ttft_s(record: RequestRecord) -> float | None:
    """Issue to the first non-empty chunk, None when no content came."""
    return None if record.first_content_s is None else record.first_content_s - record.issue_s


def tpot_s(record: RequestRecord) -> float | None:
    """(last chunk - first content) / (tokens - 1); None below two tokens or without content."""
    if record.first_content_s is None or record.output_tokens < 2 or not record.chunk_s:
        return None
    return (record.chunk_s[-1] - record.first_content_s) / (record.output_tokens - 1)


def itl_s(record: RequestRecord) -> list[float]:
    """The gaps between consecutive text chunks from the first non-empty one on."""
    if record.first_content_s is None:
        return []
    times = [t for t in record.chunk_s if t >= record.first_content_s]
    return [b - a for a, b in itertools.pairwise(times)]


def usage_disagrees(record: RequestRecord) -> bool:
    """The server's ``usage`` count is off the client's by more than the re-tokenizing slack (plus
    an EOS token above)."""
    if record.usage_output_tokens is None:
        return False
    slack = max(1, round(RETOKENIZE_SHARE * record.output_tokens))
    extra = record.usage_output_tokens - record.output_tokens
    return not -slack <= extra <= EOS_TOKENS + slack


def _pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def _three(values: Sequence[float]) -> tuple[float, float, float]:
    return _pct(values, 50), _pct(values, 90), _pct(values, 99)


def point(
    concurrency: int,
    records: Sequence[RequestRecord],
    bounds: Bounds,
    input_tokens: int = 0,
    energy: PointEnergy | None = None,
) -> CurvePoint:
    """The ``CurvePoint`` of ``records`` (the point's requests, failed ones included), whose prompts held
    ``input_tokens`` and whose window consumed ``energy``."""
    ok = [r for r in records if r.ok]
    span = (max(r.end_s for r in records) - min(r.issue_s for r in records)) if records else 0.0
    per_s = 1.0 / span if span > 0 else 0.0
    ttfts = [t for r in ok if (t := ttft_s(r)) is not None]
    tpots = [t for r in ok if (t := tpot_s(r)) is not None]
    gaps = [g for r in ok for g in itl_s(r)]
    e2es = [r.end_s - r.issue_s for r in ok]
    good = [r for r in ok if _good(r, bounds)]
    tokens = sum(r.output_tokens for r in ok)
    tpot = _three(tpots)
    return CurvePoint(
        concurrency, len(records), tokens * per_s, 1.0 / tpot[1] if tpot[1] > 0 else 0.0,
        *_three(ttfts), *tpot, *_three(gaps), *_three(e2es),
        len(ok) * per_s, len(good) * per_s, (len(records) - len(ok)) / len(records) if records else 0.0,
        tokens, span, sum(r.filler_first_chunk for r in records), sum(usage_disagrees(r) for r in ok),
        input_tokens, energy.energy_j if energy else None, energy.provenance if energy else "",
    )  # fmt: skip


def _good(record: RequestRecord, bounds: Bounds) -> bool:
    first, per_token = ttft_s(record), tpot_s(record)
    return first is not None and first <= bounds.ttft_s and (per_token is None or per_token <= bounds.tpot_s)
