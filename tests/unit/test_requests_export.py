"""``accelbench export --format requests`` (``accelbench.report.requests``): every stored request of a
run's endpoint cells, with its run id and cell key; a records file out of place or damaged is one line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from accelbench.endpoint.records import RequestRecord
from accelbench.errors import UserError
from accelbench.report.export import export_kind
from accelbench.report.requests import export_requests
from accelbench.results import Result
from accelbench.stored import from_dict

GOLDEN = Path(__file__).parent.parent / "golden"


def _record(index: int) -> RequestRecord:
    return RequestRecord(
        concurrency=1, index=index, role="timed", salt=f"{index:032x}", issue_s=0.5 * index,
        send_s=0.5 * index, first_content_s=0.5 * index + 0.1, end_s=0.5 * index + 0.4,
        chunk_s=(0.5 * index + 0.1,), text="hi", output_tokens=1, usage_output_tokens=1,
        usage_prompt_tokens=12, status="ok", error="",
    )  # fmt: skip


def _endpoint(requests_file: str) -> Result:
    result = from_dict(json.loads((GOLDEN / "result_v7_endpoint.json").read_text()))
    assert result.curve is not None and result.driver == "endpoint"
    curve = dataclasses.replace(result.curve, requests_file=requests_file)
    return dataclasses.replace(result, body=dataclasses.replace(result.body, curve=curve))


def test_every_stored_request_is_a_line_with_its_run_and_cell(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    (run_dir / "cells" / "a").mkdir(parents=True)
    records = [_record(0), _record(1)]
    lines = [json.dumps(r.to_dict(), sort_keys=True) for r in records]
    (run_dir / "cells" / "a" / "requests.jsonl").write_text("\n".join(lines) + "\n")
    decode = from_dict(json.loads((GOLDEN / "result_v7.json").read_text()))  # no records: not exported
    endpoint = _endpoint("cells/a/requests.jsonl")
    out = tmp_path / "requests.jsonl"
    assert export_requests([decode, endpoint], run_dir, out) == 2
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(w["run_id"], w["cell_key"]) for w in written] == [(endpoint.run_id, endpoint.cell.key)] * 2
    assert [RequestRecord.from_dict(w) for w in written] == records
    assert export_kind("requests").own(out.read_bytes()[:64])


def test_a_records_file_out_of_place_or_damaged_is_one_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (tmp_path / "elsewhere.jsonl").write_text(json.dumps(_record(0).to_dict()) + "\n")
    with pytest.raises(UserError, match="is outside the run folder"):
        export_requests([_endpoint("../elsewhere.jsonl")], run_dir, tmp_path / "out.jsonl")
    with pytest.raises(UserError, match=r"cannot read cell .*requests file"):
        export_requests([_endpoint("missing.jsonl")], run_dir, tmp_path / "out.jsonl")
    (run_dir / "bad.jsonl").write_text('{"concurrency": "two"}\n')
    with pytest.raises(UserError, match=r"bad.jsonl:1: not a request record") as caught:
        export_requests([_endpoint("bad.jsonl")], run_dir, tmp_path / "out.jsonl")
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "out.jsonl").exists()
