"""A served-LLM cell's curve derived again from the per-request records it carries.

An endpoint cell stores every request in ``cells/<folder>/requests.jsonl`` (``accelbench.endpoint.cell``);
each curve point is ``accelbench.endpoint.figures.point`` of that point's timed requests. Here the same
function runs on the same records and each stored point's figures are compared: the system tokens/s,
tokens/s per user, TTFT, TPOT, ITL and e2e percentiles, the medians' intervals where stored, request and
token counts, requests/s, the span, error rate, filler first chunks and usage disagreements
(``bundle.tolerance.same``). Not compared: ``NOT_DERIVED``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from accelbench.bundle.tolerance import same
from accelbench.curve import INTERVAL_FIELDS, CurvePoint
from accelbench.endpoint.cell import RECORDS_FILE
from accelbench.endpoint.driver import TIMED
from accelbench.endpoint.figures import Bounds, point
from accelbench.endpoint.records import RequestRecord

COMPARED = (
    "requests",
    "output_tokens",
    "output_tokens_per_s",
    "tokens_per_s_per_user",
    "ttft_p50_s",
    "ttft_p90_s",
    "ttft_p99_s",
    "tpot_p50_s",
    "tpot_p90_s",
    "tpot_p99_s",
    "e2e_p50_s",
    "e2e_p90_s",
    "e2e_p99_s",
    "itl_p50_s",
    "itl_p90_s",
    "itl_p99_s",
    "requests_per_s",
    "error_rate",
    "duration_s",
    "filler_first_chunks",
    "usage_disagreements",
)
NOT_DERIVED = ("goodput_requests_per_s", "input_tokens", "energy_j", "energy_provenance")
"""A point's fields the records do not give: goodput's bounds are run options the document does not
carry, the prompts' token count is the tokenizer's, energy a meter's. Every other field is compared
(``concurrency`` names the point; the medians' intervals where stored); a test holds every field of
``CurvePoint`` to one of these, so a new figure is not left unchecked."""
UNBOUNDED = Bounds(math.inf, math.inf)


def records_path(folder: str) -> str:
    """The bundle path of a cell's per-request records."""
    return f"cells/{folder}/{RECORDS_FILE}"


def timed_records(text: str) -> list[RequestRecord]:
    """The curve's requests of a ``requests.jsonl`` (not the audits' or the max-QPS search's).

    Raises ValueError naming the line that does not load as a record."""
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = RequestRecord.from_dict(json.loads(line))
        except (json.JSONDecodeError, TypeError, AttributeError) as exc:
            raise ValueError(f"{RECORDS_FILE} line {number} is not a request record: {exc}") from None
        if record.role == TIMED and record.target_qps is None:
            records.append(record)
    return records


def curve_differences(records: Sequence[RequestRecord], curve: Sequence[CurvePoint]) -> list[str]:
    """``concurrency N: field X from the records, stored Y`` per stored figure the records do not give."""
    found = []
    for stored_point in curve:
        concurrency = stored_point.concurrency
        mine = [r for r in records if r.concurrency == concurrency]
        count = stored_point.requests
        if 0 < count < len(mine):
            mine = mine[-count:]  # a cell measured again appends its requests: the last attempt's count
        if not mine:
            found.append(f"concurrency {concurrency}: no request records")
            continue
        derived = point(concurrency, mine, UNBOUNDED)
        stored_intervals = tuple(n for n in INTERVAL_FIELDS if getattr(stored_point, n))  # none before
        for name in (*COMPARED, *stored_intervals):
            value, said = getattr(derived, name), getattr(stored_point, name)
            if not same(value, said):
                found.append(
                    f"concurrency {concurrency}: {name} {value:.6g} from the records, stored {said!r}"
                )
    return found
