"""The per-request records of a run's endpoint cells as JSON lines (``accelbench export --format
requests``, issue 31 scope 1).

Each endpoint cell stores its requests in ``requests.jsonl`` in its folder (``generation.requests_file``,
relative to the run folder: ``accelbench.endpoint.records.RequestRecord``, one per line: the curve's
timed requests, the repeat audit's pairs among them, and the max-QPS search's ``poisson`` ones). The
export is every such record of the run, in cell-key order, each as stored with the ``run_id`` and
``cell_key`` it belongs to, keys sorted: times in seconds on the client's clock from the start of its
point (or probe), tokens counted by the client (``output_tokens``) beside the server's ``usage``. A
records file outside the run folder, missing, or with a line that is not a record is a one-line error
naming it: nothing is left out silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from accelbench.endpoint.records import RequestRecord
from accelbench.errors import UserError
from accelbench.inputs import parse_json, read_input_text
from accelbench.outputs import Kind, write_atomically
from accelbench.record_types import check_record
from accelbench.results import Result

KIND = Kind("requests export", lambda head: head.startswith(b'{"cell_key": '))
"""How an earlier requests export begins (its lines' keys are sorted: ``cell_key`` first)."""


def export_requests(results: Sequence[Result], run_dir: Path, out: Path) -> int:
    """Write the records of the endpoint cells among ``results`` (stored under ``run_dir``) to ``out``;
    the number of records written. UserError when a cell's records cannot be read."""
    lines = [json.dumps(line, sort_keys=True) for line in request_lines(results, run_dir)]

    def write(stream: Any) -> None:
        stream.writelines(line + "\n" for line in lines)

    write_atomically(out, write, "export file")
    return len(lines)


def request_lines(results: Sequence[Result], run_dir: Path) -> Iterator[dict[str, Any]]:
    """Every stored request of the endpoint cells among ``results``, with its run id and cell key."""
    for result in sorted(results, key=lambda r: r.cell.key):
        if (curve := result.curve) is not None:
            for record in cell_records(run_dir, curve.requests_file, result.cell.key):
                yield {"run_id": result.run_id, "cell_key": result.cell.key, **record.to_dict()}


def cell_records(run_dir: Path, requests_file: str, key: str) -> list[RequestRecord]:
    """The records of one cell's ``requests_file`` (a path inside ``run_dir``)."""
    folder = run_dir.resolve()
    path = (folder / requests_file).resolve()
    if not path.is_relative_to(folder):
        raise UserError(f"cell {key}: its requests file {requests_file} is outside the run folder {run_dir}")
    text = read_input_text(path, f"cell {key}: requests file")
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        data = parse_json(line, where)
        try:
            record = RequestRecord.from_dict(data)
            check_record(record)
        except (TypeError, AttributeError, ValueError) as exc:
            raise UserError(f"{where}: not a request record ({exc})") from None
        records.append(record)
    return records
