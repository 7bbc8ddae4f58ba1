"""The figures of a fixed-concurrency point from its request records (pure arithmetic).

TTFT is from the request's issue (client queueing counts, no coordinated omission) to its first chunk
with text (the first non-empty chunk, as MLPerf and AIPerf time it); TPOT is (last chunk - first
content) / (output tokens - 1) for replies of two tokens or more; ITL is every gap between consecutive
text chunks from the first content on; e2e is issue to end. The span of the point is its first issue to
its last end. Tokens are the client's counts.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from accelbench.curve import CurvePoint, half_width
from accelbench.endpoint.energy import PointEnergy
from accelbench.endpoint.records import RequestRecord

EOS_TOKENS = 1
"""``usage`` may count one token more than the text shows (EOS has no text)."""
TURN_TOKENS = 3
"""With EOS ignored (fixed reply lengths: ``ignore_eos`` on vLLM, SGLang, llama.cpp) a chat model writes
past its turn's end into the next turn of its template (ChatML's ``<|im_end|>\n<|im_start|>system\n``;
Llama 3's three header tokens): the server counts those special tokens and strips them from the text.
Each turn header left in the text (``\nuser\n``, ``\nassistant\n``, ...) may hide this many tokens. An
agentic run (16-token replies, SmolLM2, transformers serve, before it suppressed special tokens instead)
had 12 of 69 honest replies 1-4 tokens over, all of them running into a ``system`` turn."""
ROLE_HEADERS = tuple(f"\n{role}\n" for role in ("system", "user", "assistant", "tool"))
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
    an EOS token above, and ``TURN_TOKENS`` for each turn header the reply ran into)."""
    if record.usage_output_tokens is None:
        return False
    slack = max(1, round(RETOKENIZE_SHARE * record.output_tokens))
    extra = record.usage_output_tokens - record.output_tokens
    hidden = TURN_TOKENS * sum(record.text.count(header) for header in ROLE_HEADERS)
    return not -slack <= extra <= EOS_TOKENS + hidden + slack


def _pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def _three(values: Sequence[float]) -> tuple[float, float, float]:
    return _pct(values, 50), _pct(values, 90), _pct(values, 99)


MEDIAN_INTERVAL_MIN = 6
"""The fewest values whose extremes bound the median with 95% confidence (1 - 2 / 2**6 = 0.969)."""


def median_interval(values: Sequence[float]) -> tuple[float, float]:
    """A distribution-free 95% confidence interval of the median of ``values``: the order statistics
    ``k`` from each end, ``k`` the largest with 2 P(Binomial(n, 1/2) <= k) <= 5% (the exact binomial
    count of values below the median, as LoadGen's early stopping bounds a percentile by the count of
    samples over it); (0.0, 0.0) for fewer than ``MEDIAN_INTERVAL_MIN`` values. No assumption on the
    latencies' distribution."""
    n = len(values)
    k = _order_index(n)
    if k < 0:
        return 0.0, 0.0
    ordered = sorted(values)
    return float(ordered[k]), float(ordered[n - 1 - k])


def _order_index(n: int) -> int:
    """The largest ``k`` with 2 P(Binomial(n, 1/2) <= k) <= 5% (-1: none, n < 6), in exact integers."""
    tail, k = 0, -1
    for j in range(n):
        tail += math.comb(n, j)
        if 40 * tail > 2**n:
            break
        k = j
    return k


def narrow(records: Sequence[RequestRecord], width: float) -> bool:
    """Whether the TTFT and TPOT medians of ``records``' ok replies are each known to within ``width``
    of themselves (half their 95% interval over the median); False with too few replies for one."""
    ok = [r for r in records if r.ok]
    ttfts = [t for r in ok if (t := ttft_s(r)) is not None]
    tpots = [t for r in ok if (t := tpot_s(r)) is not None]
    for values in (ttfts, tpots):
        spread = half_width(_pct(values, 50), *median_interval(values))
        if spread is None or spread > width:
            return False
    return True


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
    ttft, tpot, itl, e2e = _three(ttfts), _three(tpots), _three(gaps), _three(e2es)
    (ttft_low, ttft_high), (tpot_low, tpot_high) = median_interval(ttfts), median_interval(tpots)
    return CurvePoint(
        concurrency=concurrency,
        requests=len(records),
        output_tokens_per_s=tokens * per_s,
        tokens_per_s_per_user=1.0 / tpot[1] if tpot[1] > 0 else 0.0,
        ttft_p50_s=ttft[0],
        ttft_p90_s=ttft[1],
        ttft_p99_s=ttft[2],
        tpot_p50_s=tpot[0],
        tpot_p90_s=tpot[1],
        tpot_p99_s=tpot[2],
        itl_p50_s=itl[0],
        itl_p90_s=itl[1],
        itl_p99_s=itl[2],
        e2e_p50_s=e2e[0],
        e2e_p90_s=e2e[1],
        e2e_p99_s=e2e[2],
        requests_per_s=len(ok) * per_s,
        goodput_requests_per_s=len(good) * per_s,
        error_rate=(len(records) - len(ok)) / len(records) if records else 0.0,
        output_tokens=tokens,
        duration_s=span,
        filler_first_chunks=sum(r.filler_first_chunk for r in records),
        usage_disagreements=sum(usage_disagrees(r) for r in ok),
        input_tokens=input_tokens,
        energy_j=energy.energy_j if energy else None,
        energy_provenance=energy.provenance if energy else "",
        ttft_p50_low_s=ttft_low,
        ttft_p50_high_s=ttft_high,
        tpot_p50_low_s=tpot_low,
        tpot_p50_high_s=tpot_high,
    )


def _good(record: RequestRecord, bounds: Bounds) -> bool:
    first, per_token = ttft_s(record), tpot_s(record)
    return first is not None and first <= bounds.ttft_s and (per_token is None or per_token <= bounds.tpot_s)
