"""A served-LLM curve derived again from its per-request records (``bundle.served``): the stored points a
real ``endpoint.figures.point`` made from the records match; a raised figure or dropped records do not."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from accelbench.bundle.served import UNBOUNDED, curve_differences, timed_records
from accelbench.curve import CurvePoint
from accelbench.endpoint.driver import TIMED
from accelbench.endpoint.figures import point
from accelbench.endpoint.records import OK, RequestRecord


def streamed(
    concurrency: int, index: int, role: str, first_s: float, gap_s: float, tokens: int, **more: Any
) -> RequestRecord:
    """An ok streamed request ``index`` issued at ``more["issue_s"]``: ``tokens`` one-token chunks from
    ``first_s`` on, ``gap_s`` apart; ``more``: its other fields."""
    issue_s = more.pop("issue_s")
    chunk_s = tuple(first_s + gap_s * k for k in range(tokens))
    fields: dict[str, Any] = {
        "concurrency": concurrency,
        "index": index,
        "role": role,
        "salt": f"s{index}",
        "issue_s": issue_s,
        "send_s": issue_s + 0.001,
        "first_content_s": first_s,
        "end_s": chunk_s[-1] + 0.001,
        "chunk_s": chunk_s,
        "text": "x" * tokens,
        "output_tokens": tokens,
        "usage_output_tokens": tokens,
        "status": OK,
        "error": "",
    }
    return RequestRecord(**{**fields, **more})


def _record(concurrency: int, index: int, role: str = TIMED) -> RequestRecord:
    issue = 0.1 * index
    first, gap = issue + 0.02 + 0.003 * index, 0.01 * (1 + index % 3)
    return streamed(concurrency, index, role, first, gap, 8, issue_s=issue, usage_prompt_tokens=20)


RECORDS = [_record(c, i) for c in (1, 4) for i in range(6)] + [_record(4, 99, role="output-audit")]
JSONL = "\n".join(json.dumps(r.to_dict()) for r in RECORDS) + "\n"


def _curve() -> list[CurvePoint]:
    """The points as stored and read back (``CurvePoint.to_dict`` through JSON)."""
    timed = [r for r in RECORDS if r.role == TIMED]
    points = [point(c, [r for r in timed if r.concurrency == c], UNBOUNDED, 120) for c in (1, 4)]
    return [CurvePoint.from_dict(json.loads(json.dumps(p.to_dict()))) for p in points]


def test_the_stored_curve_is_derived_again_from_its_records() -> None:
    records = timed_records(JSONL)
    assert len(records) == 12  # the audit's request is not a curve request
    assert curve_differences(records, _curve()) == []


def test_a_raised_point_figure_is_named_with_both_values() -> None:
    curve = _curve()
    curve[1] = dataclasses.replace(curve[1], output_tokens_per_s=2 * curve[1].output_tokens_per_s)
    (line,) = curve_differences(timed_records(JSONL), curve)
    assert line.startswith("concurrency 4: output_tokens_per_s ") and "from the records, stored" in line


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("itl_p90_s", 0.001),
        ("requests_per_s", 99.0),
        ("duration_s", 0.1),
        ("filler_first_chunks", 0),
        ("usage_disagreements", 0),
    ],
)
def test_each_figure_the_records_give_is_compared(name: str, value: float) -> None:
    curve = _curve()
    curve[1] = dataclasses.replace(curve[1], **{name: value})
    if getattr(curve[1], name) == getattr(_curve()[1], name):  # the honest value: another, then
        curve[1] = dataclasses.replace(curve[1], **{name: value + 1})
    (line,) = curve_differences(timed_records(JSONL), curve)
    assert line.startswith(f"concurrency 4: {name} ") and "from the records, stored" in line


def test_dropped_records_change_the_counts_and_figures() -> None:
    kept = "\n".join(line for line in JSONL.splitlines() if '"index": 5,' not in line)
    found = curve_differences(timed_records(kept), _curve())
    assert any(line.startswith("concurrency 1: requests 5 from the records") for line in found), found
    assert any(line.startswith("concurrency 4: requests 5 ") for line in found), found
    gone = "\n".join(line for line in JSONL.splitlines() if '"concurrency": 4,' not in line)
    assert "concurrency 4: no request records" in curve_differences(timed_records(gone), _curve())


def test_a_record_that_does_not_load_is_a_one_line_error() -> None:
    with pytest.raises(ValueError, match=r"requests\.jsonl line 2 is not a request record"):
        timed_records(JSONL.splitlines()[0] + "\n{not json\n")


def test_every_stored_point_field_is_derived_again_or_named_as_not() -> None:
    """A figure added to ``CurvePoint`` must be compared by ``verify`` or named in ``NOT_DERIVED``."""
    import dataclasses

    from accelbench.bundle.served import COMPARED, NOT_DERIVED
    from accelbench.curve import INTERVAL_FIELDS, CurvePoint

    named = (*COMPARED, *NOT_DERIVED, *INTERVAL_FIELDS, "concurrency")
    assert sorted(named) == sorted({f.name for f in dataclasses.fields(CurvePoint)})
